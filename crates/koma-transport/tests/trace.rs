//! The trace a host takes (`ConnectionOptions::trace_records`,
//! `Connection::take_trace`), against koma-sim: what it records, naming the
//! client, and its bound when the host does not take it.

mod common;

use common::{serial, sim_launch, Client};
use koma_transport::child::ExitInfo;
use koma_transport::connection::{Direction, TRACE_KEPT_RECORDS};
use koma_transport::{ConnectionOptions, ErrorCode, Outcome, TraceKinds, TraceRecord, Traced};

fn traced(kinds: TraceKinds, env: &[(&str, &str)]) -> Client {
    let home = std::env::temp_dir().join(format!("koma-transport-trace-{}-{}", std::process::id(), nanos()));
    std::fs::create_dir_all(&home).unwrap();
    let home = home.display().to_string();
    let mut vars = vec![("KOMA_SIM_HOME", home.as_str())];
    vars.extend_from_slice(env);
    Client::with_options(ConnectionOptions { launch: sim_launch(&vars), trace_records: kinds, ..Default::default() })
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

fn frames(records: &[TraceRecord], direction: Direction) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match &r.what {
            Traced::Frame { direction: d, text } if *d == direction => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_host_takes_the_frames_stderr_lines_and_notes_of_a_session_naming_the_client() {
    let _serial = serial();
    let mut c = traced(TraceKinds::ALL, &[]);
    let created = c.call("create", Some("{}")).unwrap();
    let pid = c.conn.pid().unwrap();
    c.close();
    // Everything is queued by the time close is done; nothing was taken yet.
    let records = c.conn.take_trace();
    assert!(records.iter().all(|r| r.pid == Some(pid) && &*r.label == "koma-transport"), "{records:#?}");
    let read = frames(&records, Direction::Read);
    assert!(read[0].starts_with(r#"{"type":"hello","protocol":1,"#), "{read:?}");
    let written = frames(&records, Direction::Written);
    assert!(written[0].ends_with(r#""method":"create","params":{}}"#), "{written:?}");
    let session = created["session"].as_str().unwrap();
    let stderr: Vec<_> =
        records.iter().filter_map(|r| if let Traced::Stderr(l) = &r.what { Some(l.as_str()) } else { None }).collect();
    assert!(stderr.contains(&format!("koma-sim: session {session} created").as_str()), "{stderr:?}");
    let notes: Vec<_> =
        records.iter().filter(|r| !matches!(r.what, Traced::Frame { .. } | Traced::Stderr(_))).collect();
    let notes: Vec<_> = notes.iter().map(|r| r.what.clone()).collect();
    assert_eq!(
        notes,
        [
            Traced::Spawned,
            Traced::Hello { version: "0.1.0".into() },
            Traced::Detach { by_close: true },
            Traced::Exit(ExitInfo { code: Some(0), signal: None }),
            Traced::Closed,
        ]
    );
    assert!(c.conn.take_trace().is_empty(), "taken once");
}

#[test]
fn a_failure_is_a_note_with_its_error() {
    let _serial = serial();
    let mut c = traced(TraceKinds { notes: true, ..TraceKinds::NONE }, &[("KOMA_SIM_FAULT", "hold")]);
    let p = c.conn.token();
    c.conn.probe(p, None).unwrap();
    c.outcome(p);
    let pid = c.conn.pid().unwrap();
    let t = c.conn.token();
    c.conn.request(t, "state", None, None).unwrap();
    // SAFETY: SIGKILL to the sim we started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let Outcome::Error(e) = c.outcome(t) else { panic!("no failure") };
    let e = e.clone();
    c.close();
    let records = c.conn.take_trace();
    let failed: Vec<_> =
        records.iter().filter_map(|r| if let Traced::Failed(f) = &r.what { Some(f) } else { None }).collect();
    assert_eq!(failed.len(), 1, "{records:#?}");
    assert_eq!(failed[0].code, ErrorCode::TransportFailure);
    assert!(e.message.ends_with(&failed[0].message), "the call's error says why: {}", e.message);
    assert!(records.iter().any(|r| r.what == Traced::Exit(ExitInfo { code: None, signal: Some(9) })));
    assert!(records.iter().all(|r| !matches!(r.what, Traced::Frame { .. } | Traced::Stderr(_))), "notes only");
}

#[test]
fn nothing_is_kept_unless_the_host_asks() {
    let _serial = serial();
    let mut c = traced(TraceKinds::NONE, &[]);
    c.call("create", Some("{}")).unwrap();
    c.close();
    assert!(c.conn.take_trace().is_empty());
}

#[test]
fn a_flood_of_frames_that_the_host_does_not_take_keeps_the_newest_and_counts_the_rest() {
    let _serial = serial();
    // 2,000 events before the submit's answer: far more frames than the bound.
    let mut c = traced(TraceKinds { frames: true, ..TraceKinds::NONE }, &[("KOMA_SIM_FAULT", "event_flood")]);
    c.call("create", Some("{}")).unwrap();
    c.call("submit", Some(r#"{"text":"flood"}"#)).unwrap();
    let pid = c.conn.pid().unwrap();
    // The host drained every wake (completions) and never took the trace.
    let records = c.conn.take_trace();
    let Traced::Dropped(dropped) = records[0].what else { panic!("no report of the dropped: {:?}", records[0]) };
    assert_eq!(records[0].pid, Some(pid), "the report names the client");
    let kept = &records[1..];
    assert_eq!(kept.len(), TRACE_KEPT_RECORDS, "at most the bound, and all of it");
    assert!(kept.iter().all(|r| matches!(r.what, Traced::Frame { .. })));
    // hello, create (both ways), submit written, 2,000 events and the answer, at least.
    assert!(dropped as usize + kept.len() >= 2005, "{dropped} dropped");
    let submit = frames(&records, Direction::Written);
    assert!(submit.iter().all(|f| !f.contains(r#""method":"create""#)), "the oldest went first: {submit:?}");
    c.close();
}
