//! Where a connection is in its life, and the questions asked of it.
//!
//! ```text
//! NotStarted ─first call─▶ Starting ─hello─▶ Ready ─stdout ends after detach─▶ Ended
//!      │                      │                │
//!      │                      └──────┬─────────┴─▶ Failed (transport failure, protocol error)
//!      │                             ▼
//!      └──close()──▶ Closed ◀── Closing ◀── close() from any started phase
//! ```
//! `Closing` becomes `Closed` when the supervisor has stopped and reaped the
//! child and every task and descriptor of the connection is gone.

use crate::error::{ErrorCode, KomaError};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Phase {
    NotStarted,
    /// Spawning, or waiting for hello.
    Starting,
    Ready,
    /// A transport failure or a protocol error; the child is being stopped.
    Failed(KomaError),
    /// Stdout ended after detach.
    Ended,
    Closing,
    Closed,
}

impl Phase {
    /// Why a new call is refused now (nothing is written), if it is.
    pub fn refusal(&self) -> Option<KomaError> {
        match self {
            Phase::Closing | Phase::Closed => Some(closed_error()),
            Phase::Failed(e) => Some(KomaError::new(
                ErrorCode::TransportFailure,
                format!("the client failed earlier ({}): {}", e.code, e.message),
            )),
            Phase::Ended => {
                Some(KomaError::new(ErrorCode::Lifecycle, "the session was detached: nothing is written after detach"))
            }
            _ => None,
        }
    }

    /// Its name, for diagnostics: `not_started`, `starting`, `ready`,
    /// `failed`, `ended`, `closing` or `closed`.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::NotStarted => "not_started",
            Phase::Starting => "starting",
            Phase::Ready => "ready",
            Phase::Failed(_) => "failed",
            Phase::Ended => "ended",
            Phase::Closing => "closing",
            Phase::Closed => "closed",
        }
    }

    /// Calls made now wait for hello (they are queued, not written).
    pub fn awaits_hello(&self) -> bool {
        matches!(self, Phase::NotStarted | Phase::Starting)
    }

    /// A failure is still news: the connection was live.
    pub fn can_fail(&self) -> bool {
        matches!(self, Phase::NotStarted | Phase::Starting | Phase::Ready)
    }

    /// `close()` has been called.
    pub fn is_closing(&self) -> bool {
        matches!(self, Phase::Closing | Phase::Closed)
    }

    /// The connection is over one way or another (nothing more is written).
    pub fn is_over(&self) -> bool {
        !matches!(self, Phase::NotStarted | Phase::Starting | Phase::Ready)
    }
}

pub(super) fn closed_error() -> KomaError {
    KomaError::new(ErrorCode::Closed, "the client was closed")
}
