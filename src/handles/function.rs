//! A native function with typed data, behind one trampoline.

use std::ffi::{c_void, CStr};
use std::ptr;

use koma_transport::{ErrorCode, KomaError};
use napi::bindgen_prelude::{JsValue, Unknown};
use napi::sys;

use super::error::coded_error;
use super::js::{check, Js};

/// The body of a native function: its data, the call's environment and its
/// arguments (at most four; missing ones are `undefined`).
pub type NativeFn<T> = for<'e> fn(&T, Js<'e>, &[Unknown<'e>]) -> napi::Result<Unknown<'e>>;

struct Native<T> {
    data: T,
    body: NativeFn<T>,
}

const MAX_ARGS: usize = 4;

unsafe extern "C" fn trampoline<T>(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let js = Js::from_callback(env);
    let mut argc = MAX_ARGS;
    let mut argv = [ptr::null_mut(); MAX_ARGS];
    let mut data = ptr::null_mut();
    // SAFETY: the callback's own info, read during the callback.
    let status = unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `data` is the Box<Native<T>> given at creation, freed only
    // when the function is collected, which cannot happen during its call.
    let native = unsafe { &*data.cast::<Native<T>>() };
    // Node fills the slots past the arguments given with `undefined`.
    let args = argv.map(|v| js.value(v));
    let args = &args[..argc.min(MAX_ARGS)];
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (native.body)(&native.data, js, args)));
    let message = match result {
        Ok(Ok(v)) => return v.raw(),
        Ok(Err(e)) => e.reason.clone(),
        Err(_) => "an internal error (a panic) in @koma/sdk".to_owned(),
    };
    if !js.exception_pending() {
        if let Ok(err) = coded_error(js, &KomaError::new(ErrorCode::TransportFailure, message), None, None) {
            // SAFETY: during a callback of this environment, with one of its values.
            unsafe { sys::napi_throw(env, err.raw()) };
        }
    }
    ptr::null_mut()
}

unsafe extern "C" fn free<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the Box leaked at creation; Node runs the finalizer once.
    drop(unsafe { Box::from_raw(data.cast::<Native<T>>()) });
}

/// A native function whose `data` lives as long as the function. Its body
/// runs behind one trampoline: a panic becomes a thrown error, and an `Err`
/// is thrown unless the body left an exception of its own.
pub fn function<'e, T: 'static>(js: Js<'e>, name: &CStr, data: T, body: NativeFn<T>) -> napi::Result<Unknown<'e>> {
    let raw = Box::into_raw(Box::new(Native { data, body }));
    let mut f = ptr::null_mut();
    // SAFETY: creates a function of this environment whose data is `raw`.
    let status = unsafe {
        sys::napi_create_function(
            js.raw(),
            name.as_ptr(),
            name.to_bytes().len() as isize,
            Some(trampoline::<T>),
            raw.cast(),
            &mut f,
        )
    };
    if let Err(e) = check(status, "napi_create_function") {
        // SAFETY: no function was made: the Box comes back here, once.
        drop(unsafe { Box::from_raw(raw) });
        return Err(e);
    }
    // SAFETY: ties the Box's life to the function's (freed by `free` when it is collected).
    let status =
        unsafe { sys::napi_add_finalizer(js.raw(), f, raw.cast(), Some(free::<T>), ptr::null_mut(), ptr::null_mut()) };
    // Not tied: the small Box leaks, the safe choice (the function may still be called).
    check(status, "napi_add_finalizer")?;
    Ok(js.value(f))
}
