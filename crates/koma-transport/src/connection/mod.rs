//! The connection to one `koma sdk serve` child, as a few actors over one
//! shared state. From the top:
//!
//! - `api.rs`: [`Connection`], the API the host calls from its thread;
//! - `supervise.rs`: the supervisor task, which owns the child from spawn to
//!   reap, starts the other tasks, stops the child when asked, and ends the
//!   connection's life;
//! - `reader.rs`: the reader task (stdout: split, check, route), over
//!   `route.rs` (frames classified and applied: hello, responses, events);
//! - `writer.rs`: the writer task (stdin, in order, what could not be written
//!   directly); `stdin.rs`: a request's line, written from the caller's
//!   thread while nothing is queued; `drain.rs`: the stderr drain (and its
//!   whole lines for the trace); `timers.rs`: the calls' and turns'
//!   deadlines, and a stopped turn's grace;
//! - `trace.rs`: what the connection shows of what it sees, as records
//!   (`trace_record.rs`) printed to stderr or queued for the host, bounded,
//!   and taken with the wakes; `telemetry_note.rs`: what a note does to a
//!   traced client's OpenTelemetry span;
//! - `link.rs`: what every actor holds: the state behind one mutex
//!   (`state.rs`, grouped by concern, with `phase.rs`), the tasks' signals,
//!   the trace, the lease of the I/O threads (held from the start until the
//!   supervisor is done), and the steps shared by several actors (failing,
//!   waking the host);
//! - the nouns of the API: options (`options.rs`), completions and the
//!   waker (`completion.rs`), the event counters (`counters.rs`, and
//!   `counting.rs`, the core's side of them driven by hand for the shared
//!   counters' cases), the
//!   census of live connections and deadlines (`census.rs`).
//!
//! Everything that completes later is queued as a [`Completion`] (and what
//! the trace keeps for the host as a [`TraceRecord`]) and the [`Waker`] is
//! called once per batch, so the host's thread wakes once for many answers
//! and events.

mod api;
mod census;
mod completion;
mod counters;
mod counting;
mod drain;
mod link;
mod options;
mod phase;
mod reader;
mod route;
mod state;
mod stdin;
mod supervise;
mod telemetry_note;
mod timers;
mod trace;
mod trace_record;
mod writer;

pub use api::{Closing, Connection, Probe};
pub use census::{census, Census};
pub use completion::{Completion, Outcome, RawJson, Waker};
pub use counters::EventCounters;
pub use counting::CountingRig;
#[cfg(feature = "testing")]
pub use options::Faults;
pub use options::{ConnectionOptions, TraceKinds};
pub use route::{batch_data_index, BATCH_STRIDE};
pub use supervise::{DETACH_GRACE, EXIT_EOF_GRACE, LAST_WORDS_GRACE, STOP_GRACE};
pub use telemetry_note::client_note;
pub use trace::{TRACE_KEPT_BYTES, TRACE_KEPT_RECORDS};
pub use trace_record::{Direction, TraceRecord, Traced};
