//! How a connection is made.

use std::time::Duration;

use crate::child::LaunchOptions;
use crate::telemetry::TelemetryOptions;
use crate::wording::Wording;

#[derive(Clone, Debug, Default)]
pub struct ConnectionOptions {
    pub launch: LaunchOptions,
    /// Print the trace to this process's stderr (fd 2), from the I/O
    /// threads: every frame in both directions, every whole line of koma's
    /// stderr, and the notes of the connection's life.
    pub trace: bool,
    /// The trace records queued for the host, which takes them with
    /// `Connection::take_trace` when it is woken (none by default).
    pub trace_records: TraceKinds,
    /// How the host names this client in traces: each printed line starts
    /// with `[label]`, or `[label pid N]` once the child is started, and
    /// every record carries it. Empty: `koma-transport`.
    pub label: String,
    /// How long a started child has to send hello before the client fails
    /// (`None`: no bound).
    pub hello_timeout: Option<Duration>,
    /// How the host's users spell option names and durations, for messages.
    pub wording: Wording,
    /// The application traces the client (see `crate::telemetry`): its
    /// turns keep a timeline for their record, and the notes of its life
    /// are kept for the host. `None`: nothing is recorded.
    pub telemetry: Option<TelemetryOptions>,
    /// Faults to inject, for tests.
    #[cfg(feature = "testing")]
    pub faults: Faults,
}

/// Which trace records are queued for the host. Frames cost a record each
/// (one branch per frame when off); stderr lines and notes are few.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceKinds {
    /// Every frame written and read.
    pub frames: bool,
    /// Every whole line of koma's stderr.
    pub stderr: bool,
    /// The notes of the connection's life: spawned, hello checked, detach,
    /// exit, failure, close done.
    pub notes: bool,
}

impl TraceKinds {
    pub const NONE: TraceKinds = TraceKinds { frames: false, stderr: false, notes: false };
    pub const ALL: TraceKinds = TraceKinds { frames: true, stderr: true, notes: true };
}

impl ConnectionOptions {
    /// The reader is to panic at its first frame (a test's fault; never
    /// without the `testing` feature).
    pub(super) fn panics_in_reader(&self) -> bool {
        #[cfg(feature = "testing")]
        return self.faults.panic_in_reader;
        #[cfg(not(feature = "testing"))]
        false
    }
}

/// Faults a test can inject (only with the `testing` feature).
#[cfg(feature = "testing")]
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// The reader panics at the first frame.
    pub panic_in_reader: bool,
}
