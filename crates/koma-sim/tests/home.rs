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
    assert!(tmp.join("koma-sim").join(format!("{session}.json")).is_file(), "{:?}", files_under(&tmp));
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
