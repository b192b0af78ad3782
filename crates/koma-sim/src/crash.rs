//! Dying of a signal on purpose (a scenario's `crash` step).

/// On Windows: ends the process with the exit code its step was given
/// (`windows::crash_code`).
#[cfg(windows)]
pub fn crash(code: i32) -> ! {
    crate::windows::terminate(code as u32)
}

/// Ends the process by `sig`'s default action, without a core file. If the
/// signal does not end it (it cannot be made to), SIGKILL does.
#[cfg(unix)]
pub fn crash(sig: libc::c_int) -> ! {
    // SAFETY: setrlimit reads a live local; signal(2) with SIG_DFL installs
    // no handler; the set is a local that sigemptyset initializes before
    // sigaddset and pthread_sigmask read it; raise, getpid and kill take
    // plain integers. Dying here is the point.
    unsafe {
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(sig);
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::exit(128 + sig)
}
