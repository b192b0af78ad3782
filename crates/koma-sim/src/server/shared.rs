//! What the server's threads share: the agent's core behind its one mutex,
//! the condition variable the turn worker waits on, the configuration,
//! stdout, and the state of the answer faults and of the tool.

use crate::agent::Core;
use crate::config::Config;
use crate::output::Output;
use std::process::Child;
use std::sync::atomic::AtomicU64;
use std::sync::{Condvar, Mutex, MutexGuard};

pub struct Shared {
    pub core: Mutex<Core>,
    /// Wakes the turn worker when a request changed the core.
    pub cv: Condvar,
    pub cfg: Config,
    pub out: Output,
    /// Answers held by the `hold` fault, in arrival order.
    pub held: Mutex<Vec<Vec<u8>>>,
    pub hello: String,
    /// The `unknown_ids` fault's counter.
    pub unknown_ids: AtomicU64,
    /// The `spawn_tool` fault's tool, killed by a clean exit.
    pub tool: Mutex<Option<Child>>,
}

/// Locks `m`, also after a thread panicked while holding it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
