//! Each worker thread's `KOMA_SIM_HOME`, where the sim keeps its sessions.

use std::path::{Path, PathBuf};

pub fn thread_home(i: usize) -> PathBuf {
    let d = std::env::temp_dir().join(format!("koma-sm-{}-{i}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Empty a home (its sessions) between cases.
pub fn clear_dir(d: &Path) {
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
