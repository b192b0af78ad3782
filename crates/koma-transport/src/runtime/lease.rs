//! A lease of the I/O threads: what keeps them running. A connection takes
//! one when it starts and lets it go when its supervisor is done (its child
//! reaped, its tasks ended); the I/O threads run while any lease is held.

use tokio::runtime::Handle;

use super::fork::generation;
use super::threads;
use crate::child::{LaunchError, Spawner};

pub struct Lease {
    /// `None` once let go.
    held: Option<Held>,
    /// The process image it was taken in (see `fork.rs`).
    generation: u64,
    /// It keeps the I/O threads running (all but a unit test's, see [`Lease::on`]).
    counted: bool,
}

struct Held {
    handle: Handle,
    spawner: Result<Spawner, String>,
}

impl Lease {
    /// Take a lease, starting the I/O threads if none run.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Lease {
        let generation = generation();
        let (handle, spawner) = threads::acquire();
        Lease { held: Some(Held { handle, spawner }), generation, counted: true }
    }

    /// A lease of a runtime of a unit test's own (one whose clock it
    /// controls), which starts no thread and keeps none running.
    #[cfg(test)]
    pub(crate) fn on(handle: Handle) -> Lease {
        let spawner = Err("a unit test's runtime has no spawner".to_owned());
        Lease { held: Some(Held { handle, spawner }), generation: generation(), counted: false }
    }

    /// The runtime to spawn the connection's tasks on.
    pub fn handle(&self) -> &Handle {
        &self.held.as_ref().expect("held until dropped").handle
    }

    /// The spawner thread of these I/O threads, for [`crate::child::launch`].
    pub fn spawner(&self) -> Result<Spawner, LaunchError> {
        self.held.as_ref().expect("held until dropped").spawner.clone().map_err(LaunchError::Other)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else { return };
        if !self.counted {
            return;
        }
        if self.generation != generation() {
            // Taken before fork(), in the parent: its threads do not exist
            // here, and its record may have been locked at the fork. Leave both alone.
            std::mem::forget(held);
            return;
        }
        drop(held);
        threads::release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_taken_before_fork_is_left_alone_when_dropped_after() {
        let before = threads::leases();
        let mut lease = Lease::new();
        assert_eq!(threads::leases(), before + 1);
        // As in a child made by fork() after the lease was taken.
        lease.generation = lease.generation.wrapping_add(1);
        drop(lease);
        assert_eq!(threads::leases(), before + 1, "not let go: it is the parent's");
        threads::release(); // as the parent lets go of it
        assert_eq!(threads::leases(), before);
    }
}
