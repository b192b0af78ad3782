//! A `Connection` driven against koma-sim, as a host drives it: calls
//! by token, completions drained after a wake. Each test of the lifecycle
//! runs once per spawn mode (`auto::`, `no_pidfd::`, `portable::`).

mod common;

use std::time::Duration;

use common::{alive, children_of_self, group_alive, open_fds, serial, sim_launch, Client};
use koma_transport::child::SpawnMode;
use koma_transport::{Closing, ConnectionOptions, ErrorCode, Outcome, Probe};

in_every_mode! {
    all: [
        a_session_from_probe_to_detach,
        close_while_spawning_stops_the_child_before_it_resolves,
        a_killed_child_fails_pending_calls_and_its_group_is_gone,
        a_deadline_settles_once_and_is_cancelled_when_the_answer_comes,
        a_close_with_a_deadline_times_out_and_the_close_goes_on,
    ],
    linux_only: [],
}

fn a_session_from_probe_to_detach(mode: SpawnMode) {
    let _serial = serial();
    let mut c = Client::sim_in(mode, &[("KOMA_SIM_HOME", &tempdir())]);
    let t = c.conn.token();
    assert!(matches!(c.conn.probe(t, None).unwrap(), Probe::Wait));
    let Outcome::Hello(h) = c.outcome(t) else { panic!("no hello") };
    assert!(h.supports("submit"));
    let created = c.call("create", Some("{}")).unwrap();
    assert!(created["session"].is_string());
    let turn = c.call("submit", Some(r#"{"text":"hello"}"#)).unwrap()["turn"].as_str().unwrap().to_owned();
    let seen = c.events_until(|name, data| name == "turn_finished" && data["turn"] == turn.as_str());
    let output: String = seen.iter().filter(|e| e.1 == "output").map(|e| e.2["text"].as_str().unwrap()).collect();
    assert!(output.contains("you said \"hello\""), "{output}");
    let pid = c.conn.pid().unwrap() as i32;
    assert_eq!(c.call("detach", None).unwrap(), serde_json::json!({}));
    assert!(!alive(pid), "detach resolves after the exit (and the reap)");
    assert_eq!(c.call("state", None).unwrap_err().split(':').next(), Some("lifecycle"));
    c.close();
}

fn close_while_spawning_stops_the_child_before_it_resolves(mode: SpawnMode) {
    let _serial = serial();
    let before = open_fds();
    for _ in 0..10 {
        // The sim holds its hello back (for ten minutes, reading nothing), so
        // close always comes before it, however busy the machine is.
        let mut c = Client::sim_in(mode, &[("KOMA_SIM_HELLO_DELAY_MS", "600000")]);
        let t = c.conn.token();
        c.conn.request(t, "state", None, None).unwrap();
        let ct = c.conn.token();
        assert_eq!(c.conn.close(ct), Closing::Wait);
        assert!(matches!(c.outcome(ct), Outcome::Done));
        assert!(matches!(c.outcome(t), Outcome::Error(e) if e.code == ErrorCode::Closed));
        assert!(c.conn.is_closed());
    }
    assert_eq!(open_fds(), before, "no descriptor left");
}

fn a_killed_child_fails_pending_calls_and_its_group_is_gone(mode: SpawnMode) {
    let _serial = serial();
    let mut c = Client::sim_in(mode, &[("KOMA_SIM_FAULT", "hold,spawn_tool")]);
    let p = c.conn.token();
    c.conn.probe(p, None).unwrap();
    c.outcome(p);
    let pid = c.conn.pid().unwrap() as i32;
    let t = c.conn.token();
    c.conn.request(t, "state", None, None).unwrap();
    // SAFETY: SIGKILL to the sim we started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let Outcome::Error(e) = c.outcome(t) else { panic!() };
    assert_eq!(e.code, ErrorCode::DeliveryUnknown, "{}", e.message);
    assert!(e.message.contains("SIGKILL"), "{}", e.message);
    c.close();
    assert!(!alive(pid) && !group_alive(pid), "koma and its tool are gone when close is done");
}

fn a_close_with_a_deadline_times_out_and_the_close_goes_on(mode: SpawnMode) {
    let _serial = serial();
    // The sim never answers detach: close waits its grace for it, then goes on.
    let mut c = Client::sim_in(mode, &[("KOMA_SIM_FAULT", "ignore_detach"), ("KOMA_SIM_HOME", &tempdir())]);
    c.call("create", Some("{}")).unwrap();
    let pid = c.conn.pid().unwrap() as i32;
    let bounded = c.conn.token();
    assert_eq!(c.conn.close_within(bounded, Some(Duration::from_millis(20))), Closing::Wait);
    let waited = c.conn.token();
    assert_eq!(c.conn.close(waited), Closing::Wait);
    let Outcome::Error(e) = c.outcome(bounded) else { panic!("the bounded close did not time out") };
    assert_eq!(e.code, ErrorCode::Timeout);
    assert_eq!(e.message, "`close` did not finish within 20 ms; the close goes on");
    assert!(matches!(c.outcome(waited), Outcome::Done), "the close itself ends");
    assert!(c.conn.is_closed());
    assert!(!alive(pid), "koma is stopped and reaped");
}

fn a_deadline_settles_once_and_is_cancelled_when_the_answer_comes(mode: SpawnMode) {
    let _serial = serial();
    let mut c = Client::sim_in(mode, &[("KOMA_SIM_FAULT", "never_answer")]);
    let t = c.conn.token();
    c.conn.request(t, "state", None, Some(Duration::from_millis(50))).unwrap();
    let Outcome::Error(e) = c.outcome(t) else { panic!() };
    assert_eq!(e.code, ErrorCode::Timeout);
    c.close();
    assert_eq!(c.done[&t].len(), 1, "settled once");
}

#[test]
fn a_child_that_sends_no_hello_in_time_fails_the_client_and_is_reaped() {
    let _serial = serial();
    // koma-sim waits (reading nothing) for ten minutes before its hello.
    let launch = sim_launch(&[("KOMA_SIM_HELLO_DELAY_MS", "600000")]);
    let exe = launch.executable.to_string_lossy().into_owned();
    let hello_timeout = Some(Duration::from_millis(200));
    let mut c = Client::with_options(ConnectionOptions { launch, hello_timeout, ..Default::default() });
    let p = c.conn.token();
    assert!(matches!(c.conn.probe(p, None).unwrap(), Probe::Wait));
    let t = c.conn.token();
    c.conn.request(t, "state", None, None).unwrap();
    let Outcome::Error(e) = c.outcome(p) else { panic!("hello came") };
    assert_eq!(e.code, ErrorCode::TransportFailure);
    let said = format!("no hello from `{exe} sdk serve` within 200 ms: is `{exe}` koma? Nothing was written to it; ");
    assert!(e.message.starts_with(&said), "{}", e.message);
    assert!(e.message.contains("stderr"), "with the stderr tail: {}", e.message);
    let Outcome::Error(queued) = c.outcome(t) else { panic!() };
    assert_eq!(queued.code, ErrorCode::TransportFailure, "the call made before hello was never written");
    c.close();
    assert!(c.conn.is_closed());
    assert_eq!(children_of_self(), Vec::new(), "the child is reaped when close is done");
}

#[test]
fn a_hello_within_the_bound_is_taken() {
    let _serial = serial();
    let launch = sim_launch(&[("KOMA_SIM_HELLO_DELAY_MS", "300")]);
    let hello_timeout = Some(Duration::from_secs(60));
    let mut c = Client::with_options(ConnectionOptions { launch, hello_timeout, ..Default::default() });
    let p = c.conn.token();
    c.conn.probe(p, None).unwrap();
    assert!(matches!(c.outcome(p), Outcome::Hello(_)));
    assert_eq!(c.call("state", None).unwrap()["status"], "idle");
    c.close();
}

fn tempdir() -> String {
    let dir = std::env::temp_dir().join(format!("koma-transport-test-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.display().to_string()
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}
