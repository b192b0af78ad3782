//! A client's JavaScript-side context: its connection, its environment, and
//! what it holds on the JavaScript thread (pending calls, the event queue's
//! handles, its turns, its own object). The actors that use it are functions
//! of their own files: the call layer (`call.rs`), delivery (`delivery.rs`),
//! the streams (`stream.rs`) and the turns (`turn.rs`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use koma_transport::Connection;
use napi::bindgen_prelude::{Object, Unknown};

use crate::abort::AbortListener;
use crate::env::EnvData;
use crate::handles::{Deferred, Js, OwnedRef};

/// One call waiting for its completion.
pub struct Call {
    pub deferred: Deferred,
    /// The call's name, for its `aborted` message.
    pub what: String,
    pub abort: Option<AbortListener>,
}

/// The client's own stream's JavaScript side (`lib/stream.js`), once made.
pub struct QueueRefs {
    /// Makes a loop over the stream: what `events()` returns.
    pub events: OwnedRef,
    /// Called when events become ready, or the end.
    pub settle: OwnedRef,
}

#[derive(Default)]
pub struct JsState {
    pub calls: HashMap<u64, Call>,
    pub queue: Option<QueueRefs>,
    /// The iterator waits for events: the next wake calls its `settle`.
    pub events_waiting: bool,
    /// The turns this client has open, by key: the function their updates go to.
    pub turns: HashMap<u64, OwnedRef>,
    /// What a Turn calls (`lib/turn.js`'s `ops`), once made.
    pub ops: Option<OwnedRef>,
    /// The counters shared with the core, as an ArrayBuffer, once made.
    pub counters: Option<OwnedRef>,
    /// Its OpenTelemetry object (`lib/telemetry.js`), when it is traced.
    pub telemetry: Option<OwnedRef>,
    /// The Client's own object: held strongly while anything is outstanding,
    /// so a client with work in flight is never collected.
    client: Option<OwnedRef>,
    held: bool,
}

pub struct Ctx {
    pub conn: Connection,
    pub env: Rc<EnvData>,
    /// Its id among the process's clients (see `wake.rs`).
    pub id: u64,
    /// Its connection keeps trace records for JavaScript (see `trace.rs`):
    /// from its making, or from the first wake after a subscriber came.
    pub traced: Cell<bool>,
    /// It is traced with OpenTelemetry (see `telemetry.rs`): the notes of its life go to it.
    pub telemetry: bool,
    pub state: RefCell<JsState>,
}

impl Ctx {
    pub fn new(conn: Connection, env: Rc<EnvData>, id: u64, traced: bool, telemetry: Option<OwnedRef>) -> Rc<Ctx> {
        let state = JsState { telemetry, ..JsState::default() };
        Rc::new(Ctx {
            conn,
            env,
            id,
            traced: Cell::new(traced),
            telemetry: state.telemetry.is_some(),
            state: RefCell::new(state),
        })
    }

    /// The Client's own object, unless it was collected.
    pub fn client_object<'e>(&self, js: Js<'e>) -> Option<Unknown<'e>> {
        self.state.borrow().client.as_ref().and_then(|c| c.value(js).ok())
    }

    /// Keep a weak reference to the Client's object (made strong while busy).
    pub fn remember_client(&self, js: Js, this: &Object) -> napi::Result<()> {
        if self.state.borrow().client.is_none() {
            let r = OwnedRef::new(js, &self.env.life, this, false)?;
            self.state.borrow_mut().client = Some(r);
        }
        Ok(())
    }

    /// Reference the wake-up and the client object while anything is outstanding.
    pub fn update_hold(&self, js: Js) {
        let mut st = self.state.borrow_mut();
        let busy = !st.calls.is_empty() || st.events_waiting || !st.turns.is_empty();
        if busy == st.held {
            return;
        }
        st.held = busy;
        self.env.wakes.hold(js, busy);
        if let Some(client) = &st.client {
            client.set_strong(js, busy);
        }
    }

    /// Let go of the JavaScript side (the Client is being collected, or its
    /// environment ends): the stream, the turns, `ops` and the client's own reference.
    pub fn forget_js(&self) {
        let mut st = self.state.borrow_mut();
        st.queue = None;
        st.turns.clear();
        st.ops = None;
        st.counters = None;
        st.telemetry = None;
        st.client = None;
    }
}
