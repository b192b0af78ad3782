//! The turn layer's entry in JavaScript: `client.turn()` and `client.run()`.
//! The core runs each turn (`koma_transport::turns`); this file reads the
//! options into the core's spec, has `lib/turn.js` make the Turn object (with
//! `ops`, the functions it calls), opens the turn in the core, and hands the
//! core's news for it to the Turn.

use std::rc::{Rc, Weak};

use koma_transport::stop::Why;
use koma_transport::turns::{Answer, ApprovalOption, Cause, Decision, Entry, TurnSpec, TurnUpdate};
use koma_transport::KomaError;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, JsValue, Null, Object, Unknown};

use crate::abort::{aborted, reason_name};
use crate::call::{call, stringify, Started};
use crate::context::Ctx;
use crate::handles::{coded_error, function, put_lifted, text, Js, OwnedRef};
use crate::options::{duration, turn_options, CallOptions, TurnArgs};
use crate::stream::{counters, take_value};
use crate::values::{as_string, is_nullish};

/// `lib/turn.js`'s `makeTurn(ops, key, what, handler, signal, stopped)`.
type MakeTurn<'e> =
    Function<'e, FnArgs<(Unknown<'e>, f64, &'e str, Unknown<'e>, Unknown<'e>, Unknown<'e>)>, Object<'e>>;
/// A Turn's `news(kind, a, b, c, d, e)`.
type News<'e> =
    Function<'e, FnArgs<(&'e str, Unknown<'e>, Unknown<'e>, Unknown<'e>, Unknown<'e>, Unknown<'e>)>, Unknown<'e>>;

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
    let news: Unknown = made.get_named_property("news")?;
    ctx.state.borrow_mut().turns.insert(key, OwnedRef::new(js, &ctx.env.life, &news, true)?);
    ctx.update_hold(js);
    if let Err(e) = ctx.conn.open_turn(key, spec) {
        // Refused before the core could hold it (a client made before fork()).
        let result = koma_transport::turns::unstarted_result();
        let error = Some(koma_transport::turns::TurnError { error: e, cause: Cause::Client });
        deliver(ctx, js, key, TurnUpdate::Ended { result, error, telemetry: None });
    }
    made.get_named_property(if entry == Entry::Turn { "turn" } else { "result" })
}

/// Hand the core's news of turn `key` to its Turn.
pub fn deliver(ctx: &Ctx, js: Js, key: u64, news: TurnUpdate) {
    let ended = matches!(news, TurnUpdate::Ended { .. });
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
        let f: News<'_> = Function::from_unknown(target)?;
        let u = js.undefined();
        let args = match news {
            TurnUpdate::Id(id) => ("id", js.to_value(id.as_str())?, u, u, u, u),
            TurnUpdate::Approval { approval, data } => {
                let value = ctx.env.parse(js, data.text())?;
                let value = put_lifted(js, value, data.lifts)?;
                ("approval", js.to_value(approval.as_str())?, value, u, u, u)
            }
            TurnUpdate::Ready => ("ready", u, u, u, u, u),
            TurnUpdate::Ended { result, error, telemetry } => {
                let value = ctx.env.parse(js, result.text())?;
                let value = put_lifted(js, value, result.lifts)?;
                // A traced turn's record, for `lib/telemetry.js` (JSON text).
                let record = match telemetry {
                    Some(t) => text(js, t.as_bytes())?,
                    None => u,
                };
                match error {
                    None => ("ended", value, u, u, u, record),
                    Some(e) => {
                        let parse = ctx.env.json_parse(js).ok();
                        let err = coded_error(js, &e.error, parse.as_ref(), None)?;
                        let (cause, approval) = match &e.cause {
                            Cause::Handler(a) => (js.to_value("handler")?, js.to_value(a.as_str())?),
                            Cause::Stop => (js.to_value("stop")?, u),
                            Cause::Client => (u, u),
                        };
                        ("ended", value, err, cause, approval, record)
                    }
                }
            }
        };
        f.call(args.into())?;
        Ok(())
    };
    if call().is_err() {
        let _ = js.take_exception(); // the Turn's own code does not throw; a conversion that failed leaves it waiting
    }
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
    o.set_named_property("release", function(js, c"release", weak(), on_release)?)?;
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

fn on_answer<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        let value = string_arg(args, 3);
        let answer = match string_arg(args, 2).as_str() {
            "decision" => match Decision::parse(&value) {
                Some(d) => Answer::Decision(d),
                None => Answer::Other(value),
            },
            "failed" => Answer::Failed(value),
            _ => Answer::Other(value),
        };
        ctx.conn.answer_approval(key_of(args), &string_arg(args, 1), answer);
    }
    Ok(js.undefined())
}

fn on_release<'e>(ctx: &Weak<Ctx>, js: Js<'e>, args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    if let Some(ctx) = ctx.upgrade() {
        ctx.conn.release_turn(key_of(args));
    }
    Ok(js.undefined())
}
