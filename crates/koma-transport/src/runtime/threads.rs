//! The I/O threads of this process: started with the first lease (a
//! connection starting), asked to end when the last lease is let go (that
//! connection's supervisor done), and started again, fresh, with the next.
//!
//! The end is asked for where the last lease goes, often on a worker, which
//! cannot wait for it; the threads are waited for by the host's thread, in
//! [`settle`], which `drain` and `close` call. So when the host learns that
//! the last connection is closed, no I/O thread is left. A run asked to end
//! and a new run can overlap: they share nothing but this record.
//!
//! One record per process image (see `fork.rs`): in a child made by
//! `fork()` the parent's record, and its runs, are left alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

use super::fork::ForkLocal;
use super::io::{on_io_thread, Io, Stopping};
use crate::child::Spawner;

pub(super) struct Threads {
    state: Mutex<State>,
    /// Signalled when the last lease goes, and when a wait for a run ends.
    changed: Condvar,
    /// A run was asked to end and nobody has waited for it yet: the one check
    /// `settle` makes when there is none.
    stopping: AtomicBool,
}

struct State {
    leases: usize,
    /// The running threads: `Some` exactly while `leases > 0`.
    io: Option<Io>,
    /// Runs asked to end, not yet waited for.
    stopping: Vec<Stopping>,
    /// Runs some thread is waiting for now.
    waited: usize,
}

fn threads() -> &'static Threads {
    static THREADS: ForkLocal<Threads> = ForkLocal::new();
    THREADS.get(|| Threads {
        state: Mutex::new(State { leases: 0, io: None, stopping: Vec::new(), waited: 0 }),
        changed: Condvar::new(),
        stopping: AtomicBool::new(false),
    })
}

impl Threads {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for every run asked to end, including those another thread is waiting for.
    fn wait_stopped(&self) {
        let mut s = self.lock();
        loop {
            if !s.stopping.is_empty() {
                let runs = std::mem::take(&mut s.stopping);
                let n = runs.len();
                s.waited += n;
                drop(s);
                for run in runs {
                    run.wait();
                }
                s = self.lock();
                s.waited -= n;
                self.changed.notify_all();
            } else if s.waited > 0 {
                s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
            } else {
                break;
            }
        }
        // Under the lock, with nothing left: a run asked to end after this sets it again.
        self.stopping.store(false, Ordering::Release);
    }
}

/// Take a lease: start the threads if none run. The runtime's handle and the spawner.
pub(super) fn acquire() -> (Handle, Result<Spawner, String>) {
    let mut s = threads().lock();
    let io = s.io.get_or_insert_with(Io::start);
    let held = (io.handle(), io.spawner());
    s.leases += 1;
    held
}

/// Let a lease go; after the last, ask the threads to end (without waiting).
pub(super) fn release() {
    let t = threads();
    let mut s = t.lock();
    s.leases -= 1;
    if s.leases == 0 {
        if let Some(io) = s.io.take() {
            s.stopping.push(io.stop());
            t.stopping.store(true, Ordering::Release);
        }
        t.changed.notify_all();
    }
}

/// On the host's thread: if I/O threads were asked to end, wait until they
/// have. Costs one atomic load when none were. Does nothing on an I/O thread
/// (which cannot wait for its own end).
pub fn settle() {
    let t = threads();
    if t.stopping.load(Ordering::Acquire) && !on_io_thread() {
        t.wait_stopped();
    }
}

/// Whether I/O threads run now (some connection has started and its
/// supervisor is not done), for tests and diagnostics.
pub fn running() -> bool {
    threads().lock().io.is_some()
}

/// Wait (at most `limit`, a bound against a hang) until no lease is held,
/// then until the threads have ended: true once no I/O thread is left. For
/// tests and diagnostics, such as after a connection let go without
/// `close()` (its child is stopped and reaped, and then its lease goes).
/// False at once on an I/O thread.
pub fn wait_idle(limit: Duration) -> bool {
    if on_io_thread() {
        return false;
    }
    let t = threads();
    let deadline = Instant::now() + limit;
    let mut s = t.lock();
    while s.leases > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s = t.changed.wait_timeout(s, left).unwrap_or_else(|p| p.into_inner()).0;
    }
    drop(s);
    t.wait_stopped();
    true
}

/// How many leases are held (for the unit tests).
#[cfg(test)]
pub(super) fn leases() -> usize {
    threads().lock().leases
}
