//! Owned Node-API handles, so that a leak or a double settle cannot be written:
//!
//! - [`EnvLife`]: whether an environment is still alive (an env cleanup hook
//!   clears it), checked before any handle gives itself back to Node;
//! - [`OwnedRef`]: a reference, deleted when dropped;
//! - [`Deferred`]: a promise's resolver, consumed by `resolve` or `reject`,
//!   and rejected if it is dropped unsettled;
//! - [`Tsfn`]: the threadsafe function that wakes the JavaScript thread, with
//!   [`TsfnHandle`]s that (un)reference it and [`TsfnWaker`]s that call it
//!   from any thread, all inert once it is released or finalized;
//! - [`function`]: a native function with typed data and one trampoline that
//!   catches panics and turns errors into exceptions.
//!
//! Everything here runs on the JavaScript thread of its environment, except
//! [`TsfnWaker::wake`].

use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use koma_transport::{ErrorCode, KomaError};
use napi::sys;

use crate::js::{Js, Value};

/// Whether an environment is alive. Shared by every handle made in it.
pub struct EnvLife(Cell<bool>);

impl EnvLife {
    /// A flag for `js`'s environment, cleared by a cleanup hook when it ends.
    pub fn new(js: Js) -> napi::Result<Rc<EnvLife>> {
        unsafe extern "C" fn ended(arg: *mut c_void) {
            // SAFETY: `arg` is the Rc leaked below; this hook runs once.
            let life = unsafe { Rc::from_raw(arg.cast::<EnvLife>()) };
            life.0.set(false);
        }
        let life = Rc::new(EnvLife(Cell::new(true)));
        let arg = Rc::into_raw(life.clone()) as *mut c_void;
        // SAFETY: registers `ended` with a pointer it owns; called once when the env ends.
        let status = unsafe { sys::napi_add_env_cleanup_hook(js.0, Some(ended), arg) };
        if status != sys::Status::napi_ok {
            // SAFETY: not registered: take the leaked Rc back.
            drop(unsafe { Rc::from_raw(arg.cast::<EnvLife>()) });
            return Err(napi::Error::from_reason("could not register an env cleanup hook"));
        }
        Ok(life)
    }

    pub fn alive(&self) -> bool {
        self.0.get()
    }
}

/// A reference to a JavaScript value, deleted when dropped (unless the
/// environment has ended, which frees it itself).
pub struct OwnedRef {
    env: sys::napi_env,
    raw: sys::napi_ref,
    life: Rc<EnvLife>,
}

impl OwnedRef {
    /// A strong reference (count 1) or a weak one (count 0).
    pub fn new(js: Js, life: &Rc<EnvLife>, value: Value, strong: bool) -> napi::Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: `value` is a live value of this env; `raw` receives the reference.
        crate::js::check(unsafe { sys::napi_create_reference(js.0, value, u32::from(strong), &mut raw) })?;
        Ok(OwnedRef { env: js.0, raw, life: life.clone() })
    }

    pub fn value(&self, js: Js) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        // SAFETY: the reference is live (deleted only by Drop).
        crate::js::check(unsafe { sys::napi_get_reference_value(js.0, self.raw, &mut v) })?;
        if v.is_null() {
            return Err(napi::Error::from_reason("the referenced value was collected"));
        }
        Ok(v)
    }

    /// Make the reference strong (the value is kept alive) or weak.
    pub fn set_strong(&self, js: Js, strong: bool) {
        let mut count = 0;
        // SAFETY: the reference is live; counts only move between 0 and 1 here.
        unsafe {
            if strong {
                sys::napi_reference_ref(js.0, self.raw, &mut count);
            } else {
                sys::napi_reference_unref(js.0, self.raw, &mut count);
            }
        }
    }
}

impl Drop for OwnedRef {
    fn drop(&mut self) {
        if self.life.alive() {
            // SAFETY: our reference, deleted once, on its env's thread, while the env lives.
            unsafe { sys::napi_delete_reference(self.env, self.raw) };
        }
    }
}

/// A promise's resolver. `resolve` and `reject` consume it; dropped unsettled
/// (an internal error), it rejects the promise, so no promise is left pending.
pub struct Deferred {
    env: sys::napi_env,
    raw: sys::napi_deferred,
    life: Rc<EnvLife>,
}

impl Deferred {
    pub fn new(js: Js, life: &Rc<EnvLife>) -> napi::Result<(Deferred, Value)> {
        let mut raw = ptr::null_mut();
        let mut promise = ptr::null_mut();
        // SAFETY: creates a promise and its deferred in this env.
        crate::js::check(unsafe { sys::napi_create_promise(js.0, &mut raw, &mut promise) })?;
        Ok((Deferred { env: js.0, raw, life: life.clone() }, promise))
    }

    pub fn resolve(self, value: Value) {
        // SAFETY: the deferred is unsettled (settling consumes self); Node frees it here.
        unsafe { sys::napi_resolve_deferred(self.env, self.raw, value) };
        std::mem::forget(self);
    }

    pub fn reject(self, error: Value) {
        // SAFETY: as in `resolve`.
        unsafe { sys::napi_reject_deferred(self.env, self.raw, error) };
        std::mem::forget(self);
    }

    /// Reject with a coded error (with a plain one if even that cannot be made).
    pub fn reject_with(self, js: Js, e: &KomaError, json_parse: Option<Value>) {
        let err = js.error(e, json_parse).or_else(|_| {
            let _ = js.take_exception();
            js.error(&KomaError::new(e.code, "an error (its details could not be converted)"), None)
        });
        match err {
            Ok(v) => self.reject(v),
            Err(_) => drop(self), // Drop tries once more, with the simplest error
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if !self.life.alive() {
            return; // the environment frees it
        }
        let js = Js(self.env);
        let e = KomaError::new(
            ErrorCode::TransportFailure,
            "an internal error in @koma/sdk: this call could not be settled",
        );
        let _ = js.take_exception();
        let mut err = js.error(&e, None).unwrap_or(ptr::null_mut());
        if err.is_null() {
            err = js.undefined().unwrap_or(ptr::null_mut());
        }
        // SAFETY: the deferred is unsettled (settling forgets self); Node frees it here.
        unsafe { sys::napi_reject_deferred(self.env, self.raw, err) };
    }
}

/// What the threadsafe function calls on the JavaScript thread.
pub trait WakeTarget {
    fn woke(&self, js: Js);
}

/// The threadsafe function's pointer while it may be used; `None` once
/// released or finalized, so a late wake is a no-op.
struct TsfnSlot(Mutex<Option<usize>>);

impl TsfnSlot {
    fn get(&self) -> Option<sys::napi_threadsafe_function> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).map(|p| p as sys::napi_threadsafe_function)
    }

    fn take(&self) -> Option<sys::napi_threadsafe_function> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take().map(|p| p as sys::napi_threadsafe_function)
    }
}

/// The threadsafe function: created unreferenced (it does not keep Node
/// alive), with a context `Rc<T>` that it owns until finalized. Released when
/// dropped.
pub struct Tsfn {
    slot: Arc<TsfnSlot>,
    life: Rc<EnvLife>,
}

/// (Un)references the threadsafe function, on the JavaScript thread.
#[derive(Clone)]
pub struct TsfnHandle {
    slot: Arc<TsfnSlot>,
}

/// Calls the threadsafe function, from any thread.
pub struct TsfnWaker {
    slot: Arc<TsfnSlot>,
}

impl Tsfn {
    /// Make the target with a handle and a waker of the function, then the
    /// function, whose context the target becomes. Calls to the waker run
    /// `target.woke()` on the JavaScript thread, coalesced by Node's queue
    /// (and do nothing until this returns).
    pub fn with_target<T: WakeTarget + 'static>(
        js: Js,
        life: &Rc<EnvLife>,
        name: &str,
        make: impl FnOnce(TsfnHandle, TsfnWaker) -> T,
    ) -> napi::Result<(Tsfn, Rc<T>)> {
        /// The function's context: its target, and its slot to empty when it is finalized.
        struct Context<T> {
            target: Rc<T>,
            slot: Arc<TsfnSlot>,
        }
        unsafe extern "C" fn call_js<T: WakeTarget>(
            env: sys::napi_env,
            _cb: Value,
            context: *mut c_void,
            _data: *mut c_void,
        ) {
            if env.is_null() || context.is_null() {
                return; // the environment is ending
            }
            // SAFETY: `context` is the Box<Context<T>> given at creation, alive until `finalize` runs.
            let context = unsafe { &*context.cast::<Context<T>>() };
            // A panic must not unwind into Node.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| context.target.woke(Js(env))));
        }
        unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
            // SAFETY: `data` is the Box<Context<T>> leaked at creation; this runs once.
            let context = unsafe { Box::from_raw(data.cast::<Context<T>>()) };
            context.slot.take();
        }
        let slot = Arc::new(TsfnSlot(Mutex::new(None)));
        let target = Rc::new(make(TsfnHandle { slot: slot.clone() }, TsfnWaker { slot: slot.clone() }));
        let name = js.string(name.as_bytes())?;
        let context = Box::into_raw(Box::new(Context { target: target.clone(), slot: slot.clone() })).cast::<c_void>();
        let mut raw = ptr::null_mut();
        // SAFETY: no JavaScript function (our own call_js), a queue without
        // limit, one thread using it; `context` (also the finalize data) is
        // owned by the function until `finalize`.
        let status = unsafe {
            sys::napi_create_threadsafe_function(
                js.0,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                context,
                Some(finalize::<T>),
                context,
                Some(call_js::<T>),
                &mut raw,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not created: take back what was leaked for it.
            drop(unsafe { Box::from_raw(context.cast::<Context<T>>()) });
            return Err(napi::Error::from_reason("could not create the threadsafe function"));
        }
        // SAFETY: the function was just created in this env.
        unsafe { sys::napi_unref_threadsafe_function(js.0, raw) };
        *slot.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(raw as usize);
        Ok((Tsfn { slot, life: life.clone() }, target))
    }
}

impl Drop for Tsfn {
    fn drop(&mut self) {
        if !self.life.alive() {
            return; // the environment has ended, and finalized it
        }
        if let Some(raw) = self.slot.take() {
            // SAFETY: the function is live (it was in the slot); released once.
            unsafe { sys::napi_release_threadsafe_function(raw, sys::ThreadsafeFunctionReleaseMode::release) };
        }
    }
}

impl TsfnHandle {
    /// A waker of the same function.
    pub fn waker(&self) -> TsfnWaker {
        TsfnWaker { slot: self.slot.clone() }
    }

    /// Keep Node's event loop alive while `held` (something is outstanding).
    pub fn hold(&self, js: Js, held: bool) {
        if let Some(raw) = self.slot.get() {
            // SAFETY: on the JavaScript thread, with a live function (it is in the slot).
            unsafe {
                if held {
                    sys::napi_ref_threadsafe_function(js.0, raw);
                } else {
                    sys::napi_unref_threadsafe_function(js.0, raw);
                }
            }
        }
    }
}

impl TsfnWaker {
    pub fn wake(&self) {
        let slot = self.slot.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(raw) = *slot {
            // SAFETY: the function is live while it is in the slot, and the
            // slot's lock is held, so it cannot be released meanwhile.
            unsafe {
                sys::napi_call_threadsafe_function(
                    raw as sys::napi_threadsafe_function,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                );
            }
        }
    }
}

/// The body of a native function: its data, the env and its arguments.
pub type NativeFn<T> = fn(&T, Js, &[Value]) -> napi::Result<Value>;

/// A native function whose `data` is freed when the function is collected.
/// Its body runs behind one trampoline: a panic becomes a thrown error, and
/// an `Err` is thrown unless an exception is already pending.
pub fn function<T: 'static>(js: Js, name: &CStr, data: T, body: NativeFn<T>) -> napi::Result<Value> {
    struct Native<T> {
        data: T,
        body: NativeFn<T>,
    }
    unsafe extern "C" fn trampoline<T>(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
        const MAX_ARGS: usize = 4;
        let js = Js(env);
        let mut argc = MAX_ARGS;
        let mut argv = [ptr::null_mut(); MAX_ARGS];
        let mut data = ptr::null_mut();
        // SAFETY: a callback's info, read during the callback.
        let status =
            unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
        if status != sys::Status::napi_ok || data.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: `data` is the Box<Native<T>> given at creation, freed only when the function is collected.
        let native = unsafe { &*data.cast::<Native<T>>() };
        let args = &argv[..argc.min(MAX_ARGS)];
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (native.body)(&native.data, js, args)));
        let message = match result {
            Ok(Ok(v)) => return v,
            Ok(Err(e)) => e.reason.clone(),
            Err(_) => "an internal error (a panic) in @koma/sdk".to_owned(),
        };
        let mut pending = false;
        // SAFETY: plain queries and a throw on this env's thread.
        unsafe {
            sys::napi_is_exception_pending(env, &mut pending);
            if !pending {
                if let Ok(err) = js.error(&KomaError::new(ErrorCode::TransportFailure, message), None) {
                    sys::napi_throw(env, err);
                }
            }
        }
        ptr::null_mut()
    }
    unsafe extern "C" fn free<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
        // SAFETY: the Box leaked at creation; the finalizer runs once.
        drop(unsafe { Box::from_raw(data.cast::<Native<T>>()) });
    }
    let raw = Box::into_raw(Box::new(Native { data, body }));
    let mut f = ptr::null_mut();
    // SAFETY: creates a function whose data is `raw`.
    let status = unsafe {
        sys::napi_create_function(
            js.0,
            name.as_ptr(),
            name.to_bytes().len() as isize,
            Some(trampoline::<T>),
            raw.cast(),
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not created: take the Box back.
        drop(unsafe { Box::from_raw(raw) });
        return Err(napi::Error::from_reason("napi_create_function failed"));
    }
    // SAFETY: ties the Box's life to the function's.
    let status =
        unsafe { sys::napi_add_finalizer(js.0, f, raw.cast(), Some(free::<T>), ptr::null_mut(), ptr::null_mut()) };
    if status != sys::Status::napi_ok {
        // Not tied: leaking the small Box is the safe choice (the function may still be called).
        return Err(napi::Error::from_reason("napi_add_finalizer failed"));
    }
    Ok(f)
}
