//! The client side of the Koma SDK protocol, version 1, as `@koma/sdk` speaks it.
//!
//! This crate knows nothing of Node. It is laid out after the protocol's nouns:
//!
//! - [`frame`]: splitting stdout into lines and classifying each line as a frame;
//! - [`hello`]: the hello frame and its check;
//! - [`params`]: the method table and the local check of params;
//! - [`lifecycle`]: hello, then create/resume, then the rest, then detach;
//! - [`pending`]: the table of requests written and not yet answered;
//! - [`events`]: the bounded event buffer with its overflow report;
//! - [`lift`]: long strings cut out of values, so JavaScript does not parse them;
//! - [`stderr`]: the ring that keeps the newest 64 KiB of stderr;
//! - [`child`]: launching `koma sdk serve` (one spawner thread) and watching the process (pidfds);
//! - [`connection`]: the actors that tie these together (supervisor, reader, writer, stderr drain).
//!
//! The binding calls [`Connection`] from its JavaScript thread; completions are
//! handed back in batches through a [`Waker`].

pub mod child;
pub mod connection;
pub mod error;
pub mod events;
pub mod frame;
pub mod hello;
pub mod lifecycle;
pub mod lift;
pub mod params;
pub mod pending;
pub mod quote;
pub mod runtime;
pub mod stderr;
#[cfg(feature = "testing")]
pub mod testing;

pub use connection::{Closing, Completion, Connection, ConnectionOptions, EventCounters, Outcome, Probe, Waker};
pub use error::{ErrorCode, KomaError, RemoteError};

/// A stdout frame over this many bytes of JSON text is fatal (A.10).
pub const MAX_FRAME_BYTES: usize = 41_943_040;
/// At most this many requests written and not yet answered (A.11).
pub const MAX_PENDING: usize = 64;
/// At most this many event frames buffered and not yet taken (A.12).
pub const MAX_BUFFERED_EVENTS: usize = 256;
/// At most this many bytes of event JSON buffered and not yet taken (A.12).
pub const MAX_BUFFERED_EVENT_BYTES: usize = 67_108_864;
/// The newest this many bytes of stderr are kept (A.3).
pub const STDERR_KEEP_BYTES: usize = 65_536;
/// The only protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;
