//! A descriptor that becomes readable once a child has exited, for the I/O
//! runtime's reactor: the exit of every child is then watched by the
//! reactor's one thread of polling, whatever the number of children, with no
//! signal handler and nothing reaped (see docs/reliability.md, "The exit
//! watch").
//!
//! - Linux: `pidfd_open` (5.3 and later). It names the process, not its pid:
//!   opened while the child is unreaped, it cannot name another process.
//! - macOS: a kqueue of its own holding the child's `EVFILT_PROC` /
//!   `NOTE_EXIT`; a kqueue is readable while an event is pending in it. The
//!   event is never taken out: readiness is all the reactor needs.
//! - Elsewhere: none (the child's exit is then watched by a thread).
//!
//! `None` also where the system refuses (an older kernel, descriptors used
//! up, a child gone already): the caller falls back to a thread.

use std::os::fd::OwnedFd;

/// An exit descriptor for `pid`, a child of this process that is not reaped.
#[cfg(target_os = "linux")]
pub(crate) fn open(pid: i32) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Set for good once the kernel has no `pidfd_open` (before 5.3).
    static MISSING: AtomicBool = AtomicBool::new(false);
    if MISSING.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // (close-on-exec) or -1; `pid` is our unreaped child, so it names that child.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            MISSING.store(true, Ordering::Relaxed);
        }
        return None;
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An exit descriptor for `pid`, a child of this process that is not reaped.
#[cfg(target_os = "macos")]
pub(crate) fn open(pid: i32) -> Option<OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: kqueue takes no argument and returns a new descriptor or -1.
    let kq = unsafe { libc::kqueue() };
    if kq < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor that nothing else owns. A kqueue is not
    // inherited by a forked child; close-on-exec is set for the spawns.
    let kq = unsafe { OwnedFd::from_raw_fd(kq) };
    // SAFETY: fcntl on our own descriptor.
    unsafe {
        libc::fcntl(kq.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: a zeroed kevent (plain data), filled as EV_SET does, registered
    // in our own kqueue; no event list is asked for, so nothing is written back.
    let rc = unsafe {
        let mut change: libc::kevent = std::mem::zeroed();
        change.ident = pid as libc::uintptr_t;
        change.filter = libc::EVFILT_PROC;
        change.flags = libc::EV_ADD | libc::EV_ONESHOT;
        change.fflags = libc::NOTE_EXIT;
        libc::kevent(kq.as_raw_fd(), &change, 1, std::ptr::null_mut(), 0, std::ptr::null())
    };
    // ESRCH: the child has exited already (the thread that watches it then sees it at once).
    (rc == 0).then_some(kq)
}

/// Elsewhere there is none: a thread watches each child.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) fn open(_pid: i32) -> Option<OwnedFd> {
    None
}
