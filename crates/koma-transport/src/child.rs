//! Launching `koma sdk serve` (A.1) and supervising the process.
//!
//! The child is spawned with an args array (no shell) from a supervisor
//! thread that lives until the child is reaped, so that Linux's
//! `PR_SET_PDEATHSIG` (which fires when the spawning *thread* ends) only fires
//! when this process dies. The child leads its own process group, so the
//! tools it starts can be stopped with it.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

/// What to launch.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    pub executable: OsString,
    pub cwd: Option<PathBuf>,
    /// Added to (or replacing in) the parent's environment.
    pub env: Vec<(OsString, OsString)>,
}

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    fn from_status(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        ExitInfo { code: status.code(), signal: status.signal() }
    }

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

/// Signals the child (and its group) only while it has not been reaped, so a
/// reused pid is never signalled.
#[derive(Debug)]
pub struct ProcessControl {
    pid: i32,
    exited: Mutex<bool>,
}

impl ProcessControl {
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    pub fn has_exited(&self) -> bool {
        *self.exited.lock().unwrap()
    }

    /// Send `signal` to the child's process group (koma and the tools it started).
    pub fn signal_group(&self, signal: i32) {
        let exited = self.exited.lock().unwrap();
        // SAFETY: plain kill(2) calls. While the child is unreaped its pid (and
        // so its group id) cannot be reused.
        unsafe {
            libc::kill(-self.pid, signal);
            if !*exited {
                libc::kill(self.pid, signal);
            }
        }
    }

    /// After the child was reaped: stop whatever is left of its group.
    pub fn kill_leftovers(&self) {
        // SAFETY: kill(2). A group id stays reserved while any member lives.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
    }
}

/// The pipes of a launched child.
pub struct ChildPipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// Stdout's pipe holds this much (Linux; the default is 64 KiB): a streaming
/// child writes, and the reader reads, in larger pieces, so fewer frames
/// span two reads. 1 MiB is the most an unprivileged process may set.
pub const STDOUT_PIPE_BYTES: i32 = 1 << 20;

/// Best effort: where the system refuses, the pipe keeps its size.
fn widen_pipe(fd: std::os::fd::RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: fcntl on an open pipe descriptor we own.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, STDOUT_PIPE_BYTES);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Launch on a new supervisor thread. `on_spawn` runs on that thread with the
/// result of the spawn; then the thread waits for the child and calls
/// `on_exit` once it has exited (before it is reaped, signals are still safe;
/// it is reaped right after).
pub fn launch<S, E>(options: LaunchOptions, on_spawn: S, on_exit: E) -> io::Result<()>
where
    S: FnOnce(io::Result<(ChildPipes, Arc<ProcessControl>)>) + Send + 'static,
    E: FnOnce(ExitInfo) + Send + 'static,
{
    std::thread::Builder::new().name("koma-supervisor".into()).spawn(move || {
        let mut child = match spawn(&options) {
            Ok(c) => c,
            Err(e) => return on_spawn(Err(e)),
        };
        if let Some(out) = &child.stdout {
            widen_pipe(std::os::fd::AsRawFd::as_raw_fd(out));
        }
        let pipes = ChildPipes {
            stdin: child.stdin.take().expect("piped stdin"),
            stdout: child.stdout.take().expect("piped stdout"),
            stderr: child.stderr.take().expect("piped stderr"),
        };
        let control = Arc::new(ProcessControl { pid: child.id() as i32, exited: Mutex::new(false) });
        on_spawn(Ok((pipes, control.clone())));
        wait_exited(control.pid);
        *control.exited.lock().unwrap() = true;
        let status = match child.wait() {
            Ok(s) => ExitInfo::from_status(s),
            Err(_) => ExitInfo { code: None, signal: None },
        };
        on_exit(status);
    })?;
    Ok(())
}

fn spawn(options: &LaunchOptions) -> io::Result<Child> {
    let mut cmd = Command::new(&options.executable);
    cmd.arg("sdk").arg("serve");
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(cwd) = &options.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in &options.env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getpid is async-signal-safe; called before fork.
            let parent = unsafe { libc::getpid() };
            // SAFETY: only async-signal-safe calls (prctl, getppid, kill) run in the child.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // The parent may have died between fork and prctl.
                    if libc::getppid() != parent {
                        libc::kill(libc::getpid(), libc::SIGKILL);
                    }
                    Ok(())
                });
            }
        }
    }
    cmd.spawn()
}

/// Block until `pid` has exited, leaving it unreaped.
fn wait_exited(pid: i32) {
    loop {
        // SAFETY: waitid with WNOWAIT only observes; the zeroed siginfo is plain data.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return;
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}
