//! A launched child: its exit, seen without reaping it; signals; the reap.
//!
//! The rule that keeps signals from reaching a stranger: a pid, and so a
//! process group id, cannot be reused while the process is unreaped (a zombie
//! still holds its pid). So koma is signalled through its pidfd (which names
//! that process and no other), and its group only while koma is unreaped:
//! the exit is seen with `WNOWAIT`, the group is stopped, its registration
//! with the guard is dropped (see `guard.rs`), and then it is reaped, under
//! the same lock that every signal takes.
//!
//! The exit is watched by putting a descriptor that becomes readable at the
//! exit into tokio's reactor: no thread per child. On Linux's clone path it
//! is the pidfd the clone gave; on the portable path, a pidfd from
//! `pidfd_open` (Linux) or a kqueue of the child's `NOTE_EXIT` (macOS), see
//! `exit_fd.rs`. Without either (a kernel before 5.3, `SpawnMode::NoPidfd`),
//! one thread per child blocks in `waitid(WNOWAIT)` instead. Without a
//! pidfd from the clone, koma is signalled by pid while unreaped.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Mutex;

use tokio::sync::watch;

use super::exit::ExitInfo;
use super::raw_spawn::ExitWatch;
use super::registration::Registration;
use super::wait::{kill_and_reap, wait_exited};
use crate::tid;

enum Watch {
    /// A descriptor readable at the exit, registered with the reactor:
    /// with `signals`, the pidfd from the clone, which signals go through.
    Fd {
        fd: tokio::io::unix::AsyncFd<OwnedFd>,
        #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
        signals: bool,
    },
    /// A thread that reports the exit (fallback); joined at the reap. It
    /// gives its id (see `tid.rs`) as it ends.
    Thread { exit: watch::Receiver<Option<ExitInfo>>, thread: Mutex<Option<std::thread::JoinHandle<i32>>> },
}

pub struct Process {
    pid: i32,
    watch: Watch,
    /// True once reaped: from then on neither the pid nor the group is signalled.
    reaped: Mutex<bool>,
    /// Its group's registration with the guard, dropped before the reap.
    guarded: Mutex<Option<Registration>>,
}

impl Process {
    /// Must be called within the I/O runtime (a descriptor is registered with
    /// its reactor). On failure the child is stopped and reaped.
    pub(crate) fn new(pid: i32, exit: ExitWatch, guarded: Option<Registration>) -> io::Result<Self> {
        let watch = match exit {
            ExitWatch::Pidfd(fd) => Self::watch_fd(fd, true),
            ExitWatch::Fd(fd) => Self::watch_fd(fd, false),
            ExitWatch::Thread => Self::watch_thread(pid),
        };
        match watch {
            Ok(watch) => Ok(Process { pid, watch, reaped: Mutex::new(false), guarded: Mutex::new(guarded) }),
            Err(e) => {
                kill_and_reap(pid, || drop(guarded));
                Err(e)
            }
        }
    }

    fn watch_fd(fd: OwnedFd, signals: bool) -> io::Result<Watch> {
        use tokio::io::unix::AsyncFd;
        use tokio::io::Interest;
        // SAFETY: the AsyncFd owns the OwnedFd, which stays open and the
        // same descriptor until the AsyncFd drops.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)?;
        Ok(Watch::Fd { fd, signals })
    }

    fn watch_thread(pid: i32) -> io::Result<Watch> {
        let (tx, exit) = watch::channel(None);
        let thread = std::thread::Builder::new().name("koma-exit-watch".into()).spawn(move || {
            let info = wait_exited(pid, true);
            tx.send_replace(Some(info));
            tid::current()
        });
        match thread {
            Ok(t) => {
                name_now(&t);
                Ok(Watch::Thread { exit, thread: Mutex::new(Some(t)) })
            }
            Err(e) => Err(e), // no way to watch it: stopped and reaped by `new`
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Whether koma's exit is watched by the reactor, through a pidfd or
    /// another exit descriptor (else by a thread of its own).
    pub fn has_pidfd(&self) -> bool {
        !matches!(self.watch, Watch::Thread { .. })
    }

    pub fn is_reaped(&self) -> bool {
        *self.reaped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Send `signal` to koma itself, if it is not reaped yet.
    pub fn signal(&self, signal: i32) {
        let reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        if *reaped {
            return;
        }
        match &self.watch {
            #[cfg(target_os = "linux")]
            // SAFETY: pidfd_send_signal on our own pidfd, with no siginfo.
            Watch::Fd { fd, signals: true } => unsafe {
                use std::os::fd::AsRawFd;
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.get_ref().as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            },
            // SAFETY: kill(2) on our own child while it is unreaped (its pid is still its own).
            _ => unsafe {
                libc::kill(self.pid, signal);
            },
        }
    }

    /// Send `signal` to koma's process group (koma and the tools it started),
    /// only while koma is unreaped: until then no other group can have its id.
    pub fn signal_group(&self, signal: i32) {
        let reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        if !*reaped {
            // SAFETY: kill(2) on the group koma leads; koma is unreaped (checked under the lock
            // that `reap` takes), so the group id is koma's.
            unsafe {
                libc::kill(-self.pid, signal);
            }
        }
    }

    /// Stop koma and its group now (SIGKILL), while unreaped.
    pub fn kill_now(&self) {
        self.signal(libc::SIGKILL);
        self.signal_group(libc::SIGKILL);
    }

    /// Wait until koma has exited, without reaping it.
    pub async fn exited(&self) -> ExitInfo {
        match &self.watch {
            Watch::Fd { fd, .. } => loop {
                let Ok(mut ready) = fd.readable().await else {
                    // The reactor is gone (the runtime is shutting down): ask directly.
                    return wait_exited(self.pid, true);
                };
                if let Some(info) = super::wait::try_exited(self.pid) {
                    return info;
                }
                ready.clear_ready();
            },
            Watch::Thread { exit, .. } => {
                let mut exit = exit.clone();
                let seen = exit.wait_for(Option::is_some).await.map(|info| *info);
                match seen {
                    Ok(Some(info)) => info,
                    _ => wait_exited(self.pid, true),
                }
            }
        }
    }

    /// Reap koma (after [`Process::exited`]). From now on its pid and group id
    /// may be reused, so nothing is signalled any more.
    pub fn reap(&self) -> ExitInfo {
        let mut reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        // Unregistered while the group id is still koma's: a guard acting
        // from now on cannot reach a group that has been given to another.
        drop(self.guarded.lock().unwrap_or_else(|p| p.into_inner()).take());
        let info = wait_exited(self.pid, false);
        *reaped = true;
        drop(reaped);
        match &self.watch {
            Watch::Fd { .. } => {}
            Watch::Thread { thread, .. } => {
                if let Some(t) = thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    if let Ok(id) = t.join() {
                        tid::wait_gone(id); // gone from /proc/self/task too before close is done
                    }
                }
            }
        }
        info
    }
}

/// Name a new watching thread from here too: a thread names itself only once
/// it runs, and until then the process lists it under its creator's name.
#[cfg(target_os = "linux")]
fn name_now(thread: &std::thread::JoinHandle<i32>) {
    use std::os::unix::thread::JoinHandleExt;
    // std gives the pthread_t as an integer; musl's pthread_t is a pointer.
    #[cfg(target_env = "musl")]
    let id = thread.as_pthread_t() as libc::pthread_t;
    #[cfg(not(target_env = "musl"))]
    let id = thread.as_pthread_t();
    // SAFETY: the pthread_t of a thread not joined yet (its handle is
    // borrowed), and a NUL-terminated name of 15 bytes, the most Linux keeps.
    unsafe {
        libc::pthread_setname_np(id, c"koma-exit-watch".as_ptr());
    }
}

#[cfg(not(target_os = "linux"))]
fn name_now(_thread: &std::thread::JoinHandle<i32>) {}

impl Process {
    /// After koma was reaped: wait (at most `limit`) until nothing of its group
    /// is still running (the tools that got the group's SIGKILL may take a
    /// moment to die; a tool left as a zombie, waiting for init, counts as
    /// gone). Only probes (signal 0), never signals: the group may be gone.
    pub async fn group_gone(&self, limit: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let mut step = std::time::Duration::from_micros(200);
        let mut probes = 0u32;
        loop {
            // SAFETY: kill with signal 0 delivers nothing; it only asks whether the group has members.
            if unsafe { libc::kill(-self.pid, 0) } != 0 {
                return true;
            }
            // Members left: dying, or zombies waiting for init. Only a scan of
            // /proc tells those apart; it is costly, so not at every probe.
            probes += 1;
            if probes % 8 == 4 && !group_has_live_members(self.pid) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return !group_has_live_members(self.pid);
            }
            tokio::time::sleep(step).await;
            step = (step * 2).min(std::time::Duration::from_millis(20));
        }
    }
}

/// Whether a process of group `pgid` is still running (not a zombie), from /proc.
#[cfg(target_os = "linux")]
fn group_has_live_members(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else { return false };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // "pid (comm) state ppid pgrp ...": comm may hold anything, so parse after its last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut fields = rest.split_ascii_whitespace();
        let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next()) else { continue };
        if pgrp.parse::<i32>() == Ok(pgid) && state != "Z" && state != "X" {
            return true;
        }
    }
    false
}

/// Without /proc, a zombie cannot be told from a running process: count
/// every member as running (the group probe alone then decides).
#[cfg(not(target_os = "linux"))]
fn group_has_live_members(_pgid: i32) -> bool {
    true
}

impl Drop for Process {
    fn drop(&mut self) {
        // Never leave a zombie or a running child behind, whatever the path.
        if !self.is_reaped() {
            self.kill_now();
            self.reap();
        }
    }
}
