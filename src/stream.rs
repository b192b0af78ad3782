//! The native side of the client's event iterator. The iterator's per-event
//! loop is JavaScript (`events.js`, compiled once per environment): it yields
//! from a batch and counts what it took in memory shared with the core, with
//! no call into the addon per event. The addon is called once per batch
//! (`pull`) and calls the iterator's `settle` when events become ready.

use std::rc::{Rc, Weak};

use koma_transport::connection::{batch_data_index, BATCH_STRIDE};
use koma_transport::events::{End, Take};
use koma_transport::lift::Step;
use koma_transport::EventCounters;

use crate::delivery::Ctx;
use crate::handles::{function, OwnedRef};
use crate::js::{Js, Value};

/// The iterator object, its `settle`, and the router the turn layer uses,
/// held (strongly) by the client's context.
pub struct StreamRefs {
    iterator: OwnedRef,
    settle: OwnedRef,
    router: OwnedRef,
}

impl Ctx {
    /// The client's event iterator: made once, then the same object.
    pub fn event_stream(self: &Rc<Self>, js: Js) -> napi::Result<Value> {
        if let Some(s) = self.state.borrow().stream.as_ref() {
            return s.iterator.value(js);
        }
        let factory = self.env.events_factory(js)?;
        let pull = function(js, c"pull", Rc::downgrade(self), on_pull)?;
        let stop = function(js, c"stop", Rc::downgrade(self), on_stop)?;
        let counters = self.conn.event_counters();
        let buffer = js.external_array_buffer(counters.as_ptr().cast(), counters.byte_len(), counters.clone())?;
        let layout = js.object()?;
        for (name, slot) in EventCounters::LAYOUT {
            js.set(layout, name, js.number(slot as f64)?)?;
        }
        js.set(layout, "STRIDE", js.number(BATCH_STRIDE as f64)?)?;
        let made = js.call(factory, js.undefined()?, &[pull, stop, buffer, layout])?;
        let iterator = js.get(made, "stream")?;
        let settle = js.get(made, "settle")?;
        let router = js.get(made, "router")?;
        let refs = StreamRefs {
            iterator: OwnedRef::new(js, &self.env.life, iterator, true)?,
            settle: OwnedRef::new(js, &self.env.life, settle, true)?,
            router: OwnedRef::new(js, &self.env.life, router, true)?,
        };
        self.state.borrow_mut().stream = Some(refs);
        Ok(iterator)
    }

    /// The event queue's router, for the turn layer (the queue is made if it was not).
    pub fn event_router(self: &Rc<Self>, js: Js) -> napi::Result<Value> {
        self.event_stream(js)?;
        let st = self.state.borrow();
        st.stream.as_ref().expect("made above").router.value(js)
    }

    /// `pull()` for the iterator: a batch (a flat array `[seq, name, data, ...]`
    /// parsed by one JSON.parse, its long strings put back), the overflow
    /// report, `undefined` (nothing now; a wake will call `settle`), or `null`
    /// (the end). Throws the fatal error after a failure.
    fn pull(&self, js: Js) -> napi::Result<Value> {
        match self.conn.take_events(true) {
            Take::Batch { json, lifts, .. } => {
                let array = self.parse_json(js, &json)?;
                drop(json);
                for (i, mut l) in lifts {
                    l.path.insert(0, Step::Index(batch_data_index(i)));
                    js.put_lifted(array, [l])?;
                }
                Ok(array)
            }
            Take::Overflow { dropped } => {
                let o = js.object()?;
                js.set_named(o, c"type", js.string(b"overflow")?)?;
                js.set_named(o, c"dropped", js.number(dropped as f64)?)?;
                Ok(o)
            }
            Take::Empty => {
                self.state.borrow_mut().events_waiting = true;
                self.update_hold(js);
                js.undefined()
            }
            Take::Ended(End::Finished) => js.null(),
            Take::Ended(End::Failed(e)) => {
                let err = js.error(&e, None)?;
                js.throw(err)?;
                js.undefined()
            }
        }
    }

    /// Events are ready (or the end): let a waiting iterator take them.
    pub fn pump_events(&self, js: Js) {
        let settle = {
            let mut st = self.state.borrow_mut();
            if !st.events_waiting {
                return;
            }
            st.events_waiting = false;
            st.stream.as_ref().map(|s| s.settle.value(js))
        };
        if let Some(Ok(settle)) = settle {
            if let Ok(undefined) = js.undefined() {
                let _ = js.call(settle, undefined, &[]);
            }
            // settle never throws; whatever fails inside it is reported to its waiters
            let _ = js.take_exception();
        }
    }

    /// The iterator is done (`return()`): it no longer waits.
    fn stop_waiting(&self, js: Js) {
        self.conn.unwant_events();
        self.state.borrow_mut().events_waiting = false;
        self.update_hold(js);
    }
}

fn on_pull(ctx: &Weak<Ctx>, js: Js, _args: &[Value]) -> napi::Result<Value> {
    match ctx.upgrade() {
        Some(ctx) => ctx.pull(js),
        None => js.null(), // the client is gone: the stream has ended
    }
}

fn on_stop(ctx: &Weak<Ctx>, js: Js, _args: &[Value]) -> napi::Result<Value> {
    if let Some(ctx) = ctx.upgrade() {
        ctx.stop_waiting(js);
    }
    js.undefined()
}
