//! The calls' deadlines: one sleeping task per call that has a `timeout`,
//! cancelled as soon as the call settles, and holding only a weak reference
//! to the connection, so a deadline never keeps a connection's memory alive.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::completion::Outcome;
use super::deadline::Deadline;
use super::link::Link;
use super::state::Shared;
use crate::error::{ErrorCode, KomaError};

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
/// `timeout` (the agent is interrupted; the result fails once it finished).
pub(super) fn expire_turn_after(link: &Arc<Link>, s: &mut Shared, key: u64, after: Duration) {
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
        let within = link.options.wording.duration(after);
        s.turns.stop(
            key,
            ErrorCode::Timeout,
            format!("the turn did not finish within {within}; the agent was interrupted"),
        );
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
        let within = link.options.wording.duration(after);
        let message = match method.as_str() {
            "close" => format!("`close` did not finish within {within}; the close goes on"),
            _ => format!("`{method}` was not answered within {within}"),
        };
        let e = KomaError::new(ErrorCode::Timeout, message);
        s.complete(token, Outcome::Error(e));
        link.wake_if_needed(s);
    }
}
