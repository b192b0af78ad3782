//! How a wait that the application bounds ends early, said once for every
//! host: which code it fails with and what its message says. A host only
//! reports what happened in its language (a signal aborted, with the name of
//! its reason; the task that awaited was cancelled) and keeps the reason as
//! the error's cause; the deadlines are the core's own (see
//! `connection/timers.rs`).
//!
//! A stopped turn's result settles once its `turn_finished` has come and its
//! interrupt is answered, or [`TURN_STOP_GRACE`] after the stop, whatever
//! koma does (docs/semantics.md, "Stopping a turn").

use std::time::Duration;

use crate::error::{ErrorCode, KomaError};
use crate::wording::Wording;

/// How long a stopped turn may take to end (its `turn_finished` and the
/// answer to its interrupt) before its result settles without them: a turn's
/// wait is bounded by its deadline (or its stop) plus this.
pub const TURN_STOP_GRACE: Duration = Duration::from_secs(1);

/// Why the host stopped a wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Its signal aborted. `reason`: the `name` of the signal's reason, if
    /// it has one; a `TimeoutError` (what a timeout signal aborts with)
    /// makes it a timeout.
    Signal { reason: Option<String> },
    /// The task that awaited it was cancelled.
    Cancelled,
}

/// What a stop ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// A call: its late answer is ignored.
    Call,
    /// A turn stopped before anything was written.
    Unsent,
    /// A running turn: the agent is interrupted.
    Turn,
    /// A loop over events.
    Loop,
}

impl Why {
    /// `timeout` for a signal whose reason is a `TimeoutError`, else `aborted`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Why::Signal { reason: Some(r) } if r == "TimeoutError" => ErrorCode::Timeout,
            _ => ErrorCode::Aborted,
        }
    }

    /// The error of `what` (a method, `turn`, `run`, `events`), stopped so.
    pub fn error(&self, what: &str, stopped: Stopped) -> KomaError {
        let code = self.code();
        let how = match (self, code) {
            (Why::Cancelled, _) => "was cancelled",
            (_, ErrorCode::Timeout) => "timed out (its signal was aborted with a TimeoutError)",
            _ => "was aborted by its signal",
        };
        let then = match stopped {
            Stopped::Call => "",
            Stopped::Unsent => " before anything was sent",
            Stopped::Turn => "; the agent was interrupted",
            Stopped::Loop => "; the loop ended",
        };
        KomaError::new(code, format!("`{what}` {how}{then}"))
    }
}

/// The error of `what` whose deadline (`after`, given so) passed.
pub fn deadline_error(what: &str, stopped: Stopped, after: Duration, wording: &Wording) -> KomaError {
    let within = wording.duration(after);
    let message = match (stopped, what) {
        (Stopped::Turn | Stopped::Unsent, _) => {
            format!("the turn did not finish within {within}; the agent was interrupted")
        }
        (Stopped::Loop, _) => format!("`{what}` ended: its timeout of {within} passed"),
        (Stopped::Call, "close") => format!("`close` did not finish within {within}; the close goes on"),
        (Stopped::Call, _) => format!("`{what}` was not answered within {within}"),
    };
    KomaError::new(ErrorCode::Timeout, message)
}

/// What a stopped turn's message adds when its grace passed first.
pub fn given_up(wording: &Wording) -> String {
    format!(
        " (koma did not end the turn within {} of the stop: the turn was given up, and its later events go to `events`)",
        wording.duration(TURN_STOP_GRACE)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_signal_is_a_timeout_and_the_rest_aborts() {
        let timeout = Why::Signal { reason: Some("TimeoutError".into()) };
        let abort = Why::Signal { reason: Some("AbortError".into()) };
        assert_eq!(timeout.code(), ErrorCode::Timeout);
        assert_eq!(abort.code(), ErrorCode::Aborted);
        assert_eq!(Why::Signal { reason: None }.code(), ErrorCode::Aborted);
        assert_eq!(Why::Cancelled.code(), ErrorCode::Aborted);
        assert_eq!(abort.error("state", Stopped::Call).message, "`state` was aborted by its signal");
        assert_eq!(
            timeout.error("run", Stopped::Turn).message,
            "`run` timed out (its signal was aborted with a TimeoutError); the agent was interrupted"
        );
        assert_eq!(
            abort.error("turn", Stopped::Unsent).message,
            "`turn` was aborted by its signal before anything was sent"
        );
        assert_eq!(abort.error("events", Stopped::Loop).message, "`events` was aborted by its signal; the loop ended");
        assert_eq!(
            Why::Cancelled.error("run", Stopped::Turn).message,
            "`run` was cancelled; the agent was interrupted"
        );
    }

    #[test]
    fn deadlines_in_the_hosts_unit() {
        let ms = Wording::default();
        let d = Duration::from_millis(50);
        assert_eq!(deadline_error("state", Stopped::Call, d, &ms).message, "`state` was not answered within 50 ms");
        assert_eq!(
            deadline_error("close", Stopped::Call, d, &ms).message,
            "`close` did not finish within 50 ms; the close goes on"
        );
        assert_eq!(
            deadline_error("events", Stopped::Loop, d, &ms).message,
            "`events` ended: its timeout of 50 ms passed"
        );
        assert_eq!(
            deadline_error("run", Stopped::Turn, d, &ms).message,
            "the turn did not finish within 50 ms; the agent was interrupted"
        );
    }
}
