//! Waking the JavaScript thread: one threadsafe function per Node
//! environment, shared by all its clients. A connection that has something
//! for JavaScript puts its client's id on the environment's ready list and,
//! if the list was empty, calls the function; one call on the JavaScript
//! thread then hands every id on the list to the environment's handler. With
//! many clients, many answers cost one wake of the event loop, not one each.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use koma_transport::Waker;

use crate::handles::{EnvLife, Js, Tsfn, TsfnHandle, TsfnWaker, WakeTarget};

/// What a wake does on the JavaScript thread, with the ids it found ready.
pub type OnWake = fn(Js, Vec<u64>);

/// The clients that have something to deliver, by id (any thread adds).
#[derive(Default)]
struct ReadyList(Mutex<Vec<u64>>);

impl ReadyList {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The threadsafe function's target: the ready list and the handler.
struct Target {
    ready: Arc<ReadyList>,
    on_wake: OnWake,
}

impl WakeTarget for Target {
    fn woke(&self, js: Js) {
        let ids = std::mem::take(&mut *self.ready.lock());
        if !ids.is_empty() {
            (self.on_wake)(js, ids);
        }
    }
}

/// One environment's wake-up: the function, its ready list, and how many
/// clients have something outstanding (the function keeps Node's event loop
/// alive while that is more than zero).
pub struct Wakes {
    _tsfn: Tsfn,
    handle: TsfnHandle,
    ready: Arc<ReadyList>,
    busy: Cell<usize>,
}

/// A connection's waker: puts its client on the ready list.
struct ClientWaker {
    id: u64,
    ready: Arc<ReadyList>,
    tsfn: TsfnWaker,
}

impl Waker for ClientWaker {
    fn wake(&self) {
        let first = {
            let mut ids = self.ready.lock();
            ids.push(self.id);
            ids.len() == 1
        };
        if first {
            self.tsfn.wake();
        }
    }
}

impl Wakes {
    pub fn new(js: Js, life: &Rc<EnvLife>, on_wake: OnWake) -> napi::Result<Wakes> {
        let ready = Arc::new(ReadyList::default());
        let (tsfn, handle) = Tsfn::new(js, life, "koma-sdk", Target { ready: ready.clone(), on_wake })?;
        Ok(Wakes { _tsfn: tsfn, handle, ready, busy: Cell::new(0) })
    }

    /// A new client's id (unique in the process) and the waker for its connection.
    pub fn waker(&self) -> (u64, Box<dyn Waker>) {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        (id, Box::new(ClientWaker { id, ready: self.ready.clone(), tsfn: self.handle.waker() }))
    }

    /// A client starts (`true`) or stops having something outstanding.
    pub fn hold(&self, js: Js, busy: bool) {
        let before = self.busy.get();
        let after = if busy { before + 1 } else { before.saturating_sub(1) };
        self.busy.set(after);
        if (before == 0) != (after == 0) {
            self.handle.hold(js, after > 0);
        }
    }
}
