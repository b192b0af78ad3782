//! Native code run when a JavaScript object is collected: Node-API's own
//! finalizer (`napi_add_finalizer`), not a JavaScript `FinalizationRegistry`.
//!
//! Why not a `FinalizationRegistry`: on Node 20.0 to 20.11, V8 can post its
//! cleanup task again and again while Node tears an environment down, when a
//! registered object died shortly before the exit; the process then spins at
//! 100% CPU and never exits (docs/platforms.md, "Node 20 before 20.12"). A
//! Node-API finalizer is run by Node itself, at the latest when the
//! environment ends, and never as a V8 task.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::JsValue;
use napi::sys;

use super::js::{check, Js};

struct Pending<T> {
    data: T,
    run: fn(T),
}

unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box leaked by `on_collect`, and Node runs a
    // finalizer once: when the object is collected, or when its environment
    // ends, whichever comes first.
    let pending = unsafe { Box::from_raw(data.cast::<Pending<T>>()) };
    // A panic must not unwind into Node: the finalizer's work is lost, nothing else.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (pending.run)(pending.data)));
}

/// Call `run(data)` on this environment's thread once `object` has been
/// collected, or when the environment ends. `run` gets no environment: it may
/// not call JavaScript (the environment may be ending), only native code.
pub fn on_collect<'e, T: 'static>(js: Js<'e>, object: &impl JsValue<'e>, data: T, run: fn(T)) -> napi::Result<()> {
    let raw = Box::into_raw(Box::new(Pending { data, run }));
    // SAFETY: `object` is a live object of this environment (a value of this
    // call). No reference is asked for (the last argument is null), so Node
    // owns the one it makes and deletes it itself after `finalize` ran.
    let status = unsafe {
        sys::napi_add_finalizer(
            js.raw(),
            object.raw(),
            raw.cast(),
            Some(finalize::<T>),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if let Err(e) = check(status, "napi_add_finalizer") {
        // SAFETY: no finalizer was added: the Box comes back here, once.
        drop(unsafe { Box::from_raw(raw) });
        return Err(e);
    }
    Ok(())
}
