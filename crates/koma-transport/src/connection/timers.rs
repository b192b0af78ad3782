//! The calls' deadlines: one sleeping task per call that has a `timeout`,
//! cancelled as soon as the call settles, and holding only a weak reference
//! to the connection, so a deadline never keeps a connection's memory alive.

use std::sync::Arc;
use std::time::Duration;

use super::state::Shared;
use super::{Connection, Outcome};
use crate::error::{ErrorCode, KomaError};
use crate::runtime::runtime;

impl Connection {
    /// Give the call `token` a deadline (with the lock held, so that it is
    /// registered before the call can settle).
    pub(super) fn expire_after(&self, s: &mut Shared, token: u64, after: Duration) {
        let weak = Arc::downgrade(&self.inner);
        let task = runtime().spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(inner) = weak.upgrade() {
                Connection { inner }.expire(token, after);
            }
        });
        s.calls.timers.insert(token, Deadline::new(task.abort_handle()));
    }

    fn expire(&self, token: u64, after: Duration) {
        let mut s = self.inner.lock();
        if let Some(d) = s.calls.timers.remove(&token) {
            d.fired(); // this task is ending: nothing to cancel
        }
        if let Some(method) = s.forget(token) {
            let e = KomaError::new(
                ErrorCode::Timeout,
                format!("`{method}` was not answered within {} ms", after.as_millis()),
            );
            s.complete(token, Outcome::Error(e));
            self.wake_if_needed(s);
        }
    }
}

/// A registered deadline: cancelled when dropped, unless it fired. Counted
/// (see [`super::census`]) from registration until it fires or is cancelled.
pub(super) struct Deadline(Option<tokio::task::AbortHandle>);

impl Deadline {
    fn new(task: tokio::task::AbortHandle) -> Self {
        super::LIVE_TIMERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Deadline(Some(task))
    }

    /// Its task is the one running: nothing to cancel.
    fn fired(mut self) {
        self.0 = None;
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
        super::LIVE_TIMERS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}
