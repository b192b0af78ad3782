//! The threadsafe function that wakes the JavaScript thread, as one owned
//! type: [`Tsfn`] releases it when dropped; [`TsfnHandle`]s (un)reference it
//! on the JavaScript thread and [`TsfnWaker`]s call it from any thread, and
//! both are inert once it is released or finalized.

use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use napi::sys;

use super::js::{check, EnvLife, Js};
use super::strings::text;

/// What the threadsafe function calls on the JavaScript thread.
pub trait WakeTarget {
    fn woke(&self, js: Js);
}

/// The function's pointer while it may be used; `None` once released or
/// finalized, so a late wake is a no-op.
struct Slot(Mutex<Option<usize>>);

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<usize>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self) -> Option<sys::napi_threadsafe_function> {
        self.lock().map(|p| p as sys::napi_threadsafe_function)
    }

    fn take(&self) -> Option<sys::napi_threadsafe_function> {
        self.lock().take().map(|p| p as sys::napi_threadsafe_function)
    }
}

/// The threadsafe function: created unreferenced (it does not keep Node
/// alive), with a target that it owns until it is finalized. Released when
/// dropped.
pub struct Tsfn {
    slot: Arc<Slot>,
    life: Rc<EnvLife>,
}

/// (Un)references the function, on the JavaScript thread.
#[derive(Clone)]
pub struct TsfnHandle {
    slot: Arc<Slot>,
}

/// Calls the function, from any thread.
pub struct TsfnWaker {
    slot: Arc<Slot>,
}

/// The function's context: its target, and its slot to empty when it is finalized.
struct Context<T> {
    target: T,
    slot: Arc<Slot>,
}

unsafe extern "C" fn call_js<T: WakeTarget>(
    env: sys::napi_env,
    _cb: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || context.is_null() {
        return; // the environment is ending
    }
    // SAFETY: `context` is the Box<Context<T>> given at creation, which lives
    // until `finalize` runs, and Node calls this on the environment's thread
    // before that.
    let context = unsafe { &*context.cast::<Context<T>>() };
    // A panic must not unwind into Node.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| context.target.woke(Js::from_callback(env))));
}

unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Context<T>> leaked at creation; Node runs
    // this finalizer once.
    let context = unsafe { Box::from_raw(data.cast::<Context<T>>()) };
    context.slot.take();
}

impl Tsfn {
    /// The function, and a handle of it. Wakes run `target.woke()` on the
    /// JavaScript thread, coalesced by Node's queue.
    pub fn new<T: WakeTarget + 'static>(
        js: Js,
        life: &Rc<EnvLife>,
        name: &str,
        target: T,
    ) -> napi::Result<(Tsfn, TsfnHandle)> {
        let slot = Arc::new(Slot(Mutex::new(None)));
        let handle = TsfnHandle { slot: slot.clone() };
        let name = text(js, name.as_bytes())?;
        let context = Box::into_raw(Box::new(Context { target, slot: slot.clone() })).cast::<c_void>();
        let mut raw = ptr::null_mut();
        // SAFETY: no JavaScript function (our own call_js), a queue without
        // limit, one thread using it; `context` (also the finalize data) is
        // owned by the function until `finalize`.
        let status = unsafe {
            sys::napi_create_threadsafe_function(
                js.raw(),
                ptr::null_mut(),
                ptr::null_mut(),
                napi::JsValue::raw(&name),
                0,
                1,
                context,
                Some(finalize::<T>),
                context,
                Some(call_js::<T>),
                &mut raw,
            )
        };
        if let Err(e) = check(status, "napi_create_threadsafe_function") {
            // SAFETY: not created: what was leaked for it comes back here, once.
            drop(unsafe { Box::from_raw(context.cast::<Context<T>>()) });
            return Err(e);
        }
        // SAFETY: the function was just created in this environment, on its thread.
        unsafe { sys::napi_unref_threadsafe_function(js.raw(), raw) };
        *slot.lock() = Some(raw as usize);
        Ok((Tsfn { slot, life: life.clone() }, handle))
    }
}

impl Drop for Tsfn {
    fn drop(&mut self) {
        if !self.life.alive() {
            return; // the environment has ended, and finalized it
        }
        if let Some(raw) = self.slot.take() {
            // SAFETY: the function is live (it was in the slot) and is released once.
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
            // SAFETY: on the JavaScript thread (a Js), with a live function (it is in the slot).
            unsafe {
                if held {
                    sys::napi_ref_threadsafe_function(js.raw(), raw);
                } else {
                    sys::napi_unref_threadsafe_function(js.raw(), raw);
                }
            }
        }
    }
}

impl TsfnWaker {
    pub fn wake(&self) {
        let slot = self.slot.lock();
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
