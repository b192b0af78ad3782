//! Where the executable is looked for, as `execvp` looks: the name itself if
//! it holds a `/`, else each directory of the child's `PATH` joined with it.
//! Both spawn paths search with it (neither leaves the search to a library
//! function that may fall back to a shell), so a failure reads the same.

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

    /// Each candidate as the child sees it: a relative one is relative to the
    /// child's working directory `cwd` (the parent's when `None`).
    pub fn paths(&self, cwd: Option<&Path>) -> impl Iterator<Item = PathBuf> + '_ {
        let base = cwd.map(Path::to_path_buf);
        self.candidates.iter().map(move |c| {
            let p = Path::new(OsStr::from_bytes(c.as_bytes()));
            match &base {
                Some(base) if p.is_relative() => base.join(p),
                _ => p.to_path_buf(),
            }
        })
    }

    /// After an exec failed with `EACCES`: the first candidate that exists,
    /// if it is a directory (the one a user takes for the program).
    pub fn directory(&self, cwd: Option<&Path>) -> Option<PathBuf> {
        let first = self.paths(cwd).find(|p| p.exists())?;
        first.is_dir().then_some(first)
    }
}
