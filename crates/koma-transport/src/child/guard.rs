//! The guard: a small process that kills the process group of every child
//! of this process when this process dies, however it dies (SIGKILL
//! included), on every Unix and every spawn path. docs/reliability.md
//! ("The guard") says why it is sound.
//!
//! One guard runs per run of the I/O threads (see `runtime/io.rs`): started
//! with them, ended with them. It is `/bin/sh` running [`SCRIPT`], in a
//! process group of its own, its standard input one end of a socket pair
//! whose other end only this process holds (close-on-exec, and closed in a
//! child made by `fork()`). Each child's group is registered (`+PGID`) once
//! it is spawned and unregistered (`-PGID`) before it is reaped. When this
//! process dies, its end of the socket closes with it; the guard's read
//! returns end of file, and it kills every group still registered.
//!
//! A guard that dies first (killed by someone) is seen by its exit, as a
//! child's is, and replaced at once by a new one that is given every group
//! still registered; so is a guard that stops reading.

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::runtime::Handle;

use super::portable::EmptySignalMask;
use super::process::Process;
use super::raw_spawn::ExitWatch;
use super::registration::{Groups, Registration};
use crate::runtime::fork::generation;

/// What the guard runs. Its input is lines of `+PGID` (register) and
/// `-PGID` (unregister); at the end of its input it sends SIGKILL to every
/// group still registered, and exits. Only the shell's built-ins run (no
/// `PATH` is needed). POSIX `sh`: dash, bash and zsh in sh mode run it.
pub(crate) const SCRIPT: &str = r#"g=' '
while read -r l; do
  case $l in
    +*) g="$g${l#+} " ;;
    -*) p=${l#-}; case $g in *" $p "*) g="${g%% $p *} ${g#* $p }" ;; esac ;;
  esac
done
for p in $g; do kill -s KILL -- "-$p"; done
"#;

/// The guard's path: the one shell every Unix has at that path.
const SHELL: &str = "/bin/sh";

/// This process's end of the current guard's socket, for the `fork()`
/// handler (-1: none).
static LINK_FD: AtomicI32 = AtomicI32::new(-1);
static AT_FORK: AtomicBool = AtomicBool::new(false);

pub(crate) struct Guard {
    state: Mutex<State>,
    /// The process image it was started in (see `runtime/fork.rs`): in a
    /// child made by `fork()` it is the parent's, and left alone.
    generation: u64,
    /// The runtime whose reactor watches the guard's exit.
    runtime: Handle,
    /// Notified when a new guard was started (the watch waits for one).
    started: tokio::sync::Notify,
}

struct State {
    /// The running guard, `None` once ended (or if none could be started).
    link: Option<Link>,
    /// The groups registered now.
    groups: HashSet<i32>,
    /// Set by `close`: no new guard is started any more.
    closed: bool,
}

struct Link {
    /// This process's end of the socket (non-blocking, close-on-exec).
    fd: OwnedFd,
    process: Arc<Process>,
}

impl Guard {
    /// Start a guard, whose exit the reactor of `runtime` watches. Where
    /// none can be started (no `/bin/sh`, no process left), each
    /// registration tries again; until one runs, children run unguarded.
    pub(crate) fn start(runtime: Handle) -> Arc<Guard> {
        let link = {
            let _in = runtime.enter();
            start_link().ok()
        };
        Arc::new(Guard {
            state: Mutex::new(State { link, groups: HashSet::new(), closed: false }),
            generation: generation(),
            runtime,
            started: tokio::sync::Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn foreign(&self) -> bool {
        self.generation != generation()
    }

    /// Register `pgid`, the group of a child just spawned and not reaped.
    pub(crate) fn register(self: &Arc<Self>, pgid: i32) -> Registration {
        let mut state = self.lock();
        if state.groups.insert(pgid) {
            self.send(&mut state, format!("+{pgid}\n").as_bytes());
        }
        Registration::new(self.clone(), pgid)
    }

    /// Send a line; a guard that cannot take it (gone, or not reading) is
    /// replaced by a new one, given every group registered.
    fn send(&self, state: &mut State, line: &[u8]) {
        let sent = match &state.link {
            Some(link) => send_all(link.fd.as_raw_fd(), line, false).is_ok(),
            None => false, // none could be started before: try again
        };
        if !sent {
            self.replace(state);
        }
    }

    /// Stop the current guard (if any) and start a new one with every group
    /// registered. Without one, children run unguarded until the next try.
    fn replace(&self, state: &mut State) {
        if let Some(old) = state.link.take() {
            drop(old.fd);
            old.process.kill_now(); // our unreaped child: its pid is its own
            old.process.reap();
        }
        if state.closed {
            return;
        }
        let started = {
            let _in = self.runtime.enter();
            start_link()
        };
        let Ok(link) = started else { return };
        let mut all = String::new();
        for g in &state.groups {
            all.push_str(&format!("+{g}\n"));
        }
        if send_all(link.fd.as_raw_fd(), all.as_bytes(), true).is_ok() {
            state.link = Some(link);
            self.started.notify_one();
        } else {
            link.process.kill_now();
            link.process.reap();
        }
    }

    /// Runs on the I/O runtime while the guard is wanted: when the guard
    /// exits before it was asked to, a new one replaces it.
    pub(crate) async fn watch(self: Arc<Self>) {
        loop {
            let current = {
                let state = self.lock();
                if state.closed {
                    return;
                }
                state.link.as_ref().map(|link| link.process.clone())
            };
            let Some(current) = current else {
                self.started.notified().await; // none runs: wait for the next start
                continue;
            };
            current.exited().await;
            let mut state = self.lock();
            if state.closed {
                return;
            }
            if state.link.as_ref().is_some_and(|l| Arc::ptr_eq(&l.process, &current)) {
                self.replace(&mut state); // else replaced meanwhile: watch the new one
            }
        }
    }

    /// End the guard: close this process's end of its socket (it then kills
    /// what is still registered, nothing once every child is reaped, and
    /// exits). Does not wait; [`Guard::reap`] does.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        if let Some(link) = &state.link {
            let _ = LINK_FD.compare_exchange(link.fd.as_raw_fd(), -1, Ordering::AcqRel, Ordering::Acquire);
            // SAFETY: shutdown on our own socket: the guard reads end of file
            // now, while the descriptor itself is closed with the link.
            unsafe {
                libc::shutdown(link.fd.as_raw_fd(), libc::SHUT_WR);
            }
        }
    }

    /// After [`Guard::close`]: wait until the guard has exited, and reap it.
    pub(crate) fn reap(&self) {
        let link = self.lock().link.take();
        if let Some(link) = link {
            drop(link.fd);
            link.process.reap();
        }
    }

    /// The guard's pid (for the tests).
    #[cfg(test)]
    pub(crate) fn pid(&self) -> Option<u32> {
        self.lock().link.as_ref().map(|l| l.process.pid())
    }
}

impl Groups for Guard {
    fn unregister(&self, pgid: i32) {
        if self.foreign() {
            return; // the parent's guard: its socket is not ours
        }
        let mut state = self.lock();
        if state.groups.remove(&pgid) {
            self.send(&mut state, format!("-{pgid}\n").as_bytes());
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.foreign() {
            // The parent's guard, in a child made by fork(): its descriptor
            // was closed at the fork (its number may be another file's now)
            // and its process is the parent's child. Leave both alone.
            if let Some(link) = self.state.get_mut().unwrap_or_else(|p| p.into_inner()).link.take() {
                std::mem::forget(link);
            }
        }
    }
}

/// Start a guard process: the socket pair, the shell, its exit watched.
/// Must be called within the runtime (the watch is registered there).
fn start_link() -> io::Result<Link> {
    at_fork();
    let (ours, theirs) = socket_pair()?;
    let mut cmd = Command::new(SHELL);
    cmd.arg0("koma-guard").args(["-c", SCRIPT]);
    cmd.stdin(Stdio::from(theirs)).stdout(Stdio::null()).stderr(Stdio::null());
    // A group of its own: a terminal's Ctrl-C, sent to the foreground
    // group, does not reach it. No environment: only built-ins run.
    cmd.env_clear().process_group(0);
    let child = {
        let _mask = EmptySignalMask::set();
        cmd.spawn()?
    };
    drop(cmd); // the guard's end: only the guard holds it now
    let pid = child.id() as i32;
    drop(child); // reaped by its `Process`
    let exit = match super::exit_fd::open(pid) {
        Some(fd) => ExitWatch::Fd(fd),
        None => ExitWatch::Thread,
    };
    let process = Process::new(pid, exit, None)?;
    LINK_FD.store(ours.as_raw_fd(), Ordering::Release);
    Ok(Link { fd: ours, process: Arc::new(process) })
}

/// A connected pair of stream sockets: ours non-blocking and close-on-exec,
/// with no SIGPIPE on a write to a guard that is gone; the guard's blocking.
fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    #[cfg(target_os = "linux")]
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let kind = libc::SOCK_STREAM;
    // Without SOCK_CLOEXEC, a spawn of this process between the pair and
    // fcntl could inherit our end: the spawns of the core wait for this lock.
    #[cfg(not(target_os = "linux"))]
    let _no_spawn = super::portable::SPAWNS.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: socketpair writes two new descriptors into `fds`.
    if unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors that nothing else owns.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl and setsockopt on our own descriptors, with values of ours.
    unsafe {
        #[cfg(not(target_os = "linux"))]
        {
            libc::fcntl(ours.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        }
        #[cfg(target_vendor = "apple")]
        {
            let one: libc::c_int = 1;
            libc::setsockopt(
                ours.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_NOSIGPIPE,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        let flags = libc::fcntl(ours.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(ours.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok((ours, theirs))
}

/// Write `bytes` whole. A full socket is a guard that does not read: an
/// error at once, unless `patient` (a new guard, given every group at its
/// start), which waits up to 5 s for room.
fn send_all(fd: RawFd, mut bytes: &[u8], patient: bool) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    let flags = libc::MSG_NOSIGNAL;
    #[cfg(not(target_os = "linux"))]
    let flags = 0; // SO_NOSIGPIPE on Apple's systems
    let mut waited = 0;
    while !bytes.is_empty() {
        // SAFETY: send from a live slice on our own socket.
        let n = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), flags) };
        if n >= 0 {
            bytes = &bytes[n as usize..];
            continue;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) if patient && waited < 50 => {
                waited += 1;
                let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
                // SAFETY: poll on one pollfd of ours, for at most 100 ms.
                unsafe {
                    libc::poll(&mut p, 1, 100);
                }
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

/// Once per process: a `fork()` handler that closes this process's end of
/// the guard's socket in the child, so that the guard sees the end of file
/// when this process dies even if a child made by `fork()` lives on (that
/// child starts a guard of its own for its own children).
fn at_fork() {
    if AT_FORK.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: registers a handler that only loads an atomic and calls
    // close, both async-signal-safe, as a handler run in a forked child
    // must be.
    let rc = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
    debug_assert_eq!(rc, 0, "pthread_atfork failed");
}

extern "C" fn forked() {
    let fd = LINK_FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: this child's copy of the parent's end; nothing of this
        // image uses it (the parent's guard is left alone, see `Drop`).
        unsafe {
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `sleep` leading a group of its own, as koma leads its.
    fn leader() -> std::process::Child {
        Command::new("sleep").arg("1000").process_group(0).spawn().expect("sleep")
    }

    fn killed(child: &mut std::process::Child) -> bool {
        use std::os::unix::process::ExitStatusExt;
        child.wait().expect("wait").signal() == Some(libc::SIGKILL)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
    }

    #[test]
    fn at_the_end_of_its_input_the_guard_kills_the_groups_still_registered_and_no_other() {
        let rt = runtime();
        let guard = Guard::start(rt.handle().clone());
        rt.spawn(guard.clone().watch());
        let (mut kept, mut gone) = (leader(), leader());
        let _kept = guard.register(kept.id() as i32);
        let dropped = guard.register(gone.id() as i32);
        drop(dropped);
        // As when this process dies: the guard reads the end of its input.
        guard.close();
        guard.reap();
        assert!(killed(&mut kept), "a registered group is killed");
        // SAFETY: kill on our own unreaped child.
        assert_eq!(unsafe { libc::kill(gone.id() as i32, 0) }, 0, "an unregistered one is not");
        gone.kill().unwrap();
        assert!(killed(&mut gone));
    }

    #[test]
    fn a_guard_killed_first_is_replaced_by_one_given_every_group() {
        let rt = runtime();
        let guard = Guard::start(rt.handle().clone());
        rt.spawn(guard.clone().watch());
        let mut first = leader();
        let _first = guard.register(first.id() as i32);
        let old = guard.pid().expect("a guard runs");
        // SAFETY: kill on our own unreaped child (the guard).
        unsafe {
            libc::kill(old as i32, libc::SIGKILL);
        }
        // Whichever sees it first, the watch or this registration's write,
        // starts a new guard with both groups.
        let mut second = leader();
        let _second = guard.register(second.id() as i32);
        rt.block_on(guard.started.notified()); // a new guard started
        let new = guard.pid().expect("a new guard runs");
        assert_ne!(new, old);
        guard.close();
        guard.reap();
        assert!(killed(&mut first), "the group registered before the replacement too");
        assert!(killed(&mut second));
    }
}
