//! Memory shared with the core, as an `ArrayBuffer`.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::Unknown;
use napi::sys;

use super::js::{check, Js};

/// Memory that an `ArrayBuffer` may view for as long as its owner lives.
///
/// # Safety
///
/// `as_ptr()` must point at `byte_len()` bytes, valid and at the same
/// address for the whole life of the value, and access to them from another
/// thread must not race the buffer's (atomic slots, say).
pub unsafe trait SharedMemory: 'static {
    fn as_ptr(&self) -> *mut u8;
    fn byte_len(&self) -> usize;
}

/// An `ArrayBuffer` over `owner`'s memory, which `owner` keeps alive until
/// V8 collects the buffer (then `owner` is dropped).
pub fn external_array_buffer<'e, T: SharedMemory>(js: Js<'e>, owner: T) -> napi::Result<Unknown<'e>> {
    unsafe extern "C" fn release<T>(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
        // SAFETY: the Box leaked below; V8 finalizes the buffer once.
        drop(unsafe { Box::from_raw(hint.cast::<T>()) });
    }
    let (data, len) = (owner.as_ptr(), owner.byte_len());
    let hint = Box::into_raw(Box::new(owner));
    let mut v = ptr::null_mut();
    // SAFETY: `data` stays valid for `len` bytes while the owner lives
    // (`SharedMemory`'s contract), which is until `release` runs.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(js.raw(), data.cast(), len, Some(release::<T>), hint.cast(), &mut v)
    };
    if let Err(e) = check(status, "napi_create_external_arraybuffer") {
        // SAFETY: not handed to V8: the Box comes back here, once.
        drop(unsafe { Box::from_raw(hint) });
        return Err(e);
    }
    Ok(js.value(v))
}

// SAFETY: the counters are a fixed array of atomic slots inside the Arc's
// allocation, which neither moves nor ends while an Arc lives; the core's
// threads touch them only atomically.
unsafe impl SharedMemory for std::sync::Arc<koma_transport::EventCounters> {
    fn as_ptr(&self) -> *mut u8 {
        koma_transport::EventCounters::as_ptr(self).cast()
    }

    fn byte_len(&self) -> usize {
        koma_transport::EventCounters::byte_len(self)
    }
}
