//! The call layer: a call from JavaScript becomes a promise, its options are
//! read (`options.rs`), its params are stringified, and its `abort` listener
//! is attached before anything is written (if attaching fails, nothing is).
//! The client's methods and a Turn's `interrupt()` call through here.

use std::rc::{Rc, Weak};

use koma_transport::stop::{Stopped, Why};
use koma_transport::{ErrorCode, KomaError};
use napi::bindgen_prelude::Unknown;
use napi::ValueType;

use crate::abort::{aborted, AbortListener};
use crate::context::{Call, Ctx};
use crate::handles::{Deferred, Js};
use crate::options::{call_options, duration, CallOptions};
use crate::values::{as_string, is_nullish, kind, thrown};

/// How a call started.
pub enum Started<'e> {
    /// Its completion will come for its token.
    Waiting,
    /// Settled at once with this value.
    Now(Unknown<'e>),
}

/// A promise rejected now with `e`.
pub fn rejected<'e>(js: Js<'e>, ctx: &Ctx, e: &KomaError) -> napi::Result<Unknown<'e>> {
    let (d, p) = Deferred::new(js, &ctx.env.life)?;
    d.reject_with(js, e, None, None);
    Ok(p)
}

/// Make a call: its promise and (if it has a signal) its abort listener
/// first, then `start(token)`, which writes it or rejects it locally.
pub fn call<'e>(
    ctx: &Rc<Ctx>,
    js: Js<'e>,
    what: &str,
    opts: &CallOptions<'e>,
    start: impl FnOnce(u64) -> Result<Started<'e>, KomaError>,
) -> napi::Result<Unknown<'e>> {
    let (deferred, promise) = Deferred::new(js, &ctx.env.life)?;
    if let Some((why, reason)) = opts.signal.as_ref().and_then(|s| aborted(js, s)) {
        deferred.reject_with(js, &why.error(what, Stopped::Call), None, reason);
        return Ok(promise);
    }
    let token = ctx.conn.token();
    let abort = match &opts.signal {
        None => None,
        Some(signal) => {
            let data = AbortData { ctx: Rc::downgrade(ctx), token };
            match AbortListener::attach(js, &ctx.env, signal, c"onabort", data, on_abort) {
                Ok(a) => Some(a),
                Err(why) => {
                    let e = KomaError::new(
                        ErrorCode::InvalidParams,
                        format!("{what}: could not listen to `signal` ({why}); `{what}` was not sent"),
                    );
                    deferred.reject_with(js, &e, None, None);
                    return Ok(promise);
                }
            }
        }
    };
    match start(token) {
        Err(e) => {
            if let Some(a) = abort {
                a.remove(js, &ctx.env);
            }
            deferred.reject_with(js, &e, None, None);
        }
        Ok(Started::Now(v)) => {
            if let Some(a) = abort {
                a.remove(js, &ctx.env);
            }
            deferred.resolve(js, v);
        }
        Ok(Started::Waiting) => {
            ctx.state.borrow_mut().calls.insert(token, Call { deferred, what: what.to_owned(), abort });
            ctx.update_hold(js);
        }
    }
    Ok(promise)
}

struct AbortData {
    ctx: Weak<Ctx>,
    token: u64,
}

fn on_abort<'e>(data: &AbortData, js: Js<'e>, _args: &[Unknown<'e>]) -> napi::Result<Unknown<'e>> {
    let Some(ctx) = data.ctx.upgrade() else { return Ok(js.undefined()) };
    let call = ctx.state.borrow_mut().calls.remove(&data.token);
    if let Some(call) = call {
        ctx.conn.abandon(data.token);
        let aborted = call.abort.as_ref().and_then(|a| a.signal(js)).and_then(|s| aborted(js, &s));
        let (why, reason) = aborted.unwrap_or((Why::Signal { reason: None }, None));
        if let Some(a) = call.abort {
            a.remove(js, &ctx.env);
        }
        call.deferred.reject_with(js, &why.error(&call.what, Stopped::Call), None, reason);
        ctx.update_hold(js);
    }
    Ok(js.undefined())
}

/// Send a method of the protocol (or any in hello's capabilities) with its
/// params and options, as every method of the client does.
pub fn send<'e>(
    ctx: &Rc<Ctx>,
    js: Js<'e>,
    method: &str,
    params: Option<Unknown<'e>>,
    options: Option<Unknown<'e>>,
) -> napi::Result<Unknown<'e>> {
    let opts = match call_options(js, method, options) {
        Ok(o) => o,
        Err(e) => return rejected(js, ctx, &e),
    };
    let params = match params.map(|p| stringify(ctx, js, p, method)).transpose() {
        Ok(p) => p.flatten(),
        Err(e) => return rejected(js, ctx, &e),
    };
    let timeout = opts.timeout.map(duration);
    call(ctx, js, method, &opts, |token| {
        ctx.conn.request(token, method, params.as_deref(), timeout).map(|()| Started::Waiting)
    })
}

/// `JSON.stringify(params)`; `undefined` and `null` give no params.
pub fn stringify(ctx: &Ctx, js: Js, v: Unknown, method: &str) -> Result<Option<String>, KomaError> {
    let fail = |why: &str| KomaError::new(ErrorCode::InvalidParams, format!("{method}: {why}"));
    if is_nullish(&v) {
        return Ok(None);
    }
    if kind(&v) != ValueType::Object {
        return Err(fail("params must be an object"));
    }
    let stringify = ctx.env.json_stringify(js).map_err(|_| fail("JSON is not available"))?;
    match stringify.call(v) {
        Ok(s) => as_string(s).map(Some).ok_or_else(|| fail("params cannot be sent as JSON")),
        Err(e) => {
            let why = thrown(js, e);
            Err(fail(&format!("params cannot be sent as JSON (a BigInt or a cycle?): {why}")))
        }
    }
}
