//! The vfork-style spawn (Linux): `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)`.
//!
//! The child runs on a stack of its own but in the parent's memory, until it
//! calls `execve` (or `_exit`); the spawner thread is suspended meanwhile. So
//! nothing of the parent's memory is copied (a `fork` copies the page tables
//! of the whole host process, which grow with its heap and threads), and the
//! child reports a failure by writing into the parent's memory.
//!
//! What the child runs is restricted accordingly: plain system calls on data
//! prepared before the clone, no allocation, no lock, no unwinding, and every
//! signal blocked until its handlers are reset to the defaults (a handler of
//! the parent must never run on the shared memory).

use std::ffi::{c_char, c_int, c_void, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
use super::prepared::Prepared;
use super::raw_spawn::{ExitWatch, RawSpawn};
use super::wait::wait_exited;

/// Stdout's pipe holds this much (the default is 64 KiB): a streaming child
/// writes, and the reader reads, in larger pieces, so fewer frames span two
/// reads. 1 MiB is the most an unprivileged process may set.
pub const STDOUT_PIPE_BYTES: i32 = 1 << 20;

/// The stack the child runs on until `execve`; one per spawner thread, reused
/// by every spawn (the spawner thread spawns one child at a time, and is
/// suspended while the child uses it), and unmapped when that thread ends.
pub(crate) struct ChildStack {
    base: *mut c_void,
    len: usize,
}

const STACK_BYTES: usize = 256 * 1024;

impl ChildStack {
    pub fn new() -> io::Result<Self> {
        // SAFETY: an anonymous private mapping; checked for MAP_FAILED below.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(ChildStack { base, len: STACK_BYTES })
    }

    /// The highest address, 16-byte aligned (the stack grows down).
    fn top(&self) -> *mut c_void {
        let top = self.base as usize + self.len;
        (top & !15) as *mut c_void
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of `len` bytes; no child runs on
        // it any more (each spawn returns after its child's execve or _exit).
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Set for good once the kernel has refused `CLONE_PIDFD` (before 5.2).
static PIDFD_REFUSED: AtomicBool = AtomicBool::new(false);

/// Where the child failed, written by the child into the parent's memory.
const STAGE_NONE: c_int = 0;
const STAGE_SETUP: c_int = 1;
const STAGE_CHDIR: c_int = 2;
const STAGE_EXEC: c_int = 3;

/// Everything the child reads (prepared before the clone) and writes back.
#[repr(C)]
struct ChildArgs {
    candidates: *const *const c_char,
    candidate_count: usize,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// The child's ends, for its fds 0, 1 and 2.
    fds: [c_int; 3],
    parent: libc::pid_t,
    stage: c_int,
    errno: c_int,
}

/// A pipe whose two ends are close-on-exec (the child's end loses the flag
/// when it is duplicated onto 0, 1 or 2).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors owned by no one else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(ptr::null())).collect()
}

/// Start the child; with `pidfd`, ask for a pidfd (unless the kernel has
/// refused one before).
pub(crate) fn spawn(options: &LaunchOptions, stack: &mut ChildStack, pidfd: bool) -> Result<RawSpawn, LaunchError> {
    let prepared = Prepared::new(options)?;
    let other = |what: &str, e: io::Error| LaunchError::Other(format!("{what}: {e}"));
    let (stdin_r, stdin_w) = pipe().map_err(|e| other("could not make a pipe", e))?;
    let (stdout_r, stdout_w) = pipe().map_err(|e| other("could not make a pipe", e))?;
    let (stderr_r, stderr_w) = pipe().map_err(|e| other("could not make a pipe", e))?;
    let candidates = pointers(&prepared.search.candidates);
    let argv = pointers(&prepared.argv);
    let envp = pointers(&prepared.envp);
    let mut args = ChildArgs {
        candidates: candidates.as_ptr(),
        candidate_count: prepared.search.candidates.len(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: prepared.cwd.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
        fds: [stdin_r.as_raw_fd(), stdout_w.as_raw_fd(), stderr_w.as_raw_fd()],
        // SAFETY: getpid has no preconditions.
        parent: unsafe { libc::getpid() },
        stage: STAGE_NONE,
        errno: 0,
    };
    let (pid, pidfd) = loop {
        let with_pidfd = pidfd && !PIDFD_REFUSED.load(Ordering::Relaxed);
        match clone_child(&mut args, stack, with_pidfd) {
            Ok(r) => break r,
            // A kernel before 5.2 has no CLONE_PIDFD: fall back for good.
            Err(e) if with_pidfd && e.raw_os_error() == Some(libc::EINVAL) => {
                PIDFD_REFUSED.store(true, Ordering::Relaxed);
            }
            Err(e) => return Err(other("could not start a process", e)),
        }
    };
    // The child has called execve or _exit: what it wrote is visible now.
    // SAFETY: plain reads of our own struct; the volatile read keeps the
    // compiler from assuming the values it wrote before the clone.
    let (stage, errno) = unsafe { (ptr::read_volatile(&args.stage), ptr::read_volatile(&args.errno)) };
    drop((stdin_r, stdout_w, stderr_w)); // the child's ends: only the child keeps them
    if stage != STAGE_NONE {
        wait_exited(pid, false); // it has called _exit: reap it
        drop(pidfd);
        let error = io::Error::from_raw_os_error(errno);
        let executable = options.executable.clone();
        return Err(match stage {
            STAGE_CHDIR => LaunchError::Cwd { cwd: options.cwd.clone().unwrap_or_default(), error },
            STAGE_EXEC => match (errno == libc::EACCES).then(|| prepared.search.directory(options.cwd.as_deref())) {
                Some(Some(path)) => LaunchError::Directory { executable, path },
                _ => LaunchError::Executable { executable, error },
            },
            _ => other("could not set up the child", error),
        });
    }
    // SAFETY: fcntl on a pipe descriptor we own. Best effort: where the
    // system refuses, the pipe keeps its size.
    unsafe {
        libc::fcntl(stdout_r.as_raw_fd(), libc::F_SETPIPE_SZ, STDOUT_PIPE_BYTES);
    }
    drop(prepared);
    let exit = match pidfd {
        Some(fd) => ExitWatch::Pidfd(fd),
        None => ExitWatch::Thread,
    };
    Ok(RawSpawn { pid, exit, stdin: stdin_w, stdout: stdout_r, stderr: stderr_r, guarded: None })
}

/// The clone itself, with every signal blocked on this thread around it (the
/// child inherits the mask, and unblocks only after resetting the handlers).
fn clone_child(
    args: &mut ChildArgs,
    stack: &mut ChildStack,
    with_pidfd: bool,
) -> io::Result<(libc::pid_t, Option<OwnedFd>)> {
    let mut pidfd: c_int = -1;
    let mut flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    if with_pidfd {
        flags |= libc::CLONE_PIDFD;
    }
    // SAFETY: sigfillset/pthread_sigmask on local sets; clone runs
    // `child_main` on `stack`, which no one else uses, with `args`, which
    // outlives the child's use of it (CLONE_VFORK suspends this thread until
    // the child has called execve or _exit). With CLONE_PIDFD the kernel
    // writes the pidfd into `pidfd` (the parent_tid argument).
    let (pid, err) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            stack.top(),
            flags,
            (args as *mut ChildArgs).cast::<c_void>(),
            &mut pidfd as *mut c_int,
        );
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut());
        (pid, err)
    };
    if pid < 0 {
        return Err(err);
    }
    // SAFETY: with CLONE_PIDFD the kernel gave us this new descriptor.
    let pidfd = (with_pidfd && pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) });
    Ok((pid, pidfd))
}

/// The child, between clone and execve. See the module doc for its rules.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's `ChildArgs`, alive and not touched by the
    // suspended parent until this function has called execve or _exit. Every
    // call below is a system call wrapper that neither allocates nor locks.
    unsafe {
        let a = &mut *arg.cast::<ChildArgs>();
        // errno, read without allocating (an `io::Error` of an OS code is plain data).
        let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let fail = |a: &mut ChildArgs, stage: c_int, errno: c_int| -> c_int {
            ptr::write_volatile(&mut a.errno, errno);
            ptr::write_volatile(&mut a.stage, stage);
            libc::_exit(127)
        };
        // Default handlers first (every signal is still blocked).
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        let mut sig = 1;
        while sig < 65 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::sigaction(sig, &dfl, ptr::null_mut());
            }
            sig += 1;
        }
        // Die with the spawner thread, which outlives every child it starts.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return fail(a, STAGE_SETUP, errno());
        }
        // The parent may have died before prctl took effect.
        if libc::getppid() != a.parent {
            libc::_exit(127);
        }
        if libc::setpgid(0, 0) != 0 {
            return fail(a, STAGE_SETUP, errno());
        }
        // The pipes onto 0, 1 and 2; a source below 3 is moved out of the way first.
        let mut i = 0;
        while i < 3 {
            if a.fds[i] < 3 {
                let moved = libc::fcntl(a.fds[i], libc::F_DUPFD_CLOEXEC, 3);
                if moved < 0 {
                    return fail(a, STAGE_SETUP, errno());
                }
                a.fds[i] = moved;
            }
            i += 1;
        }
        let mut target = 0;
        while target < 3 {
            if libc::dup2(a.fds[target as usize], target) < 0 {
                return fail(a, STAGE_SETUP, errno());
            }
            target += 1;
        }
        if !a.cwd.is_null() && libc::chdir(a.cwd) != 0 {
            return fail(a, STAGE_CHDIR, errno());
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, ptr::null_mut());
        // As execvp: try each candidate; stop at an error other than a
        // missing or unrunnable file; else report EACCES if a file could not
        // run, or that none was found.
        let mut saw_eacces = false;
        let mut last = libc::ENOENT;
        let mut n = 0;
        while n < a.candidate_count {
            libc::execve(*a.candidates.add(n), a.argv, a.envp);
            last = errno();
            if last == libc::EACCES {
                saw_eacces = true;
            } else if last != libc::ENOENT && last != libc::ENOTDIR {
                break;
            }
            n += 1;
        }
        // Reported as the portable path reports it: what is missing is
        // ENOENT, even where a part of its path is not a directory.
        let errno = match last {
            libc::ENOENT | libc::ENOTDIR | libc::EACCES if saw_eacces => libc::EACCES,
            libc::ENOTDIR => libc::ENOENT,
            other => other,
        };
        fail(a, STAGE_EXEC, errno)
    }
}
