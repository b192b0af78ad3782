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
