//! The child on Windows: found without a shell, npm's `.cmd` shims read and
//! what they run started directly, created suspended in a Job Object of its
//! own, stdio over named pipes (docs/windows.md). The files without system
//! calls are built on every system, for their tests:
//!
//! - `command_line`: the arguments as one command line, quoted;
//! - `env_block`: the child's variables, names compared without case;
//! - `lookup`: `PATH` and `PATHEXT`;
//! - `shim`: npm's `.cmd` shims, read;
//! - `plan`: what to start for an executable (a program, or a shim's target);
//! - `ntstatus`: an exit code in words;
//!
//! and, on Windows only:
//!
//! - `job`: the Job Object (kill on close, terminate, count);
//! - `pipes`: the named pipes;
//! - `spawn`: `CreateProcessW`, suspended, into the job, resumed;
//! - `process`: the child watched (its exit) and its tree ended;
//! - `launch`: [`launch`](launch::launch), which returns the child with its pipes.

pub(crate) mod command_line;
pub(crate) mod env_block;
pub(crate) mod lookup;
pub(crate) mod ntstatus;
pub(crate) mod plan;
pub(crate) mod shim;

#[cfg(windows)]
pub(crate) mod job;
#[cfg(windows)]
pub mod launch;
#[cfg(windows)]
pub mod pipes;
#[cfg(windows)]
pub mod process;
#[cfg(windows)]
pub(crate) mod spawn;
