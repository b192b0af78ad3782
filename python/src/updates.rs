//! What the package's Python half is handed, one named shape each: a turn's
//! updates (the core's `TurnUpdate`, a class per kind), and one wake's
//! delivery. Their fields are read in Python (`_turn.py`, `_client.py`);
//! their types are `_native.pyi`'s.

use koma_transport::raw_json::RawJson;
use koma_transport::turns::{Cause, TurnEnd, TurnUpdate};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::convert::{error_object, lift_entry};

/// The turn's submit was answered: its id.
#[pyclass(frozen, get_all, module = "koma_sdk._native")]
pub struct TurnId {
    pub id: String,
}

/// An approval for `on_approval`: `request` is the `approval_requested`
/// event's data, as a one-item JSON array whose long strings go back at
/// `lifts` (`(0, *path, text)`).
#[pyclass(frozen, get_all, module = "koma_sdk._native")]
pub struct TurnApproval {
    pub approval: String,
    pub request: Py<PyBytes>,
    pub lifts: Py<PyList>,
}

/// The turn's loop may take events now (it waited, and something came).
#[pyclass(frozen, module = "koma_sdk._native")]
pub struct TurnReady;

/// The turn is over: `result` (a one-item JSON array, with `lifts`), why it
/// fails if it does, and a traced turn's record (JSON text).
#[pyclass(frozen, get_all, module = "koma_sdk._native")]
pub struct TurnEnded {
    pub result: Py<PyBytes>,
    pub lifts: Py<PyList>,
    pub failure: Option<Py<TurnFailure>>,
    pub record: Option<String>,
}

/// Why a turn's result fails: `error`, what it comes from (`cause`:
/// "client", "handler" for the approval `approval`, or "stop"), and whether
/// its id fails with it (`fails_id`: it never got one).
#[pyclass(frozen, get_all, module = "koma_sdk._native")]
pub struct TurnFailure {
    pub error: Py<PyAny>,
    pub cause: &'static str,
    pub approval: Option<String>,
    pub fails_id: bool,
}

/// Everything one wake brought (see `NativeClient.deliver`).
#[pyclass(frozen, get_all, module = "koma_sdk._native")]
pub struct Delivery {
    /// The calls answered with a result, in the order of `joined`'s items.
    pub tokens: Vec<u64>,
    /// Their results as one JSON array (one `json.loads`), or None.
    pub joined: Option<Py<PyBytes>>,
    /// Where `joined`'s long strings go back: `(index, *path, text)`.
    pub lifts: Py<PyList>,
    /// The other calls done: `(token, error or None)`.
    pub others: Py<PyList>,
    /// The turns' updates: `(key, update)`.
    pub updates: Py<PyList>,
    /// The trace records: `(pid, kind, direction, line)`.
    pub trace: Py<PyList>,
    /// What the notes among them do to a traced client's span (one JSON text), or None.
    pub notes: Option<String>,
}

/// A turn's update as the object of its kind.
pub fn update_object(py: Python<'_>, update: TurnUpdate) -> PyResult<Py<PyAny>> {
    Ok(match update {
        TurnUpdate::Id(id) => Py::new(py, TurnId { id })?.into_any(),
        TurnUpdate::Approval(asked) => {
            let (request, lifts) = one_value(py, &asked.data)?;
            Py::new(py, TurnApproval { approval: asked.approval, request, lifts })?.into_any()
        }
        TurnUpdate::Ready => Py::new(py, TurnReady)?.into_any(),
        TurnUpdate::Ended(end) => ended(py, end)?.into_any(),
    })
}

/// A turn's end as `TurnEnded`.
pub fn ended(py: Python<'_>, end: TurnEnd) -> PyResult<Py<TurnEnded>> {
    let TurnEnd { result, error, telemetry } = end;
    let (result, lifts) = one_value(py, &result)?;
    let failure = match error {
        None => None,
        Some(e) => {
            let (cause, approval) = match e.cause {
                Cause::Client => ("client", None),
                Cause::Handler(a) => ("handler", Some(a)),
                Cause::Stop => ("stop", None),
            };
            let error = error_object(py, &e.error)?.unbind();
            Some(Py::new(py, TurnFailure { error, cause, approval, fails_id: e.fails_id })?)
        }
    };
    Py::new(py, TurnEnded { result, lifts, failure, record: telemetry })
}

/// A JSON value as `([value] as JSON bytes, lift entries)`.
fn one_value(py: Python<'_>, raw: &RawJson) -> PyResult<(Py<PyBytes>, Py<PyList>)> {
    let mut json = Vec::with_capacity(raw.text().len() + 2);
    json.push(b'[');
    json.extend_from_slice(raw.text());
    json.push(b']');
    let mut lifts = Vec::with_capacity(raw.lifts.len());
    for l in &raw.lifts {
        lifts.push(lift_entry(py, 0, l)?);
    }
    Ok((PyBytes::new(py, &json).unbind(), PyList::new(py, lifts)?.unbind()))
}
