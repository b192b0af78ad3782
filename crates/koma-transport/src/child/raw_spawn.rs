//! A child as a spawn path hands it to the spawner thread's caller.

use std::os::fd::OwnedFd;

use super::registration::Registration;

/// How a child's exit is watched (see `process.rs`).
pub(crate) enum ExitWatch {
    /// Linux's pidfd from `clone`: the exit, and signals through it.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Pidfd(OwnedFd),
    /// A descriptor readable once the child has exited (see `exit_fd.rs`):
    /// the exit only; signals go by pid while the child is unreaped.
    Fd(OwnedFd),
    /// Neither (a kernel without pidfds, `SpawnMode::NoPidfd`, a system
    /// without either): a thread of its own watches the exit.
    Thread,
}

/// A child just started, not yet watched.
pub(crate) struct RawSpawn {
    pub pid: i32,
    pub exit: ExitWatch,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// Its process group, registered with this process's guard (`None` where
    /// no guard runs): dropped, before the reap, to unregister it.
    pub guarded: Option<Registration>,
}
