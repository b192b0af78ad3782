//! The native side of the streams of events: the client's own (what
//! `events()` reads) and each Turn's. The loops are JavaScript
//! (`lib/stream.js`): they hand a batch's events out one by one and count
//! each in memory shared with the core, with no call into the addon per
//! event. The addon is called once per batch (`pull`, or a Turn's `take`)
//! and calls the client stream's `settle` when events become ready (a
//! Turn's stream is told through its updates: see `turn.rs`).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use koma_transport::connection::{batch_data_index, BATCH_STRIDE};
use koma_transport::events::{Counting, End, Take};
use koma_transport::lift::Step;
use koma_transport::stop::{deadline_error, Stopped, Why};
use koma_transport::{EventCounters, KomaError};
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, Object, Unknown};
use napi::{JsValue, ValueType};
use napi_derive::napi;

use crate::abort::reason_name;
use crate::context::{Ctx, QueueRefs};
use crate::handles::{coded_error, external_array_buffer, function, put_lifted, Js, OwnedRef};
use crate::options::{duration, CallOptions};
use crate::values::{as_string, kind};

/// The counters shared with the core (one ArrayBuffer per client) and their layout.
pub fn counters<'e>(ctx: &Rc<Ctx>, js: Js<'e>) -> napi::Result<(Unknown<'e>, Object<'e>)> {
    let made = ctx.state.borrow().counters.as_ref().map(|r| r.value(js));
    let buffer = match made {
        Some(b) => b?,
        None => {
            let b = external_array_buffer(js, ctx.conn.event_counters())?;
            ctx.state.borrow_mut().counters = Some(OwnedRef::new(js, &ctx.env.life, &b, true)?);
            b
        }
    };
    let mut layout = Object::new(&js.env())?;
    for (name, slot) in layout_entries() {
        layout.set_named_property(name, slot)?;
    }
    Ok((buffer, layout))
}

/// The counters' layout (`lib/stream.js`'s `Layout`): each slot's index by
/// name, as the core defines it, `STRIDE`, the entries per event of a batch,
/// and each way a batch counts (`UNCOUNTED`, `REVOCABLE`, `KEPT`) with the
/// number the core writes into `BATCH_COUNTING`.
fn layout_entries() -> impl Iterator<Item = (&'static str, u32)> {
    EventCounters::LAYOUT
        .into_iter()
        .map(|(name, slot)| (name, slot as u32))
        .chain([("STRIDE", BATCH_STRIDE)])
        .chain(Counting::KINDS.into_iter().map(|(name, kind)| (name, kind as u32)))
}

/// The layout alone, for `__test__/counting.test.mjs`.
#[napi(js_name = "__counterLayout", skip_typescript)]
pub fn counter_layout() -> std::collections::HashMap<String, u32> {
    layout_entries().map(|(name, slot)| (name.to_owned(), slot)).collect()
}

/// The core's side of the shared counters, driven by `__test__/counting.test.mjs`
/// (testdata/counting.json): `{ lend(sizes, counting), pull(), overflow(),
/// counted(), counters }`, batches lent by hand as a client lends them, and
/// overflows, over the core's own counters and bound.
#[napi(js_name = "__countingRig", skip_typescript)]
#[cfg_attr(test, allow(dead_code))] // called from JavaScript only
pub fn counting_rig(env: &napi::Env) -> napi::Result<Object<'_>> {
    type Rig = Rc<RefCell<koma_transport::connection::CountingRig>>;
    let js = Js::new(env);
    let rig: Rig = Rc::new(RefCell::new(koma_transport::connection::CountingRig::new()));
    let mut o = Object::new(env)?;
    o.set_named_property("counters", external_array_buffer(js, rig.borrow().counters())?)?;
    fn lend<'e>(rig: &Rig, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
        let sizes = Vec::<u32>::from_unknown(args[0])?;
        let counting = u32::from_unknown(args[1])?;
        rig.borrow_mut().lend(&sizes, counting).map_err(napi::Error::from_reason)?;
        Ok(js.undefined())
    }
    fn pull<'e>(rig: &Rig, js: Js<'e>, _: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
        js.to_value(rig.borrow_mut().pull())
    }
    fn overflow<'e>(rig: &Rig, js: Js<'e>, _: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
        rig.borrow_mut().overflow();
        Ok(js.undefined())
    }
    fn counted<'e>(rig: &Rig, js: Js<'e>, _: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
        js.to_value(rig.borrow_mut().counted() as u32)
    }
    o.set_named_property("lend", function(js, c"lend", rig.clone(), lend)?)?;
    o.set_named_property("pull", function(js, c"pull", rig.clone(), pull)?)?;
    o.set_named_property("overflow", function(js, c"overflow", rig.clone(), overflow)?)?;
    o.set_named_property("counted", function(js, c"counted", rig, counted)?)?;
    Ok(o)
}

/// `lib/stream.js`'s `clientStream(pull, stop, stopped, counters, layout)`.
type MakeStream<'e> =
    Function<'e, FnArgs<(Unknown<'e>, Unknown<'e>, Unknown<'e>, Unknown<'e>, Object<'e>)>, Object<'e>>;

/// The client's own stream, made once: `{ events, settle }`.
fn queue<'e>(ctx: &Rc<Ctx>, js: Js<'e>) -> napi::Result<()> {
    if ctx.state.borrow().queue.is_some() {
        return Ok(());
    }
    let make: MakeStream<'e> = Function::from_unknown(ctx.env.js_fn(js, "clientStream")?)?;
    let pull = function(js, c"pull", Rc::downgrade(ctx), on_pull)?;
    let stop = function(js, c"stop", Rc::downgrade(ctx), on_stop)?;
    let stopped = function(js, c"stopped", Rc::downgrade(ctx), on_stopped)?;
    let (buffer, layout) = counters(ctx, js)?;
    let made = make.call((pull, stop, stopped, buffer, layout).into())?;
    let refs = |name: &str| -> napi::Result<OwnedRef> {
        OwnedRef::new(js, &ctx.env.life, &made.get_named_property::<Unknown>(name)?, true)
    };
    let q = QueueRefs { events: refs("events")?, settle: refs("settle")? };
    ctx.state.borrow_mut().queue = Some(q);
    Ok(())
}

/// A new loop over the client's own stream (every one reads the same
/// stream), bounded by its options' signal and timeout; options that were
/// refused make a loop that throws their error.
pub fn events<'e>(ctx: &Rc<Ctx>, js: Js<'e>, options: Result<CallOptions<'e>, KomaError>) -> napi::Result<Unknown<'e>> {
    queue(ctx, js)?;
    let make = {
        let st = ctx.state.borrow();
        st.queue.as_ref().expect("made above").events.value(js)?
    };
    let (mut signal, mut timeout, mut refused) = (js.undefined(), js.undefined(), js.undefined());
    match options {
        Ok(CallOptions { signal: s, timeout: t }) => {
            if let Some(s) = s {
                signal = s.to_unknown();
            }
            if let Some(t) = t {
                timeout = js.to_value(t)?;
            }
        }
        Err(e) => refused = coded_error(js, &e, None, None)?,
    }
    let make: Function<'e, FnArgs<(Unknown<'e>, Unknown<'e>, Unknown<'e>)>, Unknown<'e>> =
        Function::from_unknown(make)?;
    make.call(FnArgs::from((signal, timeout, refused)))
}

/// What a stream's `take` gives JavaScript: a batch (a flat array `[seq,
/// name, data, size, ...]` parsed by one JSON.parse, its long strings put
/// back), the overflow report, `undefined` (nothing now) or `null` (the
/// end). Throws the stream's failure.
pub fn take_value<'e>(ctx: &Ctx, js: Js<'e>, taken: Take) -> napi::Result<Unknown<'e>> {
    match taken {
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
        Take::Empty => Ok(js.undefined()),
        Take::Ended(End::Finished) => js.to_value(napi::bindgen_prelude::Null),
        Take::Ended(End::Failed(e)) => {
            let err = coded_error(js, &e, None, None)?;
            js.env().throw(err)?;
            Err(napi::Error::new(napi::Status::PendingException, e.message))
        }
    }
}

/// `pull()` of the client's own stream (`undefined`: a wake calls `settle`).
fn pull<'e>(ctx: &Ctx, js: Js<'e>) -> napi::Result<Unknown<'e>> {
    let taken = ctx.conn.take_events(true);
    if taken == Take::Empty {
        ctx.state.borrow_mut().events_waiting = true;
        ctx.update_hold(js);
    }
    take_value(ctx, js, taken)
}

/// Events are ready (or the end): let a waiting loop take them.
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

/// No loop waits on the client's own stream any more.
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

/// `stopped(how, value)`: the error that ends a loop over `events()` (the
/// core's words): `how` "signal", its signal aborted with the reason
/// `value` (kept as the error's cause); "deadline", its timeout of `value`
/// milliseconds passed.
fn on_stopped<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    let value = args.get(1).copied().filter(|v| kind(v) != ValueType::Undefined);
    let e = match args.first().copied().and_then(as_string).as_deref() {
        Some("deadline") => {
            let ms = value.and_then(|v| f64::from_unknown(v).ok()).unwrap_or(0.0);
            let wording = ctx.upgrade().map(|c| c.conn.wording()).unwrap_or_default();
            deadline_error("events", Stopped::Loop, duration(ms), &wording)
        }
        _ => {
            let why = Why::Signal { reason: value.and_then(|r| reason_name(js, r)) };
            return coded_error(js, &why.error("events", Stopped::Loop), None, value);
        }
    };
    coded_error(js, &e, None, None)
}
