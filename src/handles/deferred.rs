//! A promise's resolver, owned: consumed when it settles.

use std::ptr;
use std::rc::Rc;

use koma_transport::{ErrorCode, KomaError};
use napi::bindgen_prelude::{Function, JsValue, Unknown};
use napi::sys;

use super::error::coded_error;
use super::js::{check, EnvLife, Js};

/// The resolver of a promise. `resolve` and `reject` consume it, so it
/// settles once; dropped unsettled (an internal error), it rejects the
/// promise, so no promise is left pending.
pub struct Deferred {
    env: sys::napi_env,
    raw: sys::napi_deferred,
    life: Rc<EnvLife>,
}

impl Deferred {
    /// A promise and its resolver.
    pub fn new<'e>(js: Js<'e>, life: &Rc<EnvLife>) -> napi::Result<(Deferred, Unknown<'e>)> {
        let mut raw = ptr::null_mut();
        let mut promise = ptr::null_mut();
        // SAFETY: creates a promise and its deferred in this environment (see `Js`).
        check(unsafe { sys::napi_create_promise(js.raw(), &mut raw, &mut promise) }, "napi_create_promise")?;
        Ok((Deferred { env: js.raw(), raw, life: life.clone() }, js.value(promise)))
    }

    pub fn resolve(self, js: Js, value: Unknown) {
        if js.raw() != self.env {
            return; // not its environment's call: Drop rejects it in its own
        }
        // SAFETY: the deferred is unsettled (settling consumes it), `js` is a
        // call of its environment (checked), and Node frees it here.
        unsafe { sys::napi_resolve_deferred(js.raw(), self.raw, value.raw()) };
        std::mem::forget(self);
    }

    pub fn reject(self, js: Js, error: Unknown) {
        if js.raw() != self.env {
            return; // as in `resolve`
        }
        // SAFETY: as in `resolve`.
        unsafe { sys::napi_reject_deferred(js.raw(), self.raw, error.raw()) };
        std::mem::forget(self);
    }

    /// Reject with a coded error (see [`coded_error`]); with a plainer one
    /// if that cannot be made.
    pub fn reject_with<'e>(
        self,
        js: Js<'e>,
        e: &KomaError,
        json_parse: Option<&Function<'e>>,
        cause: Option<Unknown<'e>>,
    ) {
        let err = coded_error(js, e, json_parse, cause).or_else(|_| {
            let _ = js.take_exception();
            coded_error(js, &KomaError::new(e.code, "an error (its details could not be converted)"), None, None)
        });
        match err {
            Ok(v) => self.reject(js, v),
            Err(_) => drop(self), // Drop tries once more, with the simplest error
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if !self.life.alive() {
            return; // the environment has freed it
        }
        // A Deferred is not Send: this runs on its environment's thread.
        let js = Js::from_callback(self.env);
        let _ = js.take_exception();
        let e = KomaError::new(
            ErrorCode::TransportFailure,
            "an internal error in @koma/sdk: this call could not be settled",
        );
        let err = coded_error(js, &e, None, None).map(|v| v.raw()).unwrap_or_else(|_| js.raw_undefined());
        // SAFETY: the deferred is unsettled (settling forgets it), on its
        // environment's thread while it lives; Node frees it here.
        unsafe { sys::napi_reject_deferred(self.env, self.raw, err) };
    }
}
