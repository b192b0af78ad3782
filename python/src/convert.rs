//! Values of the core turned into Python objects: errors (through the
//! package's own `KomaError` factory), lifted strings and their paths.

use std::os::raw::{c_char, c_int};

use koma_transport::lift::{Chars, LiftedString, Step};
use koma_transport::{ErrorCode, KomaError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyTuple};

/// The package this native module belongs to (`koma_sdk`; a benchmark's copy
/// of another build imports under another name), from the module's own
/// name when it is made.
static PACKAGE: PyOnceLock<String> = PyOnceLock::new();

/// The module `m` (this one) is being made: remember its package.
pub fn module_made(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let name = m.name()?.to_string();
    let package = name.rsplit_once('.').map_or("koma_sdk", |(package, _)| package).to_owned();
    let _ = PACKAGE.set(m.py(), package);
    Ok(())
}

/// The package's `_errors._from_native`, the function that turns `(code,
/// message, remote)` into a `KomaError`: looked up the first time an error
/// is made (as PyO3's `import_exception!` does), so the package imports its
/// modules in any order and registers nothing.
static ERROR_FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The package's `KomaError` for `e`.
pub fn error_object<'py>(py: Python<'py>, e: &KomaError) -> PyResult<Bound<'py, PyAny>> {
    let factory = ERROR_FACTORY.get_or_try_init(py, || {
        let package = PACKAGE.get(py).map_or("koma_sdk", String::as_str);
        py.import(format!("{package}._errors"))?.getattr("_from_native").map(Bound::unbind)
    })?;
    let remote = match &e.remote {
        Some(r) => (r.code.as_str(), r.message.as_str(), r.data.as_deref()).into_pyobject(py)?.into_any(),
        None => py.None().into_bound(py),
    };
    factory.bind(py).call1((e.code.as_str(), e.message.as_str(), remote))
}

/// The core's error for a `KomaError` the package made (its `code` and `message`).
pub fn error_of(e: &Bound<'_, PyAny>) -> KomaError {
    let text = |name: &str| e.getattr(name).and_then(|v| v.extract::<String>()).unwrap_or_default();
    let code = ErrorCode::from_name(&text("code")).unwrap_or(ErrorCode::InvalidParams);
    KomaError::new(code, text("message"))
}

/// `e` raised as the package's `KomaError`.
pub fn raise(py: Python<'_>, e: &KomaError) -> PyErr {
    match error_object(py, e) {
        Ok(obj) => PyErr::from_value(obj),
        Err(err) => err,
    }
}

/// The error for a call into this module that panicked.
pub fn internal(what: &str) -> KomaError {
    KomaError::new(ErrorCode::TransportFailure, format!("an internal error (a panic) in koma_sdk while {what}"))
}

/// A lifted string as a Python `str`.
pub fn lifted_str<'py>(py: Python<'py>, chars: &Chars) -> PyResult<Bound<'py, PyAny>> {
    let raw = match chars {
        Chars::Latin1 { bytes, range } => {
            let b = &bytes[range.clone()];
            // SAFETY: `b` is valid for `b.len()` bytes during the call; Latin-1
            // decoding reads exactly those and cannot fail.
            unsafe {
                pyo3::ffi::PyUnicode_DecodeLatin1(b.as_ptr().cast::<c_char>(), b.len() as isize, std::ptr::null())
            }
        }
        Chars::Utf16(units) => {
            // Native order, stated (0 would take a leading U+FEFF as a byte-order mark).
            let mut order: c_int = if cfg!(target_endian = "little") { -1 } else { 1 };
            // SAFETY: `units` is valid for its length in bytes during the call;
            // "surrogatepass" keeps a lone surrogate as json.loads would.
            unsafe {
                pyo3::ffi::PyUnicode_DecodeUTF16(
                    units.as_ptr().cast::<c_char>(),
                    (units.len() * 2) as isize,
                    c"surrogatepass".as_ptr(),
                    &mut order,
                )
            }
        }
    };
    // SAFETY: `raw` is a new reference or NULL with an exception set, as
    // both decoders return; `from_owned_ptr_or_err` takes either.
    unsafe { Bound::from_owned_ptr_or_err(py, raw) }
}

/// `(index, *path, text)`: where a lifted string goes back, from the root of
/// the parsed array (`index` is its slot there).
pub fn lift_entry<'py>(py: Python<'py>, index: usize, l: &LiftedString) -> PyResult<Bound<'py, PyTuple>> {
    let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(l.path.len() + 2);
    items.push(index.into_pyobject(py)?.into_any());
    for step in &l.path {
        items.push(match step {
            Step::Key(k) => PyString::new(py, k).into_any(),
            Step::Index(i) => i.into_pyobject(py)?.into_any(),
        });
    }
    items.push(lifted_str(py, &l.chars)?);
    PyTuple::new(py, items)
}
