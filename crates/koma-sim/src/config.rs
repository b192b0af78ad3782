//! Configuration from the environment: fault switches, pace, bench mode,
//! home, the scenario and the record of requests.

use crate::faults::Faults;
use crate::record::Record;
use crate::scenario::{self, script::Scenario};
use std::path::PathBuf;

pub struct Config {
    pub faults: Faults,
    pub delay_ms: u64,
    /// `KOMA_SIM_HELLO_DELAY_MS`: wait this long before hello (cut short by the end of stdin).
    pub hello_delay_ms: u64,
    pub bench: bool,
    pub home: PathBuf,
    /// `KOMA_SIM_SAVE=0`: sessions live in memory only, and nothing is
    /// written (a session cannot be resumed).
    pub saves: bool,
    /// `KOMA_SIM_SCENARIO`: the scenario played in place of the keyword agent.
    pub scenario: Option<Scenario>,
    /// `KOMA_SIM_RECORD`: where every request read is recorded.
    pub record: Option<Record>,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A number of milliseconds from the environment (unset or empty: `None`).
fn ms_var(name: &str) -> Result<Option<u64>, String> {
    match env_nonempty(name) {
        None => Ok(None),
        Some(v) => {
            v.trim().parse::<u64>().map(Some).map_err(|_| format!("{name} must be a non-negative integer, not `{v}`"))
        }
    }
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        let faults = Faults::parse(&env_nonempty("KOMA_SIM_FAULT").unwrap_or_default())?;
        let delay_ms = ms_var("KOMA_SIM_DELAY_MS")?.unwrap_or(120);
        let hello_delay_ms = ms_var("KOMA_SIM_HELLO_DELAY_MS")?.unwrap_or(0);
        let bench = env_nonempty("KOMA_SIM_BENCH").as_deref() == Some("1");
        let saves = match env_nonempty("KOMA_SIM_SAVE").as_deref() {
            None | Some("1") => true,
            Some("0") => false,
            Some(v) => return Err(format!("KOMA_SIM_SAVE must be 0 or 1, not `{v}`")),
        };
        let scenario = match env_nonempty("KOMA_SIM_SCENARIO") {
            None => None,
            Some(p) => {
                let mut s = scenario::load(p.as_ref())?;
                if let Some(progress) = env_nonempty("KOMA_SIM_PROGRESS") {
                    s.share_progress(progress.into());
                }
                eprintln!(
                    "koma-sim: playing the scenario {p} ({} turns, {} method entries)",
                    s.turns.entries.len(),
                    s.methods.entries.len()
                );
                Some(s)
            }
        };
        let record = env_nonempty("KOMA_SIM_RECORD").map(|p| Record::open(p.as_ref())).transpose()?;
        Ok(Config { faults, delay_ms, hello_delay_ms, bench, home: home_dir(), saves, scenario, record })
    }
}

/// `KOMA_SIM_HOME`, else `<temp dir>/koma-sim`: a stand-in keeps its
/// sessions out of the user's home unless told otherwise.
pub fn home_dir() -> PathBuf {
    match env_nonempty("KOMA_SIM_HOME") {
        Some(h) => PathBuf::from(h),
        None => std::env::temp_dir().join("koma-sim"),
    }
}
