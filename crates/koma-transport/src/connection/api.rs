//! [`Connection`]: the API the host calls from its thread. Each call takes
//! the connection's lock briefly and returns at once; what completes later
//! comes back as a [`Completion`](super::completion::Completion) through the
//! [`Waker`].
//!
//! In a process forked after the connection was made, every call is refused
//! (`transport_failure`) before the lock is taken, and nothing is done to
//! the child, which belongs to the parent (see `Link::foreign`).

use std::sync::Arc;
use std::time::Duration;

use super::completion::Completion;
use super::completion::Waker;
use super::counters::EventCounters;
use super::link::Link;
use super::link::Stop;
use super::options::{ConnectionOptions, TraceKinds};
use super::phase::{closed_error, Phase};
use super::state::{Scope, Shared};
use super::supervise;
use super::timers::{expire_after, expire_turn_after, stop_turn};
use super::trace_record::{TraceRecord, Traced};
use crate::error::KomaError;
use crate::events::{End, Take};
use crate::hello::Hello;
use crate::lifecycle::Lifecycle;
use crate::stop::Why;
use crate::telemetry::TraceContext;
use crate::turns::{Answer, TurnEnd, TurnSpec, Turns};

/// One client's connection. Cheap to clone.
#[derive(Clone)]
pub struct Connection {
    link: Arc<Link>,
}

/// What `probe()` gets at once.
pub enum Probe {
    Ready(Arc<Hello>),
    /// The hello will come as a completion for the call's token.
    Wait,
}

/// What `close()` gets at once.
#[derive(Debug, PartialEq, Eq)]
pub enum Closing {
    /// Already closed (or never started): done now.
    Done,
    /// Done when the completion for the call's token comes.
    Wait,
    /// Refused at once: the connection was made before `fork()`, in the
    /// parent, which alone can close it.
    Refused(KomaError),
}

impl Connection {
    pub fn new(options: ConnectionOptions, waker: Box<dyn Waker>) -> Self {
        Connection { link: Arc::new(Link::new(options, waker)) }
    }

    /// How this connection's messages spell options and durations.
    pub fn wording(&self) -> crate::wording::Wording {
        self.link.options.wording
    }

    /// A new call's token: its completion will carry it. Taken before the call
    /// is made, so the host can be ready for the answer before anything is written.
    pub fn token(&self) -> u64 {
        self.link.new_token()
    }

    /// Send a request; its answer comes as a [`Completion`] for `token`.
    /// Local rejections (nothing written) are returned at once.
    pub fn request(
        &self,
        token: u64,
        method: &str,
        params_json: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<(), KomaError> {
        if let Some(e) = self.link.foreign() {
            return Err(e);
        }
        let mut s = self.link.lock();
        if s.phase.awaits_hello() {
            self.start(&mut s);
        }
        self.link.send(&mut s, token, method, params_json)?;
        if method == "approve" {
            if let Some(params) = params_json {
                s.turns.approved_by_application(params);
            }
        }
        if let Some(d) = timeout {
            expire_after(&self.link, &mut s, token, d);
        }
        // The frame written, for a host that takes the trace: seen now,
        // not only once the answer comes (it may never come).
        self.link.wake_for_trace(s);
        Ok(())
    }

    /// Start the child if it has not been started; resolves with hello.
    pub fn probe(&self, token: u64, timeout: Option<Duration>) -> Result<Probe, KomaError> {
        if let Some(e) = self.link.foreign() {
            return Err(e);
        }
        let mut s = self.link.lock();
        match &s.phase {
            Phase::Failed(e) => return Err(e.clone()),
            p if p.is_closing() => return Err(closed_error()),
            _ => {}
        }
        if let Some(h) = &s.session.hello {
            return Ok(Probe::Ready(h.clone()));
        }
        s.calls.hello_waiters.push(token);
        self.start(&mut s);
        if let Some(d) = timeout {
            expire_after(&self.link, &mut s, token, d);
        }
        Ok(Probe::Wait)
    }

    /// Forget a call (aborted by its signal): its late answer is ignored, and
    /// if it was not yet written it never will be. Frees its pending slot.
    pub fn abandon(&self, token: u64) {
        if self.link.foreign().is_some() {
            return;
        }
        self.link.lock().forget(token);
    }

    /// Completions ready for the host. Clears the wake flag: the next
    /// completion wakes again.
    pub fn drain(&self) -> Vec<Completion> {
        if self.link.foreign().is_some() {
            return Vec::new();
        }
        let mut s = self.link.lock();
        s.turns.decide_unread();
        self.link.run_turns(&mut s);
        s.outbox.wake_scheduled = false;
        let completions = std::mem::take(&mut s.outbox.completions);
        drop(s);
        self.link.drained.notify_one();
        crate::runtime::settle(); // a close among them: the I/O threads it ended are gone
        completions
    }

    /// The trace records waiting for the host (the kinds
    /// `ConnectionOptions::trace_records` names), oldest first, with a
    /// report of the records dropped, if any, first. They come with the
    /// wakes, as completions do: call it after `drain()` in the same wake
    /// (a record queued after this call and before `drain()` would wait for
    /// the next wake).
    pub fn take_trace(&self) -> Vec<TraceRecord> {
        if self.link.foreign().is_some() {
            return Vec::new();
        }
        self.link.lock().outbox.trace.take()
    }

    /// Where the connection is in its life, for diagnostics: `not_started`,
    /// `starting`, `ready`, `failed`, `ended`, `closing` or `closed`
    /// (`closed` after a fork: nothing of it is open in this process).
    pub fn phase_name(&self) -> &'static str {
        if self.link.foreign().is_some() {
            return "closed";
        }
        self.link.lock().phase.name()
    }

    /// Take what is waiting in the event buffer. If nothing is, and `wait`,
    /// the waker will be called when something is. After a fork, the events
    /// end at once with the refusal.
    pub fn take_events(&self, wait: bool) -> Take {
        if let Some(e) = self.link.foreign() {
            return Take::Ended(End::Failed(e));
        }
        let mut s = self.link.lock();
        let (count, bytes) = self.link.counters.taken();
        s.stream.events.settle(count, bytes);
        let t = s.stream.events.take();
        if let Take::Batch { epoch, counting, .. } = &t {
            self.link.counters.set_batch(*epoch, *counting);
        }
        s.stream.wanted = wait && t == Take::Empty;
        t
    }

    /// The counters the application updates as it takes events of a batch.
    pub fn event_counters(&self) -> Arc<EventCounters> {
        self.link.counters.clone()
    }

    /// Stop wanting a wake for events.
    pub fn unwant_events(&self) {
        if self.link.foreign().is_some() {
            return;
        }
        self.link.lock().stream.wanted = false;
    }

    /// The kept stderr tail (empty after a fork: it is the parent's).
    pub fn stderr_text(&self) -> String {
        if self.link.foreign().is_some() {
            return String::new();
        }
        self.link.lock().stderr.text()
    }

    /// The child's pid, once started and until reaped (none after a fork:
    /// it is the parent's child).
    pub fn pid(&self) -> Option<u32> {
        if self.link.foreign().is_some() {
            return None;
        }
        let s = self.link.lock();
        s.child.process.as_ref().filter(|p| !p.is_reaped()).map(|p| p.pid())
    }

    /// The events counted against the bound now, as `(frames, bytes)`: held
    /// for `events()` or a turn's loop, or lent and not yet taken (for tests
    /// and diagnostics).
    pub fn buffered(&self) -> (usize, usize) {
        if self.link.foreign().is_some() {
            return (0, 0);
        }
        let mut s = self.link.lock();
        let (count, bytes) = self.link.counters.taken();
        s.stream.events.settle(count, bytes);
        (s.stream.events.counted_frames(), s.stream.events.counted_bytes())
    }

    /// Whether the child's exit is watched through a pidfd (for tests and diagnostics).
    pub fn has_pidfd(&self) -> Option<bool> {
        if self.link.foreign().is_some() {
            return None;
        }
        self.link.lock().child.process.as_ref().map(|p| p.has_pidfd())
    }

    /// Stop the child's whole group at once (the client object is gone).
    /// After a fork it does nothing: the child is the parent's.
    pub fn kill_now(&self) {
        if self.link.foreign().is_some() {
            return;
        }
        let s = self.link.lock();
        if let Some(p) = &s.child.process {
            p.kill_now();
        }
        drop(s);
        self.link.signals.request_stop(Stop::Kill);
    }

    /// Keep these kinds of trace records for the host from now on, besides
    /// those its options named (a host whose listener came after the
    /// connection was made). Records of what happened before are not there.
    pub fn keep_trace(&self, kinds: TraceKinds) {
        self.link.trace.keep(kinds);
    }

    /// Stop the child's whole group at once (as [`Connection::kill_now`]),
    /// and wait, blocking, until it is reaped and every task and descriptor
    /// of the connection is gone, and, if it was the last connection, the
    /// I/O threads have ended; at most `limit`, a bound against a process
    /// that outlives SIGKILL (a stopped tracee). For a host whose object is
    /// collected where it cannot await (a finalizer): once it returns, the
    /// client has left nothing behind, as after `close()`. True when done.
    /// Must not be called on an I/O thread (the wait would stall it): it
    /// then only kills, and returns false.
    pub fn kill_and_wait(&self, limit: Duration) -> bool {
        if self.link.foreign().is_some() {
            return true;
        }
        self.kill_now();
        if crate::runtime::on_io_thread() {
            return false;
        }
        let s = self.link.lock();
        let started = s.phase != Phase::NotStarted && s.phase != Phase::Closed;
        if !started || s.child.supervisor_done {
            drop(s);
            crate::runtime::settle();
            return true;
        }
        let s = self.link.wait_supervised(s, std::time::Instant::now() + limit);
        let done = s.child.supervisor_done;
        drop(s);
        crate::runtime::settle();
        done
    }

    /// Whether `close()` is done: the child is reaped and every task and
    /// descriptor of this connection is gone (for tests and diagnostics).
    /// After a fork, true: nothing of it is open in this process.
    pub fn is_closed(&self) -> bool {
        if self.link.foreign().is_some() {
            return true;
        }
        self.link.lock().phase == Phase::Closed
    }

    /// Close: detach if it can (bounded), else stdin's end, SIGTERM, SIGKILL,
    /// each after a grace. The child and its group are stopped and reaped, and
    /// every task and descriptor of the connection is gone before `close` is
    /// done. Pending requests then get `delivery_unknown`.
    pub fn close(&self, token: u64) -> Closing {
        self.close_within(token, None)
    }

    /// [`Connection::close`], whose call fails with `timeout` if the close
    /// has not finished within `timeout`: the close goes on (only the wait
    /// is bounded), as does a close whose call is abandoned.
    pub fn close_within(&self, token: u64, timeout: Option<Duration>) -> Closing {
        if let Some(e) = self.link.foreign() {
            return Closing::Refused(e);
        }
        crate::runtime::settle(); // `Done` below: the I/O threads its close ended are gone
        let mut s = self.link.lock();
        match s.phase {
            Phase::Closed => return Closing::Done,
            Phase::NotStarted => {
                s.phase = Phase::Closed;
                self.link.note(&mut s, || Traced::Closed);
                s.stream.events.end(End::Finished);
                self.link.wake_if_needed(s);
                return Closing::Done;
            }
            _ => {}
        }
        s.calls.close_waiters.push(token);
        if let Some(d) = timeout {
            expire_after(&self.link, &mut s, token, d);
        }
        if s.phase == Phase::Closing {
            return Closing::Wait;
        }
        let was_ready = s.phase == Phase::Ready;
        s.phase = Phase::Closing;
        // Calls waiting for hello will never be written now.
        s.settle_calls(Scope::Unwritten, |_| closed_error(), &closed_error());
        let mut stop = Stop::Now;
        if was_ready && s.stdin.writer.is_some() {
            if s.session.lifecycle == Lifecycle::Detached {
                stop = Stop::AfterDetach; // the application's detach is on its way
            } else if s.session.hello.as_ref().is_some_and(|h| h.supports("detach")) {
                let t = self.link.new_token();
                let line = format!("{{\"id\":\"{t}\",\"method\":\"detach\",\"params\":{{}}}}\n").into_bytes();
                s.session.lifecycle = Lifecycle::Detached;
                if s.calls.pending.insert(t, "detach").is_ok() {
                    s.session.close_detach = Some(t);
                    self.link.note(&mut s, || Traced::Detach { by_close: true });
                    self.link.write(&mut s, t, line);
                    stop = Stop::AfterDetach;
                }
            }
        }
        if s.child.supervisor_done {
            // Nothing is left to stop (the client failed or ended earlier).
            self.link.finish_close(&mut s);
            self.link.wake_if_needed(s);
        } else {
            self.link.wake_if_needed(s);
            self.link.signals.request_stop(stop);
        }
        Closing::Wait
    }

    /// The trace context the child is started with (`TRACEPARENT` and
    /// `TRACESTATE` in its environment, unless `env` gives either: see
    /// `crate::telemetry`), if it has not been started yet; whether it will
    /// be. A host traces the client's life from the call that starts it, and
    /// hands over that span's context first.
    pub fn trace_context(&self, context: TraceContext) -> bool {
        if self.link.foreign().is_some() {
            return false;
        }
        let mut s = self.link.lock();
        if s.phase != Phase::NotStarted {
            return false;
        }
        s.child.trace_context = Some(context);
        true
    }

    // ---- the turn layer (see `crate::turns`)

    /// Start a turn as call `key` (a token): its submit is written (or it
    /// ends at once: its options are refused, or it was stopped already).
    /// Everything about it comes as completions for `key` (`TurnUpdate`),
    /// the last being `Ended`. Refused here, as every call is, when the
    /// client takes no more calls (closed, failed, detached: the first of
    /// the local checks), and after a fork: the error is the turn's end
    /// (see [`Turns::refused_end`]), which the host hands its turn at once,
    /// without waiting for a wake that may never come.
    pub fn open_turn(&self, key: u64, spec: TurnSpec) -> Result<(), Box<TurnEnd>> {
        let traced = self.link.options.telemetry.is_some();
        if let Some(e) = self.link.foreign() {
            return Err(Box::new(Turns::refused_end(e, traced)));
        }
        let mut s = self.link.lock();
        if let Some(e) = s.phase.refusal() {
            return Err(Box::new(Turns::refused_end(e, traced)));
        }
        let timeout = spec.timeout;
        s.turns.open(key, spec);
        if s.turns.has_requests() && s.phase.awaits_hello() {
            self.start(&mut s);
        }
        if let Some(d) = timeout {
            expire_turn_after(&self.link, &mut s, key, d);
        }
        self.link.wake_if_needed(s);
        Ok(())
    }

    /// What turn `key`'s stream has for its loop (see [`EventCounters`]
    /// for counting the events of a batch). `wait`: if nothing, a
    /// `TurnUpdate::Ready` comes when something does. A turn that is over, or
    /// unknown, gives `Ended` once its stream is empty: the loop then ends
    /// as the turn's result does.
    pub fn take_turn_events(&self, key: u64, wait: bool) -> Take {
        if let Some(e) = self.link.foreign() {
            return Take::Ended(End::Failed(e));
        }
        let mut s = self.link.lock();
        let (count, bytes) = self.link.counters.taken();
        s.stream.events.settle(count, bytes);
        let epoch = s.stream.events.epoch();
        let t = s.turns.take(key, epoch, wait);
        if let Take::Batch { epoch, counting, .. } = &t {
            self.link.counters.set_batch(*epoch, *counting);
        }
        t
    }

    /// A loop starts reading turn `key` (`true`), or leaves it before its
    /// end (`false`): the turn is then interrupted if it still runs, and
    /// what the loop left stops counting and stays for a later loop.
    pub fn read_turn(&self, key: u64, reading: bool) {
        if self.link.foreign().is_some() {
            return;
        }
        let mut s = self.link.lock();
        let Shared { turns, stream, .. } = &mut *s;
        turns.read(&mut stream.events, key, reading);
        self.link.wake_if_needed(s);
    }

    /// Stop turn `key` (the host's signal aborted, its task was
    /// cancelled): the agent is interrupted, and the result fails with the
    /// stop's error (`aborted`, or `timeout` for a timeout signal) once the
    /// turn finished and the interrupt was answered, or at the latest
    /// [`crate::stop::TURN_STOP_GRACE`] from now.
    pub fn stop_turn(&self, key: u64, stop: &Why) {
        if self.link.foreign().is_some() {
            return;
        }
        let mut s = self.link.lock();
        stop_turn(&self.link, &mut s, key, stop);
        self.link.wake_if_needed(s);
    }

    /// Interrupt turn `key` if it still runs, as call `token`: true if there
    /// is nothing to do (done now), else an `Outcome::Done` for `token`
    /// comes once the interrupt is answered.
    pub fn interrupt_turn(&self, key: u64, token: u64) -> bool {
        if self.link.foreign().is_some() {
            return true;
        }
        let mut s = self.link.lock();
        let done = s.turns.interrupt(key, token);
        self.link.wake_if_needed(s);
        done
    }

    /// What the host's approval function came to for `approval` of turn `key`.
    pub fn answer_approval(&self, key: u64, approval: &str, answer: Answer) {
        if self.link.foreign().is_some() {
            return;
        }
        let mut s = self.link.lock();
        s.turns.answer(key, approval, answer);
        self.link.wake_if_needed(s);
    }

    /// The host let go of turn `key` (its object is gone): nothing of it is
    /// kept for a loop any more.
    pub fn release_turn(&self, key: u64) {
        if self.link.foreign().is_some() {
            return;
        }
        let mut s = self.link.lock();
        let Shared { turns, stream, .. } = &mut *s;
        turns.release(&mut stream.events, key);
        self.link.wake_if_needed(s);
    }

    /// Start the child (the first call): the supervisor task does it.
    fn start(&self, s: &mut Shared) {
        if s.phase != Phase::NotStarted {
            return;
        }
        s.phase = Phase::Starting;
        supervise::start(self.link.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use crate::error::ErrorCode;

    use super::*;

    struct NoWake;

    impl Waker for NoWake {
        fn wake(&self) {}
    }

    #[test]
    fn a_connection_made_before_fork_refuses_every_call_without_taking_its_lock() {
        let mut c = Connection::new(ConnectionOptions::default(), Box::new(NoWake));
        // As in a process forked after the connection was made.
        Arc::get_mut(&mut c.link).expect("not started").generation = crate::runtime::generation().wrapping_add(1);
        // A thread of the parent held the lock at the fork: it stays locked.
        let held = c.link.lock();
        let (tx, rx) = mpsc::channel();
        let calls = c.clone();
        std::thread::spawn(move || {
            let t = calls.token();
            let request = calls.request(t, "state", None, None).unwrap_err();
            let probe = calls.probe(calls.token(), None).err().expect("probe refused");
            calls.abandon(t);
            calls.kill_now();
            calls.unwant_events();
            let rest =
                (calls.drain().len(), calls.take_events(true), calls.stderr_text(), calls.pid(), calls.has_pidfd());
            let _ = tx.send((request, probe, calls.close(calls.token()), calls.is_closed(), rest));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(20));
        drop(held);
        let (request, probe, close, closed, rest) = got.expect("a call waited for the lock");
        assert_eq!(request.code, ErrorCode::TransportFailure);
        assert!(request.message.contains("made before fork()"), "{}", request.message);
        assert!(request.message.contains("make a new client in this process"), "{}", request.message);
        assert_eq!(probe, request);
        assert_eq!(close, Closing::Refused(request.clone()));
        assert!(closed);
        assert_eq!(rest, (0, Take::Ended(End::Failed(request)), String::new(), None, None));
    }

    #[test]
    fn a_connection_of_this_process_is_not_refused() {
        let c = Connection::new(ConnectionOptions::default(), Box::new(NoWake));
        assert_eq!(c.take_events(false), Take::Empty);
        assert_eq!(c.close(c.token()), Closing::Done, "never started: closed at once");
    }
}
