//! The client side of the Koma SDK protocol, version 1: what a host (a
//! package of some language over this crate) needs to drive `koma sdk
//! serve`. Nothing in it belongs to one host. It is laid out after the
//! protocol's nouns:
//!
//! - [`frame`]: splitting stdout into lines and classifying each line as a frame;
//! - [`hello`]: the hello frame and its check;
//! - [`surface`]: the protocol's methods, events and error codes, and the values the core builds, generated from `schema/` (of the shapes of [`tables`]);
//! - [`tables`]: the shapes of the generated tables (a method and its params' fields, `ErrorCode`'s declaration);
//! - [`error`]: the error value every failure is, with its code;
//! - [`environment`]: `KOMA_SDK_SPAWN` and `KOMA_SDK_TRACE`, read once per process for every host;
//! - [`params`]: the local check of params;
//! - [`lifecycle`]: hello, then create/resume, then the rest, then detach;
//! - [`pending`]: the table of requests written and not yet answered;
//! - [`events`]: the bounded event buffer with its overflow report;
//! - [`lift`]: long strings cut out of values, so the host does not parse them;
//! - [`raw_json`]: a value as raw JSON text with its long strings lifted out, as the core hands it to a host;
//! - [`stderr`]: the ring that keeps the newest 64 KiB of stderr;
//! - [`quote`]: the child's bytes quoted in messages (bounded, control characters escaped);
//! - [`stop`]: how a wait the application bounds ends early (a signal, a cancellation, a deadline), and a stopped turn's grace;
//! - [`wording`]: how a host's users spell option names and durations, so that the core's messages read as their code does;
//! - [`child`]: launching `koma sdk serve` (one spawner thread) and watching the process (pidfds);
//! - [`runtime`]: the I/O threads, started with a process's first connection and ended after its last;
//! - [`limits`]: the protocol's version and bounds;
//! - [`turns`]: the turn layer: which consumer each event belongs to, what a turn collected and how it ended;
//! - [`telemetry`]: what a client shows OpenTelemetry (spans, metrics, koma's trace context), for the host to make;
//! - [`connection`]: the actors that tie these together (supervisor, reader, writer, stderr drain);
//! - `testing` (the `testing` feature only): what the tests and the fuzz targets share;
//! - `tid` (private): a thread's kernel id, and the wait until the kernel no longer lists it.
//!
//! The host calls [`Connection`] from its own thread; completions are
//! handed back in batches through a [`Waker`].

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod child;
pub mod connection;
pub mod environment;
pub mod error;
pub mod events;
pub mod frame;
pub mod hello;
pub mod lifecycle;
pub mod lift;
pub mod limits;
pub mod params;
pub mod pending;
pub mod quote;
pub mod raw_json;
pub mod runtime;
pub mod stderr;
pub mod stop;
pub mod surface;
pub mod tables;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
mod tid;
pub mod turns;
pub mod wording;

pub use connection::{
    Closing, Completion, Connection, ConnectionOptions, EventCounters, Outcome, Probe, TraceKinds, TraceRecord, Traced,
    Waker,
};
pub use error::{ErrorCode, KomaError, RemoteError};
pub use limits::{
    MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES, MAX_FRAME_BYTES, MAX_PENDING, PROTOCOL_VERSION, STDERR_KEEP_BYTES,
};
