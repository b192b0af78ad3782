//! A call from JavaScript: its options (`{signal?, timeout?}`), its promise,
//! and the abort listener on its signal. The listener is attached before the
//! request is written: if attaching fails, nothing is written.

use std::rc::{Rc, Weak};
use std::time::Duration;

use koma_transport::{ErrorCode, KomaError};
use napi::sys;

use crate::delivery::{Call, Ctx};
use crate::handles::{function, Deferred, OwnedRef};
use crate::js::{Js, Value};

/// What a call's optional last argument holds.
pub struct CallOpts {
    pub signal: Option<Value>,
    pub timeout: Option<Duration>,
}

impl CallOpts {
    pub const NONE: CallOpts = CallOpts { signal: None, timeout: None };

    pub fn parse(js: Js, v: Option<Value>) -> Result<CallOpts, KomaError> {
        let bad = |why: &str| KomaError::new(ErrorCode::InvalidParams, format!("options: {why}"));
        let mut opts = CallOpts::NONE;
        let Some(v) = v else { return Ok(opts) };
        if js.is_nullish(v).unwrap_or(true) {
            return Ok(opts);
        }
        if js.type_of(v).ok() != Some(sys::ValueType::napi_object) {
            return Err(bad("must be an object { signal?, timeout? }"));
        }
        let signal = js.get(v, "signal").map_err(|_| bad("unreadable signal"))?;
        if !js.is_nullish(signal).unwrap_or(true) {
            let add = js.get(signal, "addEventListener").ok();
            let is_fn = add.and_then(|f| js.type_of(f).ok()) == Some(sys::ValueType::napi_function);
            if js.type_of(signal).ok() != Some(sys::ValueType::napi_object) || !is_fn {
                return Err(bad("`signal` must be an AbortSignal"));
            }
            opts.signal = Some(signal);
        }
        let timeout = js.get(v, "timeout").map_err(|_| bad("unreadable timeout"))?;
        if !js.is_nullish(timeout).unwrap_or(true) {
            if js.type_of(timeout).ok() != Some(sys::ValueType::napi_number) {
                return Err(bad("`timeout` must be a number of milliseconds"));
            }
            let ms = js.get_f64(timeout).map_err(|_| bad("bad timeout"))?;
            if !(ms >= 0.0 && ms.is_finite()) {
                return Err(bad("`timeout` must be a finite number >= 0"));
            }
            opts.timeout = Some(Duration::from_secs_f64(ms / 1000.0));
        }
        Ok(opts)
    }

    /// Whether the signal is aborted already.
    pub fn aborted(&self, js: Js) -> bool {
        let Some(s) = self.signal else { return false };
        let Ok(a) = js.get(s, "aborted") else {
            let _ = js.take_exception();
            return false;
        };
        js.type_of(a).ok() == Some(sys::ValueType::napi_boolean) && js.get_bool(a).unwrap_or(false)
    }
}

pub fn aborted_error(what: &str) -> KomaError {
    KomaError::new(ErrorCode::Aborted, format!("`{what}` was aborted by its signal"))
}

/// The `abort` listener of a call's signal, removed when the call settles.
pub struct AbortListener {
    signal: OwnedRef,
    listener: OwnedRef,
}

struct AbortData {
    ctx: Weak<Ctx>,
    token: u64,
}

impl AbortListener {
    fn attach(js: Js, ctx: &Rc<Ctx>, token: u64, signal: Value) -> napi::Result<Self> {
        let listener = function(js, c"onabort", AbortData { ctx: Rc::downgrade(ctx), token }, on_abort)?;
        let add = js.get(signal, "addEventListener")?;
        let once = js.object()?;
        js.set(once, "once", js.boolean(true)?)?;
        js.call(add, signal, &[js.string(b"abort")?, listener, once])?;
        Ok(AbortListener {
            signal: OwnedRef::new(js, &ctx.env.life, signal, true)?,
            listener: OwnedRef::new(js, &ctx.env.life, listener, true)?,
        })
    }

    /// Remove the listener (the call has settled); the references go with it.
    pub fn remove(self, js: Js) {
        if let (Ok(signal), Ok(listener)) = (self.signal.value(js), self.listener.value(js)) {
            if let Ok(remove) = js.get(signal, "removeEventListener") {
                if let Ok(name) = js.string(b"abort") {
                    let _ = js.call(remove, signal, &[name, listener]);
                }
            }
        }
        let _ = js.take_exception();
    }
}

fn on_abort(data: &AbortData, js: Js, _args: &[Value]) -> napi::Result<Value> {
    if let Some(ctx) = data.ctx.upgrade() {
        let call = ctx.state.borrow_mut().calls.remove(&data.token);
        if let Some(call) = call {
            ctx.conn.abandon(data.token);
            if let Some(a) = call.abort {
                a.remove(js);
            }
            call.deferred.reject_with(js, &aborted_error(&call.what), None);
            ctx.update_hold(js);
        }
    }
    js.undefined()
}

/// How a call started.
pub enum Started {
    /// Its completion will come for its token.
    Waiting,
    /// Settled at once with this value.
    Now(Value),
}

impl Ctx {
    /// Make a call: its promise and (if it has a signal) its abort listener
    /// first, then `start(token)`, which writes it or rejects it locally.
    pub fn call(
        self: &Rc<Self>,
        js: Js,
        what: &str,
        opts: CallOpts,
        start: impl FnOnce(u64) -> Result<Started, KomaError>,
    ) -> napi::Result<Value> {
        let (deferred, promise) = Deferred::new(js, &self.env.life)?;
        if opts.aborted(js) {
            deferred.reject_with(js, &aborted_error(what), None);
            return Ok(promise);
        }
        let token = self.conn.token();
        let abort = match opts.signal {
            None => None,
            Some(signal) => match AbortListener::attach(js, self, token, signal) {
                Ok(a) => Some(a),
                Err(e) => {
                    let why = js.take_exception().and_then(|exc| js.message_of(exc)).unwrap_or(e.reason);
                    let err = KomaError::new(
                        ErrorCode::InvalidParams,
                        format!("options: could not listen to `signal` ({why}); `{what}` was not sent"),
                    );
                    deferred.reject_with(js, &err, None);
                    return Ok(promise);
                }
            },
        };
        match start(token) {
            Err(e) => {
                if let Some(a) = abort {
                    a.remove(js);
                }
                deferred.reject_with(js, &e, None);
            }
            Ok(Started::Now(v)) => {
                if let Some(a) = abort {
                    a.remove(js);
                }
                deferred.resolve(v);
            }
            Ok(Started::Waiting) => {
                self.state.borrow_mut().calls.insert(token, Call { deferred, what: what.to_owned(), abort });
                self.update_hold(js);
            }
        }
        Ok(promise)
    }
}
