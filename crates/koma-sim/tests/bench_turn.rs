//! Bench mode's `bench_turn N B` turns.

mod common;
use common::*;
use serde_json::{json, Value};

/// Checks one bench turn's events: turn_started, state (running), `count`
/// outputs of `bytes` "x" for `turn`, turn_finished (completed), state (idle).
fn check_bench_turn(evs: &[Value], turn: &str, text: &str, count: usize, bytes: usize) {
    assert_eq!(evs.len(), count + 4, "{:?}", names(&evs[..evs.len().min(8)]));
    assert_eq!(evs[0]["name"], "turn_started");
    assert_eq!(evs[0]["data"], json!({"turn": turn, "text": text}));
    assert_eq!(evs[1]["name"], "state");
    assert_eq!(evs[1]["data"]["status"], "running");
    let x = "x".repeat(bytes);
    for (i, e) in evs[2..2 + count].iter().enumerate() {
        assert_eq!(e["name"], "output", "event {} of the turn", i + 2);
        assert_eq!(e["data"], json!({"turn": turn, "text": x}), "output {i}");
    }
    assert_eq!(evs[count + 2]["name"], "turn_finished");
    assert_eq!(evs[count + 2]["data"], json!({"turn": turn, "status": "completed"}));
    assert_eq!(evs[count + 3]["name"], "state");
    assert_eq!(evs[count + 3]["data"]["status"], "idle");
    // Contiguous seq across the whole turn (Sim checks it too, across turns).
    let first = evs[0]["seq"].as_u64().unwrap();
    for (i, e) in evs.iter().enumerate() {
        assert_eq!(e["seq"].as_u64(), Some(first + i as u64));
    }
}

#[test]
fn bench_turn_streams_n_outputs_between_the_turns_events() {
    let home = temp_home("bench-turn");
    let mut sim = Sim::spawn(&home, &[("KOMA_SIM_BENCH", "1")]);
    sim.hello();
    sim.ok("create", json!({}));
    sim.next_event();
    // More outputs than one chunk of the worker holds (about 1 MiB).
    assert_eq!(sim.ok("submit", json!({"text": "bench_turn 10000 200"})), json!({"turn": "t-1"}));
    let evs = sim.turn_events("t-1");
    check_bench_turn(&evs, "t-1", "bench_turn 10000 200", 10_000, 200);
    let started = evs[0]["seq"].as_u64().unwrap();

    // None, and a few through enqueue: the same shape.
    assert_eq!(sim.ok("submit", json!({"text": "bench_turn 0 200"}))["turn"], "t-2");
    check_bench_turn(&sim.turn_events("t-2"), "t-2", "bench_turn 0 200", 0, 200);
    assert_eq!(sim.ok("enqueue", json!({"text": "  bench_turn 3 0 "})), json!({"position": 0}));
    check_bench_turn(&sim.turn_events("t-3"), "t-3", "  bench_turn 3 0 ", 3, 0);

    // Any other text is the keyword agent's, bench mode or not.
    sim.ok("submit", json!({"text": "bench_turn 5"}));
    let evs = sim.turn_events("t-4");
    assert!(output_text(&evs).contains("you said \"bench_turn 5\""), "{}", output_text(&evs));
    sim.detach();

    // A resume replays the bench turn byte for byte (it is logged as a range).
    let session = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.ends_with(".jsonl"))
        .unwrap()
        .trim_end_matches(".jsonl")
        .to_string();
    let mut b = Sim::spawn(&home, &[("KOMA_SIM_BENCH", "1")]);
    b.hello();
    b.ok("resume", json!({"session": session, "after": started - 1}));
    let replay = b.turn_events("t-1");
    check_bench_turn(&replay, "t-1", "bench_turn 10000 200", 10_000, 200);
    assert_eq!(replay[0]["seq"].as_u64(), Some(started));
    b.detach();
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn bench_turn_is_a_plain_text_without_bench_mode() {
    let home = temp_home("bench-turn-off");
    let mut sim = Sim::spawn(&home, &[]);
    sim.hello();
    sim.ok("create", json!({}));
    sim.next_event();
    sim.ok("submit", json!({"text": "bench_turn 10000 200"}));
    let evs = sim.turn_events("t-1");
    let outputs = names(&evs).iter().filter(|n| *n == "output").count();
    assert_eq!(outputs, 6);
    assert!(output_text(&evs).contains("you said \"bench_turn 10000 200\""));
    sim.detach();
    let _ = std::fs::remove_dir_all(home);
}
