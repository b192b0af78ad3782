//! The I/O runtime that every connection's tasks run on: two worker threads,
//! made on first use and never shut down, so that it serves every host
//! environment of the process (each thread or interpreter that makes clients).
//!
//! A child made by `fork()` has none of these threads: it makes a runtime of
//! its own on first use, and leaves the parent's copy alone (see `fork`).

pub(crate) mod fork;

use tokio::runtime::Runtime;

pub use fork::generation;

/// The runtime of this process.
pub fn runtime() -> &'static Runtime {
    static RT: fork::ForkLocal<Runtime> = fork::ForkLocal::new();
    RT.get(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("koma-io")
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}
