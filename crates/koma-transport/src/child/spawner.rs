//! The spawner: one thread, started on first use and never ended, that starts
//! every child of this process.
//!
//! Why one thread: on Linux the child gets `PR_SET_PDEATHSIG` (SIGKILL), which
//! fires when the *thread* that forked it ends. A thread that lives as long as
//! the process makes that "when this process dies", and it keeps the number of
//! threads constant however many clients there are. Spawns are serialised;
//! each one is a vfork-style `clone` (see `clone.rs`) or a `posix_spawn` (see
//! `portable.rs`), neither of which copies the parent's memory, so it is short.
//!
//! A child made by `fork()` has no spawner thread (threads do not survive a
//! fork): it starts one of its own on first use, which then serves the
//! children it makes (see `runtime/fork.rs`).

use std::sync::mpsc;

use tokio::sync::oneshot;

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
use super::raw_spawn::RawSpawn;
use super::wait::kill_and_reap;
use crate::runtime::fork::ForkLocal;

struct Request {
    options: LaunchOptions,
    reply: oneshot::Sender<Result<RawSpawn, LaunchError>>,
}

/// The spawner's queue in this process (`Err` if its thread could not be started).
fn queue() -> Result<&'static mpsc::Sender<Request>, LaunchError> {
    static QUEUE: ForkLocal<Result<mpsc::Sender<Request>, String>> = ForkLocal::new();
    let queue = QUEUE.get(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("koma-spawner".into())
            .spawn(move || run(rx))
            .map(|_| tx)
            .map_err(|e| format!("could not start the spawner thread: {e}"))
    });
    queue.as_ref().map_err(|e| LaunchError::Other(e.clone()))
}

fn run(rx: mpsc::Receiver<Request>) {
    let mut paths = Paths::default();
    for req in rx {
        let r = paths.spawn(&req.options);
        // The caller may be gone (its client closed meanwhile): nothing else
        // will supervise this child, so stop and reap it now.
        if let Err(Ok(orphan)) = req.reply.send(r) {
            kill_and_reap(orphan.pid);
        }
    }
}

/// What the spawn paths keep between spawns: on Linux, the clone path's
/// stack, mapped at its first use.
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

    /// Elsewhere every mode is the portable path.
    #[cfg(not(target_os = "linux"))]
    fn spawn(&mut self, options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
        super::portable::spawn(options)
    }
}

/// Start a child on the spawner thread.
pub(crate) async fn spawn(options: LaunchOptions) -> Result<RawSpawn, LaunchError> {
    let (reply, answer) = oneshot::channel();
    queue()?.send(Request { options, reply }).map_err(|_| LaunchError::Other("the spawner thread has ended".into()))?;
    answer.await.map_err(|_| LaunchError::Other("the spawner thread dropped the request".into()))?
}
