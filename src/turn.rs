//! The turn layer's entry in JavaScript: `client.turn()` and `client.run()`.
//! The core runs each turn (`koma_transport::turns`); this file reads the
//! options into the core's spec, has `lib/turn.js` make the Turn object (with
//! `ops`, the functions it calls), opens the turn in the core, and hands the
//! core's updates for it to the Turn, each as an object of its kind (the
//! `TurnUpdate` of `lib/turn.js`).

use std::rc::{Rc, Weak};

use koma_transport::stop::Why;
use koma_transport::turns::{Answer, ApprovalOption, Cause, Entry, TurnEnd, TurnSpec, TurnUpdate};
use koma_transport::KomaError;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, JsValue, Null, Object, Unknown};

use crate::abort::{aborted, reason_name};
use crate::call::{call, stringify, Started};
use crate::context::Ctx;
use crate::handles::{coded_error, function, on_collect, put_lifted, text, Js, OwnedRef};
use crate::options::{duration, turn_options, CallOptions, TurnArgs};
use crate::stream::{counters, take_value};
use crate::values::{as_string, is_nullish};

/// `lib/turn.js`'s `makeTurn(ops, key, what, handler, signal, stopped)`.
type MakeTurn<'e> =
    Function<'e, FnArgs<(Unknown<'e>, f64, &'e str, Unknown<'e>, Unknown<'e>, Unknown<'e>)>, Object<'e>>;
/// A Turn's `update(u)`, `u` a `TurnUpdate` of `lib/turn.js`.
type Update<'e> = Function<'e, Unknown<'e>, Unknown<'e>>;

/// Start a turn (`Entry::Turn`: a Turn; `Entry::Run`: the promise of its
/// result). Whatever is wrong with the params or options fails the turn
/// itself (its promises reject, its loop throws), as the core decides.
pub fn enter<'e>(
    entry: Entry,
    ctx: &Rc<Ctx>,
    js: Js<'e>,
    params: Option<Unknown<'e>>,
    options: Option<Unknown<'e>>,
) -> napi::Result<Unknown<'e>> {
    let what = match entry {
        Entry::Turn => "turn",
        Entry::Run => "run",
    };
    let key = ctx.conn.token();
    let mut spec = TurnSpec {
        entry,
        params: None,
        mode: None,
        approvals: ApprovalOption::None,
        timeout: None,
        stopped: None,
        refused: None,
    };
    let args = turn_options(js, what, options);
    let params = params.filter(|p| !is_nullish(p)).map(|p| stringify(ctx, js, p, what)).transpose();
    let (mut handler, mut signal, mut stopped) = (js.undefined(), js.undefined(), js.undefined());
    match (args, params) {
        (Err(e), _) | (_, Err(e)) => spec.refused = Some(e),
        (Ok(TurnArgs { mode, approvals, handler: h, signal: s, timeout }), Ok(p)) => {
            spec.params = p.flatten();
            spec.mode = mode;
            spec.approvals = approvals;
            spec.timeout = timeout.map(duration);
            if let Some(h) = h {
                handler = h;
            }
            if let Some(s) = s {
                if let Some((why, reason)) = aborted(js, &s) {
                    spec.stopped = Some(why);
                    let mut o = Object::new(&js.env())?;
                    o.set_named_property("reason", reason.unwrap_or_else(|| js.undefined()))?;
                    stopped = o.to_unknown();
                } else {
                    signal = s.to_unknown();
                }
            }
        }
    }
    let make: MakeTurn<'e> = Function::from_unknown(ctx.env.js_fn(js, "makeTurn")?)?;
    let made = make.call((ops(ctx, js)?, key as f64, what, handler, signal, stopped).into())?;
    if entry == Entry::Turn {
        // A Turn the program dropped: the core forgets its side (its events
        // go on to `events()`), through Node-API's finalizer (see
        // handles/finalizer.rs for why not a FinalizationRegistry).
        let turn: Object = made.get_named_property("turn")?;
        on_collect(js, &turn, (Rc::downgrade(ctx), key), |(ctx, key)| {
            if let Some(ctx) = ctx.upgrade() {
                ctx.conn.release_turn(key);
            }
        })?;
    }
    let update: Unknown = made.get_named_property("update")?;
    ctx.state.borrow_mut().turns.insert(key, OwnedRef::new(js, &ctx.env.life, &update, true)?);
    ctx.update_hold(js);
    if let Err(end) = ctx.conn.open_turn(key, spec) {
        // Refused before the core could hold it (closed, failed, or made before fork()).
        deliver(ctx, js, key, TurnUpdate::Ended(*end));
    }
    made.get_named_property(if entry == Entry::Turn { "turn" } else { "result" })
}

/// Hand the core's update of turn `key` to its Turn.
pub fn deliver(ctx: &Ctx, js: Js, key: u64, update: TurnUpdate) {
    let ended = matches!(update, TurnUpdate::Ended(_));
    let target = {
        let mut st = ctx.state.borrow_mut();
        if ended {
            st.turns.remove(&key).and_then(|r| r.value(js).ok())
        } else {
            st.turns.get(&key).and_then(|r| r.value(js).ok())
        }
    };
    if ended {
        ctx.update_hold(js);
    }
    let Some(target) = target else { return }; // the Turn is gone
    let call = || -> napi::Result<()> {
        let f: Update<'_> = Function::from_unknown(target)?;
        f.call(update_object(ctx, js, update)?)?;
        Ok(())
    };
    if call().is_err() {
        let _ = js.take_exception(); // the Turn's own code does not throw; a conversion that failed leaves it waiting
    }
}

/// An update as the object of its kind: `{kind: "id", id}`, `{kind:
/// "approval", approval, request}`, `{kind: "ready"}`, `{kind: "ended",
/// result, failure, record}` (see `lib/turn.js`).
fn update_object<'e>(ctx: &Ctx, js: Js<'e>, update: TurnUpdate) -> napi::Result<Unknown<'e>> {
    let mut o = Object::new(&js.env())?;
    match update {
        TurnUpdate::Id(id) => {
            o.set_named_property("kind", "id")?;
            o.set_named_property("id", id.as_str())?;
        }
        TurnUpdate::Approval(asked) => {
            let request = ctx.env.parse(js, asked.data.text())?;
            o.set_named_property("kind", "approval")?;
            o.set_named_property("approval", asked.approval.as_str())?;
            o.set_named_property("request", put_lifted(js, request, asked.data.lifts)?)?;
        }
        TurnUpdate::Ready => o.set_named_property("kind", "ready")?,
        TurnUpdate::Ended(end) => ended_object(ctx, js, &mut o, end)?,
    }
    Ok(o.to_unknown())
}

fn ended_object<'e>(ctx: &Ctx, js: Js<'e>, o: &mut Object<'e>, end: TurnEnd) -> napi::Result<()> {
    let TurnEnd { result, error, telemetry } = end;
    let value = ctx.env.parse(js, result.text())?;
    o.set_named_property("kind", "ended")?;
    o.set_named_property("result", put_lifted(js, value, result.lifts)?)?;
    if let Some(e) = error {
        let parse = ctx.env.json_parse(js).ok();
        let mut failure = Object::new(&js.env())?;
        failure.set_named_property("error", coded_error(js, &e.error, parse.as_ref(), None)?)?;
        let cause = match &e.cause {
            Cause::Client => "client",
            Cause::Handler(approval) => {
                failure.set_named_property("approval", approval.as_str())?;
                "handler"
            }
            Cause::Stop => "stop",
        };
        failure.set_named_property("cause", cause)?;
        failure.set_named_property("failsId", e.fails_id)?;
        o.set_named_property("failure", failure)?;
    }
    // A traced turn's record, for `lib/telemetry.js` (JSON text).
    if let Some(t) = telemetry {
        o.set_named_property("record", text(js, t.as_bytes())?)?;
    }
    Ok(())
}

/// What a Turn calls, made once per client (see `lib/turn.js`'s `Ops`).
fn ops<'e>(ctx: &Rc<Ctx>, js: Js<'e>) -> napi::Result<Unknown<'e>> {
    if let Some(r) = ctx.state.borrow().ops.as_ref() {
        return r.value(js);
    }
    let weak = || Rc::downgrade(ctx);
    let mut o = Object::new(&js.env())?;
    o.set_named_property("take", function(js, c"take", weak(), on_take)?)?;
    o.set_named_property("read", function(js, c"read", weak(), on_read)?)?;
    o.set_named_property("stop", function(js, c"stop", weak(), on_stop)?)?;
    o.set_named_property("interrupt", function(js, c"interrupt", weak(), on_interrupt)?)?;
    o.set_named_property("answer", function(js, c"answer", weak(), on_answer)?)?;
    o.set_named_property("failed", function(js, c"failed", weak(), on_failed)?)?;
    let (buffer, layout) = counters(ctx, js)?;
    o.set_named_property("counters", buffer)?;
    o.set_named_property("layout", layout)?;
    // The client's OpenTelemetry object, when it is traced (`lib/telemetry.js`).
    let telemetry = ctx.state.borrow().telemetry.as_ref().map(|t| t.value(js)).transpose()?;
    if let Some(t) = telemetry {
        o.set_named_property("telemetry", t)?;
    }
    let o = o.to_unknown();
    ctx.state.borrow_mut().ops = Some(OwnedRef::new(js, &ctx.env.life, &o, true)?);
    Ok(o)
}

fn key_of(args: &[Unknown]) -> u64 {
    args.first().and_then(|v| f64::from_unknown(*v).ok()).map_or(0, |k| k as u64)
}

fn string_arg(args: &[Unknown], i: usize) -> String {
    args.get(i).copied().and_then(as_string).unwrap_or_default()
}

fn on_take<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    match ctx.upgrade() {
        Some(ctx) => take_value(&ctx, js, ctx.conn.take_turn_events(key_of(args), true)),
        None => js.to_value(Null),
    }
}

fn on_read<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        let reading = args.get(1).and_then(|v| bool::from_unknown(*v).ok()).unwrap_or(false);
        ctx.conn.read_turn(key_of(args), reading);
    }
    Ok(js.undefined())
}

/// `stop(key, reason)`: the Turn's signal aborted with `reason`.
fn on_stop<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        let reason = args.get(1).copied().and_then(|r| reason_name(js, r));
        ctx.conn.stop_turn(key_of(args), &Why::Signal { reason });
    }
    Ok(js.undefined())
}

fn on_interrupt<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    let Some(ctx) = ctx.upgrade() else { return js.to_value(Null) };
    let key = key_of(args);
    let none = CallOptions { signal: None, timeout: None };
    call(&ctx, js, "interrupt", &none, |token| {
        Ok::<_, KomaError>(if ctx.conn.interrupt_turn(key, token) {
            Started::Now(js.undefined())
        } else {
            Started::Waiting
        })
    })
}

/// `answer(key, approval, returned, shown)`: what `onApproval` returned (or
/// its promise resolved to), and that value as JavaScript writes it. The core
/// judges whether it is a decision.
fn on_answer<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        let text = args.get(2).copied().and_then(as_string);
        let answer = Answer::Returned { text, shown: string_arg(args, 3) };
        ctx.conn.answer_approval(key_of(args), &string_arg(args, 1), answer);
    }
    Ok(js.undefined())
}

/// `failed(key, approval, message)`: `onApproval` threw or rejected.
fn on_failed<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        let answer = Answer::Failed(string_arg(args, 2));
        ctx.conn.answer_approval(key_of(args), &string_arg(args, 1), answer);
    }
    Ok(js.undefined())
}
