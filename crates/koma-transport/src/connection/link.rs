//! What every actor of one connection holds: the state behind its one mutex,
//! the signals its tasks wait on, and the steps that more than one actor
//! takes (failing the client, waking the host, writing a checked request).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};

use super::census::Alive;
use super::completion::{Completion, Outcome, Waker};
use super::counters::EventCounters;
use super::options::ConnectionOptions;
use super::phase::Phase;
use super::state::{Queued, Scope, Shared};
use super::stdin::request_line;
use super::trace::Trace;
use super::trace_record::{Direction, Traced};
use crate::child::{ExitInfo, LaunchError, Spawner};
use crate::error::{ErrorCode, KomaError};
use crate::events::End;
use crate::runtime::{self, Lease};
use crate::turns::TurnUpdate;

pub(super) struct Link {
    shared: Mutex<Shared>,
    waker: Box<dyn Waker>,
    pub options: ConnectionOptions,
    pub trace: Trace,
    pub signals: Signals,
    /// Signalled when the host drains: the reader, having woken the host's
    /// thread, reads on only once that wake was taken, so answers that
    /// arrive meanwhile are read (and delivered) together.
    pub drained: Notify,
    /// Signalled (with the state's mutex) when the supervisor is done: see
    /// `Connection::kill_and_wait`.
    pub supervised: Condvar,
    pub counters: Arc<EventCounters>,
    next_token: AtomicU64,
    /// The process image it was made in (see [`runtime::generation`]).
    pub generation: u64,
    /// The I/O threads, held from the start until the supervisor is done
    /// (see [`runtime::Lease`]): a connection closed, failed or ended holds none.
    io: Mutex<Option<Lease>>,
    _alive: Alive,
}

impl Link {
    pub fn new(options: ConnectionOptions, waker: Box<dyn Waker>) -> Self {
        Link {
            shared: Mutex::new(Shared::new(options.wording, options.telemetry)),
            waker,
            trace: Trace::new(&options),
            options,
            signals: Signals::new(),
            drained: Notify::new(),
            supervised: Condvar::new(),
            counters: Arc::new(EventCounters::default()),
            next_token: AtomicU64::new(1),
            generation: runtime::generation(),
            io: Mutex::new(None),
            _alive: Alive::connection(),
        }
    }

    /// The refusal of every call in a process forked after this connection
    /// was made: its child, pipes and tasks belong to the parent. Checked
    /// before the lock is taken, since a thread of the parent may have held
    /// it at the fork (it then stays locked in the forked process forever).
    pub fn foreign(&self) -> Option<KomaError> {
        (self.generation != runtime::generation()).then(|| {
            KomaError::new(
                ErrorCode::TransportFailure,
                "this client was made before fork(), and its koma belongs to the parent process: \
                 make a new client in this process",
            )
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait, with the lock given, until the supervisor is done or `deadline`
    /// passes (whichever first); the lock is held again on return.
    pub fn wait_supervised<'a>(
        &self,
        mut s: MutexGuard<'a, Shared>,
        deadline: std::time::Instant,
    ) -> MutexGuard<'a, Shared> {
        while !s.child.supervisor_done {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            s = self.supervised.wait_timeout(s, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        s
    }

    fn io_slot(&self) -> MutexGuard<'_, Option<Lease>> {
        self.io.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take the I/O threads for this connection (its start): the runtime its
    /// tasks run on, and the spawner that starts its child.
    pub fn hold_io(&self) -> (Handle, Result<Spawner, LaunchError>) {
        let lease = Lease::new();
        let held = (lease.handle().clone(), lease.spawner());
        *self.io_slot() = Some(lease);
        held
    }

    /// Hold a runtime of a unit test's own in place of the I/O threads (its
    /// clock is the test's: see `timers.rs`).
    #[cfg(test)]
    pub fn hold_io_on(&self, handle: Handle) {
        *self.io_slot() = Some(Lease::on(handle));
    }

    /// The runtime of this connection's tasks, while it holds the I/O threads.
    pub fn io(&self) -> Option<Handle> {
        self.io_slot().as_ref().map(|l| l.handle().clone())
    }

    /// Let go of the I/O threads (the supervisor is done). The last
    /// connection to let go ends them; the host's thread waits for that end
    /// (see [`runtime::settle`]) before it can learn that close is done.
    pub fn release_io(&self) {
        let lease = self.io_slot().take();
        drop(lease);
    }

    /// A new call's token (unique for the life of the connection: it is the request's wire id).
    pub fn new_token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    /// Send a request: refused at once (nothing written) if the phase or its
    /// params refuse it, queued until hello if hello has not come (the
    /// caller starts the child), else checked against hello and written.
    pub fn send(&self, s: &mut Shared, token: u64, method: &str, params_json: Option<&str>) -> Result<(), KomaError> {
        if let Some(e) = s.phase.refusal() {
            return Err(e);
        }
        let line = request_line(token, method, params_json)?;
        if s.phase.awaits_hello() {
            s.calls.before_hello.push(Queued { token, method: method.to_owned(), line });
            Ok(())
        } else {
            self.admit(s, token, method, line)
        }
    }

    /// Carry out what the turn layer decided: write its requests (a local
    /// refusal goes back to it as the answer), and hand its updates and the
    /// calls it finished to the host.
    pub fn run_turns(&self, s: &mut Shared) {
        loop {
            let effects = s.turns.take_effects();
            if effects.is_empty() {
                return;
            }
            for request in effects.requests {
                let token = self.new_token();
                s.turns.sent(token, request.key, request.kind);
                if let Err(e) = self.send(s, token, request.method, request.params.as_deref()) {
                    s.turns.answered(&mut s.stream.events, token, Err(e));
                }
            }
            for (key, update) in effects.updates {
                if matches!(update, TurnUpdate::Ended(_)) {
                    s.calls.timers.remove(&key); // the turn's deadline, cancelled as it drops
                }
                s.outbox.completions.push(Completion { token: key, outcome: Outcome::Turn(update) });
            }
            for token in effects.done {
                s.outbox.completions.push(Completion { token, outcome: Outcome::Done });
            }
            for token in effects.abandon {
                s.forget(token);
            }
        }
    }

    /// Check and write one request once hello is known.
    pub fn admit(&self, s: &mut Shared, token: u64, method: &str, line: Vec<u8>) -> Result<(), KomaError> {
        let hello = s.session.hello.clone().expect("hello checked");
        if !hello.supports(method) {
            return Err(KomaError::new(
                ErrorCode::Unsupported,
                format!("`{method}` is not in this koma's capabilities ({})", hello.capabilities.join(", ")),
            ));
        }
        s.session.lifecycle.check(method)?;
        s.calls.pending.insert(token, method)?;
        s.session.lifecycle.advance(method);
        if method == "detach" {
            s.session.detach_token = Some(token);
            self.note(s, || Traced::Detach { by_close: false });
        }
        self.write(s, token, line);
        Ok(())
    }

    /// Write (or queue) a request already registered as pending.
    pub fn write(&self, s: &mut Shared, token: u64, line: Vec<u8>) {
        if self.trace.frames() {
            if let Some(r) = self.trace.frame(Direction::Written, &line[..line.len() - 1]) {
                s.outbox.trace.push(r);
            }
        }
        let Shared { stdin, calls, .. } = s;
        stdin.write_or_queue(&mut calls.pending, token, line);
    }

    pub fn with_stderr_tail(&self, what: String) -> String {
        let tail = self.lock().stderr.last_lines(12, 2000);
        if tail.is_empty() {
            format!("{what}; stderr was empty")
        } else {
            format!("{what}; last lines of stderr:\n{tail}")
        }
    }

    /// The client failed: settle everything, end the events with the error,
    /// and stop the child. The first failure wins; after close or the end of
    /// the session it changes nothing.
    pub fn fail(&self, err: KomaError) {
        let mut s = self.lock();
        if !s.phase.can_fail() {
            return;
        }
        s.phase = Phase::Failed(err.clone());
        self.note(&mut s, || Traced::Failed(err.clone()));
        let unknown = |m: &str| {
            KomaError::new(
                ErrorCode::DeliveryUnknown,
                format!("`{m}` was written, but no answer can come: {}", err.message),
            )
        };
        s.settle_calls(Scope::All, unknown, &err);
        s.session.detach_token = None;
        let Shared { turns, stream, .. } = &mut *s;
        turns.end_all(&mut stream.events, &err);
        s.stream.events.end(End::Failed(err));
        self.wake_if_needed(s);
        self.signals.request_stop(Stop::Now);
    }

    /// Fail with the stderr tail added to the message.
    pub fn fail_with_stderr(&self, e: KomaError) {
        let msg = self.with_stderr_tail(e.message);
        self.fail(KomaError { message: msg, ..e });
    }

    /// Settle everything once close has stopped the child and let go of
    /// every resource.
    pub fn finish_close(&self, s: &mut Shared) {
        s.wind_up("the client was closed before its answer", "the client was closed before the turn finished");
        s.phase = Phase::Closed;
        self.note(s, || Traced::Closed);
        for t in std::mem::take(&mut s.calls.close_waiters) {
            s.complete(t, Outcome::Done);
        }
        s.calls.timers.clear(); // cancelled as they drop
    }

    /// Queue a note of the connection's life for the host (and print it),
    /// if notes are traced; the caller wakes the host.
    pub fn note(&self, s: &mut Shared, what: impl FnOnce() -> Traced) {
        if let Some(r) = self.trace.note(what) {
            s.outbox.trace.push(r);
        }
    }

    /// After a lock section that may have queued completions, events or
    /// trace records, or given the turn layer something to do.
    pub fn wake_if_needed(&self, mut s: MutexGuard<'_, Shared>) {
        self.run_turns(&mut s);
        let ready = !s.outbox.completions.is_empty()
            || !s.outbox.trace.is_empty()
            || (s.stream.wanted && s.stream.events.main.is_ready())
            || s.turns.needs_host();
        if ready && !s.outbox.wake_scheduled {
            self.wake(s);
        }
    }

    /// After a call of the host that may have queued trace records (a frame
    /// written) and nothing else for it: wake it for them.
    pub fn wake_for_trace(&self, s: MutexGuard<'_, Shared>) {
        if !s.outbox.trace.is_empty() && !s.outbox.wake_scheduled {
            self.wake(s);
        }
    }

    fn wake(&self, mut s: MutexGuard<'_, Shared>) {
        s.outbox.wake_scheduled = true;
        drop(s);
        self.waker.wake();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.foreign().is_some() {
            // Made before fork(): dropping the state would signal the
            // parent's koma (its pid and pidfd are the parent's child) and
            // wake the parent's tasks in a runtime that does not run here.
            // The mutex is not taken (`get_mut` only borrows), and what it
            // guards is leaked, as are the tasks' signals.
            let shared = self.shared.get_mut().unwrap_or_else(|p| p.into_inner());
            std::mem::forget(std::mem::replace(shared, Shared::new(self.options.wording, None)));
            std::mem::forget(std::mem::replace(&mut self.signals, Signals::new()));
        }
    }
}

/// Why the supervisor stops the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// A detach is on its way: give it the detach grace first.
    AfterDetach,
    /// Stdin's end, then SIGTERM, then SIGKILL, each after a grace.
    Now,
    /// SIGKILL at once (the client object is gone).
    Kill,
}

pub(super) struct Signals {
    /// The child has exited (and is reaped): how.
    pub exit: watch::Sender<Option<ExitInfo>>,
    /// The reading of stdout has ended.
    pub stdout_end: watch::Sender<bool>,
    /// The stderr drain has ended.
    pub stderr_end: watch::Sender<bool>,
    /// Stop the child (the strongest request wins).
    pub stop: watch::Sender<Option<Stop>>,
}

impl Signals {
    pub fn new() -> Self {
        Signals {
            exit: watch::channel(None).0,
            stdout_end: watch::channel(false).0,
            stderr_end: watch::channel(false).0,
            stop: watch::channel(None).0,
        }
    }

    /// Ask the supervisor to stop the child; a stronger request replaces a weaker one.
    pub fn request_stop(&self, stop: Stop) {
        self.stop.send_if_modified(|current| {
            let stronger = matches!(
                (*current, stop),
                (None, _) | (Some(Stop::AfterDetach), Stop::Now | Stop::Kill) | (Some(Stop::Now), Stop::Kill)
            );
            if stronger {
                *current = Some(stop);
            }
            stronger
        });
    }
}
