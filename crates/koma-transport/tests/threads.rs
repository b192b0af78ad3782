//! The core's threads (the runtime's two `koma-io` workers, `koma-spawner`,
//! and, where the exit cannot be watched by the reactor, a
//! `koma-exit-watch` per child) run only while a
//! client needs them: none before the first call, none once the last client
//! is closed, counted from /proc/self/task right after its close completes
//! (no pause), and back with the next client. Each test runs once per spawn
//! mode (`auto::`, `no_pidfd::`, `portable::`).
//!
//! A binary of its own, its tests one at a time, so that no other test's
//! client runs meanwhile.

mod common;

use std::time::Duration;

use common::{children_of_self, koma_threads, pidfd_open, serial, Client};
use koma_transport::child::SpawnMode;
use koma_transport::connection::{census, Census};
use koma_transport::runtime::{running, wait_idle};
use koma_transport::{Closing, ErrorCode, Outcome};

/// A bound against a hang, not a measure of speed.
const HANG: Duration = Duration::from_secs(20);

in_every_mode! {
    all: [
        the_threads_run_from_the_first_call_until_the_last_close,
        a_new_client_made_as_the_last_one_closes_gets_threads_that_work,
        clients_made_and_closed_on_two_threads_at_once_leave_no_thread,
        a_client_let_go_without_close_lets_the_threads_go_once_its_child_is_reaped,
        a_failed_client_holds_no_thread_once_closed,
    ],
    linux_only: [],
}

/// The threads of one running client: the runtime's two workers and the
/// spawner, and, where the exit is not watched through a pidfd (the clone's,
/// or `pidfd_open`'s on the portable path), a thread for that.
fn with_one(mode: SpawnMode) -> Vec<String> {
    let pidfd = mode != SpawnMode::NoPidfd && pidfd_open(std::process::id() as i32).is_some();
    let mut names = vec!["koma-io".to_owned(), "koma-io".to_owned(), "koma-spawner".to_owned()];
    if !pidfd {
        names.push("koma-exit-watch".to_owned());
    }
    names.sort();
    names
}

const NONE: Vec<String> = Vec::new();

fn the_threads_run_from_the_first_call_until_the_last_close(mode: SpawnMode) {
    let _serial = serial();
    assert_eq!(koma_threads(), NONE, "before any client");
    for round in 0..3 {
        let mut c = Client::sim_in(mode, &[]);
        assert_eq!(koma_threads(), NONE, "round {round}: a client is made, and nothing starts before its first call");
        assert_eq!(c.call("state", None).unwrap()["status"], "idle");
        assert_eq!(koma_threads(), with_one(mode), "round {round}: while it runs");
        assert!(running());
        // A call with a deadline: a timer task on the runtime too.
        let t = c.conn.token();
        c.conn.request(t, "state", None, Some(Duration::from_secs(600))).unwrap();
        assert!(matches!(c.outcome(t), Outcome::Result(_)));
        c.close();
        assert_eq!(koma_threads(), NONE, "round {round}: right after its close completed");
        assert!(!running());
        // Closed and kept (as a host keeps the object after close()): it
        // still counts as a connection, and holds no thread.
        assert_eq!(census(), Census { connections: 1, timers: 0 });
        assert_eq!(c.conn.close(c.conn.token()), Closing::Done);
        assert_eq!(koma_threads(), NONE);
        drop(c);
        assert_eq!(census(), Census { connections: 0, timers: 0 });
    }
    assert_eq!(children_of_self(), vec![]);
}

fn a_new_client_made_as_the_last_one_closes_gets_threads_that_work(mode: SpawnMode) {
    let _serial = serial();
    let mut a = Client::sim_in(mode, &[]);
    assert_eq!(a.call("state", None).unwrap()["status"], "idle");
    for round in 0..40 {
        let closing = a.conn.token();
        assert_eq!(a.conn.close(closing), Closing::Wait);
        if round % 2 == 1 {
            // Wait until `a` has let go of the threads (its close is done, not
            // yet handed over): they are ending, or gone, as `b` starts new ones.
            while !a.conn.is_closed() {
                assert!(a.wait_wake_undrained(HANG), "round {round}: no wake for the close");
            }
        }
        // Otherwise `b` starts at once, while `a` is still closing: it takes
        // the threads before `a` lets go of them, or new ones after.
        let mut b = Client::sim_in(mode, &[]);
        assert_eq!(b.call("state", None).unwrap()["status"], "idle", "round {round}");
        assert!(matches!(a.outcome(closing), Outcome::Done), "round {round}");
        assert_eq!(koma_threads(), with_one(mode), "round {round}: `b`'s threads, and no other");
        a = b;
    }
    a.close();
    assert_eq!(koma_threads(), NONE, "right after the last close completed");
    assert_eq!(children_of_self(), vec![]);
    drop(a);
    assert_eq!(census(), Census { connections: 0, timers: 0 });
}

fn clients_made_and_closed_on_two_threads_at_once_leave_no_thread(mode: SpawnMode) {
    let _serial = serial();
    let run = move || {
        for round in 0..25 {
            let mut c = Client::sim_in(mode, &[]);
            assert_eq!(c.call("state", None).unwrap()["status"], "idle", "round {round}");
            c.close();
        }
    };
    let other = std::thread::spawn(run);
    run();
    other.join().expect("the other thread's clients worked");
    // Both threads' last close completed: whichever was last ended the threads.
    assert_eq!(koma_threads(), NONE);
    assert!(!running());
    assert_eq!(children_of_self(), vec![]);
    assert_eq!(census(), Census { connections: 0, timers: 0 });
}

fn a_client_let_go_without_close_lets_the_threads_go_once_its_child_is_reaped(mode: SpawnMode) {
    let _serial = serial();
    let mut c = Client::sim_in(mode, &[]);
    assert_eq!(c.call("state", None).unwrap()["status"], "idle");
    let t = c.conn.token();
    c.conn.request(t, "state", None, Some(Duration::from_secs(600))).unwrap();
    // As a host does when the client object is collected without close().
    c.conn.kill_now();
    drop(c);
    assert!(wait_idle(HANG), "the threads still run {HANG:?} after the client was let go");
    assert_eq!(koma_threads(), NONE);
    assert_eq!(children_of_self(), vec![], "its child was reaped before the threads ended");
    assert_eq!(census(), Census { connections: 0, timers: 0 });
    // And they start again.
    let mut c = Client::sim_in(mode, &[]);
    assert_eq!(c.call("state", None).unwrap()["status"], "idle");
    assert_eq!(koma_threads(), with_one(mode));
    c.close();
    assert_eq!(koma_threads(), NONE);
}

fn a_failed_client_holds_no_thread_once_closed(mode: SpawnMode) {
    let _serial = serial();
    let mut c = Client::sim_in(mode, &[("KOMA_SIM_FAULT", "hold")]);
    let p = c.conn.token();
    c.conn.probe(p, None).unwrap();
    assert!(matches!(c.outcome(p), Outcome::Hello(_)));
    let t = c.conn.token();
    c.conn.request(t, "state", None, None).unwrap();
    // SAFETY: SIGKILL to the sim this client started (unreaped while the call waits).
    unsafe { libc::kill(c.conn.pid().unwrap() as i32, libc::SIGKILL) };
    let Outcome::Error(e) = c.outcome(t) else { panic!("the call was answered") };
    assert_eq!(e.code, ErrorCode::DeliveryUnknown, "{}", e.message);
    c.close();
    assert_eq!(koma_threads(), NONE, "right after the failed client's close completed");
    assert_eq!(children_of_self(), vec![]);
}
