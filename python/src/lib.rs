//! `koma_sdk._native`: the Python binding of the `koma-transport` core. It
//! only converts; the protocol and the turn layer live in the core, and
//! Python's idioms (coroutines, iterators, calling `on_approval`) in the
//! package (`python/koma_sdk`).
//!
//! - `client.rs`: `NativeClient`, one connection driven from the event loop;
//! - `updates.rs`: what a wake hands the package, one named shape each (a
//!   turn's updates, a class per kind; the wake's `Delivery`);
//! - `wake.rs`: the descriptor the core's waker writes to (no GIL taken);
//! - `convert.rs`: errors, lifted strings and their paths as Python values;
//! - `counters.rs`: the counters shared with the core, as a memoryview, and
//!   the core's side of them driven by hand (`CountingRig`, for the tests).
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod client;
mod convert;
mod counters;
mod updates;
mod wake;

use koma_transport::connection::BATCH_STRIDE;
use koma_transport::events::Counting;
use koma_transport::EventCounters;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Live counts of this process (for tests): connections whose memory is
/// still held, and call deadlines still running.
#[pyfunction]
fn census() -> (usize, usize) {
    let c = koma_transport::connection::census();
    (c.connections, c.timers)
}

/// The core's table of what a traced client shows OpenTelemetry (JSON text;
/// see `koma_transport::telemetry::table`).
#[pyfunction]
fn telemetry_table() -> &'static str {
    koma_transport::telemetry::table()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    convert::module_made(m)?;
    m.add_class::<client::NativeClient>()?;
    m.add_class::<updates::TurnId>()?;
    m.add_class::<updates::TurnApproval>()?;
    m.add_class::<updates::TurnReady>()?;
    m.add_class::<updates::TurnEnded>()?;
    m.add_class::<updates::TurnFailure>()?;
    m.add_class::<updates::Delivery>()?;
    m.add_function(wrap_pyfunction!(census, m)?)?;
    m.add_function(wrap_pyfunction!(telemetry_table, m)?)?;
    m.add_class::<counters::CountingRig>()?;
    // The core's tables, as they are: each slot of the shared counters by
    // name, and each way a lent batch counts (the number the core writes
    // into `BATCH_COUNTING`) by name.
    let layout = PyDict::new(m.py());
    for (name, slot) in EventCounters::LAYOUT {
        layout.set_item(name, slot)?;
    }
    m.add("COUNTER_LAYOUT", layout)?;
    let counting = PyDict::new(m.py());
    for (name, kind) in Counting::KINDS {
        counting.set_item(name, kind as u32)?;
    }
    m.add("COUNTING", counting)?;
    m.add("BATCH_STRIDE", BATCH_STRIDE)?;
    Ok(())
}
