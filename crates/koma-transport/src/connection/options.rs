//! How a connection is made.

use std::time::Duration;

use crate::child::LaunchOptions;
use crate::wording::Wording;

#[derive(Clone, Debug, Default)]
pub struct ConnectionOptions {
    pub launch: LaunchOptions,
    /// Print every frame in both directions and every stderr line to this process's stderr.
    pub trace: bool,
    /// How the host names this client in traces: each trace line starts with
    /// `[label]`. Empty: `koma-transport`.
    pub label: String,
    /// How long a started child has to send hello before the client fails
    /// (`None`: no bound).
    pub hello_timeout: Option<Duration>,
    /// How the host's users spell option names and durations, for messages.
    pub wording: Wording,
    /// Faults to inject, for tests.
    #[cfg(feature = "testing")]
    pub faults: Faults,
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
