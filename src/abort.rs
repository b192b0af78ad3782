//! A call's `AbortSignal`: what an aborted one says, and the `abort`
//! listener attached while the call is pending.

use std::ffi::CStr;
use std::rc::Rc;

use koma_transport::ErrorCode;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, JsObjectValue, Object, Unknown};
use napi::ValueType;

use crate::handles::{function, EnvLife, Js, NativeFn, OwnedRef};
use crate::values::{as_object, as_string, call_method, get, kind};

/// If `signal` is aborted: the code to reject with (`timeout` when its
/// reason is a `TimeoutError`, as `AbortSignal.timeout()` gives; `aborted`
/// otherwise) and its reason, for the error's `cause` (none if undefined).
pub fn aborted<'e>(js: Js<'e>, signal: &Object<'e>) -> Option<(ErrorCode, Option<Unknown<'e>>)> {
    let flag = get(js, signal, "aborted").ok()?;
    if kind(&flag) != ValueType::Boolean || !bool::from_unknown(flag).unwrap_or(false) {
        return None;
    }
    let reason = get(js, signal, "reason").ok().filter(|r| kind(r) != ValueType::Undefined);
    let name = reason.and_then(as_object).and_then(|r| get(js, &r, "name").ok()).and_then(as_string);
    let code = if name.as_deref() == Some("TimeoutError") { ErrorCode::Timeout } else { ErrorCode::Aborted };
    Some((code, reason))
}

/// The `abort` listener of a pending call's signal, removed when it settles.
pub struct AbortListener {
    signal: OwnedRef,
    listener: OwnedRef,
}

impl AbortListener {
    /// Listen once to `signal`'s `abort` with a native function of `data`.
    /// Fails with what `addEventListener` threw.
    pub fn attach<'e, T: 'static>(
        js: Js<'e>,
        life: &Rc<EnvLife>,
        signal: &Object<'e>,
        name: &CStr,
        data: T,
        on_abort: NativeFn<T>,
    ) -> Result<Self, String> {
        let listener = function(js, name, data, on_abort).map_err(|e| e.reason)?;
        let mut once = Object::new(&js.env()).map_err(|e| e.reason)?;
        once.set_named_property("once", true).map_err(|e| e.reason)?;
        let abort = js.to_value("abort").map_err(|e| e.reason)?;
        call_method(js, signal, "addEventListener", FnArgs::from((abort, listener, once)))?;
        Ok(AbortListener {
            signal: OwnedRef::new(js, life, signal, true).map_err(|e| e.reason)?,
            listener: OwnedRef::new(js, life, &listener, true).map_err(|e| e.reason)?,
        })
    }

    /// The signal listened to.
    pub fn signal<'e>(&self, js: Js<'e>) -> Option<Object<'e>> {
        self.signal.value(js).ok().and_then(as_object)
    }

    /// Remove the listener (its call has settled); the references go with it.
    pub fn remove(self, js: Js) {
        let (Ok(signal), Ok(listener)) = (self.signal.value(js), self.listener.value(js)) else { return };
        let (Some(signal), Ok(name)) = (as_object(signal), js.to_value("abort")) else { return };
        // A signal that refuses to let go cannot keep the call: it has settled.
        let _ = call_method(js, &signal, "removeEventListener", FnArgs::from((name, listener)));
    }
}
