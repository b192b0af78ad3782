//! One run of the I/O threads: the runtime's two workers (`koma-io`) and the
//! spawner thread (`koma-spawner`), started together for the first lease and
//! ended together after the last (see `threads.rs`), with the guard process
//! that kills the children's groups if this process dies (see
//! `child/guard.rs`): started before them, ended and reaped after them.
//!
//! The start returns once each thread runs (under its name): from then on
//! the process lists exactly these threads. The end is the spawner's last
//! job: it drops the runtime, which waits for the workers to end (a wait no
//! worker may do, and the last connection often ends on a worker), and then
//! ends itself. Each thread records its id as it starts, so that whoever
//! waits for the end can tell when the kernel no longer lists it (see `tid.rs`).

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use tokio::runtime::{Handle, Runtime};

#[cfg(unix)]
use crate::child::guard::Guard;
use crate::child::spawner::{self, Spawner, SpawnerThread};
use crate::tid;

thread_local! {
    /// Set on the I/O threads: they cannot wait for their own end.
    static IO_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is one of the I/O threads.
pub(crate) fn on_io_thread() -> bool {
    IO_THREAD.with(Cell::get)
}

/// The runtime's workers.
const WORKERS: usize = 2;

/// The threads of one run that have started: the kernel's id of each.
#[derive(Default)]
struct Started {
    tids: Mutex<Vec<i32>>,
    changed: Condvar,
}

type Tids = Arc<Started>;

impl Started {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<i32>> {
        self.tids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until `n` threads have started.
    fn wait_for(&self, n: usize) {
        let mut tids = self.lock();
        while tids.len() < n {
            tids = self.changed.wait(tids).unwrap_or_else(|p| p.into_inner());
        }
    }
}

pub(super) struct Io {
    runtime: Runtime,
    spawner: Result<(Spawner, SpawnerThread), String>,
    tids: Tids,
    #[cfg(unix)]
    guard: Arc<Guard>,
}

/// A run whose end has been asked for: what to wait for.
pub(super) struct Stopping {
    /// The spawner thread, which ends after the workers (`None` if it had ended before).
    spawner: Option<JoinHandle<()>>,
    tids: Tids,
    /// Told to end: exits once it has read the end of its input.
    #[cfg(unix)]
    guard: Arc<Guard>,
}

/// Runs first on each thread of a run (named by then).
fn started(tids: &Tids) {
    IO_THREAD.with(|c| c.set(true));
    tids.lock().push(tid::current());
    tids.changed.notify_all();
}

impl Io {
    /// Start the threads. A runtime that cannot be made is a panic (as it
    /// always was: the system is out of threads); a spawner thread that
    /// cannot be started fails each launch instead.
    pub fn start() -> Io {
        let tids = Tids::default();
        let on_worker = tids.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("koma-io")
            .on_thread_start(move || started(&on_worker))
            .enable_all()
            .build()
            .expect("tokio runtime");
        #[cfg(unix)]
        let guard = Guard::start(runtime.handle().clone());
        #[cfg(unix)]
        runtime.spawn(guard.clone().watch());
        // Each child's group, registered with the guard before anything else:
        // from then on this process's death takes the group with it.
        #[cfg(unix)]
        let spawned = {
            let guard = guard.clone();
            move |raw: &mut crate::child::spawner::RawSpawn| raw.guarded = Some(guard.register(raw.pid))
        };
        #[cfg(windows)]
        let spawned = |_: &mut crate::child::spawner::RawSpawn| {}; // koma's Job Object does it there
        let on_spawner = tids.clone();
        let spawner = spawner::start(move || started(&on_spawner), spawned)
            .map_err(|e| format!("could not start the spawner thread: {e}"));
        // The runtime starts its workers as it is built; each thread is named
        // by the time it runs `started`.
        tids.wait_for(WORKERS + usize::from(spawner.is_ok()));
        Io {
            runtime,
            spawner,
            tids,
            #[cfg(unix)]
            guard,
        }
    }

    pub fn handle(&self) -> Handle {
        self.runtime.handle().clone()
    }

    pub fn spawner(&self) -> Result<Spawner, String> {
        self.spawner.as_ref().map(|(s, _)| s.clone()).map_err(Clone::clone)
    }

    /// Ask the threads to end, without waiting (this may run on a worker).
    /// Call it only when no connection holds a lease: every child the
    /// spawner started has then been reaped.
    pub fn stop(self) -> Stopping {
        #[cfg(unix)]
        let Io { runtime, spawner, tids, guard } = self;
        #[cfg(windows)]
        let Io { runtime, spawner, tids } = self;
        // No child is left to guard: it may begin to exit now.
        #[cfg(unix)]
        guard.close();
        let ended = match spawner {
            Ok((_, thread)) => thread.end(runtime),
            Err(_) => Err(runtime),
        };
        match ended {
            Ok(spawner) => Stopping {
                spawner: Some(spawner),
                tids,
                #[cfg(unix)]
                guard,
            },
            Err(runtime) => {
                // No spawner thread to drop it: end the workers without
                // waiting for them (dropping it here could be a worker's wait
                // for itself). Their ids are still waited for.
                runtime.shutdown_background();
                Stopping {
                    spawner: None,
                    tids,
                    #[cfg(unix)]
                    guard,
                }
            }
        }
    }
}

impl Stopping {
    /// Wait until every thread of the run has ended, and the kernel no
    /// longer lists it. Must not run on one of them.
    pub fn wait(self) {
        if let Some(spawner) = self.spawner {
            let _ = spawner.join(); // the spawner joined the workers before it ended
        }
        // Past their join (or, after a shutdown without a spawner, ending).
        for t in std::mem::take(&mut *self.tids.lock()) {
            tid::wait_gone(t);
        }
        // It exits as soon as it reads the end of its input.
        #[cfg(unix)]
        self.guard.reap();
    }
}
