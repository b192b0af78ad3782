//! The native side of the client's event queue. The per-event loop is
//! JavaScript (`events.js`, compiled once per environment): it yields from a
//! batch and counts what it took in memory shared with the core, with no
//! call into the addon per event. The addon is called once per batch
//! (`pull`) and calls the queue's `settle` when events become ready.

use std::rc::{Rc, Weak};

use koma_transport::connection::{batch_data_index, BATCH_STRIDE};
use koma_transport::events::{End, Take};
use koma_transport::lift::Step;
use koma_transport::EventCounters;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, Object, Unknown};

use crate::context::{Ctx, QueueRefs};
use crate::handles::{coded_error, external_array_buffer, function, put_lifted, Js, OwnedRef};

const EVENTS_JS: &str = include_str!("events.js");

/// The client's event queue, made once: `{ stream, settle, router }`.
fn queue<'e>(ctx: &Rc<Ctx>, js: Js<'e>) -> napi::Result<()> {
    if ctx.state.borrow().queue.is_some() {
        return Ok(());
    }
    let make: Function<'e, FnArgs<(Unknown, Unknown, Unknown, Object)>, Object> =
        Function::from_unknown(ctx.env.script(js, "events.js", EVENTS_JS)?)?;
    let pull = function(js, c"pull", Rc::downgrade(ctx), on_pull)?;
    let stop = function(js, c"stop", Rc::downgrade(ctx), on_stop)?;
    let buffer = external_array_buffer(js, ctx.conn.event_counters())?;
    let mut layout = Object::new(&js.env())?;
    for (name, slot) in EventCounters::LAYOUT {
        layout.set_named_property(name, slot as u32)?;
    }
    layout.set_named_property("STRIDE", BATCH_STRIDE)?;
    let made = make.call((pull, stop, buffer, layout).into())?;
    let refs = |name: &str| -> napi::Result<OwnedRef> {
        OwnedRef::new(js, &ctx.env.life, &made.get_named_property::<Unknown>(name)?, true)
    };
    let q = QueueRefs { iterator: refs("stream")?, settle: refs("settle")?, router: refs("router")? };
    ctx.state.borrow_mut().queue = Some(q);
    Ok(())
}

/// The client's event iterator: made once, then the same object.
pub fn events<'e>(ctx: &Rc<Ctx>, js: Js<'e>) -> napi::Result<Unknown<'e>> {
    queue(ctx, js)?;
    let st = ctx.state.borrow();
    st.queue.as_ref().expect("made above").iterator.value(js)
}

/// The event queue's router, for the turn layer (the queue is made if it was not).
pub fn router<'e>(ctx: &Rc<Ctx>, js: Js<'e>) -> napi::Result<Unknown<'e>> {
    queue(ctx, js)?;
    let st = ctx.state.borrow();
    st.queue.as_ref().expect("made above").router.value(js)
}

/// `pull()` for the queue: a batch (a flat array `[seq, name, data, size, ...]`
/// parsed by one JSON.parse, its long strings put back), the overflow
/// report, `undefined` (nothing now; a wake will call `settle`), or `null`
/// (the end). Throws the fatal error after a failure.
fn pull<'e>(ctx: &Ctx, js: Js<'e>) -> napi::Result<Unknown<'e>> {
    match ctx.conn.take_events(true) {
        Take::Batch { json, lifts, .. } => {
            let array = ctx.env.parse(js, &json)?;
            drop(json);
            for (i, mut l) in lifts {
                l.path.insert(0, Step::Index(batch_data_index(i)));
                put_lifted(js, array, [l])?;
            }
            Ok(array)
        }
        Take::Overflow { dropped } => {
            let mut o = Object::new(&js.env())?;
            o.set_named_property("type", "overflow")?;
            o.set_named_property("dropped", dropped as f64)?;
            js.to_value(o)
        }
        Take::Empty => {
            ctx.state.borrow_mut().events_waiting = true;
            ctx.update_hold(js);
            Ok(js.undefined())
        }
        Take::Ended(End::Finished) => js.to_value(napi::bindgen_prelude::Null),
        Take::Ended(End::Failed(e)) => {
            let err = coded_error(js, &e, None, None)?;
            js.env().throw(err)?;
            Err(napi::Error::new(napi::Status::PendingException, e.message))
        }
    }
}

/// Events are ready (or the end): let a waiting queue take them.
pub fn pump(ctx: &Ctx, js: Js) {
    let settle = {
        let mut st = ctx.state.borrow_mut();
        if !st.events_waiting {
            return;
        }
        st.events_waiting = false;
        st.queue.as_ref().map(|q| q.settle.value(js))
    };
    if let Some(Ok(settle)) = settle {
        if let Ok(settle) = Function::<(), Unknown>::from_unknown(settle) {
            // settle never throws; whatever fails inside it is reported to its waiters
            let _ = settle.call(());
        }
        let _ = js.take_exception();
    }
}

/// The queue is done (`return()` and no Turn open): it no longer waits.
fn stop_waiting(ctx: &Ctx, js: Js) {
    ctx.conn.unwant_events();
    ctx.state.borrow_mut().events_waiting = false;
    ctx.update_hold(js);
}

fn on_pull<'e>(ctx: &Weak<Ctx>, js: Js<'e>, _args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    match ctx.upgrade() {
        Some(ctx) => pull(&ctx, js),
        None => js.to_value(napi::bindgen_prelude::Null), // the client is gone: the stream has ended
    }
}

fn on_stop<'e>(ctx: &Weak<Ctx>, js: Js<'e>, _args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        stop_waiting(&ctx, js);
    }
    Ok(js.undefined())
}
