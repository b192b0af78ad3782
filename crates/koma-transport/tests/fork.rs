//! A child made by `fork()` makes clients of its own: it gets its own I/O
//! runtime and spawner thread (threads do not survive a fork), which end when
//! its last client closes; the parent's client refuses every call there and
//! signals nothing; and in the parent, that client, made and used before the
//! fork, still works, and its close ends the parent's threads. A fork after
//! the last close copies a process with no thread of the core's, and the
//! child starts its own.
//!
//! A binary of its own, with one test, so that no other test's threads run
//! when it forks. In the forked child only this thread exists; it uses what
//! is safe there in this program: allocation (glibc's malloc is reset in a
//! forked child), new locks and threads, and no lock another thread may have
//! held at the fork (nothing prints; the result is the exit code).

mod common;

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use common::{
    alive, children_of_self, group_alive, hold_pipes_of, koma_threads, pidfd_open, pidfd_signal, pidfd_wait_exit,
    Client,
};
use koma_transport::child::SpawnMode;
use koma_transport::runtime::generation;
use koma_transport::{Closing, Connection, ErrorCode};

/// A forked child that has not reported after this long hangs (a bound, not a measure).
const HANG: Duration = Duration::from_secs(60);

/// The forked child's exit codes, and what each says went wrong.
const CHILD_OK: i32 = 0;
const CHILD_FAILURES: &[(i32, &str)] = &[
    (10, "the generation did not change in the child"),
    (11, "the new client's probe did not give hello"),
    (12, "the new client's `state` was not answered with idle"),
    (13, "the new client's koma is still running after close"),
    (14, "a process of the child's is left after close"),
    (15, "the second client's probe did not give hello"),
    (16, "the report to the parent could not be written"),
    (17, "a call on the parent's client was not refused with transport_failure naming fork()"),
    (18, "the parent's client's probe was not refused"),
    (19, "the parent's client's close was not refused"),
    (20, "the parent's client gave its koma's pid in the child"),
    (21, "a thread of the core's is left in the child after its last close"),
    (22, "the child's new client did not work (forked with no thread of the core's)"),
    (99, "the child panicked"),
];

#[test]
fn a_forked_child_makes_its_own_clients_and_the_parents_client_still_works() {
    for mode in [SpawnMode::Auto, SpawnMode::NoPidfd, SpawnMode::Portable] {
        fork_and_check(mode);
        fork_after_the_last_close(mode);
    }
}

fn fork_and_check(mode: SpawnMode) {
    // Made and used before the fork.
    let mut parent = Client::sim_in(mode, &[]);
    assert_eq!(parent.call("state", None).unwrap()["status"], "idle");
    let parent_koma = parent.conn.pid().unwrap() as i32;
    let before = generation();
    let (report_r, report_w) = pipe();
    let (go_r, go_w) = pipe();

    // SAFETY: the child runs `in_child` and ends with `_exit`, using only what
    // the module doc lists; the parent goes on as usual.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        drop((report_r, go_w));
        let run = std::panic::AssertUnwindSafe(|| in_child(mode, before, &parent.conn, &report_w, &go_r));
        let code = std::panic::catch_unwind(run).unwrap_or(99);
        // SAFETY: ends the forked child at once: no destructor or exit handler of the parent's runs.
        unsafe { libc::_exit(code) };
    }
    drop((report_w, go_r));

    // The child reports the pid of a koma it leaves running (0: none, under
    // `Portable`), and waits for the parent to name it by a pidfd. A child
    // that never reports hangs (as it did when the parent's runtime was
    // used there): stop it and say so.
    if !readable_within(&report_r, HANG) {
        // SAFETY: SIGKILL to our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        wait_child(pid);
        panic!("{mode:?}: the forked child hung (no report after {HANG:?})");
    }
    let left = read_i32(&report_r).filter(|&p| p > 0);
    // Named by a pidfd, and its pipes held here, so that the child's end ends
    // nothing else of koma's: only the parent-death signal can stop it.
    let left = left.map(|p| (pidfd_open(p).expect("the child's koma runs until the child exits"), hold_pipes_of(p)));
    write_i32(&go_w, 1);
    let code = wait_child(pid);
    let why = CHILD_FAILURES.iter().find(|(c, _)| *c == code).map_or("an unknown exit code", |(_, w)| w);
    assert_eq!(code, CHILD_OK, "{mode:?}: the forked child failed: {why}");

    // The child's spawner thread was its own: its koma got the parent-death
    // signal when the child ended (Linux's clone path; not `Portable`).
    if let Some((koma, pipes)) = left {
        let died = pidfd_wait_exit(&koma, Duration::from_secs(20));
        if !died {
            pidfd_signal(&koma, libc::SIGKILL);
        }
        drop(pipes);
        assert!(died, "{mode:?}: the koma left running in the child outlived it");
    }

    // The parent's client still works, and closes as usual.
    assert_eq!(generation(), before, "the parent's generation is unchanged");
    assert_eq!(parent.call("state", None).unwrap()["status"], "idle");
    parent.close();
    assert!(!alive(parent_koma) && !group_alive(parent_koma), "{mode:?}: the parent's koma is gone");
    assert_eq!(children_of_self(), vec![], "{mode:?}: no process of this one is left");
    assert_eq!(koma_threads(), Vec::<String>::new(), "{mode:?}: the parent's last close ended its threads");
}

/// With no client alive, the process has no thread of the core's to fork
/// with; the child starts its own, and they end with its last close.
fn fork_after_the_last_close(mode: SpawnMode) {
    let mut before = Client::sim_in(mode, &[]);
    assert_eq!(before.call("state", None).unwrap()["status"], "idle");
    before.close();
    assert_eq!(koma_threads(), Vec::<String>::new(), "{mode:?}: no thread of the core's at the fork");
    // SAFETY: as in `fork_and_check`: the child ends with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let run = std::panic::AssertUnwindSafe(|| {
            let mut c = Client::sim_in(mode, &[]);
            if !c.call("state", None).is_ok_and(|s| s["status"] == "idle") {
                return 22;
            }
            c.close();
            if !koma_threads().is_empty() {
                return 21;
            }
            CHILD_OK
        });
        let code = std::panic::catch_unwind(run).unwrap_or(99);
        // SAFETY: ends the forked child at once.
        unsafe { libc::_exit(code) };
    }
    let code = wait_child(pid);
    let why = CHILD_FAILURES.iter().find(|(c, _)| *c == code).map_or("an unknown exit code", |(_, w)| w);
    assert_eq!(code, CHILD_OK, "{mode:?}: the child forked after the last close failed: {why}");
    // The parent starts its threads again, as usual.
    let mut after = Client::sim_in(mode, &[]);
    assert_eq!(after.call("state", None).unwrap()["status"], "idle");
    after.close();
    assert_eq!(koma_threads(), Vec::<String>::new());
}

/// The forked child's part: its exit code.
fn in_child(mode: SpawnMode, parent_generation: u64, parents: &Connection, report: &OwnedFd, go: &OwnedFd) -> i32 {
    if generation() == parent_generation {
        return 10;
    }
    let mut c = Client::sim_in(mode, &[]);
    let t = c.conn.token();
    if c.conn.probe(t, None).is_err() || !matches!(c.outcome(t), koma_transport::Outcome::Hello(_)) {
        return 11;
    }
    if !c.call("state", None).is_ok_and(|s| s["status"] == "idle") {
        return 12;
    }
    let koma = c.conn.pid().unwrap() as i32;
    c.close();
    if alive(koma) {
        return 13;
    }
    if !children_of_self().is_empty() {
        return 14;
    }
    if !koma_threads().is_empty() {
        return 21;
    }

    // The parent's client, used here, is refused at once (its mutex may have
    // been held by one of the parent's threads at the fork: it is not taken),
    // and signals nothing: its koma is the parent's (which checks, once this
    // child has ended, that its client still works).
    let t = parents.token();
    match parents.request(t, "state", None, None) {
        Err(e) if e.code == ErrorCode::TransportFailure && e.message.contains("fork()") => {}
        _ => return 17,
    }
    if parents.probe(parents.token(), None).is_ok() {
        return 18;
    }
    if !matches!(parents.close(parents.token()), Closing::Refused(e) if e.code == ErrorCode::TransportFailure) {
        return 19;
    }
    parents.kill_now();
    if parents.pid().is_some() {
        return 20;
    }

    // A koma left running when the child ends, for the parent to watch.
    let mut kept = 0;
    if mode != SpawnMode::Portable {
        let mut k = Client::sim_in(mode, &[("KOMA_SIM_FAULT", "ignore_eof")]);
        let t = k.conn.token();
        if k.conn.probe(t, None).is_err() || !matches!(k.outcome(t), koma_transport::Outcome::Hello(_)) {
            return 15;
        }
        kept = k.conn.pid().unwrap() as i32;
        // Not closed, not dropped: only the end of this process stops it.
        std::mem::forget(k);
    }
    if !write_i32(report, kept) {
        return 16;
    }
    read_i32(go);
    CHILD_OK
}

/// A pipe that no koma inherits (std's pipe is close-on-exec, made so
/// atomically where the system can: `pipe2` on Linux).
fn pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = std::io::pipe().expect("a pipe");
    (r.into(), w.into())
}

fn write_i32(fd: &OwnedFd, v: i32) -> bool {
    let bytes = v.to_ne_bytes();
    // SAFETY: writes 4 bytes from a local array to a pipe of ours.
    unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), 4) == 4 }
}

/// Whether `fd` becomes readable (data, or the writer's end) within `limit`.
fn readable_within(fd: &OwnedFd, limit: Duration) -> bool {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: poll on one pollfd of ours.
        let rc = unsafe { libc::poll(&mut p, 1, limit.as_millis() as i32) };
        if rc >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return rc > 0;
        }
    }
}

/// `None` at the end of the pipe (the writer has exited).
fn read_i32(fd: &OwnedFd) -> Option<i32> {
    let mut bytes = [0u8; 4];
    loop {
        // SAFETY: reads at most 4 bytes into a local array from a pipe of ours.
        let n = unsafe { libc::read(fd.as_raw_fd(), bytes.as_mut_ptr().cast(), 4) };
        match n {
            4 => return Some(i32::from_ne_bytes(bytes)),
            n if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => return None,
        }
    }
}

/// Reap the forked child; its exit code (a signal counts as 128 + signal).
fn wait_child(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waitpid on our own child, into a local.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINTR));
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}
