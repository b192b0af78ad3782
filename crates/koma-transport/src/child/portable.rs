//! The spawn every Unix has (what macOS uses, and Linux with
//! `SpawnMode::Portable`): the standard library's `Command`, which uses
//! `posix_spawn` when no hook runs in the child, with the child leading its
//! own process group. There is no pidfd and no parent-death signal here.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
use super::raw_spawn::RawSpawn;
use super::search::Search;

pub(crate) fn spawn(options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
    let mut cmd = Command::new(&options.executable);
    cmd.args(["sdk", "serve"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.process_group(0);
    if let Some(cwd) = &options.cwd {
        // The spawn reports a bad cwd with the same errors as a bad
        // executable; looking first is what tells the two apart.
        enterable(cwd).map_err(|error| LaunchError::Cwd { cwd: cwd.clone(), error })?;
        cmd.current_dir(cwd);
    }
    // Added to the parent's environment, which the child inherits.
    cmd.envs(options.env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd.spawn().map_err(|error| executable_error(options, error))?;
    let pid = child.id() as i32;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("the three pipes were asked for");
    };
    // `Process` reaps it: the standard library's handle must not (it holds nothing else).
    drop(child);
    Ok(RawSpawn { pid, pidfd: None, stdin: stdin.into(), stdout: stdout.into(), stderr: stderr.into() })
}

/// Whether `cwd` can be the child's working directory (as far as a look can tell).
fn enterable(cwd: &Path) -> io::Result<()> {
    if std::fs::metadata(cwd)?.is_dir() {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::ENOTDIR))
    }
}

/// The error of a failed spawn, in the words the clone path uses.
fn executable_error(options: &LaunchOptions, error: io::Error) -> LaunchError {
    let executable = options.executable.clone();
    if error.raw_os_error() == Some(libc::EACCES) {
        let search = Search::new(&options.executable, options.child_path().as_deref());
        if let Some(path) = search.and_then(|s| s.directory()) {
            return LaunchError::Directory { executable, path };
        }
    }
    LaunchError::Executable { executable, error }
}
