//! Signals: SIGTERM ignored (`ignore_sigterm`), and the thread that takes
//! SIGUSR1 (`hold`) and SIGTERM (the hello faults' report) by sigwait(2).

use crate::server::reader::{report_bytes, BYTES_READ};
use crate::server::shared::{lock, Shared};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `ignore_sigterm`: SIGTERM's disposition becomes SIG_IGN.
pub fn ignore_sigterm() {
    // SAFETY: signal(2) with SIG_IGN installs no handler, so no code of ours
    // runs in signal context.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

/// Blocks `sigs` in this thread (threads started later inherit the mask)
/// and returns them as a set for `signal_thread`.
pub fn block_signals(sigs: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is a valid value to hand sigemptyset, which
    // initializes it; sigaddset and pthread_sigmask only read and write this
    // local set (and the calling thread's mask), with valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Takes the signals of `set` (blocked in every thread) one at a time:
/// SIGUSR1 releases the held answers, SIGTERM reports the bytes read and
/// then dies of SIGTERM.
pub fn signal_thread(sh: Option<Arc<Shared>>, set: libc::sigset_t) {
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` was initialized by `block_signals`, and `sig` is a
        // live local that sigwait writes the signal number into.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if sig == libc::SIGUSR1 {
            if let Some(sh) = &sh {
                let mut held = std::mem::take(&mut *lock(&sh.held));
                eprintln!("koma-sim: SIGUSR1: releasing {} held answers in reverse order", held.len());
                held.reverse();
                for b in held {
                    sh.out.raw(b);
                }
            }
        } else if sig == libc::SIGTERM {
            report_bytes(BYTES_READ.load(Ordering::SeqCst));
            // SAFETY: SIG_DFL installs no handler; the set is a local
            // initialized by sigemptyset before use; unblocking SIGTERM in
            // this thread and raising it ends the process by the default
            // action, which is the point.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, libc::SIGTERM);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::raise(libc::SIGTERM);
            }
            std::process::exit(143);
        }
    }
}
