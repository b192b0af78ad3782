//! OpenTelemetry's route through the Node binding. `lib/telemetry.js` makes
//! every API call; the core decides what they say (`koma_transport::telemetry`).
//! This file only carries: a client's telemetry object is made (by the JavaScript half's
//! `makeTelemetry`) when the client is, the notes of its life go to it with
//! each wake, the core's table goes to `lib/telemetry.js`, and the trace
//! context koma is started with comes back from it (`Client.__traceContext`).

use koma_transport::connection::client_note;
use koma_transport::telemetry::{table, TraceContext};
use koma_transport::TraceRecord;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, JsValue, Object, Unknown};
use napi_derive::napi;

use crate::context::Ctx;
use crate::env::EnvData;
use crate::handles::{text, Js, OwnedRef};
use crate::values::is_nullish;

/// The core's table (`koma_transport::telemetry::table`), for `lib/telemetry.js`.
#[napi(js_name = "__telemetryTable", skip_typescript)]
pub fn telemetry_table() -> &'static str {
    table()
}

/// The providers `new Client` was given (content is the core's: `ConnectionOptions::telemetry`).
pub struct Wanted<'e> {
    pub tracer_provider: Option<Object<'e>>,
    pub meter_provider: Option<Object<'e>>,
}

/// The client's telemetry object, or `None` when nothing is traced (no
/// `@opentelemetry/api`, no provider registered or given). A JavaScript half that
/// throws leaves the client untraced: telemetry never fails a client.
pub fn make<'e>(js: Js<'e>, env: &EnvData, client: &Object<'e>, wanted: Wanted<'e>) -> Option<OwnedRef> {
    let made = || -> napi::Result<Option<OwnedRef>> {
        type Make<'a> = Function<'a, FnArgs<(Unknown<'a>, Unknown<'a>, Unknown<'a>)>, Unknown<'a>>;
        let f: Make<'e> = Function::from_unknown(env.js_fn(js, "makeTelemetry")?)?;
        let provider = |p: Option<Object<'e>>| p.map_or_else(|| js.undefined(), |p| p.to_unknown());
        let args = (client.to_unknown(), provider(wanted.tracer_provider), provider(wanted.meter_provider));
        let t = f.call(args.into())?;
        if is_nullish(&t) {
            return Ok(None);
        }
        Ok(Some(OwnedRef::new(js, &env.life, &t, true)?))
    };
    made().unwrap_or_else(|_| {
        let _ = js.take_exception();
        None
    })
}

/// Hand the notes among `records` to the client's telemetry object, as one
/// JSON text (`[note, ...]`, each the core's `client_note`).
pub fn notes(ctx: &Ctx, js: Js, records: &[TraceRecord]) {
    let notes: Vec<String> = records.iter().filter_map(client_note).collect();
    if notes.is_empty() {
        return;
    }
    let target = ctx.state.borrow().telemetry.as_ref().and_then(|t| t.value(js).ok());
    let Some(target) = target else { return };
    let handed = || -> napi::Result<()> {
        let o = Object::from_unknown(target)?;
        let f: Function<Unknown, Unknown> = o.get_named_property("notes")?;
        let json = format!("[{}]", notes.join(","));
        f.apply(o, text(js, json.as_bytes())?)?;
        Ok(())
    };
    if handed().is_err() {
        let _ = js.take_exception(); // never let telemetry fail a delivery
    }
}

/// `Client.__traceContext(traceId, spanId, flags, traceState)`: koma is to
/// be started with this context, if it has not been started.
pub fn trace_context(ctx: &Ctx, trace_id: &str, span_id: &str, flags: u32, trace_state: &str) -> bool {
    let flags = u8::try_from(flags).unwrap_or(0);
    TraceContext::new(trace_id, span_id, flags, trace_state).is_some_and(|c| ctx.conn.trace_context(c))
}
