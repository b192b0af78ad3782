//! The connection to one `koma sdk serve` child, as a few actors that share
//! one state (see `state.rs`, grouped by concern) behind one mutex:
//!
//! - this file: the API the binding calls from its JavaScript thread;
//! - [`phase`]: where the connection is in its life;
//! - `supervise.rs`: the supervisor task, which owns the child from spawn to
//!   reap, stops it when asked, and ends the connection's life;
//! - `reader.rs`: the reader task (stdout: split, check, route);
//! - `route.rs`: frames classified and applied (hello, responses, events);
//! - `writer.rs`: stdin, written directly or by the writer task;
//! - `drain.rs`: the stderr drain;
//! - `timers.rs`: the calls' deadlines.
//!
//! Everything that completes later is queued as a [`Completion`] and the
//! [`Waker`] is called once per batch, so the JavaScript thread wakes once for
//! many answers and events.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::child::{ExitInfo, LaunchOptions};
use crate::error::{ErrorCode, KomaError};
use crate::events::{End, Take};
use crate::hello::Hello;
use crate::lifecycle::Lifecycle;
use crate::lift::LiftedString;
use crate::params;
use crate::MAX_FRAME_BYTES;

mod drain;
mod phase;
mod reader;
mod route;
mod state;
mod supervise;
mod timers;
mod writer;

pub use route::{batch_data_index, BATCH_STRIDE};

use phase::{closed_error, Phase};
use state::{Queued, Scope, Shared};

/// How long `close()` waits for a detach to be answered and the child to exit.
pub const DETACH_GRACE: Duration = Duration::from_secs(2);
/// How long after stdin's end, then after SIGTERM, before the next step.
pub const STOP_GRACE: Duration = Duration::from_millis(1000);
/// How long a failure waits for stderr to close and the child to exit, so the
/// child's last words are in the message.
pub const LAST_WORDS_GRACE: Duration = Duration::from_millis(500);
/// How long after the child's exit (and its group's) stdout may stay open
/// (held by a process that left the group) before it is cut.
pub const EXIT_EOF_GRACE: Duration = Duration::from_millis(300);

/// Called (from any thread) when completions or events are ready for the binding.
pub trait Waker: Send + Sync + 'static {
    fn wake(&self);
}

/// A JSON value as raw text: `bytes[range]`, with its long strings lifted
/// out (see [`crate::lift`]): put back at their paths after parsing.
#[derive(Debug)]
pub struct RawJson {
    pub bytes: Vec<u8>,
    pub range: Range<usize>,
    pub lifts: Vec<LiftedString>,
}

impl RawJson {
    pub fn text(&self) -> &[u8] {
        &self.bytes[self.range.clone()]
    }
}

#[derive(Debug)]
pub enum Outcome {
    /// A success response's `result`.
    Result(RawJson),
    /// `probe()`: the checked hello.
    Hello(Arc<Hello>),
    /// `close()` is done.
    Closed,
    Error(KomaError),
}

#[derive(Debug)]
pub struct Completion {
    pub token: u64,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, Default)]
pub struct ConnectionOptions {
    pub launch: LaunchOptions,
    /// Print every frame in both directions and every stderr line to this process's stderr.
    pub trace: bool,
    /// How the host names this client in traces and in messages about
    /// internal errors (its package name, say). Empty: `koma-transport`.
    pub label: String,
    /// How long the first call waits for hello before the client fails
    /// (`None`: no bound).
    pub hello_timeout: Option<Duration>,
    /// Faults to inject, for tests.
    #[cfg(feature = "testing")]
    pub faults: Faults,
}

/// Faults a test can inject (only with the `testing` feature).
#[cfg(feature = "testing")]
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// The reader panics at the first frame.
    pub panic_in_reader: bool,
}

/// Memory shared with the application's thread without a lock, as 32-bit
/// slots: the binding hands it to JavaScript as an `Int32Array`, and the
/// iterator (`events.js`) gets the slot numbers from [`EventCounters::LAYOUT`].
#[repr(C)]
#[derive(Default)]
pub struct EventCounters {
    slots: [AtomicU32; EventCounters::SLOTS],
}

impl EventCounters {
    /// The epoch of lent event batches (written by the reader; an overflow bumps it).
    pub const EPOCH: usize = 0;
    /// The running count of events the application has taken (written by the application).
    pub const TAKEN: usize = 1;
    /// The epoch of the batch last handed over (written and read on the application's thread).
    pub const BATCH_EPOCH: usize = 2;
    /// The running count of the frame bytes of the events taken (written by the application).
    pub const TAKEN_BYTES: usize = 3;
    pub const SLOTS: usize = 4;
    /// The slots by name, for the JavaScript side.
    pub const LAYOUT: [(&'static str, usize); 4] = [
        ("EPOCH", Self::EPOCH),
        ("TAKEN", Self::TAKEN),
        ("BATCH_EPOCH", Self::BATCH_EPOCH),
        ("TAKEN_BYTES", Self::TAKEN_BYTES),
    ];

    pub fn as_ptr(&self) -> *mut u32 {
        self.slots.as_ptr() as *mut u32
    }

    pub fn byte_len(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// The running counts of events, and of their frame bytes, taken.
    pub fn taken(&self) -> (u32, u32) {
        (self.slots[Self::TAKEN].load(Ordering::Acquire), self.slots[Self::TAKEN_BYTES].load(Ordering::Acquire))
    }

    /// The application took `n` more events of `bytes` in all (for a consumer
    /// in Rust; the binding's iterator writes the slots from JavaScript).
    pub fn add_taken(&self, n: u32, bytes: u32) {
        self.slots[Self::TAKEN_BYTES].fetch_add(bytes, Ordering::AcqRel);
        self.slots[Self::TAKEN].fetch_add(n, Ordering::AcqRel);
    }

    pub fn set_epoch(&self, epoch: u32) {
        self.slots[Self::EPOCH].store(epoch, Ordering::Release);
    }

    pub fn set_batch_epoch(&self, epoch: u32) {
        self.slots[Self::BATCH_EPOCH].store(epoch, Ordering::Relaxed);
    }
}

/// Why the supervisor stops the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A detach is on its way: give it [`DETACH_GRACE`] first.
    AfterDetach,
    /// Stdin's end, then SIGTERM, then SIGKILL, each after [`STOP_GRACE`].
    Now,
    /// SIGKILL at once (the client object is gone).
    Kill,
}

/// What the connection's tasks wait on.
struct Signals {
    /// The child has exited (and is reaped): how.
    exit: watch::Sender<Option<ExitInfo>>,
    /// The reading of stdout has ended.
    stdout_end: watch::Sender<bool>,
    /// The stderr drain has ended.
    stderr_end: watch::Sender<bool>,
    /// Stop the child (the strongest request wins).
    stop: watch::Sender<Option<Stop>>,
}

struct Inner {
    shared: Mutex<Shared>,
    waker: Box<dyn Waker>,
    options: ConnectionOptions,
    signals: Signals,
    /// Signalled when the binding drains: the reader, having woken the
    /// JavaScript thread, reads on only once that wake was taken, so answers
    /// that arrive meanwhile are read (and delivered) together.
    drained: Notify,
    counters: Arc<EventCounters>,
}

/// Live counts of this process, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// Connections whose memory is still held (by the binding or a task).
    pub connections: usize,
    /// Call deadlines still running.
    pub timers: usize,
}

static LIVE_CONNECTIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub(crate) static LIVE_TIMERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many connections and deadlines are alive in this process.
pub fn census() -> Census {
    Census { connections: LIVE_CONNECTIONS.load(Ordering::SeqCst), timers: LIVE_TIMERS.load(Ordering::SeqCst) }
}

/// One client's connection. Cheap to clone.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
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
}

impl Connection {
    pub fn new(options: ConnectionOptions, waker: Box<dyn Waker>) -> Self {
        LIVE_CONNECTIONS.fetch_add(1, Ordering::SeqCst);
        Connection {
            inner: Arc::new(Inner {
                shared: Mutex::new(Shared::new()),
                waker,
                options,
                signals: Signals {
                    exit: watch::channel(None).0,
                    stdout_end: watch::channel(false).0,
                    stderr_end: watch::channel(false).0,
                    stop: watch::channel(None).0,
                },
                drained: Notify::new(),
                counters: Arc::new(EventCounters::default()),
            }),
        }
    }

    /// A new call's token: its completion will carry it. Taken before the call
    /// is made, so the binding can be ready for the answer before anything is written.
    pub fn token(&self) -> u64 {
        self.inner.lock().new_token()
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
        let mut s = self.inner.lock();
        if let Some(e) = s.phase.refusal() {
            return Err(e);
        }
        let line = request_line(token, method, params_json)?;
        if s.phase.awaits_hello() {
            s.calls.before_hello.push(Queued { token, method: method.to_owned(), line });
            self.start(&mut s);
        } else {
            self.admit(&mut s, token, method, line)?;
        }
        if let Some(d) = timeout {
            self.expire_after(&mut s, token, d);
        }
        Ok(())
    }

    /// Check and write one request once hello is known.
    fn admit(&self, s: &mut Shared, token: u64, method: &str, line: Vec<u8>) -> Result<(), KomaError> {
        let hello = s.session.hello.clone().expect("hello checked");
        if !hello.supports(method) {
            return Err(KomaError::new(
                ErrorCode::Unsupported,
                format!("`{method}` is not in this koma's capabilities ({})", hello.capabilities.join(", ")),
            ));
        }
        let mut lifecycle = s.session.lifecycle;
        lifecycle.admit(method)?;
        s.calls.pending.insert(token, method)?;
        s.session.lifecycle = lifecycle;
        if method == "detach" {
            s.session.detach_token = Some(token);
        }
        if self.inner.options.trace {
            trace("->", &line[..line.len() - 1]);
        }
        writer::write_or_queue(s, token, line);
        Ok(())
    }

    /// Start the child if it has not been started; resolves with hello.
    pub fn probe(&self, token: u64, timeout: Option<Duration>) -> Result<Probe, KomaError> {
        let mut s = self.inner.lock();
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
            self.expire_after(&mut s, token, d);
        }
        Ok(Probe::Wait)
    }

    /// Forget a call (aborted by its signal): its late answer is ignored, and
    /// if it was not yet written it never will be. Frees its pending slot.
    pub fn abandon(&self, token: u64) {
        self.inner.lock().forget(token);
    }

    /// Completions ready for the binding. Clears the wake flag: the next
    /// completion wakes again.
    pub fn drain(&self) -> Vec<Completion> {
        let mut s = self.inner.lock();
        s.outbox.wake_scheduled = false;
        let completions = std::mem::take(&mut s.outbox.completions);
        drop(s);
        self.inner.drained.notify_one();
        completions
    }

    /// Take what is waiting in the event buffer. If nothing is, and `wait`,
    /// the waker will be called when something is.
    pub fn take_events(&self, wait: bool) -> Take {
        let mut s = self.inner.lock();
        let (count, bytes) = self.inner.counters.taken();
        s.stream.events.settle(count, bytes);
        let t = s.stream.events.take();
        if let Take::Batch { epoch, .. } = &t {
            self.inner.counters.set_batch_epoch(*epoch);
        }
        s.stream.wanted = wait && t == Take::Empty;
        t
    }

    /// The counters the application updates as it takes events of a batch.
    pub fn event_counters(&self) -> Arc<EventCounters> {
        self.inner.counters.clone()
    }

    /// Stop wanting a wake for events.
    pub fn unwant_events(&self) {
        self.inner.lock().stream.wanted = false;
    }

    /// The kept stderr tail.
    pub fn stderr_text(&self) -> String {
        self.inner.lock().stderr.text()
    }

    /// The child's pid, once started and until reaped.
    pub fn pid(&self) -> Option<u32> {
        let s = self.inner.lock();
        s.child.process.as_ref().filter(|p| !p.is_reaped()).map(|p| p.pid())
    }

    /// Whether the child's exit is watched through a pidfd (for tests and diagnostics).
    pub fn has_pidfd(&self) -> Option<bool> {
        self.inner.lock().child.process.as_ref().map(|p| p.has_pidfd())
    }

    /// Stop the child's whole group at once (the client object is gone).
    pub fn kill_now(&self) {
        let s = self.inner.lock();
        if let Some(p) = &s.child.process {
            p.kill_now();
        }
        drop(s);
        self.request_stop(Stop::Kill);
    }

    /// Event frames counted against the bound (for tests and diagnostics).
    pub fn buffered_events(&self) -> (usize, usize) {
        let s = self.inner.lock();
        (s.stream.events.counted_frames(), s.stream.events.counted_bytes())
    }

    /// Whether `close()` is done: the child is reaped and every task and
    /// descriptor of this connection is gone (for tests and diagnostics).
    pub fn is_closed(&self) -> bool {
        self.inner.lock().phase == Phase::Closed
    }

    /// Close: detach if it can (bounded), else stdin's end, SIGTERM, SIGKILL,
    /// each after a grace. The child and its group are stopped and reaped, and
    /// every task and descriptor of the connection is gone before `close` is
    /// done. Pending requests then get `delivery_unknown`.
    pub fn close(&self, token: u64) -> Closing {
        let mut s = self.inner.lock();
        match s.phase {
            Phase::Closed => return Closing::Done,
            Phase::NotStarted => {
                s.phase = Phase::Closed;
                s.stream.events.end(End::Finished);
                self.wake_if_needed(s);
                return Closing::Done;
            }
            _ => {}
        }
        s.calls.close_waiters.push(token);
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
                let t = s.new_token();
                let line = format!("{{\"id\":\"{t}\",\"method\":\"detach\",\"params\":{{}}}}\n").into_bytes();
                s.session.lifecycle = Lifecycle::Detached;
                if s.calls.pending.insert(t, "detach").is_ok() {
                    s.session.close_detach = Some(t);
                    if self.inner.options.trace {
                        trace("->", &line[..line.len() - 1]);
                    }
                    writer::write_or_queue(&mut s, t, line);
                    stop = Stop::AfterDetach;
                }
            }
        }
        if s.child.supervisor_done {
            // Nothing is left to stop (the client failed or ended earlier).
            self.finish_close(&mut s);
            self.wake_if_needed(s);
        } else {
            self.wake_if_needed(s);
            self.request_stop(stop);
        }
        Closing::Wait
    }

    /// Settle everything once close has stopped the child and let go of
    /// every resource.
    fn finish_close(&self, s: &mut Shared) {
        let unknown = |m: &str| {
            KomaError::new(
                ErrorCode::DeliveryUnknown,
                format!("`{m}` was written, then the client was closed before its answer"),
            )
        };
        s.settle_calls(Scope::All, unknown, &closed_error());
        s.complete_detach();
        s.stream.events.end(End::Finished);
        s.phase = Phase::Closed;
        for t in std::mem::take(&mut s.calls.close_waiters) {
            s.complete(t, Outcome::Closed);
        }
        s.calls.timers.clear(); // cancelled as they drop
    }

    /// Ask the supervisor to stop the child; a stronger request replaces a weaker one.
    fn request_stop(&self, stop: Stop) {
        self.inner.signals.stop.send_if_modified(|current| {
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

    /// Start the child (the first call): the supervisor task does it.
    fn start(&self, s: &mut Shared) {
        if s.phase != Phase::NotStarted {
            return;
        }
        s.phase = Phase::Starting;
        supervise::start(self.clone());
    }

    fn with_stderr_tail(&self, what: String) -> String {
        let tail = self.inner.lock().stderr.last_lines(12, 2000);
        if tail.is_empty() {
            format!("{what}; stderr was empty")
        } else {
            format!("{what}; last lines of stderr:\n{tail}")
        }
    }

    /// The client failed: settle everything, end the events with the error,
    /// and stop the child. The first failure wins; after close or the end of
    /// the session it changes nothing.
    fn fail(&self, err: KomaError) {
        let mut s = self.inner.lock();
        if !s.phase.can_fail() {
            return;
        }
        s.phase = Phase::Failed(err.clone());
        let unknown = |m: &str| {
            KomaError::new(
                ErrorCode::DeliveryUnknown,
                format!("`{m}` was written, but no answer can come: {}", err.message),
            )
        };
        s.settle_calls(Scope::All, unknown, &err);
        s.session.detach_token = None;
        s.stream.events.end(End::Failed(err));
        self.wake_if_needed(s);
        self.request_stop(Stop::Now);
    }

    fn fail_with_stderr(&self, e: KomaError) {
        let msg = self.with_stderr_tail(e.message);
        self.fail(KomaError { message: msg, ..e });
    }

    /// After a lock section that may have queued completions or events.
    fn wake_if_needed(&self, mut s: MutexGuard<'_, Shared>) {
        let ready = !s.outbox.completions.is_empty() || (s.stream.wanted && s.stream.events.is_ready());
        if ready && !s.outbox.wake_scheduled {
            s.outbox.wake_scheduled = true;
            drop(s);
            self.inner.waker.wake();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        LIVE_CONNECTIONS.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `{"id":"N","method":M,"params":P}\n`, with `params` checked (`frame_too_large` over 40 MiB).
fn request_line(token: u64, method: &str, params_json: Option<&str>) -> Result<Vec<u8>, KomaError> {
    let params = params::check(method, params_json)?;
    let method_json = serde_json::to_string(method).expect("string");
    let mut line = Vec::with_capacity(params.len() + method_json.len() + 40);
    line.extend_from_slice(b"{\"id\":\"");
    line.extend_from_slice(itoa::Buffer::new().format(token).as_bytes());
    line.extend_from_slice(b"\",\"method\":");
    line.extend_from_slice(method_json.as_bytes());
    line.extend_from_slice(b",\"params\":");
    line.extend_from_slice(params.as_bytes());
    line.push(b'}');
    if line.len() > MAX_FRAME_BYTES {
        return Err(KomaError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "the `{method}` request would be {} bytes, over the 40 MiB frame bound ({MAX_FRAME_BYTES}); nothing was written",
                line.len()
            ),
        ));
    }
    line.push(b'\n');
    Ok(line)
}

fn trace(dir: &str, bytes: &[u8]) {
    let shown = &bytes[..bytes.len().min(4096)];
    let more = if bytes.len() > shown.len() { format!(" … ({} bytes)", bytes.len()) } else { String::new() };
    eprintln!("[koma-sdk] {dir} {}{more}", crate::quote::escape_text(&String::from_utf8_lossy(shown), false));
}
