//! Scripted koma-sim: a scenario (`KOMA_SIM_SCENARIO`) says what each turn
//! does in place of the keyword agent, and how some requests are answered.
//! `format` is the format's types (generated from
//! schema/scenario.schema.json), which `read` fills from the file's JSON;
//! `parse` checks what the schema cannot say as it makes `script`, what the
//! file becomes, which chooses a turn's steps and a request's answer as the
//! run goes. `fuzz_check` (tests and fuzzing only): the properties of the
//! reader that the `scenario` fuzz target checks.

mod format;
#[cfg(any(test, fuzzing))]
pub mod fuzz_check;
mod parse;
mod progress;
mod read;
pub mod script;

pub use parse::{name_place, Mistake};
use script::Scenario;
use std::path::Path;

/// Reads and checks the scenario file at `path`. The error is one line:
/// `bad scenario <path>: <where>: <field>: <problem>`.
pub fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the scenario {} (KOMA_SIM_SCENARIO): {e}", path.display()))?;
    parse::parse(&text).map_err(|e| format!("bad scenario {}: {e}", path.display()))
}

/// Checks a scenario's text as `load` checks a file: its first mistake, if
/// it has one. (`koma-sim check-scenario`, which the packages' testing
/// modules run before they start a fake, so that the format is checked by
/// this one reader.)
pub fn check(text: &str) -> Result<(), Mistake> {
    parse::parse(text).map(|_| ())
}
