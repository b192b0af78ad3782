//! A thread's id as the kernel knows it, and the wait until the kernel no
//! longer lists that thread: a join returns as soon as the thread's exit has
//! begun (the kernel wakes the joiner when it clears the thread's id, before
//! it releases the thread), and a count of /proc/self/task taken then may
//! still see it. The core's joins of its own threads wait for this too, so
//! that what it says is gone is gone from every view.

/// The calling thread's id (Linux; 0 elsewhere, where there is nothing to wait for).
pub(crate) fn current() -> i32 {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions.
    return unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    #[cfg(not(target_os = "linux"))]
    0
}

/// After the thread `tid` of this process was joined: wait until the kernel
/// has released it. What is left of its exit then is the kernel's exit path,
/// a few microseconds. Ids are handed out in turn, so `tid` is not reused by
/// a new thread meanwhile.
pub(crate) fn wait_gone(tid: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: getpid, and tgkill with signal 0, which only asks whether the thread exists.
    while tid > 0 && unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) } == 0 {
        std::thread::yield_now();
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tid;
}
