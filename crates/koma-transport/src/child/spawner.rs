//! The spawner: one thread, started on first use and never ended, that starts
//! every child of this process.
//!
//! Why one thread: on Linux the child gets `PR_SET_PDEATHSIG` (SIGKILL), which
//! fires when the *thread* that forked it ends. A thread that lives as long as
//! the process makes that "when this process dies", and it keeps the number of
//! threads constant however many clients there are. Spawns are serialised;
//! each one is a vfork-style `clone` (see `clone.rs`), which does not copy the
//! parent's memory, so it is short.

use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use tokio::sync::oneshot;

use super::{LaunchError, LaunchOptions};

/// A child as the spawner hands it over.
pub(crate) struct RawSpawn {
    pub pid: i32,
    /// `None` where pidfds are not available (or turned off): the exit is then
    /// watched by a thread of its own (see `process.rs`).
    pub pidfd: Option<OwnedFd>,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

struct Request {
    options: LaunchOptions,
    reply: oneshot::Sender<Result<RawSpawn, LaunchError>>,
}

/// The spawner's queue (`Err` if its thread could not be started).
fn queue() -> Result<mpsc::Sender<Request>, LaunchError> {
    static QUEUE: OnceLock<Result<Mutex<mpsc::Sender<Request>>, String>> = OnceLock::new();
    let q = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("koma-spawner".into())
            .spawn(move || run(rx))
            .map(|_| Mutex::new(tx))
            .map_err(|e| format!("could not start the spawner thread: {e}"))
    });
    match q {
        Ok(tx) => Ok(tx.lock().unwrap_or_else(|p| p.into_inner()).clone()),
        Err(e) => Err(LaunchError::Other(e.clone())),
    }
}

fn run(rx: mpsc::Receiver<Request>) {
    #[cfg(target_os = "linux")]
    let mut stack = super::clone::ChildStack::new();
    for req in rx {
        #[cfg(target_os = "linux")]
        let r = match &mut stack {
            Ok(stack) => super::clone::spawn(&req.options, stack),
            Err(e) => Err(LaunchError::Other(format!("could not map the spawn stack: {e}"))),
        };
        #[cfg(not(target_os = "linux"))]
        let r = spawn_portable(&req.options);
        // The caller may be gone (its client closed meanwhile): the child then
        // drops here, and the process is stopped by `Process`'s owner... which
        // does not exist; so stop and reap it now.
        if let Err(Ok(orphan)) = req.reply.send(r) {
            abandon(orphan);
        }
    }
}

/// A child whose requester went away before it was handed over: kill its
/// group and reap it.
fn abandon(child: RawSpawn) {
    super::process::kill_and_reap(child.pid);
}

/// Start a child on the spawner thread.
pub(crate) async fn spawn(options: LaunchOptions) -> Result<RawSpawn, LaunchError> {
    let (reply, answer) = oneshot::channel();
    queue()?.send(Request { options, reply }).map_err(|_| LaunchError::Other("the spawner thread has ended".into()))?;
    answer.await.map_err(|_| LaunchError::Other("the spawner thread dropped the request".into()))?
}

/// Elsewhere than Linux (macOS plan, untested here): `std::process::Command`,
/// which uses `posix_spawn` for this (no hook in the child), with the child in
/// its own process group. There is no parent-death signal there.
#[cfg(not(target_os = "linux"))]
fn spawn_portable(options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(&options.executable);
    cmd.arg("sdk").arg("serve").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.process_group(0);
    if let Some(cwd) = &options.cwd {
        if !cwd.is_dir() {
            let error = std::io::Error::from_raw_os_error(libc::ENOENT);
            return Err(LaunchError::Cwd { cwd: cwd.clone(), error });
        }
        cmd.current_dir(cwd);
    }
    for (k, v) in &options.env {
        cmd.env(k, v);
    }
    let mut child =
        cmd.spawn().map_err(|error| LaunchError::Executable { executable: options.executable.clone(), error })?;
    let pid = child.id() as i32;
    let stdin = child.stdin.take().expect("piped").into();
    let stdout = child.stdout.take().expect("piped").into();
    let stderr = child.stderr.take().expect("piped").into();
    // `Process` reaps it; the std handle must not.
    std::mem::forget(child);
    Ok(RawSpawn { pid, pidfd: None, stdin, stdout, stderr })
}
