//! `NativeClient`: one connection of the core, as the Python package drives
//! it. It only converts: the package's arguments into the core's calls, and
//! what a wake brought (completions, a batch of events) into Python values.
//! Requests never wait here; their answers come through `deliver()` after
//! the wake descriptor (see `wake.rs`) turns readable.

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::ffi::OsStringExt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use koma_transport::child::LaunchOptions;
use koma_transport::connection::batch_data_index;
use koma_transport::connection::client_note;
use koma_transport::environment::{process_settings, ProcessSettings};
use koma_transport::events::{End, Take};
use koma_transport::stop::Why;
use koma_transport::telemetry::{TelemetryOptions, TraceContext};
use koma_transport::turns::{Answer, ApprovalOption, Entry, TurnSpec};
use koma_transport::wording::{DurationUnit, Naming, Wording};
use koma_transport::{
    Closing, Completion, Connection, ConnectionOptions, ErrorCode, KomaError, Outcome, Probe, TraceKinds, TraceRecord,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::convert::{error_object, error_of, internal, lift_entry, raise};
use crate::counters::SharedView;
use crate::updates::{ended, update_object, Delivery, TurnEnded};
use crate::wake::{FdWaker, WakeFd, Watched};

#[pyclass(frozen, module = "koma_sdk._native")]
pub struct NativeClient {
    /// In a child made by `fork()`, the core refuses every call on it and
    /// leaves the parent's child, tasks and descriptors alone, dropped or not.
    conn: Connection,
    wake: Arc<WakeFd>,
    /// The counters shared with the core, and their view lent to the package's event queue.
    counters: SharedView,
    /// Traced with OpenTelemetry: the notes of its life go to `koma_sdk._telemetry`.
    telemetry: bool,
}

/// Run `f`, turning a panic into the package's `KomaError`: a panic must
/// never reach Python as `PanicException`.
fn guarded<T>(py: Python<'_>, what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(raise(py, &internal(what))),
    }
}

/// A path or an environment entry from Python (`os.fsencode`): the bytes
/// themselves on Unix; on Windows, where `fsencode` gives UTF-8, its text.
#[cfg(unix)]
fn os_string(bytes: Vec<u8>) -> Result<OsString, KomaError> {
    Ok(OsString::from_vec(bytes))
}

#[cfg(windows)]
fn os_string(bytes: Vec<u8>) -> Result<OsString, KomaError> {
    String::from_utf8(bytes).map(OsString::from).map_err(|e| {
        let shown = String::from_utf8_lossy(e.as_bytes());
        KomaError::new(ErrorCode::InvalidParams, format!("`{shown}` is not valid Unicode (a lone surrogate?)"))
    })
}

fn duration(seconds: Option<f64>) -> Result<Option<Duration>, KomaError> {
    seconds
        .map(|s| {
            Duration::try_from_secs_f64(s).map_err(|_| {
                KomaError::new(ErrorCode::InvalidParams, "`timeout` must be a finite number of seconds >= 0")
            })
        })
        .transpose()
}

#[pymethods]
impl NativeClient {
    /// Check the options and make the connection; nothing starts yet. The
    /// connection keeps its trace for the package's loggers: koma's stderr
    /// lines and the notes of its life always, the frames if `trace` (or
    /// `KOMA_SDK_TRACE`) asks; nothing is printed. `telemetry`: the client
    /// is traced with OpenTelemetry (`True`: content is recorded too).
    #[new]
    #[pyo3(signature = (executable, cwd, env, trace, hello_timeout, telemetry=None))]
    fn new(
        py: Python<'_>,
        executable: Vec<u8>,
        cwd: Option<Vec<u8>>,
        env: Vec<(Vec<u8>, Vec<u8>)>,
        trace: bool,
        hello_timeout: Option<f64>,
        telemetry: Option<bool>,
    ) -> PyResult<Self> {
        guarded(py, "making a client", || {
            let ProcessSettings { spawn, trace: env_trace } = process_settings().map_err(|e| raise(py, &e))?;
            let os = |b| os_string(b).map_err(|e| raise(py, &e));
            let mut vars = Vec::with_capacity(env.len());
            for (k, v) in env {
                vars.push((os(k)?, os(v)?));
            }
            vars.sort();
            let launch = LaunchOptions {
                executable: os(executable)?,
                cwd: cwd.map(|c| os(c).map(PathBuf::from)).transpose()?,
                env: vars,
                spawn,
            };
            launch.validate().map_err(|e| raise(py, &e))?;
            let hello_timeout = duration(hello_timeout).map_err(|e| raise(py, &e))?;
            let wake = WakeFd::new().map_err(|e| {
                raise(py, &KomaError::new(ErrorCode::SpawnFailed, format!("could not make the wake descriptor: {e}")))
            })?;
            // The update fills the core's `faults` where a workspace build turns its `testing` feature on.
            #[allow(clippy::needless_update)]
            let options = ConnectionOptions {
                launch,
                trace: false,
                trace_records: TraceKinds { frames: trace || env_trace, ..TraceKinds::ALL },
                label: "koma_sdk".into(),
                hello_timeout,
                wording: Wording { naming: Naming::Snake, durations: DurationUnit::Seconds },
                telemetry: telemetry.map(|content| TelemetryOptions { content }),
                ..Default::default()
            };
            let conn = Connection::new(options, Box::new(FdWaker(wake.clone())));
            let counters = conn.event_counters();
            let telemetry = telemetry.is_some();
            Ok(NativeClient { conn, wake, counters: SharedView::new(counters), telemetry })
        })
    }

    /// A new call's token.
    fn token(&self, py: Python<'_>) -> PyResult<u64> {
        guarded(py, "making a call", || Ok(self.conn.token()))
    }

    /// Send a request (its answer comes through `deliver`); raises at once
    /// for a local rejection.
    #[pyo3(signature = (token, method, params, timeout))]
    fn request(
        &self,
        py: Python<'_>,
        token: u64,
        method: &str,
        params: Option<&[u8]>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        guarded(py, "sending a request", || {
            let timeout = duration(timeout).map_err(|e| raise(py, &e))?;
            let params = match params.map(std::str::from_utf8) {
                None => None,
                Some(Ok(text)) => Some(text),
                Some(Err(_)) => {
                    let e = KomaError::new(ErrorCode::InvalidParams, format!("{method}: params are not UTF-8"));
                    return Err(raise(py, &e));
                }
            };
            self.conn.request(token, method, params, timeout).map_err(|e| raise(py, &e))
        })
    }

    /// Start the child if needed: hello's JSON now, or `None` (it comes
    /// through `deliver`).
    fn probe<'py>(&self, py: Python<'py>, token: u64, timeout: Option<f64>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        guarded(py, "probing", || {
            let timeout = duration(timeout).map_err(|e| raise(py, &e))?;
            match self.conn.probe(token, timeout).map_err(|e| raise(py, &e))? {
                Probe::Ready(h) => Ok(Some(PyBytes::new(py, h.to_json().as_bytes()))),
                Probe::Wait => Ok(None),
            }
        })
    }

    /// Forget a call (cancelled): its late answer is ignored, its pending slot freed.
    fn abandon(&self, py: Python<'_>, token: u64) -> PyResult<()> {
        guarded(py, "abandoning a call", || {
            self.conn.abandon(token);
            Ok(())
        })
    }

    /// Close: `True` if done now, else the completion for `token` says when.
    /// In a child made by `fork()` there is nothing of this process's to
    /// close (the child and its pipes are the parent's): done at once.
    fn close(&self, py: Python<'_>, token: u64) -> PyResult<bool> {
        guarded(py, "closing", || Ok(!matches!(self.conn.close(token), Closing::Wait)))
    }

    /// Everything one wake brought, as a `Delivery`: the results of `tokens`
    /// are the items of `joined`, one JSON array for one `json.loads`, whose
    /// long strings go back at `lifts` (`(index, *path, text)`); `others`
    /// are `(token, value)`: an error, or `None` for a call done with
    /// nothing (`close`, a turn's interrupt); `updates` are `(key, update)`
    /// of turns (a `TurnId`, `TurnApproval`, `TurnReady` or `TurnEnded`);
    /// `trace` the trace records, `(pid, kind, direction, line)` (see
    /// `trace_tuple`); `notes` what the notes among them do to a traced
    /// client's span, as one JSON text (`[note, ...]`, each the core's
    /// `connection::client_note`), or `None`.
    fn deliver(&self, py: Python<'_>) -> PyResult<Py<Delivery>> {
        guarded(py, "delivering results", || {
            // Readiness first: a wake after this point makes it readable again.
            self.wake.reset();
            let completions = self.conn.drain();
            // After the drain, in the same wake (see `Connection::take_trace`).
            let trace = self.conn.take_trace();
            let notes: Vec<String> =
                if self.telemetry { trace.iter().filter_map(client_note).collect() } else { Vec::new() };
            let notes = (!notes.is_empty()).then(|| format!("[{}]", notes.join(",")));
            deliver(py, completions, trace, notes)
        })
    }

    /// koma is to be started with this trace context (`TRACEPARENT`,
    /// `TRACESTATE`), if it has not been started: whether it will be.
    fn trace_context(
        &self,
        py: Python<'_>,
        trace_id: &str,
        span_id: &str,
        flags: u8,
        trace_state: &str,
    ) -> PyResult<bool> {
        guarded(py, "passing the trace context", || {
            Ok(TraceContext::new(trace_id, span_id, flags, trace_state).is_some_and(|c| self.conn.trace_context(c)))
        })
    }

    /// What waits in the client's own stream: `(0, batch, lifts)` (the
    /// batch's epoch and how it counts are in the counters' `BATCH_EPOCH`
    /// and `BATCH_COUNTING` slots), `(1, dropped)` (the overflow report),
    /// `(2, error or None)` (the end), or `None` (nothing now; with `wait`,
    /// the next events wake the loop).
    fn take_events<'py>(&self, py: Python<'py>, wait: bool) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guarded(py, "taking events", || take_tuple(py, self.conn.take_events(wait)))
    }

    // ---- the turn layer (the core runs each turn; see `koma_transport::turns`)

    /// Start turn `key` (a token): `entry` "turn" or "run", the submit's
    /// params as JSON, `mode`, the approval option as `(kind, value)` (kind
    /// "none", "text", "handler" or "other"), a timeout in seconds. What
    /// happens to it comes through `deliver` as updates for `key`; a turn
    /// the client refuses at once (closed, failed, made before `fork()`)
    /// ends here: its `TurnEnded` is returned.
    #[pyo3(signature = (key, entry, params, mode, approvals, timeout, refused))]
    #[allow(clippy::too_many_arguments)]
    fn open_turn(
        &self,
        py: Python<'_>,
        key: u64,
        entry: &str,
        params: Option<&[u8]>,
        mode: Option<String>,
        approvals: (String, String),
        timeout: Option<f64>,
        refused: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<TurnEnded>>> {
        guarded(py, "starting a turn", || {
            let mut refusal = refused.map(|e| error_of(&e));
            let timeout = match duration(timeout) {
                Ok(t) => t,
                Err(e) => {
                    refusal.get_or_insert(e);
                    None
                }
            };
            let params = match params.map(std::str::from_utf8) {
                None => None,
                Some(Ok(text)) => Some(text.to_owned()),
                Some(Err(_)) => {
                    refusal.get_or_insert(KomaError::new(
                        ErrorCode::InvalidParams,
                        format!("{entry}: params are not UTF-8"),
                    ));
                    None
                }
            };
            let approvals = match approvals.0.as_str() {
                "text" => ApprovalOption::Text(approvals.1),
                "handler" => ApprovalOption::Handler,
                "other" => ApprovalOption::Other(approvals.1),
                _ => ApprovalOption::None,
            };
            let entry = if entry == "run" { Entry::Run } else { Entry::Turn };
            let spec = TurnSpec { entry, params, mode, approvals, timeout, stopped: None, refused: refusal };
            match self.conn.open_turn(key, spec) {
                Ok(()) => Ok(None),
                Err(end) => ended(py, *end).map(Some),
            }
        })
    }

    /// What turn `key`'s stream has for a loop, as `take_events` gives it
    /// (`None`: nothing now; the turn's `TurnReady` update says when).
    fn take_turn_events<'py>(&self, py: Python<'py>, key: u64) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guarded(py, "taking a turn's events", || take_tuple(py, self.conn.take_turn_events(key, true)))
    }

    /// A loop starts reading turn `key`, or leaves it early.
    fn read_turn(&self, py: Python<'_>, key: u64, reading: bool) -> PyResult<()> {
        guarded(py, "reading a turn", || {
            self.conn.read_turn(key, reading);
            Ok(())
        })
    }

    /// Stop turn `key`: the task that awaited it was cancelled (the core
    /// interrupts the agent, and settles the turn within its grace).
    fn stop_turn(&self, py: Python<'_>, key: u64) -> PyResult<()> {
        guarded(py, "stopping a turn", || {
            self.conn.stop_turn(key, &Why::Cancelled);
            Ok(())
        })
    }

    /// Interrupt turn `key` if it still runs: `True` if done now, else a
    /// completion for `token` says when.
    fn interrupt_turn(&self, py: Python<'_>, key: u64, token: u64) -> PyResult<bool> {
        guarded(py, "interrupting a turn", || Ok(self.conn.interrupt_turn(key, token)))
    }

    /// What `on_approval` returned (or its awaitable gave) for `approval`
    /// of turn `key`, and that value as Python writes it (`repr`): the core
    /// judges whether it is a decision.
    fn answer_approval(
        &self,
        py: Python<'_>,
        key: u64,
        approval: &str,
        returned: Bound<'_, PyAny>,
        shown: String,
    ) -> PyResult<()> {
        guarded(py, "answering an approval", || {
            let text = returned.cast::<PyString>().ok().map(|t| t.to_string_lossy().into_owned());
            self.conn.answer_approval(key, approval, Answer::Returned { text, shown });
            Ok(())
        })
    }

    /// `on_approval` raised for `approval` of turn `key`: what it raised, described.
    fn approval_failed(&self, py: Python<'_>, key: u64, approval: &str, message: String) -> PyResult<()> {
        guarded(py, "answering an approval", || {
            self.conn.answer_approval(key, approval, Answer::Failed(message));
            Ok(())
        })
    }

    /// The package let go of turn `key`: nothing of it is kept for a loop.
    fn release_turn(&self, py: Python<'_>, key: u64) -> PyResult<()> {
        guarded(py, "releasing a turn", || {
            self.conn.release_turn(key);
            Ok(())
        })
    }

    /// Nobody waits for events any more.
    fn unwant_events(&self, py: Python<'_>) -> PyResult<()> {
        guarded(py, "stopping the events", || {
            self.conn.unwant_events();
            Ok(())
        })
    }

    /// The counters shared with the core, as a writable memoryview of
    /// unsigned 32-bit slots (the slot numbers are the module's `COUNTER_LAYOUT`).
    /// The same view every time; it is released when this client goes.
    fn counters(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guarded(py, "sharing the counters", || self.counters.get(py))
    }

    /// The kept tail of the child's stderr.
    #[getter]
    fn stderr(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, "reading stderr", || Ok(self.conn.stderr_text()))
    }

    /// The child's pid while it runs.
    #[getter]
    fn pid(&self, py: Python<'_>) -> PyResult<Option<u32>> {
        guarded(py, "reading the pid", || Ok(self.conn.pid()))
    }

    /// The events counted against the bound now, `(frames, bytes)` (for tests).
    fn buffered(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        guarded(py, "reading the buffer", || Ok(self.conn.buffered()))
    }

    /// Where the client is in its life (for its repr): `not_started`,
    /// `starting`, `ready`, `failed`, `ended`, `closing` or `closed`.
    #[getter]
    fn phase(&self, py: Python<'_>) -> PyResult<&'static str> {
        guarded(py, "reading the phase", || Ok(self.conn.phase_name()))
    }

    /// Whether `close()` is done (for tests).
    fn is_closed(&self, py: Python<'_>) -> PyResult<bool> {
        guarded(py, "reading the phase", || Ok(self.conn.is_closed()))
    }

    /// Keep the frames from now on too (the `koma_sdk.trace` logger was
    /// enabled for DEBUG after the client was made): they come with the wakes.
    fn keep_frames(&self, py: Python<'_>) -> PyResult<()> {
        guarded(py, "keeping the frames", || {
            self.conn.keep_trace(TraceKinds { frames: true, stderr: false, notes: false });
            Ok(())
        })
    }

    /// Stop the child's whole group at once (the client was collected).
    fn kill_now(&self, py: Python<'_>) -> PyResult<()> {
        guarded(py, "stopping the child", || {
            self.conn.kill_now();
            Ok(())
        })
    }

    /// Stop the child's whole group at once and wait (without the GIL, at
    /// most `limit` seconds) until it is reaped and nothing of the client
    /// is left, the core's threads included if it was the last client (the
    /// client was collected: after the finalizer, as after `close()`).
    fn kill_and_wait(&self, py: Python<'_>, limit: f64) -> PyResult<bool> {
        guarded(py, "stopping the child", || {
            let limit = Duration::try_from_secs_f64(limit).unwrap_or(Duration::ZERO);
            let conn = self.conn.clone();
            Ok(py.detach(move || conn.kill_and_wait(limit)))
        })
    }

    /// The descriptor the loop watches, while it is open (on Windows, a
    /// socket of its own for each loop: see `wake_windows.rs`).
    fn wake_fd(&self) -> Option<Watched> {
        self.wake.fileno()
    }

    /// A loop stopped watching `fd` for good (the client moved to another
    /// loop): on Windows its socket is closed; on Unix nothing changes.
    fn retire_wake(&self, fd: Watched) {
        self.wake.retire(fd);
    }

    /// Close the wake descriptor (after close, or when collected; the loop
    /// must have stopped watching it).
    fn release_wake(&self) {
        self.wake.release();
    }
}

/// The Python values of one wake's completions and trace records.
fn deliver(
    py: Python<'_>,
    completions: Vec<Completion>,
    trace: Vec<TraceRecord>,
    notes: Option<String>,
) -> PyResult<Py<Delivery>> {
    let mut tokens: Vec<u64> = Vec::new();
    let mut joined: Vec<u8> = Vec::new();
    let mut lifts: Vec<Bound<'_, PyTuple>> = Vec::new();
    let mut others: Vec<Bound<'_, PyTuple>> = Vec::new();
    let mut updates: Vec<Bound<'_, PyTuple>> = Vec::new();
    for c in completions {
        match c.outcome {
            Outcome::Result(raw) => {
                joined.push(if tokens.is_empty() { b'[' } else { b',' });
                joined.extend_from_slice(raw.text());
                for l in &raw.lifts {
                    lifts.push(lift_entry(py, tokens.len(), l)?);
                }
                tokens.push(c.token);
            }
            Outcome::Hello(h) => {
                joined.push(if tokens.is_empty() { b'[' } else { b',' });
                joined.extend_from_slice(h.to_json().as_bytes());
                tokens.push(c.token);
            }
            Outcome::Done => others.push((c.token, py.None()).into_pyobject(py)?),
            Outcome::Error(e) => others.push((c.token, error_object(py, &e)?).into_pyobject(py)?),
            Outcome::Turn(u) => updates.push((c.token, update_object(py, u)?).into_pyobject(py)?),
        }
    }
    let joined = (!tokens.is_empty()).then(|| {
        joined.push(b']');
        PyBytes::new(py, &joined).unbind()
    });
    let mut records = Vec::with_capacity(trace.len());
    for r in &trace {
        records.push(trace_tuple(py, r)?);
    }
    let delivery = Delivery {
        tokens,
        joined,
        lifts: PyList::new(py, lifts)?.unbind(),
        others: PyList::new(py, others)?.unbind(),
        updates: PyList::new(py, updates)?.unbind(),
        trace: PyList::new(py, records)?.unbind(),
        notes,
    };
    Py::new(py, delivery)
}

/// A trace record as `(pid or None, kind, direction or None, line)`: its
/// kind (`frame`, `stderr`, `spawned`, `hello`, `detach`, `exit`, `failed`,
/// `closed`, `dropped`), a frame's direction (`written` or `read`), and the
/// record as one line naming the client (`[koma_sdk pid 1234] -> {...}`).
fn trace_tuple<'py>(py: Python<'py>, r: &TraceRecord) -> PyResult<Bound<'py, PyTuple>> {
    (r.pid, r.kind(), r.direction().map(|d| d.name()), r.line()).into_pyobject(py)
}

/// A stream's take as the package reads it (see `take_events`).
fn take_tuple(py: Python<'_>, taken: Take) -> PyResult<Option<Bound<'_, PyTuple>>> {
    Ok(Some(match taken {
        Take::Batch { json, lifts, .. } => {
            let bytes = PyBytes::new(py, &json);
            drop(json);
            let mut entries = Vec::with_capacity(lifts.len());
            for (i, l) in &lifts {
                entries.push(lift_entry(py, batch_data_index(*i) as usize, l)?);
            }
            (0, bytes, PyList::new(py, entries)?).into_pyobject(py)?
        }
        Take::Overflow { dropped } => (1, dropped).into_pyobject(py)?,
        Take::Empty => return Ok(None),
        Take::Ended(End::Finished) => (2, py.None()).into_pyobject(py)?,
        Take::Ended(End::Failed(e)) => (2, error_object(py, &e)?).into_pyobject(py)?,
    }))
}

impl Drop for NativeClient {
    fn drop(&mut self) {
        // Collected without close(): stop the child's whole group now (in a
        // child made by `fork()`, the core leaves the parent's alone).
        self.conn.kill_now();
        self.wake.release();
        // The counters' view is released as `counters` goes (see `SharedView`).
    }
}
