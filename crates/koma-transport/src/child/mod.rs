//! Launching `koma sdk serve` (docs/protocol.md, The child) and supervising the process.
//!
//! The child leads its own process group, so the tools it starts can be
//! stopped with it. It is started with an args array and no shell. Files,
//! each using only those listed before it:
//!
//! - `options`: what to launch ([`LaunchOptions`]) and by which path ([`SpawnMode`]);
//! - `launch_error`: why a launch failed, and its message ([`LaunchError`]);
//! - `exit`: how the child ended ([`ExitInfo`]);
//! - `search`: where the executable is looked for, as `execvp` does;
//! - `registration`: a child's group registered with the guard;
//! - `raw_spawn`: a child as a spawn path hands it over;
//! - `wait`: its exit, seen without reaping it, and the reap;
//! - `exit_fd`: a descriptor readable at a child's exit, for the reactor
//!   (`pidfd_open` on Linux, a kqueue on macOS);
//! - `prepared` and `clone` (Linux): the vfork-style spawn, `clone` with
//!   `CLONE_VM | CLONE_VFORK` and, in `Auto` mode, `CLONE_PIDFD`;
//! - `portable`: the spawn every Unix has (`posix_spawn`, through std);
//! - `process`: a launched child ([`Process`]): its exit seen without
//!   reaping it, signals through its pidfd (else by pid), its process group
//!   signalled only while it is unreaped;
//! - `guard` (Unix): the process that kills every child's group when this
//!   process dies, however it dies (one per run of the I/O threads);
//! - `spawner`: the one thread that starts every child of this process while
//!   the I/O threads run, and ends only once each of them is reaped, so that
//!   Linux's `PR_SET_PDEATHSIG` (which fires when the *thread* that forked
//!   the child ends) fires only when this process dies; it hands each child
//!   to its caller's hook first (on Unix, its registration with the guard);
//! - `launch`: [`launch`], which returns the [`Spawned`] child;
//! - `windows`: the same on Windows (a Job Object for koma's tree, named
//!   pipes, npm's `.cmd` shims run without a shell), in a folder of its own.

#[cfg(target_os = "linux")]
mod clone;
mod exit;
#[cfg(unix)]
mod exit_fd;
#[cfg(unix)]
pub(crate) mod guard;
#[cfg(unix)]
mod launch;
mod launch_error;
mod options;
#[cfg(unix)]
mod portable;
#[cfg(target_os = "linux")]
mod prepared;
#[cfg(unix)]
pub mod process;
#[cfg(unix)]
mod raw_spawn;
#[cfg(unix)]
mod registration;
#[cfg(unix)]
mod search;
pub mod spawner;
#[cfg(unix)]
mod wait;
#[cfg(any(windows, test))]
mod windows;

#[cfg(target_os = "linux")]
pub use clone::STDOUT_PIPE_BYTES;
pub use exit::ExitInfo;
#[cfg(unix)]
pub use launch::{launch, Spawned};
pub use launch_error::LaunchError;
pub use options::{LaunchOptions, SpawnMode};
#[cfg(unix)]
pub use process::Process;
pub use spawner::Spawner;
#[cfg(windows)]
pub use windows::{
    launch::{launch, Spawned},
    pipes::{register as register_pipe, PipeReader, PipeWriter},
    process::Process,
};

/// This process's ends of koma's pipes, as the I/O runtime reads and writes them.
#[cfg(unix)]
pub type PipeReader = tokio::net::unix::pipe::Receiver;
#[cfg(unix)]
pub type PipeWriter = tokio::net::unix::pipe::Sender;
