//! The turn layer's entry: `client.turn()` and `client.run()` read their
//! options here (`options.rs`, the one check) and hand the turn layer
//! (`turn.js`, compiled once per environment) what it works with: the call
//! layer's `send` and the event queue's router. The Turn objects it makes
//! are plain JavaScript; nothing of them comes back through the addon.

use std::rc::Rc;

use koma_transport::KomaError;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, JsValuesTupleIntoVec, Object, Unknown};

use crate::call::{rejected, send_function};
use crate::context::Ctx;
use crate::handles::{coded_error, Js};
use crate::options::turn_options;
use crate::stream::router;
use crate::types::TurnOptions;

const TURN_JS: &str = include_str!("turn.js");

/// The turn layer's function `name` (`makeTurn`, `failedTurn`, `run`).
fn layer<'e, A: JsValuesTupleIntoVec>(ctx: &Ctx, js: Js<'e>, name: &str) -> napi::Result<Function<'e, A, Unknown<'e>>> {
    let layer = Object::from_unknown(ctx.env.script(js, "turn.js", TURN_JS)?)?;
    layer.get_named_property(name)
}

/// Start a turn with the turn layer's `name` (`makeTurn` or `run`).
fn start<'e>(
    ctx: &Rc<Ctx>,
    js: Js<'e>,
    name: &str,
    params: Option<Unknown<'e>>,
    o: TurnOptions<'e>,
) -> napi::Result<Unknown<'e>> {
    let params = params.unwrap_or_else(|| js.undefined());
    let args = (send_function(ctx, js)?, router(ctx, js)?, params, options_object(js, o)?);
    layer::<FnArgs<_>>(ctx, js, name)?.call(args.into())
}

/// The options as turn.js reads them: `{ mode, onApproval, signal, timeout }`.
fn options_object<'e>(js: Js<'e>, o: TurnOptions<'e>) -> napi::Result<Object<'e>> {
    let mut obj = Object::new(&js.env())?;
    obj.set_named_property("mode", o.mode.as_deref().unwrap_or("submit"))?;
    if let Some(f) = o.on_approval {
        obj.set_named_property("onApproval", f)?;
    }
    if let Some(s) = o.signal {
        obj.set_named_property("signal", s)?;
    }
    if let Some(ms) = o.timeout {
        obj.set_named_property("timeout", ms)?;
    }
    Ok(obj)
}

/// The turn layer's two entries.
#[derive(Clone, Copy)]
pub enum Entry {
    /// `client.turn(params, options)`: a Turn.
    Turn,
    /// `client.run(params, options)`: a promise of the drained turn's result.
    Run,
}

/// Enter the turn layer. Bad options give a Turn whose promises reject
/// (`turn()`), or a rejected promise (`run()`).
pub fn enter<'e>(
    entry: Entry,
    ctx: &Rc<Ctx>,
    js: Js<'e>,
    params: Option<Unknown<'e>>,
    options: Option<Unknown<'e>>,
) -> napi::Result<Unknown<'e>> {
    let (what, name) = match entry {
        Entry::Turn => ("turn", "makeTurn"),
        Entry::Run => ("run", "run"),
    };
    match (turn_options(js, what, options), entry) {
        (Ok(o), _) => start(ctx, js, name, params, o),
        (Err(e), Entry::Turn) => failed(ctx, js, &e),
        (Err(e), Entry::Run) => rejected(js, ctx, &e),
    }
}

/// A Turn that failed before it started: its promises reject with `e`, and so does its iterator.
fn failed<'e>(ctx: &Rc<Ctx>, js: Js<'e>, e: &KomaError) -> napi::Result<Unknown<'e>> {
    let args = (router(ctx, js)?, coded_error(js, e, None, None)?);
    layer::<FnArgs<_>>(ctx, js, "failedTurn")?.call(args.into())
}
