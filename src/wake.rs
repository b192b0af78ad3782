//! Waking the JavaScript thread: one threadsafe function per Node
//! environment, shared by all its clients. A connection that has something
//! for JavaScript puts its client's id on the environment's ready list and,
//! if the list was empty, calls the function; one call on the JavaScript
//! thread then delivers every client on the list. With many clients, many
//! answers cost one wake of the event loop, not one each.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};

use koma_transport::Waker;

use crate::delivery::Ctx;
use crate::handles::{EnvLife, Tsfn, TsfnHandle, TsfnWaker, WakeTarget};
use crate::js::Js;

/// The clients that have something to deliver, by id (any thread adds).
#[derive(Default)]
struct ReadyList(Mutex<Vec<u64>>);

/// The threadsafe function's target: the clients of this environment.
struct Clients {
    ready: Arc<ReadyList>,
    by_id: RefCell<HashMap<u64, Weak<Ctx>>>,
}

impl WakeTarget for Clients {
    fn woke(&self, js: Js) {
        let ids = std::mem::take(&mut *self.ready.0.lock().unwrap_or_else(|p| p.into_inner()));
        let ctxs: Vec<Rc<Ctx>> = {
            let by_id = self.by_id.borrow();
            ids.iter().filter_map(|id| by_id.get(id).and_then(Weak::upgrade)).collect()
        };
        if let Some(first) = ctxs.first() {
            let env = first.env.clone();
            crate::delivery::deliver(js, &env, &ctxs);
        }
    }
}

/// One environment's wake-up: the function, its clients, and how many of
/// them have something outstanding (the function keeps Node's event loop
/// alive while that is more than zero).
pub struct Wakes {
    _tsfn: Tsfn,
    handle: TsfnHandle,
    clients: Rc<Clients>,
    next_id: Cell<u64>,
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
            let mut ids = self.ready.0.lock().unwrap_or_else(|p| p.into_inner());
            ids.push(self.id);
            ids.len() == 1
        };
        if first {
            self.tsfn.wake();
        }
    }
}

impl Wakes {
    pub fn new(js: Js, life: &Rc<EnvLife>) -> napi::Result<Wakes> {
        let ready = Arc::new(ReadyList::default());
        let mut handle = None;
        let (tsfn, clients) = Tsfn::with_target(js, life, "koma-sdk", |h, _waker| {
            handle = Some(h);
            Clients { ready: ready.clone(), by_id: RefCell::new(HashMap::new()) }
        })?;
        let handle = handle.expect("made with the function");
        Ok(Wakes { _tsfn: tsfn, handle, clients, next_id: Cell::new(1), busy: Cell::new(0) })
    }

    /// A new client's id and the waker for its connection.
    pub fn waker(&self) -> (u64, Box<dyn Waker>) {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let waker = ClientWaker { id, ready: self.clients.ready.clone(), tsfn: self.handle.waker() };
        (id, Box::new(waker))
    }

    /// The client `id` is ready to be woken (its context exists now).
    pub fn register(&self, id: u64, ctx: &Rc<Ctx>) {
        self.clients.by_id.borrow_mut().insert(id, Rc::downgrade(ctx));
    }

    pub fn unregister(&self, id: u64) {
        self.clients.by_id.borrow_mut().remove(&id);
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
