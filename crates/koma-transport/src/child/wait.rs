//! Waiting for a child's exit with `waitid`: seen without reaping it
//! (`WNOWAIT`), or reaped. Every Unix the crate builds for has `WNOWAIT`.

use std::io;

use super::exit::ExitInfo;

/// `waitid` for `pid`'s exit: with `peek`, without reaping it. Blocks.
pub(crate) fn wait_exited(pid: i32, peek: bool) -> ExitInfo {
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

/// The exit, if `pid` has exited (without reaping it). Only the watch by a
/// descriptor asks.
pub(crate) fn try_exited(pid: i32) -> Option<ExitInfo> {
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

/// Stop a child of ours that nothing else will supervise (its group too) and
/// reap it: it is unreaped until then, so its ids are its own. `before_reap`
/// runs between the two (where the group's registration with the guard goes).
pub(crate) fn kill_and_reap(pid: i32, before_reap: impl FnOnce()) {
    // SAFETY: kill(2) on our own unreaped child (pid > 0) and the group it leads.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
    before_reap();
    wait_exited(pid, false);
}
