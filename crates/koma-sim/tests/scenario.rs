//! Scripted koma-sim: KOMA_SIM_SCENARIO and KOMA_SIM_RECORD, driven with
//! raw lines like the other tests.

mod common;
use common::*;
use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Writes `scenario` into `home` and returns its path.
fn write_scenario(home: &Path, scenario: &Value) -> PathBuf {
    let path = home.join("scenario.json");
    std::fs::write(&path, serde_json::to_vec_pretty(scenario).unwrap()).unwrap();
    path
}

/// A sim playing `scenario`, with a session created (its diagnostic read).
fn scripted(home: &Path, scenario: Value, env: &[(&str, &str)]) -> Sim {
    let path = write_scenario(home, &scenario);
    let mut all = vec![("KOMA_SIM_SCENARIO", path.to_str().unwrap())];
    all.extend_from_slice(env);
    let mut sim = Sim::spawn(home, &all);
    sim.hello();
    sim.ok("create", json!({}));
    assert_eq!(sim.next_event()["name"], "diagnostic");
    sim
}

/// Submits `text` and returns the turn's events (through the state after
/// its turn_finished).
fn play(sim: &mut Sim, text: &str) -> Vec<Value> {
    let turn = sim.ok("submit", json!({"text": text}))["turn"].as_str().unwrap().to_string();
    sim.turn_events(&turn)
}

fn datas(evs: &[Value]) -> Vec<Value> {
    evs.iter().map(|e| json!([e["name"], e["data"]])).collect()
}

#[test]
fn each_matcher_picks_its_turn() {
    let home = temp_home("sc-match");
    let mut sim = scripted(
        &home,
        json!({"turns": [
            {"match": {"turn": 2}, "steps": [{"do": "output", "text": "second turn"}]},
            {"match": {"text": "exact words"}, "steps": [{"do": "output", "text": "exact"}]},
            {"match": {"contains": "deploy"}, "times": 2, "steps": [{"do": "output", "text": "contains"}]},
            {"match": {"regex": "^fix (\\w+)\\.rs$"}, "times": "always", "steps": [{"do": "output", "text": "regex"}]},
            {"steps": [{"do": "output", "text": "any"}]}
        ]}),
        &[],
    );
    // The first entry, in the order listed, that matches and has turns left.
    assert_eq!(output_text(&play(&mut sim, "exact words")), "exact");
    assert_eq!(output_text(&play(&mut sim, "exact words")), "second turn");
    assert_eq!(output_text(&play(&mut sim, "exact words")), "any");
    assert_eq!(output_text(&play(&mut sim, "please deploy now")), "contains");
    assert_eq!(output_text(&play(&mut sim, "deploy")), "contains");
    // Every entry that matches is used up: the default is an error.
    let r = sim.call("submit", json!({"text": "deploy"}));
    assert_eq!(r["error"]["code"], "unscripted", "{r}");
    for text in ["fix main.rs", "fix lib.rs", "fix a.rs"] {
        let evs = play(&mut sim, text);
        assert_eq!(output_text(&evs), "regex", "{text}");
        assert_eq!(evs[0]["data"]["text"], text);
    }
    // Case counts, and the pattern is anchored only where it says.
    for text in ["Fix main.rs", "fix main.rs now", "deploy"] {
        assert_eq!(sim.err("submit", json!({"text": text})), "unscripted", "{text}");
    }
    assert_eq!(sim.ok("state", json!({}))["turn"], Value::Null);
    sim.detach();
    sim.wait_stderr("koma-sim: turn t-1 plays turns[1] of the scenario\n");
    sim.wait_stderr("koma-sim: turn t-2 plays turns[0] of the scenario\n");
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn steps_play_in_order_and_finish_says_any_status() {
    let home = temp_home("sc-steps");
    let mut sim = scripted(
        &home,
        json!({"turns": [
            {"steps": [
                {"do": "output", "text": "Looking."},
                {"do": "tool", "tool": "run_tests", "input": {"suite": "unit"}, "output": {"passed": 3}},
                {"do": "tool", "tool": "lint", "output": "2 warnings", "error": true},
                {"do": "event", "name": "progress", "data": {"pct": 50}},
                {"do": "event", "name": "output", "data": {"turn": "t-x", "text": "odd"}},
                {"do": "event", "name": "bare"},
                {"do": "event", "name": "scalar", "data": 7},
                {"do": "output", "text": " Done."},
                {"do": "finish", "status": "escalated", "error": "handed to a human"}
            ]},
            {"steps": []},
            {"steps": [{"do": "finish", "status": "failed", "error": "boom"}]},
            {"steps": [{"do": "output", "text": "early"}, {"do": "finish"}]}
        ]}),
        &[],
    );
    let evs = play(&mut sim, "go");
    assert_eq!(
        datas(&evs)[2..],
        [
            json!(["output", {"turn": "t-1", "text": "Looking."}]),
            json!(["tool_call", {"turn": "t-1", "call": "c-1", "tool": "run_tests", "input": {"suite": "unit"}}]),
            json!(["tool_result", {"turn": "t-1", "call": "c-1", "output": {"passed": 3}, "error": false}]),
            json!(["tool_call", {"turn": "t-1", "call": "c-2", "tool": "lint", "input": {}}]),
            json!(["tool_result", {"turn": "t-1", "call": "c-2", "output": "2 warnings", "error": true}]),
            json!(["progress", {"pct": 50}]),
            json!(["output", {"turn": "t-x", "text": "odd"}]),
            json!(["bare", {}]),
            json!(["scalar", 7]),
            json!(["output", {"turn": "t-1", "text": " Done."}]),
            json!(["turn_finished", {"turn": "t-1", "status": "escalated", "error": "handed to a human"}]),
            json!(["state", {"session": evs[1]["data"]["session"], "status": "idle", "turn": null, "queued": 0, "model": "sim-1"}]),
        ]
    );
    assert_eq!(
        datas(&evs[..2]),
        [json!(["turn_started", {"turn": "t-1", "text": "go"}]), datas(&evs[1..2])[0].clone()]
    );
    assert_eq!(evs[1]["data"]["status"], "running");
    // No steps: completed at once.
    let evs = play(&mut sim, "nothing");
    assert_eq!(names(&evs), ["turn_started", "state", "turn_finished", "state"]);
    assert_eq!(evs[2]["data"], json!({"turn": "t-2", "status": "completed"}));
    let evs = play(&mut sim, "fail");
    assert_eq!(evs[2]["data"], json!({"turn": "t-3", "status": "failed", "error": "boom"}));
    let evs = play(&mut sim, "early");
    assert_eq!(evs[3]["data"], json!({"turn": "t-4", "status": "completed"}));
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn approvals_play_what_follows_allow_and_deny() {
    let home = temp_home("sc-approve");
    let mut sim = scripted(
        &home,
        json!({"turns": [
            {"match": {"contains": "push"}, "times": "always", "steps": [
                {"do": "output", "text": "Pushing."},
                {"do": "approval", "tool": "git_push", "input": {"remote": "origin"},
                 "allow": {"output": "pushed", "steps": [{"do": "output", "text": "Pushed."}]},
                 "deny": {"output": {"why": "refused"}, "steps": [{"do": "finish", "status": "failed", "error": "the push was denied"}]}},
                {"do": "output", "text": "After."}
            ]},
            {"match": {"contains": "plain"}, "times": "always", "steps": [{"do": "approval", "tool": "rm"}]}
        ]}),
        &[],
    );
    sim.ok("submit", json!({"text": "push it"}));
    let evs = sim.events_until(|e| e["name"] == "state" && e["data"]["status"] == "waiting");
    assert_eq!(
        datas(&evs)[2..5],
        [
            json!(["output", {"turn": "t-1", "text": "Pushing."}]),
            json!(["tool_call", {"turn": "t-1", "call": "c-1", "tool": "git_push", "input": {"remote": "origin"}}]),
            json!(["approval_requested", {"turn": "t-1", "approval": "a-1", "tool": "git_push", "input": {"remote": "origin"}}]),
        ]
    );
    assert_eq!(sim.ok("state", json!({}))["status"], "waiting");
    assert_eq!(sim.ok("approve", json!({"approval": "a-1", "decision": "allow"})), json!({}));
    // The result and the state come before the answer.
    assert_eq!(sim.pending_events(), 2);
    let evs = sim.turn_events("t-1");
    assert_eq!(evs[0]["data"], json!({"turn": "t-1", "call": "c-1", "output": "pushed", "error": false}));
    assert_eq!(evs[1]["data"]["status"], "running");
    assert_eq!(output_text(&evs), "Pushed.After.");
    assert_eq!(evs[evs.len() - 2]["data"], json!({"turn": "t-1", "status": "completed"}));

    sim.ok("submit", json!({"text": "push again"}));
    sim.events_until(|e| e["name"] == "approval_requested");
    assert_eq!(sim.err("approve", json!({"approval": "a-1", "decision": "deny"})), "unknown_approval");
    sim.ok("approve", json!({"approval": "a-2", "decision": "deny"}));
    let evs = sim.turn_events("t-2");
    assert_eq!(names(&evs)[..2], ["state", "tool_result"]);
    assert_eq!(evs[1]["data"], json!({"turn": "t-2", "call": "c-2", "output": {"why": "refused"}, "error": true}));
    assert_eq!(evs[2]["data"]["status"], "running");
    assert_eq!(evs[3]["data"], json!({"turn": "t-2", "status": "failed", "error": "the push was denied"}));
    assert_eq!(output_text(&evs), "", "the rest of the turn is not played");

    // Without branches: "allowed" and "denied", and nothing after.
    for (decision, output, error) in [("allow", "allowed", false), ("deny", "denied", true)] {
        let turn = sim.ok("submit", json!({"text": "plain"}))["turn"].as_str().unwrap().to_string();
        let ask = sim.events_until(|e| e["name"] == "approval_requested").pop().unwrap();
        assert_eq!(ask["data"]["input"], json!({}));
        sim.ok("approve", json!({"approval": ask["data"]["approval"], "decision": decision}));
        let evs = sim.turn_events(&turn);
        let result = evs.iter().find(|e| e["name"] == "tool_result").unwrap();
        assert_eq!((result["data"]["output"].as_str(), result["data"]["error"].as_bool()), (Some(output), Some(error)));
        assert_eq!(names(&evs[evs.len() - 3..]), ["state", "turn_finished", "state"]);
    }

    // An approval nobody answers ends with the client: end of stdin.
    sim.ok("submit", json!({"text": "push, then walk away"}));
    sim.events_until(|e| e["name"] == "state" && e["data"]["status"] == "waiting");
    sim.close_stdin();
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"]["status"], "interrupted");
    assert_eq!(sim.wait_exit().code(), Some(0));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn an_approval_nobody_answers_ends_with_sigterm_or_detach() {
    let home = temp_home("sc-hang");
    let scenario = json!({"turns": [{"times": "always", "steps": [{"do": "approval", "tool": "t"}]}]});
    let mut sim = scripted(&home, scenario.clone(), &[]);
    sim.ok("submit", json!({"text": "x"}));
    sim.events_until(|e| e["name"] == "approval_requested");
    // SAFETY (test): a signal to our own child.
    unsafe { libc::kill(sim.pid(), libc::SIGTERM) };
    assert_eq!(sim.wait_exit().signal(), Some(libc::SIGTERM));

    let mut sim = scripted(&home, scenario, &[]);
    sim.ok("submit", json!({"text": "x"}));
    sim.events_until(|e| e["name"] == "approval_requested");
    let id = sim.send("detach", json!({}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"]["status"], "interrupted");
    assert_eq!(sim.response(&id)["result"], json!({}));
    assert_eq!(sim.wait_exit().code(), Some(0));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn pauses_for_a_while_or_until_interrupted() {
    let home = temp_home("sc-pause");
    let mut sim = scripted(
        &home,
        json!({"turns": [
            {"match": {"text": "short"}, "steps": [{"do": "output", "text": "a"}, {"do": "pause", "ms": 300}, {"do": "output", "text": "b"}]},
            {"match": {"text": "long"}, "steps": [{"do": "output", "text": "a"}, {"do": "pause", "ms": 600000}, {"do": "output", "text": "never"}]},
            {"match": {"text": "forever"}, "times": "always", "steps": [{"do": "output", "text": "waiting"}, {"do": "pause"}, {"do": "output", "text": "never"}]},
            {"match": {"text": "instead"}, "steps": []}
        ]}),
        &[],
    );
    let started = Instant::now();
    let evs = play(&mut sim, "short");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(output_text(&evs), "ab");

    // A timed pause is cut short by an interrupt.
    sim.ok("submit", json!({"text": "long"}));
    sim.events_until(|e| e["name"] == "output");
    assert_eq!(sim.ok("state", json!({}))["status"], "running");
    assert_eq!(sim.ok("interrupt", json!({})), json!({"turn": "t-2"}));
    let evs = sim.turn_events("t-2");
    assert_eq!(datas(&evs)[0], json!(["turn_finished", {"turn": "t-2", "status": "interrupted"}]));
    assert_eq!(evs[1]["data"]["status"], "idle");

    // A pause without ms waits for the interrupt, however long.
    sim.ok("submit", json!({"text": "forever"}));
    sim.events_until(|e| e["name"] == "output");
    assert!(sim.quiet_for(Duration::from_millis(200)));
    assert_eq!(sim.ok("state", json!({}))["status"], "running");
    sim.ok("interrupt", json!({}));
    let evs = sim.turn_events("t-3");
    assert_eq!(evs[0]["data"]["status"], "interrupted");
    // interrupt_and_submit too; then the end of stdin ends a paused turn.
    sim.ok("submit", json!({"text": "forever"}));
    sim.events_until(|e| e["name"] == "output");
    assert_eq!(
        sim.ok("interrupt_and_submit", json!({"text": "instead"})),
        json!({"interrupted": "t-4", "turn": "t-5"})
    );
    sim.turn_events("t-5");
    sim.ok("submit", json!({"text": "forever"}));
    sim.events_until(|e| e["name"] == "output");
    sim.close_stdin();
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"], json!({"turn": "t-6", "status": "interrupted"}));
    assert_eq!(sim.wait_exit().code(), Some(0));
    assert!(!sim.stderr().contains("never"));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn failures_exit_and_crash_at_the_chosen_step() {
    let home = temp_home("sc-die");
    let mut sim = scripted(
        &home,
        json!({"turns": [{"steps": [{"do": "output", "text": "before"}, {"do": "exit", "code": 7}, {"do": "output", "text": "after"}]}]}),
        &[],
    );
    sim.ok("submit", json!({"text": "go"}));
    let evs = sim.events_until(|e| e["name"] == "output");
    assert_eq!(evs.last().unwrap()["data"]["text"], "before", "what was queued is written first");
    assert!(sim.raw_line().is_none(), "stdout ends");
    assert_eq!(sim.wait_exit().code(), Some(7));
    sim.wait_stderr("koma-sim: turn t-1: exiting with code 7 (scenario)\n");

    for (signal, number) in [("SIGSEGV", libc::SIGSEGV), ("SIGKILL", libc::SIGKILL), ("SIGTERM", libc::SIGTERM)] {
        let mut sim = scripted(
            &home,
            json!({"turns": [{"steps": [{"do": "output", "text": "before"}, {"do": "crash", "signal": signal}]}]}),
            // Even with SIGTERM ignored, a crash by SIGTERM dies of it.
            &[("KOMA_SIM_FAULT", "ignore_sigterm")],
        );
        sim.ok("submit", json!({"text": "go"}));
        let evs = sim.events_until(|e| e["name"] == "output");
        assert_eq!(evs.last().unwrap()["data"]["text"], "before");
        assert!(sim.raw_line().is_none(), "stdout ends");
        let status = sim.wait_exit();
        assert_eq!(status.signal(), Some(number), "{signal}: {status:?}");
        assert!(!status.core_dumped(), "{signal}");
        sim.wait_stderr(&format!("koma-sim: turn t-1: crashing by {signal} (scenario)\n"));
    }
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn stop_answering_stops_answers_and_events() {
    let home = temp_home("sc-silent");
    let record = home.join("requests.jsonl");
    let mut sim = scripted(
        &home,
        json!({"turns": [{"steps": [{"do": "output", "text": "one"}, {"do": "stop_answering"}, {"do": "output", "text": "never"}]}]}),
        &[("KOMA_SIM_RECORD", record.to_str().unwrap())],
    );
    sim.ok("submit", json!({"text": "go"}));
    sim.events_until(|e| e["name"] == "output");
    sim.wait_stderr("no more answers or events");
    sim.send("state", json!({}));
    sim.send("interrupt", json!({}));
    sim.send("detach", json!({}));
    // Still read and recorded, never answered; detach does not end it.
    wait_for_lines(&record, 5);
    assert!(sim.quiet_for(Duration::from_millis(300)), "no answer and no event");
    assert!(sim.child.try_wait().unwrap().is_none(), "still running after detach");
    sim.close_stdin();
    assert!(sim.raw_line().is_none());
    assert_eq!(sim.wait_exit().code(), Some(0));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn broken_frames_are_written_and_the_turn_goes_on() {
    let home = temp_home("sc-broken");
    let mut sim = scripted(
        &home,
        json!({"turns": [{"steps": [
            {"do": "output", "text": "x"},
            {"do": "broken_frame"},
            {"do": "broken_frame", "line": "INFO custom {"},
            {"do": "output", "text": "y"}
        ]}]}),
        &[],
    );
    sim.send("submit", json!({"text": "go"}));
    let mut lines = Vec::new();
    loop {
        let l = String::from_utf8(sim.raw_line().unwrap()).unwrap();
        let done = l.contains("\"turn_finished\"");
        lines.push(l);
        if done {
            break;
        }
    }
    let at =
        |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {lines:?}"));
    assert_eq!(lines[at("\"x\"") + 1], "this line is not JSON (koma-sim scenario)\n");
    assert_eq!(lines[at("\"x\"") + 2], "INFO custom {\n");
    assert_eq!(at("\"y\""), at("\"x\"") + 3);
    sim.wait_stderr("a line that is not JSON (scenario broken_frame)");
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn methods_get_scripted_answers() {
    let home = temp_home("sc-methods");
    let mut sim = scripted(
        &home,
        json!({
            "unscripted": "agent",
            "methods": [
                {"method": "submit", "nth": 2, "error": {"code": "busy", "message": "turn t-9 is running", "data": {"turn": "t-9"}}},
                {"method": "state", "nth": 1, "delay_ms": 300},
                {"method": "state", "nth": 2, "delay_ms": 600000},
                {"method": "configure", "result": {"ok": true}},
                {"method": "interrupt", "error": {"code": "nope"}}
            ]
        }),
        &[],
    );
    // The first submit is the agent's; the second gets the scripted error
    // and starts nothing.
    let evs = play(&mut sim, "hello");
    assert!(output_text(&evs).starts_with("Sim reply (sim-1, t-1)"), "{}", output_text(&evs));
    let r = sim.call("submit", json!({"text": "again"}));
    assert_eq!(r["error"], json!({"code": "busy", "message": "turn t-9 is running", "data": {"turn": "t-9"}}));
    // A slow state: carried out at once, answered 300 ms later.
    let started = Instant::now();
    let st = sim.ok("state", json!({}));
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!((st["status"].as_str(), st["turn"].as_str()), (Some("idle"), None));
    assert_eq!(sim.pending_events(), 0, "the scripted error started no turn");
    // One that takes ten minutes does not hold up the next request.
    let slow = sim.send("state", json!({}));
    assert_eq!(sim.ok("state", json!({}))["status"], "idle");
    // A scripted result: nothing is carried out (no state event, no model).
    assert_eq!(sim.ok("configure", json!({"model": "m-2"})), json!({"ok": true}));
    assert_eq!(sim.ok("configure", json!({"model": "m-3"})), json!({"ok": true}), "every call");
    assert_eq!(sim.ok("state", json!({}))["model"], "sim-1");
    assert_eq!(sim.pending_events(), 0);
    let r = sim.call("interrupt", json!({}));
    assert_eq!(r["error"], json!({"code": "nope", "message": "nope (scripted by the scenario)"}));
    assert_eq!(sim.ok("submit", json!({"text": "third"}))["turn"], "t-2");
    sim.turn_events("t-2");
    sim.detach();
    sim.wait_stderr(&format!("koma-sim: answering id {slow} in 600000 ms (scenario)\n"));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn a_slow_detach_answers_late_then_exits() {
    let home = temp_home("sc-detach");
    let mut sim = scripted(&home, json!({"methods": [{"method": "detach", "delay_ms": 200}]}), &[]);
    let started = Instant::now();
    sim.detach();
    assert!(started.elapsed() >= Duration::from_millis(200));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn a_text_that_only_a_used_up_entry_matches_names_that_entry() {
    let home = temp_home("sc-used-up");
    let mut sim = scripted(
        &home,
        json!({"turns": [
            {"match": {"contains": "deploy"}, "times": 2, "steps": [{"do": "output", "text": "ok"}]},
            {"steps": [{"do": "output", "text": "any"}]}
        ]}),
        &[],
    );
    play(&mut sim, "deploy a");
    play(&mut sim, "deploy b");
    play(&mut sim, "something");
    let r = sim.call("submit", json!({"text": "deploy c"}));
    assert_eq!(
        r["error"]["message"],
        "no turn of the scenario matches the text \"deploy c\": turns[0] (contains \"deploy\") matches it, but is used up (times 2: it has played 2 turns)"
    );
    let r = sim.call("submit", json!({"text": "other"}));
    assert_eq!(
        r["error"]["message"],
        "no turn of the scenario matches the text \"other\": turns[1] (any text) matches it, but is used up (times 1: it has played 1 turn)"
    );
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn unscripted_turns_are_refused_by_default_or_played_by_the_agent() {
    let home = temp_home("sc-unscripted");
    let mut sim = scripted(&home, json!({"turns": [{"match": {"text": "known"}, "steps": [{"do": "pause"}]}]}), &[]);
    let r = sim.call("submit", json!({"text": "hello \"you\""}));
    assert_eq!(
        r["error"],
        json!({"code": "unscripted", "message": "no turn of the scenario matches the text \"hello \\\"you\\\"\"", "data": {"text": "hello \"you\""}})
    );
    assert_eq!(sim.err("enqueue", json!({"text": "hello"})), "unscripted");
    assert_eq!(sim.ok("state", json!({}))["status"], "idle");
    assert_eq!(sim.pending_events(), 0);
    assert_eq!(sim.ok("submit", json!({"text": "known"}))["turn"], "t-1");
    assert_eq!(sim.ok("enqueue", json!({"text": "later"})), json!({"position": 1}));
    // Refused before anything is stopped.
    assert_eq!(sim.err("interrupt_and_submit", json!({"text": "nope"})), "unscripted");
    let st = sim.ok("state", json!({}));
    assert_eq!((st["turn"].as_str(), st["queued"].as_u64()), (Some("t-1"), Some(1)));
    // A queued text that nothing matches: its turn fails.
    sim.ok("interrupt", json!({}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished" && e["data"]["turn"] == "t-2");
    assert_eq!(evs[evs.len() - 3]["data"], json!({"turn": "t-2", "text": "later"}));
    assert_eq!(
        evs.last().unwrap()["data"],
        json!({"turn": "t-2", "status": "failed", "error": "no turn of the scenario matches the text \"later\""})
    );
    assert_eq!(sim.next_event()["data"]["status"], "idle");
    sim.detach();

    let mut sim = scripted(&home, json!({"unscripted": "agent", "turns": []}), &[]);
    let evs = play(&mut sim, "show me x.txt");
    assert_eq!(evs[2]["data"]["tool"], "read_file");
    assert!(output_text(&evs).contains("I read x.txt."));
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

/// Waits (boundedly) until `path` holds at least `n` lines; returns them.
fn wait_for_lines(path: &Path, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= n {
            assert!(text.ends_with('\n'), "whole lines only: {text:?}");
            return text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        }
        assert!(start.elapsed() < TIMEOUT, "{} has {} lines, not {n}", path.display(), text.lines().count());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_record_has_every_request_as_it_is_read() {
    let home = temp_home("sc-record");
    let record = home.join("requests.jsonl");
    let env = [("KOMA_SIM_RECORD", record.to_str().unwrap())];
    let mut sim = Sim::spawn(&home, &env);
    sim.hello();
    sim.ok("create", json!({"model": "m"}));
    sim.ok("submit", json!({"text": "hi"}));
    // Ignored lines are not requests; a request without a method or with
    // null params is.
    sim.write_raw(b"not json\n{\"method\":\"state\"}\n{\"id\":\"x1\",\"params\":{\"a\":1}}\n");
    assert_eq!(sim.response("x1")["error"]["code"], "invalid_request");
    sim.write_raw(b"{\"id\":\"x2\",\"method\":\"state\",\"params\":null}\n");
    sim.response("x2");
    let pid = sim.pid();
    let lines = wait_for_lines(&record, 4);
    assert_eq!(
        lines,
        [
            json!({"n": 1, "pid": pid, "id": "1", "method": "create", "params": {"model": "m"}}),
            json!({"n": 2, "pid": pid, "id": "2", "method": "submit", "params": {"text": "hi"}}),
            json!({"n": 3, "pid": pid, "id": "x1", "method": null, "params": {"a": 1}}),
            json!({"n": 4, "pid": pid, "id": "x2", "method": "state", "params": {}}),
        ]
    );
    let first = std::fs::read_to_string(&record).unwrap();
    assert!(first.starts_with("{\"n\":1,\"pid\":"), "keys in a fixed order: {first}");
    sim.detach();
    assert_eq!(wait_for_lines(&record, 5)[4]["method"], "detach");

    // A second run appends; a request that kills the sim is recorded first.
    let mut sim = Sim::spawn(&home, &[env[0], ("KOMA_SIM_FAULT", "exit_mid_request")]);
    sim.hello();
    sim.send("state", json!({}));
    assert_eq!(sim.wait_exit().code(), Some(3));
    let lines = wait_for_lines(&record, 6);
    assert_eq!(lines[5], json!({"n": 1, "pid": sim.pid(), "id": "1", "method": "state", "params": {}}));
    let _ = std::fs::remove_dir_all(home);
}

/// Runs `koma-sim sdk serve` with this environment and no stdin; its exit
/// code, stdout and stderr.
fn run_with(env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["sdk", "serve"]).stdin(Stdio::null());
    for var in ["KOMA_SIM_FAULT", "KOMA_SIM_SCENARIO", "KOMA_SIM_RECORD"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// Runs `koma-sim check-scenario` with `text` on stdin; its exit code,
/// stdout and stderr.
fn check_with(text: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .arg("check-scenario")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn a_bad_scenario_exits_64_with_one_line_naming_the_turn_and_the_field() {
    let home = temp_home("sc-bad");
    // The steps of the format, in its order: each `do` of `Step`'s `oneOf`.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/scenario.schema.json")).unwrap(),
    )
    .unwrap();
    let steps: Vec<&str> = schema["$defs"]["Step"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let name = r["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
            schema["$defs"][name]["properties"]["do"]["const"].as_str().unwrap()
        })
        .collect();
    let steps = steps.join(", ");
    // The protocol's methods (docs/protocol.md), which hello lists.
    const METHODS: &str =
        "create, resume, state, submit, enqueue, interrupt, interrupt_and_submit, approve, detach, configure";
    let cases: &[(&str, String)] = &[
        // An unknown step.
        (
            r#"{"turns":[{"match":{"contains":"deploy"},"steps":[{"do":"output","text":"a"},{"do":"explode"}]}]}"#,
            format!("turns[0] (contains \"deploy\"): steps[1].do: unknown step \"explode\" (the steps are: {steps})"),
        ),
        (r#"{"turns":[{"steps":[{"text":"a"}]}]}"#, format!("turns[0] (any text): steps[0].do: missing (every step has `do`, one of: {steps})")),
        // A missing field.
        (
            r#"{"turns":[{"steps":[]},{"match":{"turn":2},"steps":[{"do":"exit"}]}]}"#,
            "turns[1] (turn 2): steps[0].code: missing (the step `exit` needs `code`)".into(),
        ),
        (r#"{"turns":[{"match":{"text":"hi"}}]}"#, "turns[0] (text \"hi\"): steps: missing (a turn needs `steps`)".into()),
        (
            r#"{"methods":[{"method":"submit","nth":2,"error":{"message":"x"}}]}"#,
            "methods[0] (submit, call 2): error.code: missing (an error needs `code`)".into(),
        ),
        (r#"{"methods":[{"nth":1,"result":{}}]}"#, "methods[0]: method: missing (a method entry needs `method`)".into()),
        // A bad regular expression.
        (
            r#"{"turns":[{"match":{"regex":"fix (.*"},"steps":[]}]}"#,
            "turns[0] (regex \"fix (.*\"): match.regex: not a valid regular expression: unclosed group".into(),
        ),
        // Wrong types.
        (
            r#"{"turns":[{"match":{"text":"hi"},"steps":[{"do":"output","text":42}]}]}"#,
            "turns[0] (text \"hi\"): steps[0].text: must be a string, not 42".into(),
        ),
        (
            r#"{"turns":[{"steps":[{"do":"tool","tool":"t","output":1,"error":"yes"}]}]}"#,
            "turns[0] (any text): steps[0].error: must be a boolean, not a string".into(),
        ),
        (
            r#"{"turns":[{"steps":[{"do":"approval","tool":"x","allow":{"steps":[{"do":"output","text":1}]}}]}]}"#,
            "turns[0] (any text): steps[0].allow.steps[0].text: must be a string, not 1".into(),
        ),
        (r#"{"turns":[{"steps":[{"do":3}]}]}"#, "turns[0] (any text): steps[0].do: must be a string, not 3".into()),
        (r#"{"turns":[{"steps":[{"do":"finish","status":null}]}]}"#, "turns[0] (any text): steps[0].status: must be a string, not null".into()),
        (r#"{"methods":[{"method":"state","result":1,"delay_ms":1.5}]}"#, "methods[0] (state, every call): delay_ms: must be a non-negative integer, not 1.5".into()),
        (r#"{"turns":[{"match":{"turn":"2"},"steps":[]}]}"#, "turns[0] (turn \"2\"): match.turn: must be a positive integer, not a string".into()),
        (r#"{"turns":[{"steps":[{"do":"pause","ms":-5}]}]}"#, "turns[0] (any text): steps[0].ms: must be a non-negative integer, not -5".into()),
        (r#"{"turns":[{"steps":{}}]}"#, "turns[0] (any text): steps: must be an array of steps, not an object".into()),
        (r#"{"turns":[{"steps":["output"]}]}"#, "turns[0] (any text): steps[0]: must be an object (a step), not a string".into()),
        (r#"{"turns":[{"match":"hi","steps":[]}]}"#, "turns[0]: match: must be an object (a match), not a string".into()),
        (r#"{"turns":[{"match":{"turn":0},"steps":[]}]}"#, "turns[0] (turn 0): match.turn: must be a positive integer (1 is the first turn), not 0".into()),
        (r#"{"turns":[{"match":{"text":null},"steps":[]}]}"#, "turns[0]: match.text: must be a string, not null".into()),
        (r#"{"turns":[{"times":0,"steps":[]}]}"#, "turns[0] (any text): times: must be a positive integer or \"always\", not 0".into()),
        (r#"{"turns":{}}"#, "turns: must be an array of turns, not an object".into()),
        (r#"{"turns":[3]}"#, "turns[0]: must be an object (a turn), not 3".into()),
        (r#"[]"#, "must be an object (the scenario), not an array".into()),
        (r#"{"methods":[{"method":"state","nth":0,"delay_ms":1}]}"#, "methods[0] (state, call 0): nth: must be a positive integer (1 is the first call), not 0".into()),
        // Unknown fields and values.
        (
            r#"{"turns":[{"mtach":{"text":"hi"},"steps":[]}]}"#,
            "turns[0] (any text): mtach: unknown field (a turn has: match, times, steps, about)".into(),
        ),
        (
            r#"{"turns":[{"steps":[{"do":"output","txt":"a"}]}]}"#,
            "turns[0] (any text): steps[0].txt: unknown field (the step `output` has: do, text)".into(),
        ),
        (r#"{"turn":[]}"#, "turn: unknown field (the scenario has: turns, methods, unscripted, about, format, $schema)".into()),
        (
            r#"{"turns":[{"match":{"word":"a"},"steps":[]}]}"#,
            "turns[0]: match.word: unknown matcher (a match has one of: turn, text, contains, regex)".into(),
        ),
        (r#"{"turns":[{"match":{"text":"a","contains":"b"},"steps":[]}]}"#, "turns[0]: match: has 2 matchers (contains, text); give one".into()),
        (r#"{"turns":[{"match":{},"steps":[]}]}"#, "turns[0]: match: has no matcher (give one of: turn, text, contains, regex)".into()),
        (r#"{"unscripted":"maybe"}"#, "unscripted: must be \"agent\" or \"error\", not \"maybe\"".into()),
        (r#"{"format":2}"#, "format: must be 1 (the only format there is), not 2".into()),
        (
            r#"{"turns":[{"steps":[{"do":"approval","tool":"x","deny":{"steps":[{"do":"crash","signal":"SIGFOO"}]}}]}]}"#,
            "turns[0] (any text): steps[0].deny.steps[0].signal: unknown signal \"SIGFOO\" (the signals are: SIGABRT, SIGALRM, SIGBUS, SIGFPE, SIGHUP, SIGILL, SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGSEGV, SIGTERM, SIGUSR1, SIGUSR2)".into(),
        ),
        (
            r#"{"turns":[{"steps":[{"do":"approval","tool":"x","allow":{"output":1,"then":[]}}]}]}"#,
            "turns[0] (any text): steps[0].allow.then: unknown field (an approval's branch has: output, error, steps)".into(),
        ),
        (r#"{"turns":[{"steps":[{"do":"exit","code":300}]}]}"#, "turns[0] (any text): steps[0].code: must be an exit code, 0 to 255, not 300".into()),
        (
            r#"{"turns":[{"steps":[{"do":"finish"},{"do":"output","text":"late"}]}]}"#,
            "turns[0] (any text): steps[1]: comes after a `finish` step, which ends the turn".into(),
        ),
        (r#"{"turns":[{"steps":[{"do":"event","name":""}]}]}"#, "turns[0] (any text): steps[0].name: must not be empty".into()),
        (r#"{"turns":[{"steps":[{"do":"broken_frame","line":"a\nb"}]}]}"#, "turns[0] (any text): steps[0].line: must be one line (no line break)".into()),
        (r#"{"methods":[{"method":"state"}]}"#, "methods[0] (state, every call): scripts nothing: give `result`, `error` or `delay_ms`".into()),
        (r#"{"methods":[{"method":"state","result":1,"error":{"code":"x"}}]}"#, "methods[0] (state, every call): has both `result` and `error`; give one".into()),
        (r#"{"methods":[{"method":"","result":1}]}"#, format!("methods[0] (, every call): method: unknown method \"\" (the methods are: {METHODS})")),
        (r#"{"methods":[{"method":"sumbit","result":1}]}"#, format!("methods[0] (sumbit, every call): method: unknown method \"sumbit\" (the methods are: {METHODS})")),
        // Not JSON.
        (r#"{"turns": ["#, "not JSON: EOF while parsing a list at line 1 column 11".into()),
    ];
    let path = home.join("bad.json");
    let path_text = path.to_str().unwrap();
    for (text, want) in cases {
        std::fs::write(&path, text).unwrap();
        let (code, stdout, stderr) = run_with(&[("KOMA_SIM_SCENARIO", path_text)]);
        assert_eq!(code, Some(64), "{text}: {stderr}");
        assert_eq!(stdout, "", "{text}: nothing before hello");
        assert_eq!(stderr, format!("koma-sim: bad scenario {path_text}: {want}\n"), "{text}");
        // check-scenario finds the same mistake, and gives its parts as JSON.
        let (code, stdout, stderr) = check_with(text);
        assert_eq!(code, Some(64), "{text}: {stderr}");
        assert_eq!(stderr, format!("koma-sim: bad scenario: {want}\n"), "{text}");
        let m: Value = serde_json::from_str(&stdout).unwrap();
        let parts: Vec<&str> = ["entry", "field", "problem"].iter().map(|k| m[*k].as_str().unwrap()).collect();
        let joined = parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join(": ");
        assert_eq!(joined, *want, "{text}");
    }
    let (code, _, stderr) = check_with(r#"{"turns":[{"match":{"contains":"deploy"},"steps":[{"do":"explode"}]}]}"#);
    assert_eq!(code, Some(64), "{stderr}");
    let (_, stdout, _) = check_with(r#"{"methods":[{"method":"state"}]}"#);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"entry": "methods[0] (state, every call)", "field": "", "problem": "scripts nothing: give `result`, `error` or `delay_ms`"})
    );
    let (_, stdout, _) = check_with(r#"{"turns":[{"match":{"turn":2},"steps":[{"do":"exit"}]}]}"#);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"entry": "turns[0] (turn 2)", "field": "steps[0].code", "problem": "missing (the step `exit` needs `code`)"})
    );
    // A good scenario: exit 0, nothing written.
    assert_eq!(
        check_with(r#"{"turns":[{"steps":[{"do":"output","text":"hi"}]}]}"#),
        (Some(0), String::new(), String::new())
    );
    // A file that is not there, and a record file that cannot be made.
    let missing = home.join("missing.json");
    let (code, stdout, stderr) = run_with(&[("KOMA_SIM_SCENARIO", missing.to_str().unwrap())]);
    assert_eq!((code, stdout.as_str()), (Some(64), ""));
    assert!(
        stderr.starts_with(&format!("koma-sim: cannot read the scenario {} (KOMA_SIM_SCENARIO): ", missing.display()))
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let nowhere = home.join("no-such-dir").join("requests.jsonl");
    let (code, stdout, stderr) = run_with(&[("KOMA_SIM_RECORD", nowhere.to_str().unwrap())]);
    assert_eq!((code, stdout.as_str()), (Some(64), ""));
    assert!(
        stderr.starts_with(&format!("koma-sim: cannot open the record file {} (KOMA_SIM_RECORD): ", nowhere.display()))
    );
    // The help tells of both.
    let help = String::from_utf8(Command::new(BIN).arg("--help").output().unwrap().stdout).unwrap();
    assert!(help.contains("KOMA_SIM_SCENARIO") && help.contains("KOMA_SIM_RECORD"), "{help}");
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn the_documented_example_plays_as_written() {
    // The example in docs/koma-sim.md, which koma-sim plays as written.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/koma-sim.md")).unwrap();
    let start = doc.find("```json scenario").expect("the docs have the example") + "```json scenario".len();
    let text = &doc[start..start + doc[start..].find("```").unwrap()];
    let home = temp_home("sc-doc");
    let scenario: Value = serde_json::from_str(text).unwrap();
    let mut sim = scripted(&home, scenario, &[]);
    sim.ok("submit", json!({"text": "deploy to staging"}));
    let ask = sim.events_until(|e| e["name"] == "approval_requested").pop().unwrap();
    assert_eq!(ask["data"]["tool"], "git_push");
    sim.ok("approve", json!({"approval": "a-1", "decision": "deny"}));
    let evs = sim.events_until(|e| e["name"] == "turn_finished");
    assert_eq!(evs.last().unwrap()["data"]["status"], "failed");
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn with_a_shared_progress_a_second_process_goes_on_where_the_first_stopped() {
    let home = temp_home("sc-progress");
    let scenario = json!({
        "turns": [
            {"steps": [{"do": "output", "text": "first"}, {"do": "crash", "signal": "SIGKILL"}]},
            {"match": {"turn": 2}, "steps": [{"do": "output", "text": "second"}]}
        ],
        "methods": [{"method": "state", "nth": 2, "result": {"scripted": true}}]
    });
    let progress = home.join("progress.json");
    let env = [("KOMA_SIM_PROGRESS", progress.to_str().unwrap())];
    let mut a = scripted(&home, scenario.clone(), &env);
    assert_eq!(a.ok("state", json!({}))["status"], "idle");
    a.ok("submit", json!({"text": "go"}));
    a.events_until(|e| e["name"] == "output");
    assert!(a.wait_exit().code().is_none(), "killed by the crash");

    // The second turn of the scenario, and the second `state`, are this one's.
    let mut b = scripted(&home, scenario.clone(), &env);
    assert_eq!(b.ok("state", json!({})), json!({"scripted": true}));
    let evs = play(&mut b, "go");
    assert_eq!(output_text(&evs), "second");
    b.detach();

    // Without it, each process plays the scenario from its start.
    let mut c = scripted(&home, scenario, &[]);
    assert_eq!(c.ok("state", json!({}))["status"], "idle");
    c.ok("submit", json!({"text": "go"}));
    assert_eq!(c.events_until(|e| e["name"] == "output").last().unwrap()["data"]["text"], "first");
    let _ = c.wait_exit();
    let _ = std::fs::remove_dir_all(home);
}
