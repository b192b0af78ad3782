//! Where the executable is looked for, as `execvp` looks: the name itself if
//! it holds a `/`, else each directory of the child's `PATH` joined with it.
//! Both spawn paths use it, so that a failure is described the same way.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The paths to try, in order.
pub(crate) struct Search {
    pub candidates: Vec<CString>,
}

impl Search {
    /// `None` if a path would hold a NUL byte (checked earlier by
    /// `LaunchOptions::validate`, so only a `PATH` entry can).
    pub fn new(executable: &OsStr, path: Option<&OsStr>) -> Option<Search> {
        let exe = executable.as_bytes();
        if exe.contains(&b'/') {
            return Some(Search { candidates: vec![CString::new(exe).ok()?] });
        }
        // No PATH at all: the default that glibc's execvp uses.
        let path = path.map_or(&b"/bin:/usr/bin"[..], |p| p.as_bytes());
        let candidates = path
            .split(|b| *b == b':')
            .map(|dir| {
                let mut p = if dir.is_empty() { b".".to_vec() } else { dir.to_vec() };
                p.push(b'/');
                p.extend_from_slice(exe);
                CString::new(p).ok()
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Search { candidates })
    }

    /// After an exec failed with `EACCES`: the first candidate that exists,
    /// if it is a directory (the one a user takes for the program).
    pub fn directory(&self) -> Option<PathBuf> {
        let first = self.candidates.iter().map(|c| Path::new(OsStr::from_bytes(c.as_bytes()))).find(|p| p.exists())?;
        first.is_dir().then(|| first.to_path_buf())
    }
}
