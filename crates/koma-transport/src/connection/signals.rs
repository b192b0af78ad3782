//! What the connection's tasks wait on, and how they are asked to stop the child.

use tokio::sync::watch;

use crate::child::ExitInfo;

/// Why the supervisor stops the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// A detach is on its way: give it the detach grace first.
    AfterDetach,
    /// Stdin's end, then SIGTERM, then SIGKILL, each after a grace.
    Now,
    /// SIGKILL at once (the client object is gone).
    Kill,
}

pub(super) struct Signals {
    /// The child has exited (and is reaped): how.
    pub exit: watch::Sender<Option<ExitInfo>>,
    /// The reading of stdout has ended.
    pub stdout_end: watch::Sender<bool>,
    /// The stderr drain has ended.
    pub stderr_end: watch::Sender<bool>,
    /// Stop the child (the strongest request wins).
    pub stop: watch::Sender<Option<Stop>>,
}

impl Signals {
    pub fn new() -> Self {
        Signals {
            exit: watch::channel(None).0,
            stdout_end: watch::channel(false).0,
            stderr_end: watch::channel(false).0,
            stop: watch::channel(None).0,
        }
    }

    /// Ask the supervisor to stop the child; a stronger request replaces a weaker one.
    pub fn request_stop(&self, stop: Stop) {
        self.stop.send_if_modified(|current| {
            let stronger = matches!(
                (*current, stop),
                (None, _) | (Some(Stop::AfterDetach), Stop::Now | Stop::Kill) | (Some(Stop::Now), Stop::Kill)
            );
            if stronger {
                *current = Some(stop);
            }
            stronger
        });
    }
}
