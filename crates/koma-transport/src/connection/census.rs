//! Live counts of this process's connections and deadlines, for tests and
//! diagnostics: a test checks that nothing outlives what it closed.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Live counts of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// Connections whose memory is still held (by the host or a task).
    pub connections: usize,
    /// Call deadlines still running.
    pub timers: usize,
}

static LIVE_CONNECTIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE_TIMERS: AtomicUsize = AtomicUsize::new(0);

/// How many connections and deadlines are alive in this process.
pub fn census() -> Census {
    Census { connections: LIVE_CONNECTIONS.load(Ordering::SeqCst), timers: LIVE_TIMERS.load(Ordering::SeqCst) }
}

/// Counts one thing alive while it exists: held by what it counts.
pub(super) struct Alive(&'static AtomicUsize);

impl Alive {
    pub fn connection() -> Self {
        Self::count(&LIVE_CONNECTIONS)
    }

    pub fn timer() -> Self {
        Self::count(&LIVE_TIMERS)
    }

    fn count(counter: &'static AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Alive(counter)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
