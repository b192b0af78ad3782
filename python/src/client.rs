//! `NativeClient`: one connection of the core, as the Python package drives
//! it. It only converts: the package's arguments into the core's calls, and
//! what a wake brought (completions, a batch of events) into Python values.
//! Requests never wait here; their answers come through `deliver()` after
//! the wake descriptor (see `wake.rs`) turns readable.

use std::ffi::OsString;
use std::mem::ManuallyDrop;
use std::os::unix::ffi::OsStringExt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use koma_transport::child::LaunchOptions;
use koma_transport::connection::batch_data_index;
use koma_transport::events::{End, Take};
use koma_transport::{
    Closing, Completion, Connection, ConnectionOptions, ErrorCode, EventCounters, KomaError, Outcome, Probe,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::convert::{error_object, internal, lift_entry, raise};
use crate::settings::{process_settings, Settings};
use crate::wake::{FdWaker, WakeFd};

/// `PyBUF_WRITE` of CPython's `memoryobject.h` (a stable value; not in the limited API headers).
const PYBUF_WRITE: std::os::raw::c_int = 0x200;

#[pyclass(frozen, module = "koma_sdk._native")]
pub struct NativeClient {
    /// Never dropped in a child made by `fork()`: its tasks and descriptors
    /// belong to the parent (see `Drop`).
    conn: ManuallyDrop<Connection>,
    wake: Arc<WakeFd>,
    /// The process that made this client.
    owner: u32,
    counters: Arc<EventCounters>,
    /// The view of `counters` lent to the package's event queue, released on drop.
    view: Mutex<Option<Py<PyAny>>>,
}

/// Run `f`, turning a panic into the package's `KomaError`: a panic must
/// never reach Python as `PanicException`.
fn guarded<T>(py: Python<'_>, what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(raise(py, &internal(what))),
    }
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
    /// Check the options and make the connection; nothing starts yet.
    #[new]
    #[pyo3(signature = (executable, cwd, env, trace, hello_timeout))]
    fn new(
        py: Python<'_>,
        executable: Vec<u8>,
        cwd: Option<Vec<u8>>,
        env: Vec<(Vec<u8>, Vec<u8>)>,
        trace: bool,
        hello_timeout: Option<f64>,
    ) -> PyResult<Self> {
        guarded(py, "making a client", || {
            let Settings { spawn, trace: env_trace } = process_settings().clone().map_err(|e| raise(py, &e))?;
            let mut env: Vec<(OsString, OsString)> =
                env.into_iter().map(|(k, v)| (OsString::from_vec(k), OsString::from_vec(v))).collect();
            env.sort();
            let launch = LaunchOptions {
                executable: OsString::from_vec(executable),
                cwd: cwd.map(|c| PathBuf::from(OsString::from_vec(c))),
                env,
                spawn,
            };
            launch.validate().map_err(|e| raise(py, &e))?;
            let hello_timeout = duration(hello_timeout).map_err(|e| raise(py, &e))?;
            let wake = WakeFd::new().map_err(|e| {
                raise(py, &KomaError::new(ErrorCode::SpawnFailed, format!("could not make the wake descriptor: {e}")))
            })?;
            let options =
                ConnectionOptions { launch, trace: trace || env_trace, label: "koma_sdk".into(), hello_timeout };
            let conn = Connection::new(options, Box::new(FdWaker(wake.clone())));
            let counters = conn.event_counters();
            Ok(NativeClient {
                conn: ManuallyDrop::new(conn),
                wake,
                owner: std::process::id(),
                counters,
                view: Mutex::new(None),
            })
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
            self.own(py)?;
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
            self.own(py)?;
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
            if !self.forked() {
                self.conn.abandon(token);
            }
            Ok(())
        })
    }

    /// Close: `True` if done now, else the completion for `token` says when.
    fn close(&self, py: Python<'_>, token: u64) -> PyResult<bool> {
        guarded(py, "closing", || {
            if self.forked() {
                return Ok(true);
            }
            Ok(self.conn.close(token) == Closing::Done)
        })
    }

    /// Everything one wake brought: `(tokens, joined, lifts, others)`. The
    /// results of `tokens` are the items of `joined`, one JSON array for one
    /// `json.loads`, whose long strings go back at `lifts`
    /// (`(index, *path, text)`); `others` are `(token, value, failed)`: an
    /// error, or `None` for a finished `close`.
    fn deliver<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        guarded(py, "delivering results", || {
            // Readiness first: a wake after this point makes it readable again.
            self.wake.reset();
            let completions = if self.forked() { Vec::new() } else { self.conn.drain() };
            deliver(py, completions)
        })
    }

    /// What waits in the event buffer: `(0, batch, lifts, epoch)`,
    /// `(1, dropped)` (the overflow report), `(2, error or None)` (the end),
    /// or `None` (nothing now; with `wait`, the next events wake the loop).
    fn take_events<'py>(&self, py: Python<'py>, wait: bool) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guarded(py, "taking events", || {
            if self.forked() {
                return Ok(Some((2, py.None()).into_pyobject(py)?));
            }
            Ok(Some(match self.conn.take_events(wait) {
                Take::Batch { json, lifts, epoch, .. } => {
                    let bytes = PyBytes::new(py, &json);
                    drop(json);
                    let mut entries = Vec::with_capacity(lifts.len());
                    for (i, l) in &lifts {
                        entries.push(lift_entry(py, batch_data_index(*i) as usize, l)?);
                    }
                    (0, bytes, PyList::new(py, entries)?, epoch).into_pyobject(py)?
                }
                Take::Overflow { dropped } => (1, dropped).into_pyobject(py)?,
                Take::Empty => return Ok(None),
                Take::Ended(End::Finished) => (2, py.None()).into_pyobject(py)?,
                Take::Ended(End::Failed(e)) => (2, error_object(py, &e)?).into_pyobject(py)?,
            }))
        })
    }

    /// Nobody waits for events any more.
    fn unwant_events(&self, py: Python<'_>) -> PyResult<()> {
        guarded(py, "stopping the events", || {
            if !self.forked() {
                self.conn.unwant_events();
            }
            Ok(())
        })
    }

    /// The counters shared with the core, as a writable memoryview of
    /// unsigned 32-bit slots (the slot numbers are the module's `SLOT_*`).
    /// The same view every time; it is released when this client goes.
    fn counters(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guarded(py, "sharing the counters", || {
            let mut view = self.view.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(v) = view.as_ref() {
                return Ok(v.clone_ref(py));
            }
            // SAFETY: the memory is `self.counters` (an `Arc` this object
            // holds), valid and aligned for `byte_len` bytes. The view does
            // not own it, so it must not outlive it: `Drop` releases the view
            // (after which Python can no longer reach the memory) before the
            // Arc goes, and if the view cannot be released (something holds
            // an export of it), the memory is kept for the life of the process.
            // Python writes the slots with plain aligned 32-bit stores under
            // the GIL; the core reads them atomically.
            let raw = unsafe {
                pyo3::ffi::PyMemoryView_FromMemory(
                    self.counters.as_ptr().cast(),
                    self.counters.byte_len() as isize,
                    PYBUF_WRITE,
                )
            };
            // SAFETY: a new reference, or NULL with an exception set.
            let bytes_view = unsafe { Bound::from_owned_ptr_or_err(py, raw) }?;
            let slots = bytes_view.call_method1("cast", ("I",))?;
            // The byte view is released at once: only `slots` refers to the memory.
            bytes_view.call_method0("release")?;
            let slots = slots.unbind();
            *view = Some(slots.clone_ref(py));
            Ok(slots)
        })
    }

    /// The kept tail of the child's stderr.
    #[getter]
    fn stderr(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, "reading stderr", || Ok(if self.forked() { String::new() } else { self.conn.stderr_text() }))
    }

    /// The child's pid while it runs.
    #[getter]
    fn pid(&self, py: Python<'_>) -> PyResult<Option<u32>> {
        guarded(py, "reading the pid", || Ok(if self.forked() { None } else { self.conn.pid() }))
    }

    /// Whether `close()` is done (for tests).
    fn is_closed(&self, py: Python<'_>) -> PyResult<bool> {
        guarded(py, "reading the phase", || Ok(self.forked() || self.conn.is_closed()))
    }

    /// Events counted against the bound: `(frames, bytes)` (for tests).
    fn buffered_events(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        guarded(py, "counting events", || Ok(if self.forked() { (0, 0) } else { self.conn.buffered_events() }))
    }

    /// Stop the child's whole group at once (the client was collected).
    fn kill_now(&self, py: Python<'_>) -> PyResult<()> {
        guarded(py, "stopping the child", || {
            if !self.forked() {
                self.conn.kill_now();
            }
            Ok(())
        })
    }

    /// The descriptor the loop watches, while it is open.
    fn wake_fd(&self) -> Option<i32> {
        self.wake.fileno()
    }

    /// Close the wake descriptor (after close, or when collected; the loop
    /// must have stopped watching it).
    fn release_wake(&self) {
        self.wake.release();
    }

    /// Whether this client was made by another process (this one is a child made by `fork()`).
    fn forked(&self) -> bool {
        std::process::id() != self.owner
    }
}

impl NativeClient {
    /// Refuse to act in a child made by `fork()`: the connection is the parent's.
    fn own(&self, py: Python<'_>) -> PyResult<()> {
        if self.forked() {
            let e = KomaError::new(
                ErrorCode::TransportFailure,
                format!(
                    "this client belongs to the process that made it (pid {}), not to this child of fork(); make a new client here",
                    self.owner
                ),
            );
            return Err(raise(py, &e));
        }
        Ok(())
    }
}

/// The Python values of one wake's completions.
fn deliver<'py>(py: Python<'py>, completions: Vec<Completion>) -> PyResult<Bound<'py, PyTuple>> {
    let mut tokens: Vec<u64> = Vec::new();
    let mut joined: Vec<u8> = Vec::new();
    let mut lifts: Vec<Bound<'py, PyTuple>> = Vec::new();
    let mut others: Vec<Bound<'py, PyTuple>> = Vec::new();
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
            Outcome::Closed => others.push((c.token, py.None(), false).into_pyobject(py)?),
            Outcome::Error(e) => others.push((c.token, error_object(py, &e)?, true).into_pyobject(py)?),
        }
    }
    let joined = if tokens.is_empty() {
        py.None().into_bound(py)
    } else {
        joined.push(b']');
        PyBytes::new(py, &joined).into_any()
    };
    (tokens, joined, PyList::new(py, lifts)?, PyList::new(py, others)?).into_pyobject(py)
}

impl Drop for NativeClient {
    fn drop(&mut self) {
        if self.forked() {
            // The parent's connection: dropping it here would deregister the
            // parent's descriptors from the epoll instance both share.
            self.wake.release();
            return;
        }
        // Collected without close(): stop the child's whole group now.
        self.conn.kill_now();
        self.wake.release();
        let view = self.view.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(view) = view {
            let released = Python::attach(|py| view.bind(py).call_method0("release").is_ok());
            if !released {
                // Something still exports the view: keep the memory it shows.
                std::mem::forget(self.counters.clone());
            }
        }
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.conn) };
    }
}
