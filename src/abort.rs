//! A call's `AbortSignal`: what an aborted one says, and the `abort`
//! listener attached while the call is pending.

use std::ffi::CStr;

use koma_transport::stop::Why;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, Object, Unknown};
use napi::{JsValue, ValueType};

use crate::env::EnvData;
use crate::handles::{function, Js, NativeFn, OwnedRef};
use crate::values::{as_object, as_string, get, kind, thrown};

/// If `signal` is aborted: the stop, as the core reads it (the name of its
/// reason: the core makes a `TimeoutError` a timeout), and the reason, for
/// the error's `cause` (none if undefined).
pub fn aborted<'e>(js: Js<'e>, signal: &Object<'e>) -> Option<(Why, Option<Unknown<'e>>)> {
    let flag = get(js, signal, "aborted").ok()?;
    if kind(&flag) != ValueType::Boolean || !bool::from_unknown(flag).unwrap_or(false) {
        return None;
    }
    let reason = get(js, signal, "reason").ok().filter(|r| kind(r) != ValueType::Undefined);
    Some((Why::Signal { reason: reason.and_then(|r| reason_name(js, r)) }, reason))
}

/// The `name` of an abort reason, if it is an object that has a string one.
pub fn reason_name(js: Js, reason: Unknown) -> Option<String> {
    as_object(reason).and_then(|r| get(js, &r, "name").ok()).and_then(as_string)
}

/// A pending call's callback on its signal's `abort`, removed when it
/// settles. The package listens once per signal, however many calls wait
/// on it (`lib/signals.js`): Node warns past ten listeners on one signal.
pub struct AbortListener {
    signal: OwnedRef,
    listener: OwnedRef,
}

impl AbortListener {
    /// Call a native function of `data` when `signal` aborts. Fails with
    /// what the signal's `addEventListener` threw.
    pub fn attach<'e, T: 'static>(
        js: Js<'e>,
        env: &EnvData,
        signal: &Object<'e>,
        name: &CStr,
        data: T,
        on_abort: NativeFn<T>,
    ) -> Result<Self, String> {
        let listener = function(js, name, data, on_abort).map_err(|e| e.reason)?;
        let add = js_half_fn(js, env, "onAbort")?;
        if let Err(e) = add.call(FnArgs::from((signal.to_unknown(), listener))) {
            return Err(thrown(js, e));
        }
        Ok(AbortListener {
            signal: OwnedRef::new(js, &env.life, signal, true).map_err(|e| e.reason)?,
            listener: OwnedRef::new(js, &env.life, &listener, true).map_err(|e| e.reason)?,
        })
    }

    /// The signal listened to.
    pub fn signal<'e>(&self, js: Js<'e>) -> Option<Object<'e>> {
        self.signal.value(js).ok().and_then(as_object)
    }

    /// Remove the callback (its call has settled); the references go with it.
    pub fn remove(self, js: Js, env: &EnvData) {
        let (Ok(signal), Ok(listener)) = (self.signal.value(js), self.listener.value(js)) else { return };
        let Ok(remove) = js_half_fn(js, env, "offAbort") else { return };
        // A signal that refuses to let go cannot keep the call: it has settled.
        if remove.call(FnArgs::from((signal, listener))).is_err() {
            let _ = js.take_exception();
        }
    }
}

type SignalFn<'e> = Function<'e, FnArgs<(Unknown<'e>, Unknown<'e>)>, Unknown<'e>>;

/// `lib/signals.js`'s `onAbort` or `offAbort`.
fn js_half_fn<'e>(js: Js<'e>, env: &EnvData, name: &str) -> Result<SignalFn<'e>, String> {
    env.js_fn(js, name).and_then(Function::from_unknown).map_err(|e| e.reason)
}
