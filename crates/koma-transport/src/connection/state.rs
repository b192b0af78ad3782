//! The state the connection's actors share, behind one mutex, grouped by concern.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::task::AbortHandle;

use super::census::Alive;
use super::completion::{Completion, Outcome};
use super::phase::{closed_error, Phase};
use super::stdin::Stdin;
use super::trace::TraceQueue;
use crate::child::Process;
use crate::error::{ErrorCode, KomaError};
use crate::events::{End, EventBuffer};
use crate::hello::Hello;
use crate::lifecycle::Lifecycle;
use crate::pending::PendingTable;
use crate::stderr::StderrRing;
use crate::telemetry::{TelemetryOptions, TraceContext};
use crate::turns::Turns;
use crate::wording::Wording;

pub(super) struct Shared {
    pub phase: Phase,
    pub calls: Calls,
    pub outbox: Outbox,
    pub session: Session,
    pub stream: Stream,
    pub stdin: Stdin,
    pub stderr: StderrRing,
    pub child: ChildSlot,
    /// The turn layer: which consumer each event belongs to, the turns' state.
    pub turns: Turns,
}

/// The calls the host is waiting on, by token.
#[derive(Default)]
pub(super) struct Calls {
    /// Written (or being written) and not yet answered.
    pub pending: PendingTable,
    /// Made before hello: checked and written once hello has come.
    pub before_hello: Vec<Queued>,
    /// `probe()` calls waiting for hello.
    pub hello_waiters: Vec<u64>,
    /// `close()` calls waiting for the end.
    pub close_waiters: Vec<u64>,
    /// The deadline of each call that has one; cancelled when the call settles.
    pub timers: HashMap<u64, Deadline>,
}

pub(super) struct Queued {
    pub token: u64,
    pub method: String,
    pub line: Vec<u8>,
}

/// Completions and trace records ready for the host, and whether a wake is already due.
#[derive(Default)]
pub(super) struct Outbox {
    pub completions: Vec<Completion>,
    pub trace: TraceQueue,
    pub wake_scheduled: bool,
}

/// What the server said of itself, and the order of requests.
pub(super) struct Session {
    pub hello: Option<Arc<Hello>>,
    pub lifecycle: Lifecycle,
    /// The application's detach; its answer is handed over after the child's exit.
    pub detach_token: Option<u64>,
    pub detach_answer: Option<Outcome>,
    /// The detach `close()` wrote itself: no one waits for its answer.
    pub close_detach: Option<u64>,
}

/// The events: the buffer, and the checks of the stream of frames.
#[derive(Default)]
pub(super) struct Stream {
    pub events: EventBuffer,
    /// The host waits for events: wake it when some are ready.
    pub wanted: bool,
    pub last_seq: Option<u64>,
    pub frames_seen: u64,
}

/// The child, as the supervisor shares it.
#[derive(Default)]
pub(super) struct ChildSlot {
    pub process: Option<Arc<Process>>,
    /// The supervisor has finished: the child is reaped, every task and descriptor is gone.
    pub supervisor_done: bool,
    /// The trace context the child is to be started with (see `Connection::trace_context`).
    pub trace_context: Option<TraceContext>,
}

/// Which waiting calls to settle.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// Only what was never written: calls queued before hello, and `probe()`s.
    Unwritten,
    /// Everything: also the requests written and not answered.
    All,
}

impl Shared {
    pub fn new(wording: Wording, telemetry: Option<TelemetryOptions>) -> Self {
        Shared {
            phase: Phase::NotStarted,
            calls: Calls::default(),
            outbox: Outbox::default(),
            session: Session {
                hello: None,
                lifecycle: Lifecycle::Fresh,
                detach_token: None,
                detach_answer: None,
                close_detach: None,
            },
            stream: Stream::default(),
            stdin: Stdin::default(),
            stderr: StderrRing::default(),
            child: ChildSlot::default(),
            turns: Turns::new(wording).traced(telemetry),
        }
    }

    /// Hand a call's outcome to the host (and cancel its deadline), or to
    /// the turn layer if the call is one of its requests.
    pub fn complete(&mut self, token: u64, outcome: Outcome) {
        self.calls.timers.remove(&token); // cancelled as it drops
        if self.session.close_detach == Some(token) {
            return; // close()'s own detach: nobody called it
        }
        if self.turns.owns(token) {
            let answer = match &outcome {
                Outcome::Result(raw) => Ok(raw.text()),
                Outcome::Error(e) => Err(e.clone()),
                _ => Err(KomaError::new(
                    ErrorCode::TransportFailure,
                    "an internal error: a turn's request got no answer",
                )),
            };
            self.turns.answered(&mut self.stream.events, token, answer);
            return;
        }
        self.outbox.completions.push(Completion { token, outcome });
    }

    /// Settle the calls still waiting. A request that was written gets
    /// `written(method)` (its delivery is unknown); anything else gets `unwritten`.
    pub fn settle_calls(&mut self, scope: Scope, written: impl Fn(&str) -> KomaError, unwritten: &KomaError) {
        if scope == Scope::All {
            let pending: Vec<_> = self.calls.pending.drain().collect();
            for (token, p) in pending {
                let e = if p.written { written(&p.method) } else { unwritten.clone() };
                if self.session.detach_token == Some(token) {
                    self.session.detach_token = None;
                }
                self.complete(token, Outcome::Error(e));
            }
        }
        for q in std::mem::take(&mut self.calls.before_hello) {
            self.complete(q.token, Outcome::Error(unwritten.clone()));
        }
        for t in std::mem::take(&mut self.calls.hello_waiters) {
            self.complete(t, Outcome::Error(unwritten.clone()));
        }
    }

    /// Forget a call (aborted, or past its deadline): its late answer is
    /// ignored, and if it was not yet written it never will be. Returns its
    /// method, if it was still waiting.
    pub fn forget(&mut self, token: u64) -> Option<String> {
        self.calls.timers.remove(&token); // cancelled as it drops
        if self.session.detach_token == Some(token) {
            // A detach answered and waiting for the child's exit is forgotten
            // too: its answer is dropped with it.
            self.session.detach_token = None;
            if self.session.detach_answer.take().is_some() {
                return Some("detach".to_owned());
            }
        }
        if let Some(p) = self.calls.pending.abandon(token) {
            return Some(p.method);
        }
        if let Some(i) = self.calls.before_hello.iter().position(|q| q.token == token) {
            return Some(self.calls.before_hello.remove(i).method);
        }
        if let Some(i) = self.calls.hello_waiters.iter().position(|t| *t == token) {
            self.calls.hello_waiters.remove(i);
            return Some("probe".to_owned());
        }
        if let Some(i) = self.calls.close_waiters.iter().position(|t| *t == token) {
            // The close goes on; only this call stops waiting for it.
            self.calls.close_waiters.remove(i);
            return Some("close".to_owned());
        }
        None
    }

    /// The session is over without a failure (closed, or detached): settle
    /// every call still waiting (a request written gets `delivery_unknown`:
    /// "written, then `ended`"), hand the detach its answer, end every open
    /// turn (`closed`, saying `turns_ended`) and the events.
    pub fn wind_up(&mut self, ended: &str, turns_ended: &str) {
        let unknown = |m: &str| KomaError::new(ErrorCode::DeliveryUnknown, format!("`{m}` was written, then {ended}"));
        self.settle_calls(Scope::All, unknown, &closed_error());
        self.complete_detach();
        self.turns.end_all(&mut self.stream.events, &KomaError::new(ErrorCode::Closed, turns_ended));
        self.stream.events.end(End::Finished);
    }

    /// Hand the detach its answer (kept until stdout ended and the child exited).
    pub fn complete_detach(&mut self) {
        if let Some(t) = self.session.detach_token.take() {
            let answer = self.session.detach_answer.take().unwrap_or_else(|| {
                Outcome::Error(KomaError::new(
                    ErrorCode::DeliveryUnknown,
                    "detach was written, then koma's stdout ended without its answer",
                ))
            });
            self.complete(t, answer);
        }
    }
}

/// Cancelled when dropped, unless it fired. Counted (see
/// [`super::census::census`]) from registration until it fires or is cancelled.
pub(super) struct Deadline {
    task: Option<AbortHandle>,
    _alive: Alive,
}

impl Deadline {
    pub fn new(task: AbortHandle) -> Self {
        Deadline { task: Some(task), _alive: Alive::timer() }
    }

    /// Its task is the one running: nothing to cancel.
    pub fn fired(mut self) {
        self.task = None;
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
