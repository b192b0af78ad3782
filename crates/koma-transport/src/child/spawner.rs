//! The spawner: one thread that starts every child while the I/O threads run
//! (see `runtime`), and then ends them.
//!
//! Why one thread: on Linux the child gets `PR_SET_PDEATHSIG` (SIGKILL), which
//! fires when the *thread* that forked it ends. So the thread that forks must
//! outlive every child it starts: this one ends only when it is told to, and
//! it is told to only once no connection is left, when every child it started
//! has been reaped. It also keeps the number of threads constant however many
//! clients there are. Spawns are serialised; each one is a vfork-style
//! `clone` (see `clone.rs`) or a `posix_spawn` (see `portable.rs`), neither of
//! which copies the parent's memory, so it is short.
//!
//! Its last job is the I/O runtime's end: dropping a runtime waits for its
//! workers to end, which no worker may do (the last connection ends on one),
//! and this thread is no worker.
//!
//! A child made by `fork()` has no spawner thread (threads do not survive a
//! fork): the I/O threads start again there on first use, with a spawner of
//! their own (see `runtime/fork.rs`).

use std::io;
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
#[cfg(unix)]
pub(crate) use super::raw_spawn::RawSpawn;
#[cfg(unix)]
use super::wait::kill_and_reap;
#[cfg(windows)]
pub(crate) use super::windows::spawn::RawSpawn;

struct Request {
    options: LaunchOptions,
    reply: oneshot::Sender<Result<RawSpawn, LaunchError>>,
}

enum Message {
    Spawn(Request),
    /// Drop this runtime (which waits for its workers to end), then end.
    End(Runtime),
}

/// Where a launch asks for a child: the spawner thread's queue. Cheap to clone.
#[derive(Clone)]
pub struct Spawner {
    queue: mpsc::Sender<Message>,
}

/// The spawner thread, as the I/O threads own it: it runs until [`SpawnerThread::end`].
pub(crate) struct SpawnerThread {
    queue: mpsc::Sender<Message>,
    thread: JoinHandle<()>,
}

/// Start the spawner thread; `on_start` runs first on it. `started` is given
/// each child as soon as it is started, before anything else (on Unix: its
/// group's registration with the guard, see `guard.rs`).
pub(crate) fn start(
    on_start: impl FnOnce() + Send + 'static,
    started: impl FnMut(&mut RawSpawn) + Send + 'static,
) -> io::Result<(Spawner, SpawnerThread)> {
    let (queue, rx) = mpsc::channel::<Message>();
    let thread = std::thread::Builder::new().name("koma-spawner".into()).spawn(move || {
        on_start();
        run(rx, started)
    })?;
    Ok((Spawner { queue: queue.clone() }, SpawnerThread { queue, thread }))
}

fn run(rx: mpsc::Receiver<Message>, mut started: impl FnMut(&mut RawSpawn)) {
    let mut paths = Paths::default();
    for message in rx {
        match message {
            Message::Spawn(req) => {
                let r = paths.spawn(&req.options).map(|mut raw| {
                    started(&mut raw);
                    raw
                });
                // The caller may be gone (its client closed meanwhile): nothing else
                // will supervise this child, so stop and reap it now.
                if let Err(Ok(orphan)) = req.reply.send(r) {
                    abandon(orphan);
                }
            }
            Message::End(runtime) => {
                drop(runtime);
                return;
            }
        }
    }
}

/// A child nothing will supervise: stopped (with its group, or its job) and
/// reaped; its group unregistered from the guard before the reap.
#[cfg(unix)]
fn abandon(orphan: RawSpawn) {
    let RawSpawn { pid, guarded, .. } = orphan;
    kill_and_reap(pid, || drop(guarded));
}

#[cfg(windows)]
fn abandon(orphan: RawSpawn) {
    orphan.job.terminate();
}

impl SpawnerThread {
    /// End the thread once every spawn asked for before is done: it drops
    /// `runtime` (waiting for its workers to end), then ends. Call it only
    /// once every child this thread started has been reaped (its end would
    /// kill those still running on Linux). Its handle, to join; or, if the
    /// thread is gone already, the runtime back.
    pub fn end(self, runtime: Runtime) -> Result<JoinHandle<()>, Runtime> {
        match self.queue.send(Message::End(runtime)) {
            Ok(()) => Ok(self.thread),
            Err(mpsc::SendError(Message::End(runtime))) => Err(runtime),
            Err(mpsc::SendError(Message::Spawn(_))) => unreachable!("an end was sent"),
        }
    }
}

/// What the spawn paths keep between spawns: on Linux, the clone path's
/// stack, mapped at its first use (and unmapped when the thread ends).
#[derive(Default)]
struct Paths {
    #[cfg(target_os = "linux")]
    stack: Option<Result<super::clone::ChildStack, String>>,
}

impl Paths {
    #[cfg(target_os = "linux")]
    fn spawn(&mut self, options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
        use super::options::SpawnMode;
        let pidfd = match options.spawn {
            SpawnMode::Auto => true,
            SpawnMode::NoPidfd => false,
            SpawnMode::Portable => return super::portable::spawn(options),
        };
        let stack = self.stack.get_or_insert_with(|| super::clone::ChildStack::new().map_err(|e| e.to_string()));
        match stack {
            Ok(stack) => super::clone::spawn(options, stack, pidfd),
            Err(e) => Err(LaunchError::Other(format!("could not map the spawn stack: {e}"))),
        }
    }

    /// Elsewhere on Unix every mode is the portable path.
    #[cfg(all(unix, not(target_os = "linux")))]
    fn spawn(&mut self, options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
        super::portable::spawn(options)
    }

    /// On Windows there is one path (see `windows/spawn.rs`), whatever the mode.
    #[cfg(windows)]
    fn spawn(&mut self, options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
        super::windows::spawn::spawn(options)
    }
}

impl Spawner {
    /// Start a child on the spawner thread.
    pub(crate) async fn spawn(&self, options: LaunchOptions) -> Result<RawSpawn, LaunchError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Message::Spawn(Request { options, reply }))
            .map_err(|_| LaunchError::Other("the spawner thread has ended".into()))?;
        answer.await.map_err(|_| LaunchError::Other("the spawner thread dropped the request".into()))?
    }
}
