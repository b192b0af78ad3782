//! What a host gives to start a turn, and to answer one of its approvals,
//! and the check of it: the one place where a turn's options are judged.

use std::time::Duration;

use crate::error::{ErrorCode, KomaError};
use crate::stop::{Stopped, Why};
use crate::wording::Wording;

/// Which of the two entries of the turn layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `turn()`: a turn whose events a loop may read.
    Turn,
    /// `run()`: a turn nobody reads; only its result is handed over.
    Run,
}

impl Entry {
    /// The entry's name, as messages say it.
    pub fn name(self) -> &'static str {
        match self {
            Entry::Turn => "turn",
            Entry::Run => "run",
        }
    }
}

/// The approval option as the host received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalOption {
    /// None given: the application answers with `approve` as it reads the turn.
    None,
    /// A string (`"allow"` and `"deny"` are the ones allowed).
    Text(String),
    /// A function of the host's: it is asked for each approval (see [`Answer`]).
    Handler,
    /// Anything else, described as the host's users would write it.
    Other(String),
}

/// A turn to start.
#[derive(Clone, Debug)]
pub struct TurnSpec {
    pub entry: Entry,
    /// The submit's params as JSON text (`{"text": ...}`), checked as the
    /// method's params are.
    pub params: Option<String>,
    /// `None` or `"submit"`: submit; `"interrupt"`: interrupt_and_submit.
    pub mode: Option<String>,
    pub approvals: ApprovalOption,
    /// The turn's deadline: past it, the agent is interrupted and the
    /// result fails with `timeout` (see [`crate::stop`] for the bound).
    pub timeout: Option<Duration>,
    /// Stopped before it started (an abort that came first): nothing is
    /// written, and the result fails with this stop's error.
    pub stopped: Option<Why>,
    /// Refused by the host already (options it could not read): nothing is
    /// written, and the result fails with this.
    pub refused: Option<KomaError>,
}

/// How the turn's approvals are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Always this decision.
    Always(Decision),
    /// The host's function decides each one.
    Handler,
    /// The application, with `approve`, as it reads the turn.
    Application,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }

    pub fn parse(text: &str) -> Option<Decision> {
        match text {
            "allow" => Some(Decision::Allow),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
}

/// What the host's approval function came to, as the host saw it: the core
/// judges whether that is a decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// What it returned (or what its promise or awaitable resolved to):
    /// `text`, the string itself if it is one, and `shown`, the value as
    /// the host's users would write it (`"yes"`, `undefined`, `None`).
    Returned { text: Option<String>, shown: String },
    /// It failed (threw, rejected, raised); what it failed with, described.
    Failed(String),
}

impl Answer {
    /// A returned string (for a host, or a test, whose value is one).
    pub fn text(text: &str, shown: impl Into<String>) -> Answer {
        Answer::Returned { text: Some(text.to_owned()), shown: shown.into() }
    }
}

/// A spec that passed the check.
pub(super) struct Checked {
    pub entry: Entry,
    pub method: &'static str,
    pub params: Option<String>,
    pub policy: Policy,
    pub stopped: Option<KomaError>,
}

impl TurnSpec {
    /// The turn's options judged: `invalid_params`, naming the option, when
    /// one is wrong (nothing is written then).
    pub(super) fn check(self, wording: &Wording) -> Result<Checked, KomaError> {
        if let Some(e) = self.refused {
            return Err(e);
        }
        let what = self.entry.name();
        let bad = |m: String| KomaError::new(ErrorCode::InvalidParams, format!("{what}: {m}"));
        let method = match self.mode.as_deref() {
            None | Some("submit") => "submit",
            Some("interrupt") => "interrupt_and_submit",
            Some(other) => {
                return Err(bad(format!("`mode` must be \"submit\" or \"interrupt\", not {}", quoted(other))));
            }
        };
        let name = wording.option("on_approval");
        let policy = match self.approvals {
            ApprovalOption::Handler => Policy::Handler,
            ApprovalOption::Text(t) => match Decision::parse(&t) {
                Some(d) => Policy::Always(d),
                None => {
                    return Err(bad(format!("`{name}` must be a function, \"allow\" or \"deny\", not {}", quoted(&t))))
                }
            },
            ApprovalOption::Other(o) => {
                return Err(bad(format!("`{name}` must be a function, \"allow\" or \"deny\", not {o}")));
            }
            ApprovalOption::None if self.entry == Entry::Run => {
                return Err(bad(format!(
                    "`{name}` is required (a function, \"allow\" or \"deny\"): nobody else sees the turn's approvals"
                )));
            }
            ApprovalOption::None => Policy::Application,
        };
        let stopped = self.stopped.map(|s| s.error(what, Stopped::Unsent));
        Ok(Checked { entry: self.entry, method, params: self.params, policy, stopped })
    }
}

/// `text` as a JSON string, for a message.
pub(super) fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}
