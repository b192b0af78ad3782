//! The counters a client shares with the core, as the package sees them: a
//! writable memoryview of unsigned 32-bit slots over the core's own memory
//! (`SharedView`), and `CountingRig`, the core's side of the counters driven
//! step by step, which python/tests/test_counting.py runs the cases of
//! testdata/counting.json against (docs/python-internals.md, "The shared
//! counters"). The slots' names and numbers, and the ways a batch counts,
//! are the core's tables, handed to the module as they are (`lib.rs`).

use std::sync::{Arc, Mutex};

use koma_transport::connection::CountingRig as Rig;
use koma_transport::EventCounters;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// `PyBUF_WRITE` of CPython's `memoryobject.h` (a stable value; not in the limited API headers).
const PYBUF_WRITE: std::os::raw::c_int = 0x200;

/// The core's counters and the one view of them lent to Python, released
/// (or, if it cannot be, the memory kept) when this goes.
pub struct SharedView {
    counters: Arc<EventCounters>,
    view: Mutex<Option<Py<PyAny>>>,
}

impl SharedView {
    pub fn new(counters: Arc<EventCounters>) -> Self {
        SharedView { counters, view: Mutex::new(None) }
    }

    /// The view, made on first use: the same one every time.
    pub fn get(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut view = self.view.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = view.as_ref() {
            return Ok(v.clone_ref(py));
        }
        // SAFETY: the memory is `self.counters` (an `Arc` this object holds),
        // valid and aligned for `byte_len` bytes. The view does not own it,
        // so it must not outlive it: `Drop` releases the view (after which
        // Python can no longer reach the memory) before the Arc goes, and if
        // the view cannot be released (something holds an export of it),
        // the memory is kept for the life of the process. Python writes the
        // slots with plain aligned 32-bit stores under the GIL; the core
        // reads them atomically.
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
    }
}

impl Drop for SharedView {
    fn drop(&mut self) {
        let view = self.view.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(view) = view {
            let released = Python::attach(|py| view.bind(py).call_method0("release").is_ok());
            if !released {
                // Something still exports the view: keep the memory it shows.
                std::mem::forget(self.counters.clone());
            }
        }
    }
}

/// A batch as a stream's `take()` gives it: `(0, json, lifts)`.
type Batch<'py> = (u8, Bound<'py, PyBytes>, Bound<'py, PyList>);

/// The core's side of the shared counters, driven by a test: batches lent
/// by hand, each as a client lends one, and overflows.
#[pyclass(module = "koma_sdk._native")]
pub struct CountingRig {
    rig: Rig,
    shared: SharedView,
}

#[pymethods]
impl CountingRig {
    #[new]
    fn new() -> Self {
        let rig = Rig::new();
        let shared = SharedView::new(rig.counters());
        CountingRig { rig, shared }
    }

    /// Queue a batch of events of these frame sizes for the next `take()`;
    /// `counting` is a number of the module's `COUNTING`.
    fn lend(&mut self, sizes: Vec<u32>, counting: u32) -> PyResult<()> {
        self.rig.lend(&sizes, counting).map_err(PyValueError::new_err)
    }

    /// The next batch as a stream's `take()` gives it (`(0, json, lifts)`), or None.
    fn take<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Batch<'py>>> {
        let Some(json) = self.rig.pull() else { return Ok(None) };
        Ok(Some((0, PyBytes::new(py, json.as_bytes()), PyList::empty(py))))
    }

    /// An overflow: the epoch moves on.
    fn overflow(&mut self) {
        self.rig.overflow();
    }

    /// The events still counted against the core's bound.
    fn counted(&mut self) -> usize {
        self.rig.counted()
    }

    /// The counters, as a client's `counters()` shares them.
    fn counters(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.shared.get(py)
    }
}
