//! A launched child: its exit, seen without reaping it; signals; the reap.
//!
//! The rule that keeps signals from reaching a stranger: a pid, and so a
//! process group id, cannot be reused while the process is unreaped (a zombie
//! still holds its pid). So koma is signalled through its pidfd (which names
//! that process and no other), and its group only while koma is unreaped:
//! the exit is seen with `WNOWAIT`, the group is stopped, and then it is
//! reaped, under the same lock that every signal takes.
//!
//! The exit is watched by putting the pidfd (readable once the process has
//! exited) into tokio's reactor: no thread per child. Where pidfds are missing
//! (Linux before 5.3, other systems, or `KOMA_SDK_NO_PIDFD=1`), one thread per
//! child blocks in `waitid(WNOWAIT)` instead, and koma is signalled by pid
//! while unreaped.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::watch;

use super::ExitInfo;

enum Watch {
    /// The pidfd, registered with the reactor.
    Pidfd(AsyncFd<OwnedFd>),
    /// A thread that reports the exit (fallback); joined at the reap.
    Thread { exit: watch::Receiver<Option<ExitInfo>>, thread: Mutex<Option<std::thread::JoinHandle<()>>> },
}

pub struct Process {
    pid: i32,
    watch: Watch,
    /// True once reaped: from then on neither the pid nor the group is signalled.
    reaped: Mutex<bool>,
}

impl Process {
    /// Must be called within the I/O runtime (the pidfd is registered with its reactor).
    pub(crate) fn new(pid: i32, pidfd: Option<OwnedFd>) -> io::Result<Self> {
        let watch = match pidfd {
            // SAFETY: the AsyncFd owns the OwnedFd, which stays open and the
            // same descriptor until the AsyncFd drops.
            Some(fd) => match unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) } {
                Ok(fd) => Watch::Pidfd(fd),
                Err(e) => {
                    kill_and_reap(pid);
                    return Err(e.into_parts().1);
                }
            },
            None => {
                let (tx, exit) = watch::channel(None);
                let thread = std::thread::Builder::new().name("koma-exit-watch".into()).spawn(move || {
                    let info = wait_exited(pid, true);
                    tx.send_replace(Some(info));
                });
                let thread = match thread {
                    Ok(t) => t,
                    Err(e) => {
                        kill_and_reap(pid); // no way to watch it
                        return Err(e);
                    }
                };
                Watch::Thread { exit, thread: Mutex::new(Some(thread)) }
            }
        };
        Ok(Process { pid, watch, reaped: Mutex::new(false) })
    }

    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Whether koma is watched through a pidfd (else by a thread of its own).
    pub fn has_pidfd(&self) -> bool {
        matches!(self.watch, Watch::Pidfd(_))
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
            // SAFETY: pidfd_send_signal on our own pidfd, with no siginfo.
            Watch::Pidfd(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.get_ref().as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            },
            // SAFETY: kill(2) on our own child while it is unreaped (its pid is still its own).
            Watch::Thread { .. } => unsafe {
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
            Watch::Pidfd(fd) => loop {
                let Ok(mut ready) = fd.readable().await else {
                    // The reactor is gone (the runtime is shutting down): ask directly.
                    return wait_exited(self.pid, true);
                };
                if let Some(info) = try_exited(self.pid) {
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
        let info = wait_exited(self.pid, false);
        *reaped = true;
        drop(reaped);
        if let Watch::Thread { thread, .. } = &self.watch {
            if let Some(t) = thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = t.join();
            }
        }
        info
    }
}

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

impl Drop for Process {
    fn drop(&mut self) {
        // Never leave a zombie or a running child behind, whatever the path.
        if !self.is_reaped() {
            self.kill_now();
            self.reap();
        }
    }
}

/// Stop a child of ours that nothing else will supervise (its group too) and
/// reap it: it is unreaped until the waitpid, so its ids are its own.
pub(crate) fn kill_and_reap(pid: i32) {
    // SAFETY: kill(2) and waitpid(2) on our own unreaped child (pid > 0).
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
    }
}

/// `waitid` for `pid`'s exit: with `peek`, without reaping it. Blocks.
fn wait_exited(pid: i32, peek: bool) -> ExitInfo {
    let flags = libc::WEXITED | if peek { libc::WNOWAIT } else { 0 };
    loop {
        // SAFETY: waitid with a zeroed siginfo (plain data) for our own child.
        let (rc, info) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags);
            (rc, info)
        };
        if rc == 0 {
            return exit_info(&info);
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // ECHILD: reaped elsewhere (someone called waitpid(-1)); nothing more to learn.
            return ExitInfo { code: None, signal: None };
        }
    }
}

/// The exit, if `pid` has exited (without reaping it).
fn try_exited(pid: i32) -> Option<ExitInfo> {
    // SAFETY: as in `wait_exited`, with WNOHANG.
    let (rc, info) = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT | libc::WNOHANG);
        (rc, info)
    };
    if rc != 0 {
        // ECHILD: no longer ours to see; count it as exited.
        return (io::Error::last_os_error().raw_os_error() != Some(libc::EINTR))
            .then_some(ExitInfo { code: None, signal: None });
    }
    // SAFETY: si_pid is valid for SIGCHLD-style siginfo filled by waitid.
    if unsafe { info.si_pid() } == 0 {
        return None; // not exited yet
    }
    Some(exit_info(&info))
}

fn exit_info(info: &libc::siginfo_t) -> ExitInfo {
    // SAFETY: si_status is valid for siginfo filled by waitid.
    let status = unsafe { info.si_status() };
    match info.si_code {
        libc::CLD_EXITED => ExitInfo { code: Some(status), signal: None },
        libc::CLD_KILLED | libc::CLD_DUMPED => ExitInfo { code: None, signal: Some(status) },
        _ => ExitInfo { code: None, signal: None },
    }
}
