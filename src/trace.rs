//! The trace records a client's connection keeps for JavaScript, published
//! on the `koma-sdk:trace` diagnostics channel by `lib/trace.js`. The core
//! queues them only for a client made while the channel had subscribers, or
//! from its first wake after one came (the channel is asked once per wake
//! while a client of that wake keeps nothing: never per frame); one wake
//! hands over its records as one JSON text (one `JSON.parse`), and nothing
//! is done per record in JavaScript unless the channel still has
//! subscribers.

use std::rc::Rc;

use koma_transport::{TraceKinds, TraceRecord};
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, Unknown};

use crate::context::Ctx;
use crate::env::EnvData;
use crate::handles::{text, Js};

/// Whether the channel has subscribers now (asked once per client, when it is made).
pub fn subscribed(js: Js, env: &EnvData) -> bool {
    let asked = || -> napi::Result<bool> {
        let f: Function<(), bool> = Function::from_unknown(env.js_fn(js, "traceSubscribed")?)?;
        f.call(())
    };
    asked().unwrap_or_else(|_| {
        let _ = js.take_exception();
        false
    })
}

/// A subscriber may have come since some of `ctxs` were made: if the
/// channel has one now, those clients keep their trace from this wake on
/// (asked once per wake, and only while one of them keeps nothing).
pub fn follow_subscribers(js: Js, env: &EnvData, ctxs: &[Rc<Ctx>]) {
    if ctxs.iter().all(|c| c.traced.get()) || !subscribed(js, env) {
        return;
    }
    for ctx in ctxs {
        keep(ctx);
    }
}

/// The client keeps its trace from now on (a subscriber came after it was
/// made: `index.js` asks before each call, and each wake asks above).
pub fn keep(ctx: &Ctx) {
    if !ctx.traced.get() {
        ctx.conn.keep_trace(TraceKinds::ALL);
        ctx.traced.set(true);
    }
}

/// Publish what the client's connection kept since the last wake (called
/// after its completions were drained, in the same wake); the notes also go
/// to the client's OpenTelemetry object, if it has one.
pub fn publish(ctx: &Ctx, js: Js) {
    let records = ctx.conn.take_trace();
    if records.is_empty() {
        return;
    }
    if ctx.telemetry {
        crate::telemetry::notes(ctx, js, &records);
    }
    if !ctx.traced.get() {
        return;
    }
    let published = || -> napi::Result<()> {
        let f: Function<FnArgs<(Unknown, Unknown)>, Unknown> =
            Function::from_unknown(ctx.env.js_fn(js, "publishTrace")?)?;
        let client = ctx.client_object(js).unwrap_or_else(|| js.undefined());
        let json = text(js, &records_json(&records))?;
        f.call((client, json).into())?;
        Ok(())
    };
    if published().is_err() {
        // Never let the trace fail a delivery.
        let _ = js.take_exception();
    }
}

/// `[[pid, kind, direction, text], ...]` (`pid` and `direction` may be null).
fn records_json(records: &[TraceRecord]) -> Vec<u8> {
    let rows: Vec<_> = records.iter().map(|r| (r.pid, r.kind(), r.direction().map(|d| d.name()), r.text())).collect();
    serde_json::to_vec(&rows).unwrap_or_else(|_| b"[]".to_vec())
}
