//! Where sessions go when KOMA_SIM_HOME is unset.

mod common;
use common::*;
use serde_json::json;
use std::path::Path;

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

#[test]
fn without_koma_sim_home_sessions_go_to_the_temp_dir_not_home() {
    let user = temp_home("user-home");
    let tmp = temp_home("tmpdir");
    let state = user.join("state");
    let env = [
        ("HOME", user.to_str().unwrap()),
        ("XDG_STATE_HOME", state.to_str().unwrap()),
        ("TMPDIR", tmp.to_str().unwrap()),
    ];
    let mut sim = Sim::spawn_with(None, &env);
    sim.hello();
    let session = sim.ok("create", json!({}))["session"].as_str().unwrap().to_string();
    sim.detach();
    assert!(tmp.join("koma-sim").join(format!("{session}.jsonl")).is_file(), "{:?}", files_under(&tmp));
    assert_eq!(files_under(&user), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(user);
    let _ = std::fs::remove_dir_all(tmp);
    let help = std::process::Command::new(BIN).arg("--help").output().unwrap().stdout;
    let help = String::from_utf8(help).unwrap();
    assert!(help.contains("<tmp>/koma-sim") && !help.contains(".local/state"), "{help}");
}

#[test]
fn with_koma_sim_save_0_nothing_is_written_and_resume_finds_no_session() {
    let home = temp_home("no-save");
    let home_text = home.to_str().unwrap().to_owned();
    let mut sim = Sim::spawn_with(None, &[("KOMA_SIM_HOME", home_text.as_str()), ("KOMA_SIM_SAVE", "0")]);
    sim.hello();
    let session = sim.ok("create", json!({}))["session"].as_str().unwrap().to_string();
    sim.ok("submit", json!({"text": "hello"}));
    sim.detach();
    assert!(!home.exists() || files_under(&home).is_empty(), "{:?}", files_under(&home));
    let mut again = Sim::spawn_with(None, &[("KOMA_SIM_HOME", home_text.as_str())]);
    again.hello();
    let e = again.err("resume", json!({"session": session}));
    assert_eq!(e, "unknown_session");
    let _ = std::fs::remove_dir_all(home);
    let bad = std::process::Command::new(BIN).args(["sdk", "serve"]).env("KOMA_SIM_SAVE", "no").output().unwrap();
    assert_eq!(bad.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("KOMA_SIM_SAVE must be 0 or 1"));
}

/// Bytes a process has written so far (every write(2): stdout, stderr, files).
fn written(pid: i32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines().find_map(|l| l.strip_prefix("wchar: ")).unwrap().trim().parse().unwrap()
}

#[test]
fn a_turn_writes_as_much_at_the_end_of_a_long_session_as_at_its_start() {
    let home = temp_home("long-session");
    let mut sim = Sim::spawn(&home, &[]);
    sim.hello();
    sim.ok("create", json!({}));
    sim.next_event();
    let turn = |sim: &mut Sim, i: usize| {
        let before = written(sim.pid());
        let t = sim.ok("submit", json!({"text": "hello"}))["turn"].as_str().unwrap().to_string();
        assert_eq!(t, format!("t-{i}"));
        sim.turn_events(&t);
        // The save at the turn's end is made before the state (idle) is sent.
        written(sim.pid()) - before
    };
    let early: Vec<u64> = (1..=10).map(|i| turn(&mut sim, i)).collect();
    for i in 11..500 {
        turn(&mut sim, i);
    }
    let late = turn(&mut sim, 500);
    // The same turn, 490 turns later, writes the same but for its numbers'
    // longer digits (a whole session rewritten at each save would be
    // hundreds of KiB here).
    let first = *early.iter().max().unwrap();
    assert!(late <= first + 256, "turn 500 wrote {late} bytes, turns 1 to 10 at most {first}");
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn a_resume_drops_a_last_line_that_a_kill_cut_short_and_goes_on_appending() {
    let home = temp_home("cut-line");
    let mut a = Sim::spawn(&home, &[]);
    a.hello();
    let session = a.ok("create", json!({}))["session"].as_str().unwrap().to_string();
    a.ok("submit", json!({"text": "one"}));
    a.turn_events("t-1");
    a.detach();
    let file = home.join(format!("{session}.jsonl"));
    // What a process killed in the middle of a write leaves.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"type\":\"event\",\"seq\":99,\"na");
    std::fs::write(&file, text).unwrap();

    let mut b = Sim::spawn(&home, &[]);
    b.hello();
    b.ok("resume", json!({"session": session, "after": 0}));
    let resumed = |e: &serde_json::Value| e["data"]["message"].as_str().is_some_and(|m| m.contains("resumed"));
    let replayed = b.events_until(resumed);
    assert_eq!(replayed.iter().filter(|e| e["name"] == "turn_finished").count(), 1);
    assert_eq!(replayed.iter().filter(|e| e["seq"] == 99).count(), 0);
    assert_eq!(b.ok("submit", json!({"text": "two"}))["turn"], "t-2");
    b.turn_events("t-2");
    b.detach();
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));

    let mut c = Sim::spawn(&home, &[]);
    c.hello();
    c.ok("resume", json!({"session": session, "after": 0}));
    c.events_until(|e| e["name"] == "turn_finished" && e["data"]["turn"] == "t-2");
    c.detach();
    let _ = std::fs::remove_dir_all(home);
}
