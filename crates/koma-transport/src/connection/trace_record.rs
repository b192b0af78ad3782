//! One record of the trace, as the host takes it (`Connection::take_trace`)
//! and as the trace prints it: which client, and what was seen.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::child::ExitInfo;
use crate::error::KomaError;
use crate::quote::escape_text;

#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    /// The host's name for the client (`ConnectionOptions::label`).
    pub label: Arc<str>,
    /// The child's pid, once it was started (kept after its exit: it names the client).
    pub pid: Option<u32>,
    pub what: Traced,
}

/// What a record saw. Text from koma is escaped (no control character, no
/// invalid UTF-8), so a host can print or log it as it is.
#[derive(Clone, Debug, PartialEq)]
pub enum Traced {
    /// A frame, without its line terminator, cut at 4 KiB (the cut says the size).
    Frame { direction: Direction, text: String },
    /// One whole line of koma's stderr.
    Stderr(String),
    /// The child was started (the record's pid is its pid).
    Spawned,
    /// Hello arrived and passed its check.
    Hello { version: String },
    /// A detach was written (by the application, or by close).
    Detach { by_close: bool },
    /// The child exited: how (its text: `exited with code 0`, `was killed by signal 9 (SIGKILL)`).
    Exit(ExitInfo),
    /// The client failed with this error.
    Failed(KomaError),
    /// `close()` is done: the child is reaped, every task and descriptor gone.
    Closed,
    /// This many records were dropped, the oldest first, because the host did
    /// not take them in time (see `TraceQueue`). Comes before the records kept.
    Dropped(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Written to koma's stdin.
    Written,
    /// Read from koma's stdout.
    Read,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Written => "written",
            Direction::Read => "read",
        }
    }

    /// How a printed line shows it.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::Written => "->",
            Direction::Read => "<-",
        }
    }
}

impl TraceRecord {
    /// The record's kind, one word: `frame`, `stderr`, `spawned`, `hello`,
    /// `detach`, `exit`, `failed`, `closed` or `dropped`.
    pub fn kind(&self) -> &'static str {
        match &self.what {
            Traced::Frame { .. } => "frame",
            Traced::Stderr(_) => "stderr",
            Traced::Spawned => "spawned",
            Traced::Hello { .. } => "hello",
            Traced::Detach { .. } => "detach",
            Traced::Exit(_) => "exit",
            Traced::Failed(_) => "failed",
            Traced::Closed => "closed",
            Traced::Dropped(_) => "dropped",
        }
    }

    /// A frame's direction.
    pub fn direction(&self) -> Option<Direction> {
        match &self.what {
            Traced::Frame { direction, .. } => Some(*direction),
            _ => None,
        }
    }

    /// What was seen, without the client's name: a frame's text, a stderr
    /// line, or a note's sentence.
    pub fn text(&self) -> String {
        match &self.what {
            Traced::Frame { text, .. } | Traced::Stderr(text) => text.clone(),
            Traced::Spawned => match self.pid {
                Some(pid) => format!("koma started, pid {pid}"),
                None => "koma started".to_owned(),
            },
            Traced::Hello { version } => format!("hello checked, koma {version}"),
            Traced::Detach { by_close: false } => "detach written".to_owned(),
            Traced::Detach { by_close: true } => "detach written by close()".to_owned(),
            Traced::Exit(how) => format!("koma {}", how.describe()),
            // Its message may quote koma's last lines of stderr: they stay lines.
            Traced::Failed(e) => format!("failed: {}: {}", e.code, escape_text(&e.message, true)),
            Traced::Closed => "closed".to_owned(),
            Traced::Dropped(n) => format!("{n} trace records dropped: the host did not take them in time"),
        }
    }

    /// The client's name: `label`, or `label pid N` once the child was started.
    pub fn who(&self) -> String {
        match self.pid {
            Some(pid) => format!("{} pid {pid}", self.label),
            None => self.label.to_string(),
        }
    }

    /// The record as printed: `[who] -> frame`, `[who] stderr line`, `[who]
    /// note`, one line each but for a failure's message, whose lines of
    /// koma's stderr follow, indented.
    pub fn line(&self) -> String {
        let mut out = format!("[{}] ", self.who());
        match &self.what {
            Traced::Frame { direction, text } => {
                let _ = write!(out, "{} {text}", direction.arrow());
            }
            Traced::Stderr(text) => {
                let _ = write!(out, "stderr {text}");
            }
            _ => out.push_str(&self.text().replace('\n', "\n    ")),
        }
        out
    }

    /// About how many bytes it holds (for the queue's bound).
    pub(super) fn size(&self) -> usize {
        let text = match &self.what {
            Traced::Frame { text, .. } | Traced::Stderr(text) => text.len(),
            Traced::Hello { version } => version.len(),
            Traced::Failed(e) => e.message.len(),
            _ => 0,
        };
        text + 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn record(pid: Option<u32>, what: Traced) -> TraceRecord {
        TraceRecord { label: "host".into(), pid, what }
    }

    #[test]
    fn a_record_names_its_client() {
        let frame = record(Some(42), Traced::Frame { direction: Direction::Written, text: "{}".into() });
        assert_eq!(frame.line(), "[host pid 42] -> {}");
        assert_eq!((frame.kind(), frame.direction(), frame.text()), ("frame", Some(Direction::Written), "{}".into()));
        assert_eq!(record(None, Traced::Closed).line(), "[host] closed");
        assert_eq!(record(Some(7), Traced::Stderr("hi".into())).line(), "[host pid 7] stderr hi");
        assert_eq!(record(Some(7), Traced::Spawned).text(), "koma started, pid 7");
    }

    #[test]
    fn a_failure_keeps_the_lines_of_koma_s_stderr_and_escapes_the_rest() {
        let e = KomaError::new(ErrorCode::TransportFailure, "koma exited; last lines of stderr:\n\x1b[2Jboom\nbye");
        let r = record(Some(1), Traced::Failed(e));
        assert_eq!(r.text(), "failed: transport_failure: koma exited; last lines of stderr:\n\\u{1b}[2Jboom\nbye");
        assert_eq!(
            r.line(),
            "[host pid 1] failed: transport_failure: koma exited; last lines of stderr:\n    \\u{1b}[2Jboom\n    bye"
        );
    }
}
