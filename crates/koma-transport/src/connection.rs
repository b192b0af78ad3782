//! The connection to one `koma sdk serve` child: the reader task (stdout:
//! split, check, route), the stderr drain, the writer task (stdin), and the
//! lifecycle of the process from spawn to reap.
//!
//! The binding calls in from its JavaScript thread; everything that completes
//! later is queued as a [`Completion`] and the [`Waker`] is called once per
//! batch, so the JavaScript thread wakes once for many answers and events.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, watch};

use crate::child::{self, ExitInfo, LaunchOptions, ProcessControl};
use crate::error::{ErrorCode, KomaError, RemoteError};
use crate::events::{End, EventBuffer, Take};
use crate::frame::{classify, Frame, Line, LineSplitter, ResponseBody, Violation};
use crate::hello::{self, Hello};
use crate::lifecycle::Lifecycle;
use crate::lift::{lift, LiftedString, Source, Step, LIFT_MIN_BYTES};
use crate::params;
use crate::pending::PendingTable;
use crate::stderr::StderrRing;
use crate::MAX_FRAME_BYTES;

/// How long `close()` waits for a detach to be answered and the child to exit.
pub const DETACH_GRACE: Duration = Duration::from_secs(2);
/// How long after stdin's end, then after SIGTERM, before the next step.
pub const STOP_GRACE: Duration = Duration::from_millis(1000);
/// How long a failure waits for stderr to close and the child to exit, so the
/// child's last words are in the message.
pub const LAST_WORDS_GRACE: Duration = Duration::from_millis(500);
/// How long after the child's exit stdout may stay open (held by a tool).
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
}

/// The shared runtime for all connections' I/O tasks (two worker threads, never shut down,
/// so it serves every Node environment in the process, Workers included).
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("koma-io")
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    NotStarted,
    Starting,
    Ready,
    /// A transport failure or a protocol error; the child is being stopped.
    Failed(KomaError),
    /// Stdout ended after detach.
    Ended,
    Closing,
    Closed,
}

enum WriterMsg {
    Line { token: u64, line: Vec<u8> },
    /// The rest of a line whose start was written directly.
    Rest(Vec<u8>),
    /// Close stdin.
    Shutdown,
}

struct Queued {
    token: u64,
    method: String,
    line: Vec<u8>,
}

struct Shared {
    phase: Phase,
    next_token: u64,
    hello: Option<Arc<Hello>>,
    lifecycle: Lifecycle,
    pending: PendingTable,
    before_hello: Vec<Queued>,
    hello_waiters: Vec<u64>,
    close_waiters: Vec<u64>,
    completions: Vec<Completion>,
    wake_scheduled: bool,
    events: EventBuffer,
    events_wanted: bool,
    last_seq: Option<u64>,
    frames_seen: u64,
    stderr: StderrRing,
    writer: Option<mpsc::UnboundedSender<WriterMsg>>,
    /// koma's stdin (non-blocking), for writing directly from the caller's
    /// thread while the writer task has nothing queued: no thread hop.
    stdin_fd: Option<std::os::fd::RawFd>,
    /// The writer task has lines queued or in progress: keep the order, queue behind them.
    write_backlog: bool,
    process: Option<Arc<ProcessControl>>,
    detach_token: Option<u64>,
    detach_answer: Option<Outcome>,
    /// The end of stdout has been handled (normally or as a failure).
    stdout_handled: bool,
    reader_abort: Option<tokio::task::AbortHandle>,
}

struct Inner {
    shared: Mutex<Shared>,
    waker: Box<dyn Waker>,
    options: ConnectionOptions,
    exit_tx: watch::Sender<Option<ExitInfo>>,
    stdout_end_tx: watch::Sender<bool>,
    stderr_end_tx: watch::Sender<bool>,
    closed_tx: watch::Sender<bool>,
    /// Signalled when the binding drains: the reader, having woken the
    /// JavaScript thread, reads on only once that wake was taken, so answers
    /// that arrive meanwhile are read (and delivered) together.
    drained: tokio::sync::Notify,
    counters: Arc<EventCounters>,
}

/// Shared with the application's thread without a lock: the epoch of lent
/// event batches (written here), and the running count of events the
/// application has taken (written there). The binding hands this memory to
/// JavaScript as an `Int32Array` of two elements.
#[repr(C)]
#[derive(Default)]
pub struct EventCounters {
    pub epoch: std::sync::atomic::AtomicU32,
    pub taken: std::sync::atomic::AtomicU32,
    /// The epoch of the batch last handed over (written and read on the application's thread).
    pub batch_epoch: std::sync::atomic::AtomicU32,
}

/// One client's connection. Cheap to clone.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

/// What `probe()` gets at once.
pub enum Probe {
    Ready(Arc<Hello>),
    /// The hello will come as a completion for this token.
    Wait(u64),
}

impl Connection {
    pub fn new(options: ConnectionOptions, waker: Box<dyn Waker>) -> Self {
        Connection {
            inner: Arc::new(Inner {
                shared: Mutex::new(Shared {
                    phase: Phase::NotStarted,
                    next_token: 1,
                    hello: None,
                    lifecycle: Lifecycle::Fresh,
                    pending: PendingTable::default(),
                    before_hello: Vec::new(),
                    hello_waiters: Vec::new(),
                    close_waiters: Vec::new(),
                    completions: Vec::new(),
                    wake_scheduled: false,
                    events: EventBuffer::default(),
                    events_wanted: false,
                    last_seq: None,
                    frames_seen: 0,
                    stderr: StderrRing::default(),
                    writer: None,
                    stdin_fd: None,
                    write_backlog: false,
                    process: None,
                    detach_token: None,
                    detach_answer: None,
                    stdout_handled: false,
                    reader_abort: None,
                }),
                waker,
                options,
                exit_tx: watch::channel(None).0,
                stdout_end_tx: watch::channel(false).0,
                stderr_end_tx: watch::channel(false).0,
                closed_tx: watch::channel(false).0,
                drained: tokio::sync::Notify::new(),
                counters: Arc::new(EventCounters::default()),
            }),
        }
    }

    /// Send a request. Returns its token: its answer comes as a [`Completion`].
    /// Local rejections (nothing written) are returned at once.
    pub fn request(
        &self,
        method: &str,
        params_json: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<u64, KomaError> {
        let mut s = self.inner.lock();
        refuse_if_unusable(&s)?;
        let params = params::check(method, params_json)?;
        let token = s.next_token;
        let method_json = serde_json::to_string(method).expect("string");
        let mut line = Vec::with_capacity(params.len() + method_json.len() + 40);
        line.extend_from_slice(b"{\"id\":\"");
        line.extend_from_slice(token.to_string().as_bytes());
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
        drop(params);
        s.next_token += 1;
        line.push(b'\n');
        match s.phase {
            Phase::NotStarted | Phase::Starting => {
                s.before_hello.push(Queued { token, method: method.to_owned(), line });
                if s.phase == Phase::NotStarted {
                    self.start_locked(&mut s);
                }
            }
            _ => {
                self.admit_locked(&mut s, token, method, line)?;
            }
        }
        drop(s);
        if let Some(d) = timeout {
            self.expire_after(token, d);
        }
        Ok(token)
    }

    /// Check and write one request once hello is known.
    fn admit_locked(&self, s: &mut Shared, token: u64, method: &str, line: Vec<u8>) -> Result<(), KomaError> {
        let hello = s.hello.clone().expect("hello checked");
        if !hello.supports(method) {
            return Err(KomaError::new(
                ErrorCode::Unsupported,
                format!("`{method}` is not in this koma's capabilities ({})", hello.capabilities.join(", ")),
            ));
        }
        let mut lifecycle = s.lifecycle;
        lifecycle.admit(method)?;
        s.pending.insert(token, method)?;
        s.lifecycle = lifecycle;
        if method == "detach" {
            s.detach_token = Some(token);
        }
        if self.inner.options.trace {
            trace("->", &line[..line.len() - 1]);
        }
        write_or_queue(s, token, line);
        Ok(())
    }

    /// Start the child if it has not been started; resolves with hello.
    pub fn probe(&self, timeout: Option<Duration>) -> Result<Probe, KomaError> {
        let mut s = self.inner.lock();
        match &s.phase {
            Phase::Closing | Phase::Closed => return Err(closed_error()),
            Phase::Failed(e) => return Err(e.clone()),
            _ => {}
        }
        if let Some(h) = &s.hello {
            return Ok(Probe::Ready(h.clone()));
        }
        let token = s.next_token;
        s.next_token += 1;
        s.hello_waiters.push(token);
        if s.phase == Phase::NotStarted {
            self.start_locked(&mut s);
        }
        drop(s);
        if let Some(d) = timeout {
            self.expire_after(token, d);
        }
        Ok(Probe::Wait(token))
    }

    /// Forget a request (aborted by its signal): its late answer is ignored,
    /// and if it was not yet written it never will be. Frees its pending slot.
    pub fn abandon(&self, token: u64) {
        let mut s = self.inner.lock();
        s.pending.abandon(token);
        s.before_hello.retain(|q| q.token != token);
        s.hello_waiters.retain(|t| *t != token);
    }

    fn expire_after(&self, token: u64, d: Duration) {
        let conn = self.clone();
        runtime().spawn(async move {
            tokio::time::sleep(d).await;
            conn.expire(token, d);
        });
    }

    fn expire(&self, token: u64, after: Duration) {
        let mut s = self.inner.lock();
        let found = s
            .pending
            .abandon(token)
            .map(|p| p.method)
            .or_else(|| {
                let i = s.before_hello.iter().position(|q| q.token == token)?;
                Some(s.before_hello.remove(i).method)
            })
            .or_else(|| {
                let i = s.hello_waiters.iter().position(|t| *t == token)?;
                s.hello_waiters.remove(i);
                Some("probe".to_owned())
            });
        if let Some(method) = found {
            let e = KomaError::new(
                ErrorCode::Timeout,
                format!("`{method}` was not answered within {} ms", after.as_millis()),
            );
            s.completions.push(Completion { token, outcome: Outcome::Error(e) });
            self.wake_if_needed(s);
        }
    }

    /// Completions ready for the binding. Clears the wake flag: the next
    /// completion wakes again.
    pub fn drain(&self) -> Vec<Completion> {
        let mut s = self.inner.lock();
        s.wake_scheduled = false;
        let completions = std::mem::take(&mut s.completions);
        drop(s);
        self.inner.drained.notify_one();
        completions
    }

    /// Take what is waiting in the event buffer. If nothing is, and `wait`,
    /// the waker will be called when something is.
    pub fn take_events(&self, wait: bool) -> Take {
        let mut s = self.inner.lock();
        s.events.settle(self.inner.counters.taken.load(std::sync::atomic::Ordering::Acquire));
        let t = s.events.take();
        s.events_wanted = wait && t == Take::Empty;
        t
    }

    /// The counters the application updates as it takes events of a batch.
    pub fn event_counters(&self) -> Arc<EventCounters> {
        self.inner.counters.clone()
    }

    /// Stop wanting a wake for events.
    pub fn unwant_events(&self) {
        self.inner.lock().events_wanted = false;
    }

    /// The kept stderr tail.
    pub fn stderr_text(&self) -> String {
        self.inner.lock().stderr.text()
    }

    /// The child's pid, once started and until reaped.
    pub fn pid(&self) -> Option<u32> {
        let s = self.inner.lock();
        s.process.as_ref().filter(|p| !p.has_exited()).map(|p| p.pid())
    }

    /// Stop the child's whole group at once (the client object is gone).
    pub fn kill_now(&self) {
        let s = self.inner.lock();
        if matches!(s.phase, Phase::Closed) {
            return;
        }
        if let Some(p) = &s.process {
            if !p.has_exited() {
                p.signal_group(libc::SIGKILL);
            }
        }
    }

    /// Event frames counted against the bound (for tests and diagnostics).
    pub fn buffered_events(&self) -> (usize, usize) {
        let s = self.inner.lock();
        (s.events.counted_frames(), s.events.counted_bytes())
    }

    /// Close: detach if it can (bounded), else stdin EOF, SIGTERM, SIGKILL,
    /// each after a grace; the child is always reaped. Returns `None` when
    /// already closed, else the token of the completion that says it is done.
    pub fn close(&self) -> Option<u64> {
        let mut s = self.inner.lock();
        match s.phase {
            Phase::Closed => return None,
            Phase::NotStarted => {
                s.phase = Phase::Closed;
                s.events.end(End::Finished);
                self.inner.closed_tx.send_replace(true);
                self.wake_if_needed(s);
                return None;
            }
            _ => {}
        }
        let token = s.next_token;
        s.next_token += 1;
        s.close_waiters.push(token);
        if s.phase == Phase::Closing {
            return Some(token);
        }
        let detach = s.phase == Phase::Ready && s.lifecycle != Lifecycle::Detached && s.hello.as_ref().is_some_and(|h| h.supports("detach"));
        s.phase = Phase::Closing;
        // Requests that wait for hello will never be written now.
        let queued: Vec<Queued> = std::mem::take(&mut s.before_hello);
        for q in queued {
            s.completions.push(Completion { token: q.token, outcome: Outcome::Error(closed_error()) });
        }
        for t in std::mem::take(&mut s.hello_waiters) {
            s.completions.push(Completion { token: t, outcome: Outcome::Error(closed_error()) });
        }
        let mut detach_token = None;
        if detach {
            let t = s.next_token;
            s.next_token += 1;
            let line = format!("{{\"id\":\"{t}\",\"method\":\"detach\",\"params\":{{}}}}\n").into_bytes();
            s.lifecycle = Lifecycle::Detached;
            if s.pending.insert(t, "detach").is_ok() {
                if self.inner.options.trace {
                    trace("->", &line[..line.len() - 1]);
                }
                write_or_queue(&mut s, t, line);
                detach_token = Some(t);
            }
        }
        drop(s);
        let conn = self.clone();
        runtime().spawn(async move {
            if detach_token.is_some() {
                let mut end = conn.inner.stdout_end_tx.subscribe();
                let mut exit = conn.inner.exit_tx.subscribe();
                let _ = tokio::time::timeout(DETACH_GRACE, async {
                    let _ = end.wait_for(|v| *v).await;
                    let _ = exit.wait_for(|v| v.is_some()).await;
                })
                .await;
            }
            conn.stop_child().await;
            conn.finish_close();
        });
        Some(token)
    }

    /// Settle everything after close stopped the child.
    fn finish_close(&self) {
        let mut s = self.inner.lock();
        let pending: Vec<_> = s.pending.drain().collect();
        for (token, p) in pending {
            let e = if p.written {
                KomaError::new(
                    ErrorCode::DeliveryUnknown,
                    format!("`{}` was written, then the client was closed before its answer", p.method),
                )
            } else {
                closed_error()
            };
            s.completions.push(Completion { token, outcome: Outcome::Error(e) });
        }
        if let Some(t) = s.detach_token.take() {
            if let Some(answer) = s.detach_answer.take() {
                s.completions.push(Completion { token: t, outcome: answer });
            }
        }
        s.events.end(End::Finished);
        s.phase = Phase::Closed;
        s.writer = None;
        for t in std::mem::take(&mut s.close_waiters) {
            s.completions.push(Completion { token: t, outcome: Outcome::Closed });
        }
        self.inner.closed_tx.send_replace(true);
        self.wake_if_needed(s);
    }

    /// Stop the child: stdin EOF, SIGTERM, SIGKILL, each after a grace, and
    /// wait until it is reaped; then stop what is left of its group.
    async fn stop_child(&self) {
        let (process, writer) = {
            let s = self.inner.lock();
            (s.process.clone(), s.writer.clone())
        };
        let Some(process) = process else {
            // Never spawned (or the spawn failed): nothing to stop. A spawn in
            // progress reports to `attach`, which sees the closing phase.
            return;
        };
        let mut exit = self.inner.exit_tx.subscribe();
        let exited = |exit: &mut watch::Receiver<Option<ExitInfo>>, d: Duration| {
            let mut exit = exit.clone();
            async move { tokio::time::timeout(d, exit.wait_for(|v| v.is_some())).await.is_ok() }
        };
        if !exited(&mut exit, Duration::ZERO).await {
            if let Some(w) = writer {
                let _ = w.send(WriterMsg::Shutdown);
            }
            if !exited(&mut exit, STOP_GRACE).await {
                process.signal_group(libc::SIGTERM);
                if !exited(&mut exit, STOP_GRACE).await {
                    process.signal_group(libc::SIGKILL);
                    let _ = exit.wait_for(|v| v.is_some()).await;
                }
            }
        }
        process.kill_leftovers();
    }

    fn start_locked(&self, s: &mut Shared) {
        s.phase = Phase::Starting;
        let on_spawn = {
            let conn = self.clone();
            move |r| conn.attach(r)
        };
        let on_exit = {
            let conn = self.clone();
            move |info| conn.exited(info)
        };
        if let Err(e) = child::launch(self.inner.options.launch.clone(), on_spawn, on_exit) {
            // Could not even start the supervisor thread.
            let err = KomaError::new(ErrorCode::SpawnFailed, format!("could not start a supervisor thread: {e}"));
            let conn = self.clone();
            runtime().spawn(async move { conn.fail(err) });
        }
    }

    /// On the supervisor thread, right after the spawn.
    fn attach(&self, spawned: std::io::Result<(child::ChildPipes, Arc<ProcessControl>)>) {
        let (pipes, process) = match spawned {
            Ok(p) => p,
            Err(e) => {
                let exe = self.inner.options.launch.executable.to_string_lossy().into_owned();
                let err = KomaError::new(
                    ErrorCode::SpawnFailed,
                    format!("could not start `{exe} sdk serve`: {e}"),
                );
                self.fail(err);
                let mut s = self.inner.lock();
                s.stdout_handled = true;
                drop(s);
                self.inner.exit_tx.send_replace(Some(ExitInfo { code: None, signal: None }));
                self.inner.stdout_end_tx.send_replace(true);
                return;
            }
        };
        let rt = runtime();
        let _guard = rt.enter();
        let stdin = tokio::process::ChildStdin::from_std(pipes.stdin);
        let stdout = tokio::process::ChildStdout::from_std(pipes.stdout);
        let stderr = tokio::process::ChildStderr::from_std(pipes.stderr);
        let (stdin, stdout, stderr) = match (stdin, stdout, stderr) {
            (Ok(a), Ok(b), Ok(c)) => (a, b, c),
            _ => {
                process.signal_group(libc::SIGKILL);
                self.fail(KomaError::new(ErrorCode::SpawnFailed, "could not register koma's pipes"));
                return;
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let mut s = self.inner.lock();
        s.process = Some(process.clone());
        s.writer = Some(tx);
        s.stdin_fd = Some(std::os::fd::AsRawFd::as_raw_fd(&stdin));
        let closing = matches!(s.phase, Phase::Closing | Phase::Failed(_));
        let reader = self.spawn_guarded(read_stdout(self.clone(), stdout));
        s.reader_abort = Some(reader);
        drop(s);
        self.spawn_guarded(drain_stderr(self.clone(), stderr));
        self.spawn_guarded(write_stdin(self.clone(), rx, stdin));
        if closing {
            let conn = self.clone();
            rt.spawn(async move { conn.stop_child().await });
        }
    }

    /// Spawn an I/O task; if it panics, the client fails (every promise
    /// settles) instead of hanging.
    fn spawn_guarded<F>(&self, task: F) -> tokio::task::AbortHandle
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let handle = runtime().spawn(task);
        let abort = handle.abort_handle();
        let conn = self.clone();
        runtime().spawn(async move {
            if let Err(e) = handle.await {
                if e.is_panic() {
                    let msg = conn.with_stderr_tail("an internal error (a panic) in @koma/sdk's I/O task".to_owned());
                    conn.fail(KomaError::new(ErrorCode::TransportFailure, msg));
                    conn.inner.stdout_end_tx.send_replace(true);
                }
            }
        });
        abort
    }

    /// On the supervisor thread: the child has exited (not yet reaped).
    fn exited(&self, info: ExitInfo) {
        self.inner.exit_tx.send_replace(Some(info));
        let conn = self.clone();
        runtime().spawn(async move {
            // A tool of koma's may still hold stdout open: stop the group, and
            // if stdout still does not end, end it here.
            let mut end = conn.inner.stdout_end_tx.subscribe();
            if tokio::time::timeout(EXIT_EOF_GRACE, end.wait_for(|v| *v)).await.is_ok() {
                return;
            }
            let process = conn.inner.lock().process.clone();
            if let Some(p) = process {
                p.kill_leftovers();
            }
            if tokio::time::timeout(EXIT_EOF_GRACE, end.wait_for(|v| *v)).await.is_ok() {
                return;
            }
            let abort = conn.inner.lock().reader_abort.take();
            if let Some(a) = abort {
                a.abort();
            }
            conn.stdout_ended(None).await;
        });
    }

    /// The end of stdout (or of reading it). `io_error`: reading stdout failed.
    async fn stdout_ended(&self, io_error: Option<std::io::Error>) {
        {
            let mut s = self.inner.lock();
            if s.stdout_handled {
                return;
            }
            s.stdout_handled = true;
        }
        self.inner.stdout_end_tx.send_replace(true);
        let (detached, phase) = {
            let s = self.inner.lock();
            (s.lifecycle == Lifecycle::Detached, s.phase.clone())
        };
        match phase {
            Phase::Failed(_) | Phase::Closed => return,
            Phase::Closing => return, // close() settles
            _ => {}
        }
        let mut exit = self.inner.exit_tx.subscribe();
        if detached && io_error.is_none() {
            // The normal end: wait (bounded) for the exit, then settle.
            let exited = tokio::time::timeout(DETACH_GRACE, exit.wait_for(|v| v.is_some())).await.is_ok();
            if !exited {
                self.stop_child().await;
            }
            let mut s = self.inner.lock();
            if s.phase == Phase::Closing || s.phase == Phase::Closed {
                return;
            }
            s.phase = Phase::Ended;
            let pending: Vec<_> = s.pending.drain().collect();
            for (token, p) in pending {
                let e = KomaError::new(
                    ErrorCode::DeliveryUnknown,
                    format!("`{}` was written, then koma's stdout ended after detach without its answer", p.method),
                );
                s.completions.push(Completion { token, outcome: Outcome::Error(e) });
            }
            if let Some(t) = s.detach_token.take() {
                let answer = s.detach_answer.take().unwrap_or_else(|| {
                    Outcome::Error(KomaError::new(
                        ErrorCode::DeliveryUnknown,
                        "detach was written, then koma's stdout ended without its answer",
                    ))
                });
                s.completions.push(Completion { token: t, outcome: answer });
            }
            s.events.end(End::Finished);
            s.writer = None;
            self.wake_if_needed(s);
            if let Some(p) = self.inner.lock().process.clone() {
                p.kill_leftovers();
            }
            return;
        }
        // A transport failure: wait briefly for the child's last words and its exit.
        let mut stderr_end = self.inner.stderr_end_tx.subscribe();
        let _ = tokio::time::timeout(LAST_WORDS_GRACE, async {
            let _ = stderr_end.wait_for(|v| *v).await;
            let _ = exit.wait_for(|v| v.is_some()).await;
        })
        .await;
        let exit_info = *self.inner.exit_tx.borrow();
        let what = match (&io_error, exit_info) {
            (Some(e), _) => format!("reading koma's stdout failed: {e}"),
            (None, Some(info)) => format!("koma {} without detach (stdout ended)", info.describe()),
            (None, None) => "koma closed its stdout without detach".to_owned(),
        };
        let msg = self.with_stderr_tail(what);
        self.fail(KomaError::new(ErrorCode::TransportFailure, msg));
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
    /// and stop the child. The first failure wins.
    fn fail(&self, err: KomaError) {
        let mut s = self.inner.lock();
        match s.phase {
            Phase::Failed(_) | Phase::Closed | Phase::Ended => return,
            Phase::Closing => {
                // close() is stopping the child; pending answers become unknown there.
                return;
            }
            _ => {}
        }
        s.phase = Phase::Failed(err.clone());
        let pending: Vec<_> = s.pending.drain().collect();
        for (token, p) in pending {
            let e = if p.written {
                KomaError::new(
                    ErrorCode::DeliveryUnknown,
                    format!("`{}` was written, but no answer can come: {}", p.method, err.message),
                )
            } else {
                err.clone()
            };
            s.completions.push(Completion { token, outcome: Outcome::Error(e) });
        }
        s.detach_token = None;
        for q in std::mem::take(&mut s.before_hello) {
            s.completions.push(Completion { token: q.token, outcome: Outcome::Error(err.clone()) });
        }
        for t in std::mem::take(&mut s.hello_waiters) {
            s.completions.push(Completion { token: t, outcome: Outcome::Error(err.clone()) });
        }
        s.events.end(End::Failed(err));
        let has_process = s.process.is_some();
        self.wake_if_needed(s);
        if has_process {
            let conn = self.clone();
            runtime().spawn(async move {
                conn.stop_child().await;
                conn.inner.lock().writer = None;
            });
        }
    }

    /// After a lock section that may have queued completions or events.
    fn wake_if_needed(&self, mut s: MutexGuard<'_, Shared>) {
        let ready = !s.completions.is_empty() || (s.events_wanted && s.events.is_ready());
        if ready && !s.wake_scheduled {
            s.wake_scheduled = true;
            drop(s);
            self.inner.waker.wake();
        }
    }

    /// Apply the frames of one read, in order, under one lock.
    fn apply(&self, frames: Vec<Routed<'_>>) -> Result<(), KomaError> {
        let mut s = self.inner.lock();
        let mut result = Ok(());
        for f in frames {
            s.frames_seen += 1;
            let first = s.frames_seen == 1;
            match f {
                Routed::Violation(v) => {
                    result = Err(v);
                    break;
                }
                Routed::Hello(line) => {
                    if !first {
                        result = Err(Violation::new("a second hello frame", &line));
                        break;
                    }
                    match hello::check(&line) {
                        Ok(h) => {
                            let h = Arc::new(h);
                            s.hello = Some(h.clone());
                            if s.phase == Phase::Starting {
                                s.phase = Phase::Ready;
                            }
                            for t in std::mem::take(&mut s.hello_waiters) {
                                s.completions.push(Completion { token: t, outcome: Outcome::Hello(h.clone()) });
                            }
                            if s.phase == Phase::Ready {
                                for q in std::mem::take(&mut s.before_hello) {
                                    if let Err(e) = self.admit_locked(&mut s, q.token, &q.method, q.line) {
                                        s.completions.push(Completion { token: q.token, outcome: Outcome::Error(e) });
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            drop(s);
                            self.fail_with_stderr(e);
                            return Err(KomaError::new(ErrorCode::ProtocolError, "bad hello"));
                        }
                    }
                }
                _ if first => {
                    result = Err(Violation::new("the first frame is not hello", f.line_for_quote()));
                    break;
                }
                Routed::Response { id, body } => {
                    let Some((token, p)) = s.pending.take_by_id(&id) else {
                        continue; // not pending: unknown, answered or abandoned
                    };
                    let outcome = match body {
                        RoutedBody::Result(raw) => Outcome::Result(raw),
                        RoutedBody::Error(e) => Outcome::Error(KomaError::remote(e)),
                    };
                    if p.method == "detach" && s.detach_token == Some(token) {
                        // Resolved after the child's exit.
                        s.detach_answer = Some(outcome);
                    } else {
                        s.completions.push(Completion { token, outcome });
                    }
                }
                Routed::Event { seq, event } => {
                    if let Some(last) = s.last_seq {
                        if seq != last + 1 {
                            let what = if seq == last {
                                format!("event seq {seq} repeated")
                            } else if seq < last {
                                format!("event seq {seq} after {last} (a step back)")
                            } else {
                                format!("event seq {seq} after {last} (a gap)")
                            };
                            result = Err(Violation { what, quote: String::new() });
                            break;
                        }
                    }
                    s.last_seq = Some(seq);
                    if let Some(mut e) = event {
                        let counters = &self.inner.counters;
                        s.events.settle(counters.taken.load(std::sync::atomic::Ordering::Acquire));
                        let len = e.data_json().len() + e.name.len() + 24;
                        let lifts = std::mem::take(&mut e.lifts);
                        if s.events.push(e.frame_bytes(), len, lifts, |out| e.write(seq, out)) {
                            counters.epoch.store(s.events.epoch(), std::sync::atomic::Ordering::Release);
                        }
                    }
                }
            }
        }
        match result {
            Ok(()) => {
                self.wake_if_needed(s);
                Ok(())
            }
            Err(v) => {
                drop(s);
                let e = KomaError::new(ErrorCode::ProtocolError, format!("protocol error: {}", v.message()));
                self.fail_with_stderr(e.clone());
                Err(e)
            }
        }
    }

    /// Before events that would overflow the buffer: if the application is
    /// taking events right now, give it a moment (bounded) to make room, so a
    /// burst is not dropped while it is being read. The frames wait in the
    /// pipe meanwhile; a consumer that stalls still gets the overflow.
    async fn wait_for_room(&self, frames: &[Routed<'_>]) {
        let incoming = frames.iter().filter(|f| matches!(f, Routed::Event { event: Some(_), .. })).count();
        if incoming == 0 {
            return;
        }
        let taken = || self.inner.counters.taken.load(std::sync::atomic::Ordering::Acquire);
        let mut last = taken();
        let mut idle = 0;
        for _ in 0..ROOM_WAIT_STEPS {
            {
                let mut s = self.inner.lock();
                s.events.settle(last);
                if s.events.is_paused() || s.events.counted_frames() + incoming <= crate::MAX_BUFFERED_EVENTS {
                    return;
                }
            }
            tokio::time::sleep(ROOM_WAIT_STEP).await;
            let now = taken();
            if now == last {
                idle += 1;
                if idle >= ROOM_IDLE_STEPS {
                    return; // not consuming: the overflow is the answer
                }
            } else {
                idle = 0;
                last = now;
            }
        }
    }

    fn fail_with_stderr(&self, e: KomaError) {
        let msg = self.with_stderr_tail(e.message);
        self.fail(KomaError { message: msg, ..e });
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone (the JavaScript object was collected, or its
        // Worker ended) without close(): stop the child's whole group now.
        let s = self.lock();
        if let Some(p) = &s.process {
            if !p.has_exited() {
                p.signal_group(libc::SIGKILL);
            }
        }
    }
}

/// Write `line` straight to stdin when nothing is queued ahead of it;
/// otherwise (or for what does not fit in the pipe now) hand it to the writer task.
fn write_or_queue(s: &mut Shared, token: u64, line: Vec<u8>) {
    let Some(writer) = s.writer.clone() else { return };
    if let (false, Some(fd)) = (s.write_backlog, s.stdin_fd) {
        let mut done = 0;
        while done < line.len() {
            // SAFETY: write(2) on the open, non-blocking pipe; the fd is cleared
            // (under this lock) before the writer task closes it.
            let n = unsafe { libc::write(fd, line[done..].as_ptr().cast(), line.len() - done) };
            if n > 0 {
                done += n as usize;
            } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            } else {
                break; // full (EAGAIN) or an error: the writer task takes it from here
            }
        }
        if done == line.len() {
            s.pending.mark_written(token);
            return;
        }
        s.write_backlog = true;
        if done > 0 {
            s.pending.mark_written(token);
            let _ = writer.send(WriterMsg::Rest(line[done..].to_vec()));
            return;
        }
    }
    s.write_backlog = true;
    let _ = writer.send(WriterMsg::Line { token, line });
}

fn closed_error() -> KomaError {
    KomaError::new(ErrorCode::Closed, "the client was closed")
}

fn refuse_if_unusable(s: &Shared) -> Result<(), KomaError> {
    match &s.phase {
        Phase::Closing | Phase::Closed => Err(closed_error()),
        Phase::Failed(e) => Err(KomaError::new(
            ErrorCode::TransportFailure,
            format!("the client failed earlier ({}): {}", e.code, e.message),
        )),
        Phase::Ended => Err(KomaError::new(
            ErrorCode::Lifecycle,
            "the session was detached: nothing is written after detach",
        )),
        _ => Ok(()),
    }
}

fn trace(dir: &str, bytes: &[u8]) {
    let shown = &bytes[..bytes.len().min(4096)];
    let more = if bytes.len() > shown.len() { format!(" … ({} bytes)", bytes.len()) } else { String::new() };
    eprintln!("[koma-sdk] {dir} {}{more}", crate::quote::escape_text(&String::from_utf8_lossy(shown), false));
}

/// Where event `i` of a batch keeps its `data` in the batch's flat array
/// (`[seq, name, data, seq, name, data, ...]`, see `RoutedEvent::write`).
pub fn batch_data_index(i: u32) -> u32 {
    3 * i + 2
}

/// A catalog event: its name, its line (borrowed from the read buffer when
/// it lies within one read), the range of its `data`, and the frame's size.
struct RoutedEvent<'c> {
    name: &'static str,
    line: Line<'c>,
    data: Range<usize>,
    /// The frame with its long strings lifted out (empty when nothing was
    /// lifted); `data` is then a range of it, else of `line`.
    skeleton: Vec<u8>,
    lifts: Vec<LiftedString>,
}

impl RoutedEvent<'_> {
    /// `N,"name",data`: the event's three entries in its batch, a flat JSON
    /// array that the iterator turns into `{type: "event", seq, name, data}`
    /// objects (parsing fewer keys than whole event objects would need).
    fn write(&self, seq: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        out.extend_from_slice(b",\"");
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(b"\",");
        out.extend_from_slice(self.data_json());
    }

    fn data_json(&self) -> &[u8] {
        if self.skeleton.is_empty() {
            &self.line.bytes()[self.data.clone()]
        } else {
            &self.skeleton[self.data.clone()]
        }
    }

    fn frame_bytes(&self) -> usize {
        self.line.bytes().len()
    }
}

enum RoutedBody {
    Result(RawJson),
    Error(RemoteError),
}

/// One line of a read, classified. Lives until the read is applied, so an
/// event that lies within the read buffer is never copied on its own.
enum Routed<'c> {
    Hello(Vec<u8>),
    Response { id: String, body: RoutedBody },
    /// `event` is `None` for a name outside the catalog (sequence-checked, then ignored).
    Event { seq: u64, event: Option<RoutedEvent<'c>> },
    Violation(Violation),
}

impl Routed<'_> {
    fn line_for_quote(&self) -> &[u8] {
        match self {
            Routed::Hello(l) => l,
            Routed::Response { body: RoutedBody::Result(r), .. } => r.text(),
            Routed::Event { event: Some(e), .. } => e.line.bytes(),
            _ => b"",
        }
    }
}

fn route(line: Line<'_>) -> Routed<'_> {
    let line = if line.bytes().len() >= LIFT_MIN_BYTES {
        match route_lifted(line) {
            Ok(routed) => return routed,
            Err(line) => line,
        }
    } else {
        line
    };
    match classify(line.bytes()) {
        Err(v) => Routed::Violation(v),
        Ok(Frame::Hello) => Routed::Hello(line.into_owned()),
        Ok(Frame::Response { id, body }) => {
            let body = match body {
                ResponseBody::Error(e) => RoutedBody::Error(e),
                // An answer outlives the read: own it (the assembled line is moved, not copied).
                ResponseBody::Result(range) => RoutedBody::Result(match line {
                    Line::Owned(v) => RawJson { bytes: v, range, lifts: Vec::new() },
                    Line::Borrowed(b) => RawJson { range: 0..range.len(), bytes: b[range].to_vec(), lifts: Vec::new() },
                }),
            };
            Routed::Response { id, body }
        }
        Ok(Frame::Event { seq, name, data }) => Routed::Event {
            seq,
            event: name.map(|name| RoutedEvent { name, line, data, skeleton: Vec::new(), lifts: Vec::new() }),
        },
    }
}

/// A long line with long strings in an event's `data` or a response's
/// `result`: cut them out (see [`crate::lift`]) and classify the rest.
/// Gives the line back when that does not apply (the plain path then
/// classifies it, and reports any violation precisely).
fn route_lifted(line: Line<'_>) -> Result<Routed<'_>, Line<'_>> {
    // The line's UTF-8 is checked in two parts: the cut strings by `lift`,
    // the rest by `classify` (of the skeleton).
    let bytes = line.bytes();
    let Some(lifted) = lift(bytes, LIFT_MIN_BYTES) else { return Err(line) };
    let under = |key: &str| lifted.lifts.iter().all(|l| matches!(l.path.first(), Some(Step::Key(k)) if k == key));
    match classify(&lifted.skeleton) {
        Ok(Frame::Event { seq, name, data }) if under("data") => {
            let Some(name) = name else { return Ok(Routed::Event { seq, event: None }) };
            // Paths from `data` (the batch holds it as an entry of its own).
            let (skeleton, lifts) = lifted.into_strings(Source::Copy(bytes), 1);
            let event = Some(RoutedEvent { name, line, data, skeleton, lifts });
            Ok(Routed::Event { seq, event })
        }
        Ok(Frame::Response { id, body: ResponseBody::Result(range) }) if under("result") => {
            let (skeleton, lifts) = match line {
                Line::Borrowed(b) => lifted.into_strings(Source::Copy(b), 1),
                // A long line is shared by its strings, not copied.
                Line::Owned(v) => lifted.into_strings(Source::Share { line: Arc::new(v), offset: 0 }, 1),
            };
            let body = RoutedBody::Result(RawJson { bytes: skeleton, range, lifts });
            Ok(Routed::Response { id, body })
        }
        _ => Err(line),
    }
}

const READ_CHUNK: usize = 256 * 1024;
/// The frames of a read are checked and applied this many at a time.
const APPLY_GROUP: usize = 32;
/// The longest the reader waits for the JavaScript thread to take a wake.
const READ_PAUSE: Duration = Duration::from_millis(5);
/// How long, in steps, the reader gives a consuming application to make room
/// in the event buffer before an overflow (see `wait_for_room`).
const ROOM_WAIT_STEP: Duration = Duration::from_millis(1);
const ROOM_WAIT_STEPS: usize = 100;
/// Steps without one event taken after which the application counts as not consuming.
const ROOM_IDLE_STEPS: usize = 10;
/// Only a small read (a trickle of answers) makes the reader wait; a large
/// one means data is streaming, and the pipe must keep draining.
const READ_PAUSE_BELOW: usize = 16 * 1024;

async fn read_stdout(conn: Connection, mut stdout: tokio::process::ChildStdout) {
    let mut splitter = LineSplitter::new();
    let mut buf = vec![0u8; READ_CHUNK];
    let trace_on = conn.inner.options.trace;
    let panic_on_frame = std::env::var("KOMA_SDK_TEST_PANIC").is_ok_and(|v| v == "reader");
    let end = loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) => break ReadEnd::Eof,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break ReadEnd::Io(e),
        };
        let mut lines = Vec::new();
        let too_large = splitter
            .feed(
                &buf[..n],
                |line| -> Result<(), Violation> {
                    lines.push(line);
                    Ok(())
                },
                |v| v,
            )
            .err();
        // Applied in groups: the JavaScript thread takes the first events
        // while later ones are checked, and a read of more events than the
        // buffer holds flows through it instead of overflowing it.
        // A violation fails `apply`, which ends the reader.
        let mut lines = lines.into_iter().peekable();
        while lines.peek().is_some() {
            let mut frames = Vec::with_capacity(APPLY_GROUP);
            for line in lines.by_ref().take(APPLY_GROUP) {
                if trace_on {
                    trace("<-", line.bytes());
                }
                if panic_on_frame {
                    panic!("KOMA_SDK_TEST_PANIC=reader");
                }
                let r = route(line);
                let violation = matches!(r, Routed::Violation(_));
                frames.push(r);
                if violation {
                    break;
                }
            }
            conn.wait_for_room(&frames).await;
            if conn.apply(frames).is_err() {
                conn.inner.stdout_end_tx.send_replace(true);
                return;
            }
        }
        // A line over the bound ends the read after its complete lines.
        if let Some(v) = too_large {
            let _ = conn.apply(vec![Routed::Violation(v)]);
            conn.inner.stdout_end_tx.send_replace(true);
            return;
        }
        // While the JavaScript thread has not taken the last wake, more
        // answers can pile up in the pipe and be read in one go (small reads
        // only). Bounded, so the reader never depends on the JavaScript
        // thread to make progress. Only while other answers are due: a lone
        // answer (a caller awaiting each call in turn) would only be delayed.
        let pause = n < READ_PAUSE_BELOW && {
            let s = conn.inner.lock();
            s.wake_scheduled && !s.pending.is_empty()
        };
        if pause {
            let _ = tokio::time::timeout(READ_PAUSE, conn.inner.drained.notified()).await;
        }
    };
    match end {
        ReadEnd::Io(e) => conn.stdout_ended(Some(e)).await,
        ReadEnd::Eof => match splitter.finish() {
            Ok(()) => conn.stdout_ended(None).await,
            // A partial last line after detach is let go; before it, a violation.
            Err(_) if conn.inner.lock().lifecycle == Lifecycle::Detached => conn.stdout_ended(None).await,
            Err(v) => {
                let _ = conn.apply(vec![Routed::Violation(v)]);
                conn.inner.stdout_end_tx.send_replace(true);
            }
        },
    }
}

enum ReadEnd {
    Eof,
    Io(std::io::Error),
}

async fn drain_stderr(conn: Connection, mut stderr: tokio::process::ChildStderr) {
    let mut buf = vec![0u8; 64 * 1024];
    let trace_on = conn.inner.options.trace;
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if trace_on {
                    for l in String::from_utf8_lossy(&buf[..n]).lines() {
                        eprintln!("[koma-sdk] stderr {}", crate::quote::escape_text(l, false));
                    }
                }
                conn.inner.lock().stderr.push(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    conn.inner.stderr_end_tx.send_replace(true);
}

async fn write_stdin(conn: Connection, mut rx: mpsc::UnboundedReceiver<WriterMsg>, mut stdin: tokio::process::ChildStdin) {
    let mut batch: Vec<WriterMsg> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    loop {
        if rx.recv_many(&mut batch, 256).await == 0 {
            break;
        }
        let mut shutdown = false;
        {
            let mut s = conn.inner.lock();
            for m in batch.drain(..) {
                match m {
                    WriterMsg::Line { token, line } => {
                        // A request abandoned before it was written is never written.
                        if s.pending.contains(token) {
                            s.pending.mark_written(token);
                            if out.is_empty() && line.len() > 64 * 1024 {
                                out = line;
                            } else {
                                out.extend_from_slice(&line);
                            }
                        }
                    }
                    WriterMsg::Rest(rest) => out.extend_from_slice(&rest),
                    WriterMsg::Shutdown => {
                        shutdown = true;
                        s.stdin_fd = None;
                    }
                }
            }
        }
        if !out.is_empty() {
            let r = stdin.write_all(&out).await;
            if out.capacity() > 1 << 20 {
                out = Vec::new();
            } else {
                out.clear();
            }
            if let Err(e) = r {
                conn.inner.lock().stdin_fd = None;
                // EPIPE and the like: the child is gone or closed stdin. The
                // reader's end of stream usually says more; wait for it briefly.
                let conn2 = conn.clone();
                runtime().spawn(async move {
                    let mut end = conn2.inner.stdout_end_tx.subscribe();
                    if tokio::time::timeout(LAST_WORDS_GRACE * 2, end.wait_for(|v| *v)).await.is_err() {
                        let msg = conn2.with_stderr_tail(format!("writing to koma's stdin failed: {e}"));
                        conn2.fail(KomaError::new(ErrorCode::TransportFailure, msg));
                    }
                });
                return;
            }
        }
        if shutdown {
            break;
        }
        // Caught up: the caller's thread may write directly again.
        let mut s = conn.inner.lock();
        if rx.is_empty() {
            s.write_backlog = false;
        }
    }
    conn.inner.lock().stdin_fd = None;
    let _ = stdin.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_builds_the_application_event() {
        let line = br#"{"type":"event","seq":3,"name":"output","data":{"turn":"t","text":"hi"},"extra":1}"#;
        let Routed::Event { seq: 3, event: Some(e) } = route(Line::Borrowed(line)) else { panic!() };
        let mut json = b"[".to_vec();
        e.write(3, &mut json);
        json.push(b']');
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v, serde_json::json!([3, "output", {"turn":"t","text":"hi"}]), "seq, name, data; extra fields dropped");
        assert_eq!(e.frame_bytes(), line.len());
    }

    #[test]
    fn long_strings_of_an_event_are_lifted_with_paths_from_its_data() {
        let text = "x".repeat(LIFT_MIN_BYTES);
        let line = format!(r#"{{"type":"event","seq":7,"name":"output","data":{{"turn":"t","text":"{text}"}}}}"#);
        let Routed::Event { seq: 7, event: Some(e) } = route(Line::Borrowed(line.as_bytes())) else { panic!() };
        assert_eq!(e.data_json(), br#"{"turn":"t","text":""}"#);
        assert_eq!(e.lifts.len(), 1);
        assert_eq!(e.lifts[0].path, vec![Step::Key("text".into())]);
        assert_eq!(e.lifts[0].chars.byte_len(), text.len());
    }

    #[test]
    fn a_long_result_shares_an_assembled_line_and_drops_the_result_step() {
        let blob = "y".repeat(LIFT_MIN_BYTES * 2);
        let line = format!(r#"{{"id":"4","result":{{"blob":"{blob}"}}}}"#).into_bytes();
        let Routed::Response { id, body: RoutedBody::Result(raw) } = route(Line::Owned(line)) else { panic!() };
        assert_eq!(id, "4");
        assert_eq!(raw.text(), br#"{"blob":""}"#);
        assert_eq!(raw.lifts[0].path, vec![Step::Key("blob".into())]);
        let crate::lift::Chars::Latin1 { bytes, range } = &raw.lifts[0].chars else { panic!() };
        assert!(bytes.len() > blob.len(), "the string points into the whole line: no copy");
        assert_eq!(&bytes[range.clone()], blob.as_bytes());
    }

    #[test]
    fn a_long_frame_that_breaks_a_rule_is_reported_as_without_lifting() {
        let text = "z".repeat(LIFT_MIN_BYTES);
        let mut bad_utf8 = format!(r#"{{"type":"event","seq":1,"name":"output","data":{{"text":"{text}"}}}}"#).into_bytes();
        bad_utf8[60] = 0xFF; // inside the long string
        let mut bad_utf8_outside = format!(r#"{{"type":"event","seq":1,"name":"output","x":"é","data":{{"text":"{text}"}}}}"#).into_bytes();
        bad_utf8_outside[46] = 0xFF; // the second byte of é
        let with_bom = [&[0xEF, 0xBB, 0xBF][..], format!(r#"{{"type":"event","seq":1,"name":"output","data":{{"text":"{text}"}}}}"#).as_bytes()].concat();
        for line in [bad_utf8, bad_utf8_outside, with_bom] {
            let (Routed::Violation(a), Err(b)) = (route(Line::Borrowed(&line)), classify(&line)) else { panic!() };
            assert_eq!(a, b);
        }
        for line in [
            format!(r#"{{"type":"event","seq":1,"name":"output","data":{{"text":"{text}"}}"#), // unclosed
            format!("{{\"type\":\"event\",\"seq\":1,\"name\":\"output\",\"data\":{{\"text\":\"{text}\u{7}\"}}}}"), // a control character
            format!(r#"{{"type":"event","name":"output","data":{{"text":"{text}"}}}}"#), // no seq
        ] {
            let lifted = route(Line::Borrowed(line.as_bytes()));
            let plain = classify(line.as_bytes());
            let (Routed::Violation(a), Err(b)) = (lifted, plain) else { panic!("{line:.80}") };
            assert_eq!(a, b);
        }
    }
}
