//! The sim's well-behaved side: hello, methods, the agent, persistence.

mod common;
use common::*;
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

#[test]
fn cli_version_help_and_bad_args() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("koma-sim {}\n", env!("CARGO_PKG_VERSION")));
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().contains("koma-sim sdk serve"));
    for args in [&[][..], &["sdk"], &["serve"], &["sdk", "serve", "x"], &["--bogus"]] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(64), "args {args:?}");
        assert!(out.stdout.is_empty());
        assert!(String::from_utf8(out.stderr).unwrap().contains("usage"));
    }
    let out = Command::new(BIN).args(["sdk", "serve"]).env("KOMA_SIM_FAULT", "nonsense").output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
    // The error lists the valid switches, and they are the ones the help lists.
    let err = String::from_utf8(out.stderr).unwrap();
    let valid = err.split_once("the switches are: ").expect("the valid switches are listed").1.trim();
    let valid: Vec<&str> = valid.split(", ").collect();
    assert!(valid.len() > 30 && valid.contains(&"ignore_eof"), "{err}");
    let help = String::from_utf8(Command::new(BIN).arg("-h").output().unwrap().stdout).unwrap();
    let section = help.split_once("\nfault switches").expect("the help has the fault switches").1;
    // Then what differs on Windows, naming switches of the list.
    let (section, windows) = section.split_once("\non Windows").expect("the help says what differs on Windows");
    for line in windows.lines().filter(|l| l.starts_with("    ")) {
        assert!(valid.contains(&line.split_whitespace().next().unwrap()), "{line}");
    }
    assert!(windows.contains("    hold ") && windows.contains("refused"), "{windows}");
    let listed: Vec<&str> =
        section.lines().filter(|l| l.starts_with("    ")).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(listed, valid);
    assert!(!help.contains("README"), "the help stands alone: {help}");
    for var in ["KOMA_SIM_DELAY_MS", "KOMA_SIM_HELLO_DELAY_MS"] {
        let out = Command::new(BIN).args(["sdk", "serve"]).env(var, "soon").output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{var}");
        assert!(out.stdout.is_empty(), "{var}");
        assert!(String::from_utf8(out.stderr).unwrap().contains(var));
    }
}

#[test]
fn hello_create_and_a_plain_turn() {
    let home = temp_home("plain");
    let mut sim = Sim::spawn(&home, &[]);
    let h = sim.hello();
    assert_eq!(h["protocol"], 1);
    assert_eq!(h["binary"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(h["binary"]["path"].as_str().unwrap().ends_with("koma-sim"));
    assert_eq!(h["diagnostics"], json!([{"pid": sim.pid()}]));
    let caps: Vec<&str> = h["capabilities"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(
        caps,
        [
            "create",
            "resume",
            "state",
            "submit",
            "enqueue",
            "interrupt",
            "interrupt_and_submit",
            "approve",
            "detach",
            "configure"
        ]
    );

    // Before a session.
    assert_eq!(
        sim.ok("state", json!({})),
        json!({"session": null, "status": "idle", "turn": null, "queued": 0, "model": null})
    );
    assert_eq!(sim.err("submit", json!({"text": "hi"})), "no_session");

    let r = sim.ok("create", json!({"cwd": "/tmp", "model": "m-x"}));
    let session = r["session"].as_str().unwrap().to_string();
    assert!(session.starts_with("s-"));
    assert_eq!(r["state"], json!({"session": session, "status": "idle", "turn": null, "queued": 0, "model": "m-x"}));
    let d = sim.next_event();
    assert_eq!((d["seq"].as_u64(), d["name"].as_str()), (Some(1), Some("diagnostic")));
    assert_eq!(d["data"]["level"], "info");
    assert_eq!(sim.err("create", json!({})), "lifecycle");

    assert_eq!(sim.ok("submit", json!({"text": "hello there"})), json!({"turn": "t-1"}));
    let evs = sim.turn_events("t-1");
    let n = names(&evs);
    assert_eq!(n[0], "turn_started");
    assert_eq!(evs[0]["data"], json!({"turn": "t-1", "text": "hello there"}));
    assert_eq!(n[1], "state");
    assert_eq!(evs[1]["data"]["status"], "running");
    let outputs = n.iter().filter(|x| *x == "output").count();
    assert!((4..=8).contains(&outputs), "{n:?}");
    assert_eq!(&n[2..2 + outputs], vec!["output"; outputs].as_slice());
    assert!(output_text(&evs).contains("\"hello there\""));
    assert!(output_text(&evs).contains("m-x"));
    assert_eq!(evs[2 + outputs]["data"], json!({"turn": "t-1", "status": "completed"}));
    assert_eq!(evs[3 + outputs]["name"], "state");
    assert_eq!(evs[3 + outputs]["data"]["status"], "idle");
    assert_eq!(evs.len(), 4 + outputs);
    assert_eq!(sim.ok("state", json!({}))["status"], "idle");
    sim.detach();
    assert!(home.join(format!("{session}.jsonl")).exists());
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn read_and_approval_turns_busy_and_queue() {
    let home = temp_home("tools");
    let mut sim = Sim::spawn(&home, &[]);
    sim.hello();
    sim.ok("create", json!({}));
    sim.next_event();

    // read: a tool call without approval.
    assert_eq!(sim.ok("submit", json!({"text": "please look at src/lib.rs"}))["turn"], "t-1");
    let evs = sim.turn_events("t-1");
    assert_eq!(&names(&evs)[..4], ["turn_started", "state", "tool_call", "tool_result"]);
    assert_eq!(
        evs[2]["data"],
        json!({"turn": "t-1", "call": "c-1", "tool": "read_file", "input": {"path": "src/lib.rs"}})
    );
    assert_eq!(evs[3]["data"]["call"], "c-1");
    assert_eq!(evs[3]["data"]["error"], false);
    assert!(evs[3]["data"]["output"].is_string());
    assert!(!names(&evs).contains(&"approval_requested".to_string()));

    // fix: waits for approval; busy; enqueue; wrong id; allow.
    assert_eq!(sim.ok("submit", json!({"text": "fix main.rs"}))["turn"], "t-2");
    let evs = sim.events_until(|e| e["name"] == "state" && e["data"]["status"] == "waiting");
    assert_eq!(names(&evs), ["turn_started", "state", "tool_call", "approval_requested", "state"]);
    assert_eq!(evs[2]["data"]["tool"], "write_file");
    assert_eq!(evs[3]["data"]["approval"], "a-1");
    assert_eq!(evs[3]["data"]["tool"], "write_file");
    assert_eq!(evs[3]["data"]["input"]["path"], "main.rs");
    assert_eq!(sim.err("submit", json!({"text": "another"})), "busy");
    assert_eq!(sim.ok("enqueue", json!({"text": "queued text"})), json!({"position": 1}));
    assert_eq!(sim.ok("enqueue", json!({"text": "queued two"})), json!({"position": 2}));
    let st = sim.ok("state", json!({}));
    assert_eq!(
        (st["status"].as_str(), st["turn"].as_str(), st["queued"].as_u64()),
        (Some("waiting"), Some("t-2"), Some(2))
    );
    assert_eq!(sim.err("approve", json!({"approval": "a-9", "decision": "allow"})), "unknown_approval");
    assert_eq!(sim.err("approve", json!({"approval": "a-1", "decision": "maybe"})), "invalid_params");
    assert_eq!(sim.ok("approve", json!({"approval": "a-1", "decision": "allow"})), json!({}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    let tr = evs.iter().find(|e| e["name"] == "tool_result").unwrap();
    assert_eq!(tr["data"]["error"], false);
    assert_eq!(
        tr["data"]["call"],
        evs.iter().find(|e| e["name"] == "tool_call").map_or(json!("c-2"), |e| e["data"]["call"].clone())
    );
    assert_eq!(evs.last().unwrap()["data"], json!({"turn": "t-2", "status": "completed"}));
    // The queue goes on by itself.
    let next = sim.next_event();
    assert_eq!(next["data"], json!({"turn": "t-3", "text": "queued text"}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"], json!({"turn": "t-3", "status": "completed"}));
    // No idle state between a finished turn and the next queued one.
    let evs = sim.turn_events("t-4");
    assert_eq!(evs[0]["data"], json!({"turn": "t-4", "text": "queued two"}));
    assert_eq!(evs.last().unwrap()["data"]["status"], "idle");
    assert_eq!(evs.last().unwrap()["data"]["queued"], 0);

    // enqueue while idle starts at once.
    assert_eq!(sim.ok("enqueue", json!({"text": "now"})), json!({"position": 0}));
    sim.turn_events("t-5");

    // deny.
    sim.ok("submit", json!({"text": "edit the notes"}));
    let evs = sim.events_until(|e| e["name"] == "approval_requested");
    assert_eq!(evs.last().unwrap()["data"]["approval"], "a-2");
    assert_eq!(evs.last().unwrap()["data"]["input"]["path"], "notes.txt");
    sim.ok("approve", json!({"approval": "a-2", "decision": "deny"}));
    let evs = sim.turn_events("t-6");
    let tr = evs.iter().find(|e| e["name"] == "tool_result").unwrap();
    assert_eq!(tr["data"]["error"], true);
    assert_eq!(evs[evs.len() - 2]["data"]["status"], "completed");

    // read and write in one text: read first.
    sim.ok("submit", json!({"text": "read then fix lib/a.rs"}));
    let evs = sim.events_until(|e| e["name"] == "approval_requested");
    let calls: Vec<&Value> = evs.iter().filter(|e| e["name"] == "tool_call").collect();
    assert_eq!(calls[0]["data"]["tool"], "read_file");
    assert_eq!(calls[1]["data"]["tool"], "write_file");
    assert_eq!(calls[1]["data"]["input"]["path"], "lib/a.rs");
    sim.ok("approve", json!({"approval": "a-3", "decision": "allow"}));
    sim.turn_events("t-7");
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn interrupt_and_interrupt_and_submit() {
    let home = temp_home("intr");
    let mut sim = Sim::spawn(&home, &[]);
    sim.hello();
    sim.ok("create", json!({}));
    sim.next_event();
    assert_eq!(sim.ok("interrupt", json!({})), json!({"turn": null}));

    sim.ok("submit", json!({"text": "fix a.rs"}));
    sim.events_until(|e| e["name"] == "approval_requested");
    assert_eq!(sim.ok("enqueue", json!({"text": "after it"})), json!({"position": 1}));
    assert_eq!(sim.ok("interrupt", json!({})), json!({"turn": "t-1"}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"], json!({"turn": "t-1", "status": "interrupted"}));
    let evs = sim.turn_events("t-2");
    assert_eq!(evs[0]["data"]["text"], "after it");
    assert_eq!(sim.err("approve", json!({"approval": "a-1", "decision": "allow"})), "unknown_approval");

    sim.ok("submit", json!({"text": "fix b.rs"}));
    sim.events_until(|e| e["name"] == "approval_requested");
    assert_eq!(
        sim.ok("interrupt_and_submit", json!({"text": "instead"})),
        json!({"interrupted": "t-3", "turn": "t-4"})
    );
    let evs = sim.events_until(|e| e["name"] == "turn_started");
    assert_eq!(evs[evs.len() - 2]["data"], json!({"turn": "t-3", "status": "interrupted"}));
    assert_eq!(evs.last().unwrap()["data"]["turn"], "t-4");
    sim.turn_events("t-4");
    assert_eq!(
        sim.ok("interrupt_and_submit", json!({"text": "idle now"})),
        json!({"interrupted": null, "turn": "t-5"})
    );
    sim.turn_events("t-5");
    sim.detach();

    // A turn that streams slowly is interrupted between two pieces.
    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_DELAY_MS", "100")]);
    sim.hello();
    sim.ok("create", json!({}));
    sim.ok("submit", json!({"text": "tell me something long"}));
    sim.events_until(|e| e["name"] == "output");
    assert_eq!(sim.ok("state", json!({}))["status"], "running");
    assert_eq!(sim.ok("interrupt", json!({})), json!({"turn": "t-1"}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"]["status"], "interrupted");
    assert_eq!(sim.next_event()["data"]["status"], "idle");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(sim.ok("state", json!({}))["status"], "idle");
    assert_eq!(sim.pending_events(), 0, "events after the interrupt");
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn configure_and_remote_errors() {
    let home = temp_home("errs");
    let mut sim = Sim::spawn(&home, &[]);
    sim.hello();
    assert_eq!(sim.err("configure", json!({"model": "x"})), "no_session");
    assert_eq!(sim.err("resume", json!({"session": "s-nope"})), "unknown_session");
    assert_eq!(sim.err("resume", json!({"session": "../etc/passwd"})), "unknown_session");
    assert_eq!(sim.err("bench_events", json!({"count": 1, "bytes": 1})), "unknown_method");
    sim.ok("create", json!({}));
    sim.next_event();
    assert_eq!(sim.err("frobnicate", json!({})), "unknown_method");
    let r = sim.call("submit", json!({"text": 1}));
    assert_eq!(r["error"]["code"], "invalid_params");
    assert_eq!(r["error"]["data"]["field"], "text");
    let r = sim.call("submit", json!({"text": "x", "foo": 1}));
    assert_eq!(r["error"]["data"]["field"], "foo");
    assert_eq!(sim.err("submit", json!({})), "invalid_params");
    assert_eq!(sim.err("state", json!({"x": true})), "invalid_params");
    assert_eq!(sim.err("resume", json!({"session": "s-1", "after": -1})), "invalid_params");
    sim.write_raw(b"{\"id\":\"p1\",\"method\":\"state\",\"params\":[]}\n");
    assert_eq!(sim.response("p1")["error"]["code"], "invalid_params");
    // Junk lines are ignored (stderr says so), the sim goes on.
    sim.write_raw(b"not json\n{\"method\":\"state\"}\n");
    assert_eq!(sim.err("resume", json!({"session": "s-1"})), "lifecycle");

    let st = sim.ok("configure", json!({"model": "sim-2"}));
    assert_eq!(st["model"], "sim-2");
    let e = sim.next_event();
    assert_eq!((e["name"].as_str(), e["data"]["model"].as_str()), (Some("state"), Some("sim-2")));
    assert_eq!(sim.ok("configure", json!({}))["model"], "sim-2");
    sim.next_event();
    sim.ok("submit", json!({"text": "which model?"}));
    assert!(output_text(&sim.turn_events("t-1")).contains("sim-2"));
    sim.detach();
    assert!(sim.stderr().contains("not JSON"));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn detach_then_resume_replays_after_a_seq() {
    let home = temp_home("resume");
    let mut a = Sim::spawn(&home, &[]);
    a.hello();
    let session = a.ok("create", json!({"model": "m-r"}))["session"].as_str().unwrap().to_string();
    a.ok("submit", json!({"text": "one"}));
    a.turn_events("t-1");
    a.ok("submit", json!({"text": "show me x.txt"}));
    a.turn_events("t-2");
    a.detach();
    let original = a.seen.clone();
    let last = original.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(original.len() as u64, last);

    // A new process: the answer, then the events after seq 5, then new ones.
    let mut b = Sim::spawn(&home, &[]);
    b.hello();
    let r = b.ok("resume", json!({"session": session, "after": 5}));
    assert_eq!(r["session"], session.as_str());
    assert_eq!(r["state"], json!({"session": session, "status": "idle", "turn": null, "queued": 0, "model": "m-r"}));
    for want in &original[5..] {
        assert_eq!(&b.next_event(), want);
    }
    let d = b.next_event();
    assert_eq!((d["seq"].as_u64(), d["name"].as_str()), (Some(last + 1), Some("diagnostic")));
    assert_eq!(b.ok("submit", json!({"text": "three"}))["turn"], "t-3");
    let evs = b.turn_events("t-3");
    assert_eq!(evs[0]["seq"].as_u64(), Some(last + 2));
    // End of stdin without detach also saves and exits 0.
    b.close_stdin();
    assert_eq!(b.wait_exit().code(), Some(0));
    let last_b = b.seen.last().unwrap()["seq"].as_u64().unwrap();

    let mut c = Sim::spawn(&home, &[]);
    c.hello();
    c.ok("resume", json!({"session": session, "after": last_b - 2}));
    assert_eq!(&c.next_event(), &b.seen[b.seen.len() - 2]);
    assert_eq!(&c.next_event(), b.seen.last().unwrap());
    assert_eq!(c.next_event()["name"], "diagnostic");
    // Without `after`, the whole log is replayed.
    c.detach();
    let mut d = Sim::spawn(&home, &[]);
    d.hello();
    d.ok("resume", json!({"session": session}));
    assert_eq!(d.next_event(), original[0]);
    d.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn resume_after_a_kill_mid_turn_fails_that_turn() {
    let home = temp_home("killed");
    let mut a = Sim::spawn(&home, &[]);
    a.hello();
    let session = a.ok("create", json!({}))["session"].as_str().unwrap().to_string();
    a.ok("submit", json!({"text": "fix it"}));
    a.events_until(|e| e["name"] == "state" && e["data"]["status"] == "waiting");
    let last = a.seen.last().unwrap()["seq"].as_u64().unwrap();
    // The save follows that event under the agent's lock; a request answered
    // after it proves the session file is written.
    a.ok("state", json!({}));
    a.child.kill().unwrap();
    a.wait_exit();

    let mut b = Sim::spawn(&home, &[]);
    b.hello();
    assert_eq!(b.ok("resume", json!({"session": session, "after": last}))["state"]["status"], "idle");
    let e = b.next_event();
    assert_eq!(e["seq"].as_u64(), Some(last + 1));
    assert_eq!(e["data"]["turn"], "t-1");
    assert_eq!(e["data"]["status"], "failed");
    assert_eq!(b.next_event()["data"]["status"], "idle");
    assert_eq!(b.next_event()["name"], "diagnostic");
    assert_eq!(b.ok("submit", json!({"text": "again"}))["turn"], "t-2");
    b.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn bench_mode() {
    let home = temp_home("bench");
    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_BENCH", "1")]);
    let h = sim.hello();
    let caps = h["capabilities"].as_array().unwrap();
    assert!(caps.contains(&json!("bench_events")) && caps.contains(&json!("bench_blob")));
    sim.ok("create", json!({}));
    sim.next_event();
    assert_eq!(sim.ok("bench_events", json!({"count": 5000, "bytes": 100})), json!({"count": 5000}));
    for i in 0..5000u64 {
        let e = sim.next_event();
        assert_eq!(e["seq"].as_u64(), Some(i + 2));
        assert_eq!(e["data"]["turn"], "bench");
        assert_eq!(e["data"]["text"].as_str().unwrap().len(), 100);
    }
    let blob = sim.ok("bench_blob", json!({"bytes": 1_000_000}));
    assert_eq!(blob["blob"].as_str().unwrap().len(), 1_000_000);
    sim.ok("submit", json!({"text": "after bench"}));
    let evs = sim.turn_events("t-1");
    assert_eq!(evs[0]["seq"].as_u64(), Some(5002));
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn hello_delay_is_cut_short_by_the_end_of_stdin() {
    let home = temp_home("hello-delay");
    // Ten minutes: only the end of stdin can end the wait within TIMEOUT.
    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_HELLO_DELAY_MS", "600000")]);
    // Bytes written early neither end the wait nor are read before hello.
    sim.write_raw(b"{}\n");
    assert!(sim.quiet_for(Duration::from_millis(100)), "hello came before the delay");
    sim.close_stdin();
    sim.hello();
    assert!(sim.raw_line().is_none(), "nothing after hello");
    assert_eq!(sim.wait_exit().code(), Some(0));
    sim.wait_stderr("koma-sim: client wrote 3 bytes before hello\n");
    sim.wait_stderr("koma-sim: stdin closed during the hello delay; sending hello now\n");

    // A short delay, then a normal session.
    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_HELLO_DELAY_MS", "20")]);
    sim.hello();
    assert_eq!(sim.ok("state", json!({}))["status"], "idle");
    sim.detach();
    assert!(!sim.stderr().contains("hello delay"));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn bench_exit_and_bench_garbage() {
    let home = temp_home("bench-faults");
    let mut sim = Sim::spawn(&home, &[]);
    sim.hello();
    assert_eq!(sim.err("bench_exit", json!({"code": 1})), "unknown_method");
    assert_eq!(sim.err("bench_garbage", json!({})), "unknown_method");
    sim.detach();

    // bench_garbage: a line that is not JSON in place of the answer, even
    // when answers are held back; then the sim goes on.
    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_BENCH", "1"), ("KOMA_SIM_FAULT", "never_answer")]);
    let caps = sim.hello()["capabilities"].clone();
    let caps = caps.as_array().unwrap();
    assert!(caps.contains(&json!("bench_exit")) && caps.contains(&json!("bench_garbage")));
    sim.send("bench_garbage", json!({}));
    assert_eq!(sim.raw_line().unwrap(), b"this line is not JSON (bench_garbage)\n");
    sim.wait_stderr("(bench_garbage)");
    sim.detach();

    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_BENCH", "1")]);
    sim.hello();
    sim.send("bench_garbage", json!({}));
    assert_eq!(sim.raw_line().unwrap(), b"this line is not JSON (bench_garbage)\n");
    assert_eq!(sim.ok("state", json!({}))["status"], "idle");
    assert_eq!(sim.err("bench_garbage", json!({"x": 1})), "invalid_params");
    // bench_exit: the code is required and must be an exit code.
    assert_eq!(sim.err("bench_exit", json!({})), "invalid_params");
    let r = sim.call("bench_exit", json!({"code": 256}));
    assert_eq!(r["error"]["data"]["field"], "code");
    // What was emitted before goes out; then the process exits with that
    // code, without an answer.
    sim.ok("create", json!({}));
    sim.send("bench_exit", json!({"code": 7}));
    assert_eq!(sim.next_event()["name"], "diagnostic");
    assert!(sim.raw_line().is_none(), "no answer to bench_exit");
    assert_eq!(sim.wait_exit().code(), Some(7));
    sim.wait_stderr("exiting with code 7 in place of the answer to id ");

    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_BENCH", "1")]);
    sim.hello();
    sim.send("bench_exit", json!({"code": 0}));
    assert!(sim.raw_line().is_none());
    assert_eq!(sim.wait_exit().code(), Some(0));
    let _ = std::fs::remove_dir_all(home);
}
