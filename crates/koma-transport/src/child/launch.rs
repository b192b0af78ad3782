//! A launch: the spawner starts the child, and the caller gets it watched,
//! with its pipes.

use std::os::fd::OwnedFd;

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
use super::process::Process;
use super::spawner::Spawner;

/// A child just started: its process and the parent's ends of its pipes.
pub struct Spawned {
    pub process: Process,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Start `options.executable sdk serve` (from the spawner thread, by the path
/// `options.spawn` selects) and return it with its pipes. Must be called
/// within the I/O runtime whose lease gave `spawner` (see `runtime`).
pub async fn launch(spawner: &Spawner, options: LaunchOptions) -> Result<Spawned, LaunchError> {
    let raw = spawner.spawn(options).await?;
    Process::new(raw.pid, raw.exit, raw.guarded)
        .map(|process| Spawned { process, stdin: raw.stdin, stdout: raw.stdout, stderr: raw.stderr })
        .map_err(|e| LaunchError::Other(format!("could not watch the child: {e}")))
}
