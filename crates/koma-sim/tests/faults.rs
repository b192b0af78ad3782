//! KOMA_SIM_FAULT switches, driven with raw lines.

mod common;
use common::*;
use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

fn faulty(home: &std::path::Path, faults: &str) -> Sim {
    Sim::spawn(home, &[("KOMA_SIM_FAULT", faults)])
}

fn state_line(id: &str) -> Vec<u8> {
    format!("{{\"id\":\"{id}\",\"method\":\"state\",\"params\":{{}}}}\n").into_bytes()
}

fn parse(line: &[u8]) -> Value {
    serde_json::from_slice(line).unwrap()
}

#[test]
fn bad_protocol_hellos_count_what_the_client_wrote() {
    let home = temp_home("proto");
    let mut sim = faulty(&home, "protocol_2");
    assert_eq!(sim.hello()["protocol"], 2);
    sim.close_stdin();
    assert_eq!(sim.wait_exit().code(), Some(0));
    sim.wait_stderr("koma-sim: bytes read: 0\n");
    assert!(!sim.stderr().contains("client wrote"));

    let mut sim = faulty(&home, "protocol_string");
    assert_eq!(sim.hello()["protocol"], "1");
    sim.write_raw(b"oops\n");
    sim.close_stdin();
    assert_eq!(sim.wait_exit().code(), Some(0));
    sim.wait_stderr("koma-sim: client wrote 5 bytes before hello\n");
    sim.wait_stderr("koma-sim: bytes read: 5\n");

    // The hello line's own text: 1.0 and true, not the integer 1.
    for (fault, text) in [("protocol_float", "\"protocol\":1.0,"), ("protocol_true", "\"protocol\":true,")] {
        let mut sim = faulty(&home, fault);
        let line = sim.raw_line().expect("hello");
        assert!(String::from_utf8_lossy(&line).contains(text), "{fault}: {}", String::from_utf8_lossy(&line));
        sim.close_stdin();
        assert_eq!(sim.wait_exit().code(), Some(0));
        sim.wait_stderr("koma-sim: bytes read: 0\n");
    }

    let mut sim = faulty(&home, "protocol_missing");
    assert!(sim.hello().get("protocol").is_none());
    // Stopped with SIGTERM, it still tells what it read.
    unsafe { libc::kill(sim.pid(), libc::SIGTERM) };
    assert_eq!(sim.wait_exit().signal(), Some(libc::SIGTERM));
    sim.wait_stderr("koma-sim: bytes read: 0\n");

    let mut sim = faulty(&home, "no_hello");
    assert!(sim.quiet_for(Duration::from_millis(150)));
    sim.close_stdin();
    assert_eq!(sim.wait_exit().code(), Some(0));
    assert!(sim.raw_line().is_none());
    sim.wait_stderr("koma-sim: bytes read: 0\n");
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn late_hello_bom_crlf_split_writes() {
    let home = temp_home("hello");
    let mut sim = faulty(&home, "late_hello");
    sim.write_raw(b"{}\n");
    sim.hello();
    sim.wait_stderr("koma-sim: client wrote 3 bytes before hello\n");
    sim.detach();

    let sim = faulty(&home, "bom");
    let l = sim.raw_line().unwrap();
    assert!(l.starts_with(b"\xEF\xBB\xBF{\"type\":\"hello\""));
    assert!(!sim.stderr().contains("client wrote"));

    let mut sim = faulty(&home, "crlf,split_writes");
    let l = sim.raw_line().unwrap();
    assert!(l.ends_with(b"}\r\n"));
    assert_eq!(parse(&l)["type"], "hello");
    sim.write_raw(&state_line("1"));
    let l = sim.raw_line().unwrap();
    assert!(l.ends_with(b"}\r\n"));
    assert_eq!(parse(&l)["id"], "1");
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn frame_faults_replace_the_first_answer_only() {
    let home = temp_home("frames");
    type Check<'a> = &'a dyn Fn(&[Vec<u8>]);
    let cases: &[(&str, Check)] = &[
        ("blank_line", &|l| assert_eq!(l[0], b"\n")),
        ("log_line", &|l| assert_eq!(l[0], b"INFO starting worker\n")),
        ("json_array", &|l| assert_eq!(l[0], b"[1,2,3]\n")),
        ("json_scalar", &|l| assert_eq!(l[0], b"42\n")),
        ("unknown_type", &|l| assert_eq!(l[0], b"{\"type\":\"bogus\"}\n")),
        ("neither", &|l| assert_eq!(l[0], b"{\"foo\":1}\n")),
        ("second_hello", &|l| assert_eq!(parse(&l[0])["type"], "hello")),
        ("both_result_error", &|l| {
            let v = parse(&l[0]);
            assert!(v["id"] == "1" && v.get("result").is_some() && v.get("error").is_some());
        }),
        ("invalid_utf8", &|l| {
            assert!(l[0].windows(2).any(|w| w == b"\xFF\xFE"));
            assert!(std::str::from_utf8(&l[0]).is_err());
        }),
        ("pretty", &|l| {
            assert_eq!(l[0], b"{\n");
            let text: Vec<u8> = l.concat();
            assert_eq!(parse(&text)["id"], "1");
        }),
    ];
    for (fault, check) in cases {
        let mut sim = faulty(&home, fault);
        sim.hello();
        sim.write_raw(&state_line("1"));
        sim.write_raw(&state_line("2"));
        let mut lines = Vec::new();
        loop {
            let l = sim.raw_line().unwrap();
            if l.starts_with(b"{\"id\":\"2\"") {
                assert_eq!(parse(&l)["result"]["status"], "idle", "{fault}");
                break;
            }
            lines.push(l);
        }
        check(&lines);
        sim.detach();
    }
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn frame_40mib_exact_and_one_over() {
    let home = temp_home("big");
    for (fault, len) in [("frame_40mib", 41_943_040usize), ("frame_over_40mib", 41_943_041)] {
        let mut sim = faulty(&home, fault);
        sim.hello();
        sim.write_raw(&state_line("1"));
        let l = sim.raw_line().unwrap();
        assert_eq!(l.len(), len + 1, "{fault}");
        assert_eq!(l.last(), Some(&b'\n'));
        let v = parse(&l);
        assert_eq!(v["id"], "1");
        assert!(v["result"].is_string());
        // Then it goes on normally.
        assert_eq!(sim.ok("state", json!({}))["status"], "idle");
        sim.detach();
    }
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn seq_gap_and_seq_repeat() {
    let home = temp_home("seq");
    for (fault, step) in [("seq_gap", 2u64), ("seq_repeat", 0)] {
        let mut sim = faulty(&home, fault);
        sim.check_seq = false;
        sim.hello();
        sim.write_raw(&state_line("1"));
        let a = parse(&sim.raw_line().unwrap());
        let b = parse(&sim.raw_line().unwrap());
        assert_eq!(a["type"], "event");
        assert_eq!(b["type"], "event");
        assert_eq!(a["seq"], 1);
        assert_eq!(b["seq"].as_u64(), Some(1 + step), "{fault}");
        sim.detach();
    }
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn hold_releases_in_reverse_on_sigusr1() {
    let home = temp_home("hold");
    let mut sim = faulty(&home, "hold");
    sim.hello();
    sim.write_raw(b"{\"id\":\"1\",\"method\":\"create\",\"params\":{}}\n");
    sim.write_raw(&state_line("2"));
    sim.wait_stderr("holding answer to id 2 (2 held)");
    // Events are not held: the create diagnostic arrives first.
    assert_eq!(parse(&sim.raw_line().unwrap())["name"], "diagnostic");
    assert!(sim.quiet_for(Duration::from_millis(50)));
    unsafe { libc::kill(sim.pid(), libc::SIGUSR1) };
    assert_eq!(parse(&sim.raw_line().unwrap())["id"], "2");
    assert_eq!(parse(&sim.raw_line().unwrap())["id"], "1");
    // Repeatable.
    sim.write_raw(&state_line("3"));
    sim.wait_stderr("holding answer to id 3 (1 held)");
    unsafe { libc::kill(sim.pid(), libc::SIGUSR1) };
    assert_eq!(parse(&sim.raw_line().unwrap())["id"], "3");
    // detach is answered at once.
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn unknown_event_and_unknown_ids() {
    let home = temp_home("unknown");
    let mut sim = faulty(&home, "unknown_event,unknown_ids");
    let h = parse(&sim.raw_line().unwrap());
    assert_eq!((h["type"].as_str(), h["extra"].as_bool()), (Some("hello"), Some(true)));
    sim.write_raw(&state_line("1"));
    let e = parse(&sim.raw_line().unwrap());
    assert_eq!((e["name"].as_str(), e["seq"].as_u64(), e["extra"].as_bool()), (Some("mystery"), Some(1), Some(true)));
    assert_eq!(parse(&sim.raw_line().unwrap())["id"], "zz-1");
    let r = parse(&sim.raw_line().unwrap());
    assert_eq!((r["id"].as_str(), r["extra"].as_bool()), (Some("1"), Some(true)));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn odd_status_says_escalated_in_every_turn_finished() {
    let home = temp_home("odd");
    let mut sim = faulty(&home, "odd_status");
    sim.hello();
    sim.ok("create", json!({}));
    // A turn that runs to its end: everything as usual but the status.
    assert_eq!(sim.ok("submit", json!({"text": "read a.md"}))["turn"], "t-1");
    let evs = sim.turn_events("t-1");
    assert_eq!(
        names(&evs),
        ["diagnostic", "turn_started", "state", "tool_call", "tool_result"]
            .into_iter()
            .chain(["output"; 6])
            .chain(["turn_finished", "state"])
            .collect::<Vec<_>>()
    );
    let fin = &evs[evs.len() - 2];
    assert_eq!(fin["data"], json!({"turn": "t-1", "status": "escalated"}));
    assert_eq!(evs[evs.len() - 1]["data"]["status"], "idle");
    // An interrupted one says it too; stderr says how the turn really ended.
    assert_eq!(sim.ok("submit", json!({"text": "fix notes.txt"}))["turn"], "t-2");
    sim.events_until(|e| e["name"] == "approval_requested");
    assert_eq!(sim.ok("interrupt", json!({})), json!({"turn": "t-2"}));
    let evs = sim.turn_events("t-2");
    assert_eq!(evs[evs.len() - 2]["data"], json!({"turn": "t-2", "status": "escalated"}));
    sim.wait_stderr("koma-sim: turn t-1 completed (odd_status: turn_finished says escalated)\n");
    sim.wait_stderr("koma-sim: turn t-2 interrupted (odd_status: turn_finished says escalated)\n");
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn process_faults() {
    let home = temp_home("proc");
    let mut sim = faulty(&home, "exit_mid_request");
    sim.hello();
    sim.write_raw(&state_line("1"));
    assert_eq!(sim.wait_exit().code(), Some(3));
    assert!(sim.raw_line().is_none());
    sim.wait_stderr("koma-sim: exiting on purpose (exit_mid_request)\n");

    let mut sim = faulty(&home, "kill_mid_request");
    sim.hello();
    sim.write_raw(&state_line("1"));
    assert_eq!(sim.wait_exit().signal(), Some(libc::SIGKILL));

    let mut sim = faulty(&home, "never_answer");
    sim.hello();
    sim.write_raw(&state_line("1"));
    assert!(sim.quiet_for(Duration::from_millis(100)));
    sim.detach();

    let mut sim = faulty(&home, "ignore_detach,ignore_eof,ignore_sigterm");
    sim.hello();
    sim.write_raw(b"{\"id\":\"1\",\"method\":\"detach\",\"params\":{}}\n");
    assert_eq!(
        parse(&{
            sim.write_raw(&state_line("2"));
            sim.raw_line().unwrap()
        })["id"],
        "2"
    );
    sim.close_stdin();
    unsafe { libc::kill(sim.pid(), libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(100));
    assert!(sim.child.try_wait().unwrap().is_none(), "should still run");
    sim.child.kill().unwrap();

    let mut sim = faulty(&home, "spawn_tool");
    let h = sim.hello();
    let tool = h["diagnostics"][1]["tool_pid"].as_i64().expect("tool_pid") as i32;
    assert_eq!(h["diagnostics"][0]["pid"], sim.pid());
    assert_eq!(unsafe { libc::getpgid(tool) }, unsafe { libc::getpgid(sim.pid()) });
    sim.detach();
    assert_ne!(unsafe { libc::kill(tool, 0) }, 0, "tool still alive after detach");

    let mut sim = faulty(&home, "event_flood");
    sim.hello();
    sim.ok("create", json!({}));
    let id = sim.send("submit", json!({"text": "go"}));
    let mut outputs = 0;
    let r = loop {
        let f = sim.frame();
        if f["id"] == id.as_str() {
            break f;
        }
        if f["name"] == "output" {
            outputs += 1;
        }
    };
    assert_eq!(r["result"]["turn"], "t-1");
    assert_eq!(outputs, 2000);
    sim.detach();

    let mut sim = faulty(&home, "stderr_flood");
    sim.hello();
    // stderr is read by another thread: wait for the flood to be all in.
    sim.wait_stderr("koma-sim: flood end\n");
    let err = sim.stderr();
    assert!(err.starts_with("koma-sim: flood line 0000001 "));
    let end = err.find("koma-sim: flood end\n").expect("flood end") + "koma-sim: flood end\n".len();
    assert_eq!(end, 1 << 20);
    sim.detach();

    let mut sim = faulty(&home, "orphan_tool");
    sim.hello();
    sim.write_raw(&state_line("1"));
    assert_eq!(sim.wait_exit().code(), Some(1));
    sim.wait_stderr("exiting on purpose");
    let err = sim.stderr();
    let pid: i32 = err.split("koma-sim: tool pid ").nth(1).unwrap().lines().next().unwrap().parse().unwrap();
    assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "the orphan runs");
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = std::fs::remove_dir_all(home);
}
