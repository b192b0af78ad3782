//! The event buffer of the protocol (see `docs/protocol.md`, "Events and
//! overflow"): at most 256 event frames and 64 MiB of JSON text received and
//! not yet taken by the application, wherever they wait. They wait in
//! streams, one per consumer: the client's own (what `events()` reads) and
//! one per turn that the turn layer (`crate::turns`) routes events to. The
//! [`Bound`] counts them all; each [`Stream`] holds its consumer's events
//! in batches, its overflow report and its end.
//!
//! On overflow every counted stream is cleared, reports once and pauses (its
//! events are still sequence-checked by the reader, then discarded); a
//! stream's pause ends when its consumer takes the report.

mod bound;
mod buffer;
mod stream;
mod take;

pub use bound::Bound;
pub use buffer::EventBuffer;
pub use stream::{Stream, BATCH_BYTES};
pub use take::{Counting, End, Take};
