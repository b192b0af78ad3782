//! The calls' deadlines: one sleeping task per call that has a `timeout`,
//! cancelled as soon as the call settles, and holding only a weak reference
//! to the connection, so a deadline never keeps a connection's memory alive.

use std::sync::Arc;
use std::time::Duration;

use super::state::Shared;
use super::{runtime, Connection, Outcome};
use crate::error::{ErrorCode, KomaError};

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
        s.calls.timers.insert(token, task.abort_handle());
    }

    fn expire(&self, token: u64, after: Duration) {
        let mut s = self.inner.lock();
        s.calls.timers.remove(&token); // this task is ending: nothing to cancel
        if let Some(method) = s.forget(token) {
            let e = KomaError::new(ErrorCode::Timeout, format!("`{method}` was not answered within {} ms", after.as_millis()));
            s.complete(token, Outcome::Error(e));
            self.wake_if_needed(s);
        }
    }
}
