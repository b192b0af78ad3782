//! The environment handle, and whether an environment still lives.

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi::{sys, Env};

/// An environment that is running a call into this addon, on its own thread.
///
/// Outside this layer one is made only from the `Env` napi-rs passes to a
/// `#[napi]` function (the `Env` napi-rs's own safe API relies on); inside
/// it, from the env Node-API passes to this layer's callbacks. It borrows
/// that call, so it cannot be kept past it, and it is neither `Send` nor
/// `Sync`, so it cannot reach another thread. The raw env is private to this
/// layer. So every Node-API call made through a `Js` is made on the
/// environment's own thread, during a call from it, while it lives.
#[derive(Clone, Copy)]
pub struct Js<'e> {
    raw: sys::napi_env,
    _call: PhantomData<(&'e Env, *mut ())>,
}

impl<'e> Js<'e> {
    /// The environment of a `#[napi]` function's call.
    pub fn new(env: &'e Env) -> Js<'e> {
        Js { raw: env.raw(), _call: PhantomData }
    }

    /// The environment Node-API passed to a callback of this layer.
    pub(super) fn from_callback(raw: sys::napi_env) -> Js<'e> {
        Js { raw, _call: PhantomData }
    }

    pub(super) fn raw(self) -> sys::napi_env {
        self.raw
    }

    /// napi-rs's handle of the same environment, for its safe API.
    pub fn env(self) -> Env {
        Env::from_raw(self.raw)
    }

    /// Which environment this is: to tell environments apart, never to call into.
    pub fn id(self) -> usize {
        self.raw as usize
    }

    /// A value Node-API returned to this layer during this call.
    pub(super) fn value(self, raw: sys::napi_value) -> Unknown<'e> {
        // SAFETY: every caller in this layer passes a value of this
        // environment that Node-API has just returned, during this call.
        unsafe { Unknown::from_raw_unchecked(self.raw, raw) }
    }

    /// `undefined` (a null value if even that fails).
    pub(super) fn raw_undefined(self) -> sys::napi_value {
        let mut v = ptr::null_mut();
        // SAFETY: a query on this environment's thread (see `Js`).
        unsafe { sys::napi_get_undefined(self.raw, &mut v) };
        v
    }

    pub fn undefined(self) -> Unknown<'e> {
        self.value(self.raw_undefined())
    }

    /// A Rust value as a JavaScript value of this call.
    pub fn to_value<T: ToNapiValue>(self, v: T) -> napi::Result<Unknown<'e>> {
        // SAFETY: the environment of this call, on its thread (see `Js`).
        let raw = unsafe { T::to_napi_value(self.raw, v) }?;
        Ok(self.value(raw))
    }

    pub(super) fn exception_pending(self) -> bool {
        let mut pending = false;
        // SAFETY: a query on this environment's thread (see `Js`).
        let status = unsafe { sys::napi_is_exception_pending(self.raw, &mut pending) };
        status == sys::Status::napi_ok && pending
    }

    /// Take the pending JavaScript exception, if any.
    pub fn take_exception(self) -> Option<Unknown<'e>> {
        if !self.exception_pending() {
            return None;
        }
        let mut v = ptr::null_mut();
        // SAFETY: an exception is pending; `v` receives it (see `Js`).
        let status = unsafe { sys::napi_get_and_clear_last_exception(self.raw, &mut v) };
        (status == sys::Status::napi_ok && !v.is_null()).then(|| self.value(v))
    }
}

/// A Node-API status as a result.
pub(super) fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(napi::Status::from(status), format!("Node-API call failed: {what}")))
    }
}

/// Whether an environment lives. Shared by every handle made in it, and
/// checked before a handle gives itself back to Node (an environment that
/// has ended has freed them all).
pub struct EnvLife(Cell<bool>);

impl EnvLife {
    /// A flag for `js`'s environment, cleared by a cleanup hook when it ends.
    pub fn new(js: Js) -> napi::Result<Rc<EnvLife>> {
        unsafe extern "C" fn ended(arg: *mut c_void) {
            // SAFETY: `arg` is the Rc leaked below for this hook, which Node
            // runs once, on the environment's thread.
            let life = unsafe { Rc::from_raw(arg.cast::<EnvLife>()) };
            life.0.set(false);
        }
        let life = Rc::new(EnvLife(Cell::new(true)));
        let arg = Rc::into_raw(life.clone()) as *mut c_void;
        // SAFETY: registers `ended` with a pointer it owns, on the
        // environment's thread (see `Js`).
        let status = unsafe { sys::napi_add_env_cleanup_hook(js.raw, Some(ended), arg) };
        if status != sys::Status::napi_ok {
            // SAFETY: the hook was not registered: the Rc leaked for it comes back here, once.
            drop(unsafe { Rc::from_raw(arg.cast::<EnvLife>()) });
            return Err(napi::Error::from_reason("could not register an environment cleanup hook"));
        }
        Ok(life)
    }

    pub fn alive(&self) -> bool {
        self.0.get()
    }
}
