//! A launch on Windows: the spawner starts the child (see `spawn.rs`), and
//! the caller gets it watched, with its pipes.

use std::os::windows::io::OwnedHandle;

use super::super::launch_error::LaunchError;
use super::super::options::LaunchOptions;
use super::super::spawner::Spawner;
use super::process::Process;

/// A child just started: its process and the parent's ends of its pipes.
pub struct Spawned {
    pub process: Process,
    pub stdin: OwnedHandle,
    pub stdout: OwnedHandle,
    pub stderr: OwnedHandle,
}

/// Start `options.executable sdk serve` (from the spawner thread) and return
/// it with its pipes. Must be called within the I/O runtime whose lease gave
/// `spawner` (see `runtime`).
pub async fn launch(spawner: &Spawner, options: LaunchOptions) -> Result<Spawned, LaunchError> {
    let raw = spawner.spawn(options).await?;
    Process::new(raw)
        .map(|(process, pipes)| Spawned { process, stdin: pipes.stdin, stdout: pipes.stdout, stderr: pipes.stderr })
        .map_err(|e| LaunchError::Other(format!("could not watch the child: {e}")))
}
