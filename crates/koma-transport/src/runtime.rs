//! The I/O runtime that every connection's tasks run on: two worker threads,
//! made on first use and never shut down, so that it serves every host
//! environment of the process (a Node Worker, a Python interpreter).

use std::sync::OnceLock;

use tokio::runtime::Runtime;

/// The runtime of this process.
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("koma-io")
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

/// Which process image the runtime belongs to: changes in a child made by
/// `fork()` (not yet: see the fork-safety work).
pub fn generation() -> u64 {
    0
}
