//! Launching `koma sdk serve` (A.1) and supervising the process.
//!
//! - [`spawner`]: the one thread that starts every child of this process, so
//!   that Linux's `PR_SET_PDEATHSIG` (which fires when the *thread* that
//!   forked the child ends) fires only when this process dies;
//! - `clone` (Linux): the vfork-style spawn that thread runs: `clone` with
//!   `CLONE_VM | CLONE_VFORK | CLONE_PIDFD`, no copy of the parent's memory;
//! - [`process`]: a launched child: its exit seen without reaping it, signals
//!   through its pidfd, its process group signalled only while it is unreaped.
//!
//! The child leads its own process group, so the tools it starts can be
//! stopped with it. It is started with an args array and no shell.

use std::ffi::{CString, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::{ErrorCode, KomaError};

#[cfg(target_os = "linux")]
mod clone;
pub mod process;
pub mod spawner;

pub use process::Process;

/// What to launch.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    pub executable: OsString,
    pub cwd: Option<PathBuf>,
    /// Added to (or replacing in) the parent's environment.
    pub env: Vec<(OsString, OsString)>,
    /// How to start and watch the child.
    pub spawn: SpawnMode,
}

/// How a child is started and watched (not yet used: see the platform work).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpawnMode {
    /// The best this system has (on Linux: `clone` with a pidfd).
    #[default]
    Auto,
    /// Linux without pidfds (as on a kernel before 5.3).
    NoPidfd,
    /// The portable Unix path (what macOS uses).
    Portable,
}

impl LaunchOptions {
    /// Check what can be checked before anything starts: a NUL byte cannot be
    /// passed to `execve`, and a variable name cannot hold `=`.
    pub fn validate(&self) -> Result<(), KomaError> {
        let bad = |what: String| Err(KomaError::new(ErrorCode::InvalidParams, what));
        if self.executable.is_empty() {
            return bad("`executable` must be a non-empty string".into());
        }
        if self.executable.as_bytes().contains(&0) {
            return bad("`executable` holds a NUL character, which no program name can hold".into());
        }
        if let Some(cwd) = &self.cwd {
            if cwd.as_os_str().is_empty() {
                return bad("`cwd` must be a non-empty string".into());
            }
            if cwd.as_os_str().as_bytes().contains(&0) {
                return bad("`cwd` holds a NUL character, which no path can hold".into());
            }
        }
        for (k, v) in &self.env {
            let name = k.to_string_lossy();
            if k.is_empty() || k.as_bytes().contains(&b'=') || k.as_bytes().contains(&0) {
                return bad(format!(
                    "`env`: the name `{}` cannot be an environment variable's (empty, or holds `=` or NUL)",
                    crate::quote::escape_text(&name, false)
                ));
            }
            if v.as_bytes().contains(&0) {
                return bad(format!(
                    "`env.{}` holds a NUL character, which an environment variable cannot hold",
                    crate::quote::escape_text(&name, false)
                ));
            }
        }
        Ok(())
    }
}

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("was killed by signal {s}{}", signal_name(s)),
            _ => "ended".to_owned(),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGINT => " (SIGINT)",
        _ => "",
    }
}

/// A child just started: its process and the parent's ends of its pipes.
pub struct Spawned {
    pub process: Process,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Why a launch failed; the message names what failed (the executable, the cwd).
#[derive(Debug)]
pub enum LaunchError {
    /// The executable could not be run (not found, not executable, not a program).
    Executable { executable: OsString, error: std::io::Error },
    /// The working directory could not be entered.
    Cwd { cwd: PathBuf, error: std::io::Error },
    /// Anything else (pipes, the spawner thread, the system's limits).
    Other(String),
}

impl LaunchError {
    pub fn into_error(self) -> KomaError {
        let message = match self {
            LaunchError::Executable { executable, error } => {
                let exe = executable.to_string_lossy();
                let why = match error.raw_os_error() {
                    Some(libc::ENOENT) if !exe.contains('/') => "not found on PATH".to_owned(),
                    Some(libc::ENOENT) => "no such file".to_owned(),
                    Some(libc::EACCES) => "permission denied (not executable?)".to_owned(),
                    Some(libc::ENOEXEC) => {
                        "not a program this system can run (a script without `#!`? no shell is used)".to_owned()
                    }
                    _ => error.to_string(),
                };
                format!("could not start `{exe} sdk serve`: {why} ({error})")
            }
            LaunchError::Cwd { cwd, error } => {
                format!("could not start koma in the working directory `{}`: {error}", cwd.display())
            }
            LaunchError::Other(what) => format!("could not start koma: {what}"),
        };
        KomaError::new(ErrorCode::SpawnFailed, message)
    }
}

/// What the spawn needs, prepared (and allocated) before the fork.
pub(crate) struct Prepared {
    /// The paths to try, in order: the executable itself if it holds a `/`,
    /// else each directory of the child's `PATH` joined with it.
    pub candidates: Vec<CString>,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub cwd: Option<CString>,
}

impl Prepared {
    pub fn new(options: &LaunchOptions) -> Result<Self, LaunchError> {
        let nul = |what: &str| LaunchError::Other(format!("{what} holds a NUL character"));
        let executable = CString::new(options.executable.as_bytes()).map_err(|_| nul("the executable"))?;
        // The child's environment: the parent's, with `env` added or replacing.
        let mut vars: Vec<(OsString, OsString)> =
            std::env::vars_os().filter(|(k, _)| !options.env.iter().any(|(o, _)| o == k)).collect();
        vars.extend(options.env.iter().cloned());
        let mut envp = Vec::with_capacity(vars.len());
        for (k, v) in &vars {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(CString::new(kv).map_err(|_| nul("an environment variable"))?);
        }
        let exe = options.executable.as_bytes();
        let candidates = if exe.contains(&b'/') {
            vec![executable.clone()]
        } else {
            // As execvp does, with the child's PATH.
            let path = vars.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_bytes().to_vec());
            let path = path.unwrap_or_else(|| b"/bin:/usr/bin".to_vec());
            path.split(|b| *b == b':')
                .map(|dir| {
                    let mut p = if dir.is_empty() { b".".to_vec() } else { dir.to_vec() };
                    p.push(b'/');
                    p.extend_from_slice(exe);
                    CString::new(p).map_err(|_| nul("PATH"))
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let argv = vec![executable.clone(), c"sdk".to_owned(), c"serve".to_owned()];
        let cwd = match &options.cwd {
            Some(c) => Some(CString::new(c.as_os_str().as_bytes()).map_err(|_| nul("the cwd"))?),
            None => None,
        };
        Ok(Prepared { candidates, argv, envp, cwd })
    }
}

/// Start `options.executable sdk serve` (from the spawner thread) and return
/// it with its pipes. Must be called within the I/O runtime.
pub async fn launch(options: LaunchOptions) -> Result<Spawned, LaunchError> {
    let raw = spawner::spawn(options).await?;
    Process::new(raw.pid, raw.pidfd)
        .map(|process| Spawned { process, stdin: raw.stdin, stdout: raw.stdout, stderr: raw.stderr })
        .map_err(|e| LaunchError::Other(format!("could not watch the child: {e}")))
}

/// Stdout's pipe holds this much (Linux; the default is 64 KiB): a streaming
/// child writes, and the reader reads, in larger pieces, so fewer frames
/// span two reads. 1 MiB is the most an unprivileged process may set.
pub const STDOUT_PIPE_BYTES: i32 = 1 << 20;
