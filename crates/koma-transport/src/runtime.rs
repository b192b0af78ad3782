//! The I/O threads that every connection's tasks run on: a runtime of two
//! worker threads (`koma-io`) and the spawner thread (`koma-spawner`), shared
//! by every host environment of the process (each thread or interpreter that
//! makes clients). They run only while a connection needs them: from the
//! first call of the first client until the last client is closed (or let go
//! of, and its child reaped); the next client starts them again. So a process
//! with no live client has no thread of ours, and a later `fork()` copies a
//! process with the threads the host made, no more.
//!
//! - `lease`: what a started connection holds ([`Lease`]);
//! - `threads`: the process's record: leases, the running threads, the runs
//!   asked to end, and the wait for their end ([`settle`], [`wait_idle`]);
//! - `io`: one run of the threads, its start and its end;
//! - `fork`: what a child made by `fork()` makes again: it has none of these
//!   threads, starts its own on first use, and leaves the parent's alone.

pub(crate) mod fork;
mod io;
mod lease;
mod threads;

pub use fork::generation;
pub(crate) use io::on_io_thread;
pub use lease::Lease;
pub use threads::{running, settle, wait_idle};
