//! A child's process group registered with the guard (see `guard.rs`): the
//! guard kills it if this process dies. Dropped, it is unregistered, which
//! must happen before the group's leader is reaped (see `process.rs`).

use std::sync::Arc;

/// What keeps the registered groups (the guard).
pub(crate) trait Groups: Send + Sync {
    fn unregister(&self, pgid: i32);
}

pub(crate) struct Registration {
    groups: Arc<dyn Groups>,
    pgid: i32,
}

impl Registration {
    pub(crate) fn new(groups: Arc<dyn Groups>, pgid: i32) -> Self {
        Registration { groups, pgid }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.groups.unregister(self.pgid);
    }
}
