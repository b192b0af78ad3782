//! A child as a spawn path hands it to the spawner thread's caller.

use std::os::fd::OwnedFd;

/// A child just started, not yet watched.
pub(crate) struct RawSpawn {
    pub pid: i32,
    /// `None` where there is no pidfd (an old kernel, a `SpawnMode`
    /// other than `Auto`, a system other than Linux): the exit is then
    /// watched by a thread of its own (see `process.rs`).
    pub pidfd: Option<OwnedFd>,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}
