//! A call's registered deadline: the handle of its sleeping task.

use tokio::task::AbortHandle;

use super::census::Alive;

/// Cancelled when dropped, unless it fired. Counted (see
/// [`super::census::census`]) from registration until it fires or is cancelled.
pub(super) struct Deadline {
    task: Option<AbortHandle>,
    _alive: Alive,
}

impl Deadline {
    pub fn new(task: AbortHandle) -> Self {
        Deadline { task: Some(task), _alive: Alive::timer() }
    }

    /// Its task is the one running: nothing to cancel.
    pub fn fired(mut self) {
        self.task = None;
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
