//! The calls' deadlines: one sleeping task per call that has a `timeout`,
//! cancelled as soon as the call settles, and holding only a weak reference
//! to the connection, so a deadline never keeps a connection's memory alive.
//! A turn has one such timer, under its key: its deadline, then, once it is
//! stopped (by its deadline or by the host), its stop's grace
//! ([`TURN_STOP_GRACE`]), past which it settles whatever koma does.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::completion::Outcome;
use super::link::Link;
use super::state::{Deadline, Shared};
use crate::stop::{deadline_error, Stopped, Why, TURN_STOP_GRACE};

/// Give the call `token` a deadline (with the lock held, so that it is
/// registered before the call can settle).
pub(super) fn expire_after(link: &Arc<Link>, s: &mut Shared, token: u64, after: Duration) {
    // A call is only accepted while the connection holds the I/O threads
    // (from its start until its supervisor is done, by which time it has
    // closed, failed or ended, and refuses calls).
    let Some(io) = link.io() else { return };
    let weak = Arc::downgrade(link);
    let task = io.spawn(async move {
        tokio::time::sleep(after).await;
        expire(weak, token, after);
    });
    s.calls.timers.insert(token, Deadline::new(task.abort_handle()));
}

/// Give turn `key` its deadline: past it, the turn is stopped with
/// `timeout` (the agent is interrupted; the result fails once it finished,
/// or when the stop's grace passed).
pub(super) fn expire_turn_after(link: &Arc<Link>, s: &mut Shared, key: u64, after: Duration) {
    after_turn_timer(link, s, key, after, move |link, s| {
        if s.turns.expire(key, after) {
            grace(link, s, key);
        }
    });
}

/// The host stopped turn `key` (see [`crate::stop::Why`]): the agent is
/// interrupted, and the stop's grace starts.
pub(super) fn stop_turn(link: &Arc<Link>, s: &mut Shared, key: u64, stop: &Why) {
    if s.turns.stop(key, stop) {
        grace(link, s, key);
    }
}

/// Start turn `key`'s stop grace (in place of its deadline, if that still
/// runs: the turn is stopped already): past it, the turn is given up.
fn grace(link: &Arc<Link>, s: &mut Shared, key: u64) {
    after_turn_timer(link, s, key, TURN_STOP_GRACE, move |_, s| {
        let Shared { turns, stream, .. } = s;
        turns.give_up(&mut stream.events, key);
    });
}

/// Run `then` with the lock held `after` from now, as turn `key`'s timer
/// (cancelled when the turn ends, or replaced by its next timer).
fn after_turn_timer(
    link: &Arc<Link>,
    s: &mut Shared,
    key: u64,
    after: Duration,
    then: impl FnOnce(&Arc<Link>, &mut Shared) + Send + 'static,
) {
    // A turn that writes its submit has started the connection, which then
    // holds the I/O threads; one that did not has ended already.
    let Some(io) = link.io() else { return };
    let weak = Arc::downgrade(link);
    let task = io.spawn(async move {
        tokio::time::sleep(after).await;
        let Some(link) = weak.upgrade() else { return };
        let mut s = link.lock();
        if let Some(d) = s.calls.timers.remove(&key) {
            d.fired();
        }
        then(&link, &mut s);
        link.wake_if_needed(s);
    });
    s.calls.timers.insert(key, Deadline::new(task.abort_handle()));
}

/// The deadline of `token` has passed: the call fails with `timeout`, unless
/// it settled meanwhile (or the connection is gone).
fn expire(link: Weak<Link>, token: u64, after: Duration) {
    let Some(link) = link.upgrade() else { return };
    let mut s = link.lock();
    if let Some(d) = s.calls.timers.remove(&token) {
        d.fired(); // this task is ending: nothing to cancel
    }
    if let Some(method) = s.forget(token) {
        let e = deadline_error(&method, Stopped::Call, after, &link.options.wording);
        s.complete(token, Outcome::Error(e));
        link.wake_if_needed(s);
    }
}
