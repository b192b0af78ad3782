//! The spawn every Unix has (what macOS uses, and Linux with
//! `SpawnMode::Portable`): the standard library's `Command`, with the child
//! leading its own process group. There is no pidfd and no parent-death
//! signal here.
//!
//! The executable is looked for here, as the clone path looks (`search.rs`),
//! and `Command` gets the path found: given a path, it uses `posix_spawn`,
//! which runs no shell for a file without `#!` (a bare name with a `PATH` of
//! our own would make it fall back to `execvp`, which does).

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
use super::raw_spawn::{ExitWatch, RawSpawn};
use super::search::Search;

/// Held around each spawn, where a socket cannot be made close-on-exec as
/// it is made: a socket made meanwhile is not inherited by the child.
#[cfg(not(target_os = "linux"))]
pub(crate) static SPAWNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn spawn(options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
    let cwd = match &options.cwd {
        // The spawn reports a bad cwd with the errors of a bad executable;
        // looking first tells the two apart.
        Some(cwd) => Some(enterable(cwd).map_err(|error| LaunchError::Cwd { cwd: cwd.clone(), error })?),
        None => None,
    };
    let search = Search::new(&options.executable, options.child_path().as_deref())
        .ok_or_else(|| LaunchError::Other("PATH holds a NUL character".into()))?;
    let failed = |error: io::Error| executable_error(options, &search, error);
    // As execvp: skip what does not exist, go on past what cannot run, stop
    // at any other failure; report EACCES if something could not run.
    let mut denied = None;
    let missing = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR));
    for path in search.paths(cwd.as_deref()) {
        // A spawn costs a process: not for a file that is not there.
        if std::fs::metadata(&path).as_ref().is_err_and(missing) {
            continue;
        }
        match spawn_at(options, &path, cwd.as_deref()) {
            Ok(raw) => return Ok(raw),
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => denied = Some(e),
            Err(e) if missing(&e) => {}
            Err(e) => return Err(failed(e)),
        }
    }
    Err(failed(denied.unwrap_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))))
}

fn spawn_at(options: &LaunchOptions, path: &Path, cwd: Option<&Path>) -> io::Result<RawSpawn> {
    let mut cmd = Command::new(path);
    // argv[0] as given, as the clone path passes it.
    cmd.arg0(&options.executable).args(["sdk", "serve"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    // Added to the parent's environment, which the child inherits.
    cmd.envs(options.env.iter().map(|(k, v)| (k, v)));
    let mut child = {
        // Where a descriptor cannot be made close-on-exec as it is made, the
        // guard's socket is made under this lock (see `guard.rs`).
        #[cfg(not(target_os = "linux"))]
        let _no_pair = SPAWNS.lock().unwrap_or_else(|p| p.into_inner());
        let _mask = EmptySignalMask::set();
        cmd.spawn()?
    };
    let pid = child.id() as i32;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("the three pipes were asked for");
    };
    // `Process` reaps it; the standard library's handle does nothing when dropped.
    drop(child);
    // Opened while the child is unreaped, so it names this child.
    let exit = match super::exit_fd::open(pid) {
        Some(fd) => ExitWatch::Fd(fd),
        None => ExitWatch::Thread,
    };
    Ok(RawSpawn { pid, exit, stdin: stdin.into(), stdout: stdout.into(), stderr: stderr.into(), guarded: None })
}

/// `cwd`, absolute, if it is a directory (as far as a look can tell).
fn enterable(cwd: &Path) -> io::Result<PathBuf> {
    if !std::fs::metadata(cwd)?.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    std::path::absolute(cwd)
}

/// The error of a failed spawn, in the words the clone path uses.
fn executable_error(options: &LaunchOptions, search: &Search, error: io::Error) -> LaunchError {
    let executable = options.executable.clone();
    if error.raw_os_error() == Some(libc::EACCES) {
        if let Some(path) = search.directory(options.cwd.as_deref()) {
            return LaunchError::Directory { executable, path };
        }
    }
    LaunchError::Executable { executable, error }
}

/// The child inherits the spawning thread's signal mask (the standard
/// library leaves it as it is): empty it for the spawn, as the clone path
/// empties its child's.
pub(crate) struct EmptySignalMask(libc::sigset_t);

impl EmptySignalMask {
    pub(crate) fn set() -> Self {
        // SAFETY: sigemptyset and pthread_sigmask on sets of our own (plain
        // data); the old mask is kept to be put back.
        unsafe {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, &mut old);
            EmptySignalMask(old)
        }
    }
}

impl Drop for EmptySignalMask {
    fn drop(&mut self) {
        // SAFETY: puts back the mask this thread had, saved by `set`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}
