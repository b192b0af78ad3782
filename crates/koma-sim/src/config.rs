//! Configuration from the environment: fault switches, pace, bench mode, home.

use std::path::PathBuf;

/// The ten protocol-1 methods, in the order hello lists them.
pub const METHODS: [&str; 10] = [
    "create",
    "resume",
    "state",
    "submit",
    "enqueue",
    "interrupt",
    "interrupt_and_submit",
    "approve",
    "detach",
    "configure",
];

/// Methods added to the capabilities with `KOMA_SIM_BENCH=1`.
pub const BENCH_METHODS: [&str; 4] = ["bench_events", "bench_blob", "bench_exit", "bench_garbage"];

/// Faults that replace the answer to the first request with bad (or odd) frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameFault {
    BlankLine,
    Pretty,
    LogLine,
    InvalidUtf8,
    JsonArray,
    JsonScalar,
    UnknownType,
    SecondHello,
    BothResultError,
    Neither,
    SeqGap,
    SeqRepeat,
    Frame40Mib,
    FrameOver40Mib,
}

#[derive(Debug, Default)]
pub struct Faults {
    pub no_hello: bool,
    pub protocol_2: bool,
    pub protocol_string: bool,
    pub protocol_missing: bool,
    pub protocol_float: bool,
    pub protocol_true: bool,
    pub late_hello: bool,
    pub bom: bool,
    pub stderr_flood: bool,
    pub exit_mid_request: bool,
    pub kill_mid_request: bool,
    pub never_answer: bool,
    pub hold: bool,
    pub unknown_ids: bool,
    pub unknown_event: bool,
    pub event_flood: bool,
    pub ignore_detach: bool,
    pub ignore_eof: bool,
    pub ignore_sigterm: bool,
    pub crlf: bool,
    pub split_writes: bool,
    pub orphan_tool: bool,
    pub spawn_tool: bool,
    /// In the order given in `KOMA_SIM_FAULT`.
    pub frame: Vec<FrameFault>,
}

impl Faults {
    pub fn parse(list: &str) -> Result<Faults, String> {
        let mut f = Faults::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let frame = match name {
                "blank_line" => Some(FrameFault::BlankLine),
                "pretty" => Some(FrameFault::Pretty),
                "log_line" => Some(FrameFault::LogLine),
                "invalid_utf8" => Some(FrameFault::InvalidUtf8),
                "json_array" => Some(FrameFault::JsonArray),
                "json_scalar" => Some(FrameFault::JsonScalar),
                "unknown_type" => Some(FrameFault::UnknownType),
                "second_hello" => Some(FrameFault::SecondHello),
                "both_result_error" => Some(FrameFault::BothResultError),
                "neither" => Some(FrameFault::Neither),
                "seq_gap" => Some(FrameFault::SeqGap),
                "seq_repeat" => Some(FrameFault::SeqRepeat),
                "frame_40mib" => Some(FrameFault::Frame40Mib),
                "frame_over_40mib" => Some(FrameFault::FrameOver40Mib),
                _ => None,
            };
            if let Some(ff) = frame {
                if !f.frame.contains(&ff) {
                    f.frame.push(ff);
                }
                continue;
            }
            let flag = match name {
                "no_hello" => &mut f.no_hello,
                "protocol_2" => &mut f.protocol_2,
                "protocol_string" => &mut f.protocol_string,
                "protocol_missing" => &mut f.protocol_missing,
                "protocol_float" => &mut f.protocol_float,
                "protocol_true" => &mut f.protocol_true,
                "late_hello" => &mut f.late_hello,
                "bom" => &mut f.bom,
                "stderr_flood" => &mut f.stderr_flood,
                "exit_mid_request" => &mut f.exit_mid_request,
                "kill_mid_request" => &mut f.kill_mid_request,
                "never_answer" => &mut f.never_answer,
                "hold" => &mut f.hold,
                "unknown_ids" => &mut f.unknown_ids,
                "unknown_event" => &mut f.unknown_event,
                "event_flood" => &mut f.event_flood,
                "ignore_detach" => &mut f.ignore_detach,
                "ignore_eof" => &mut f.ignore_eof,
                "ignore_sigterm" => &mut f.ignore_sigterm,
                "crlf" => &mut f.crlf,
                "split_writes" => &mut f.split_writes,
                "orphan_tool" => &mut f.orphan_tool,
                "spawn_tool" => &mut f.spawn_tool,
                other => return Err(format!("unknown fault switch `{other}` in KOMA_SIM_FAULT")),
            };
            *flag = true;
        }
        Ok(f)
    }

    /// A hello whose `protocol` is not the integer 1: the sim then only
    /// counts the bytes the client writes.
    pub fn bad_protocol(&self) -> bool {
        self.protocol_2 || self.protocol_string || self.protocol_missing || self.protocol_float || self.protocol_true
    }
}

pub struct Config {
    pub faults: Faults,
    pub delay_ms: u64,
    /// `KOMA_SIM_HELLO_DELAY_MS`: wait this long before hello (cut short by the end of stdin).
    pub hello_delay_ms: u64,
    pub bench: bool,
    pub home: PathBuf,
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
        Ok(Config { faults, delay_ms, hello_delay_ms, bench, home: home_dir() })
    }
}

/// `KOMA_SIM_HOME`, else `$XDG_STATE_HOME/koma-sim` (when absolute), else
/// `$HOME/.local/state/koma-sim`, else `<temp dir>/koma-sim`.
pub fn home_dir() -> PathBuf {
    if let Some(h) = env_nonempty("KOMA_SIM_HOME") {
        return PathBuf::from(h);
    }
    if let Some(x) = env_nonempty("XDG_STATE_HOME") {
        let p = PathBuf::from(x);
        if p.is_absolute() {
            return p.join("koma-sim");
        }
    }
    if let Some(h) = env_nonempty("HOME") {
        return PathBuf::from(h).join(".local").join("state").join("koma-sim");
    }
    std::env::temp_dir().join("koma-sim")
}
