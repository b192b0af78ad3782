//! A reference to a JavaScript value, owned: deleted when dropped.

use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::{JsValue, Unknown};
use napi::sys;

use super::js::{check, EnvLife, Js};

/// A reference, strong (the value is kept alive) or weak. Dropped on its
/// environment's thread (it is not `Send`), it deletes the reference, unless
/// the environment has ended and freed it already.
pub struct OwnedRef {
    env: sys::napi_env,
    raw: sys::napi_ref,
    life: Rc<EnvLife>,
}

impl OwnedRef {
    pub fn new<'e>(js: Js<'e>, life: &Rc<EnvLife>, value: &impl JsValue<'e>, strong: bool) -> napi::Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: `value` is a live value of this environment (a napi-rs
        // value of this call); `raw` receives the reference.
        let status = unsafe { sys::napi_create_reference(js.raw(), value.raw(), u32::from(strong), &mut raw) };
        check(status, "napi_create_reference")?;
        Ok(OwnedRef { env: js.raw(), raw, life: life.clone() })
    }

    /// Whether `js` is a call of this reference's environment (which then lives).
    fn ours(&self, js: Js) -> bool {
        js.raw() == self.env
    }

    /// The value; an error if a weak reference's value was collected.
    pub fn value<'e>(&self, js: Js<'e>) -> napi::Result<Unknown<'e>> {
        if !self.ours(js) {
            return Err(napi::Error::from_reason("a reference used in another environment"));
        }
        let mut v = ptr::null_mut();
        // SAFETY: the reference is live (only Drop deletes it), and `js` is a
        // call of its environment (checked), on that environment's thread.
        let status = unsafe { sys::napi_get_reference_value(js.raw(), self.raw, &mut v) };
        check(status, "napi_get_reference_value")?;
        if v.is_null() {
            return Err(napi::Error::from_reason("the referenced value was collected"));
        }
        Ok(js.value(v))
    }

    /// Make the reference strong or weak; the count only moves between 0 and 1.
    pub fn set_strong(&self, js: Js, strong: bool) {
        if !self.ours(js) {
            return;
        }
        let mut count = 0;
        // SAFETY: the reference is live and `js` is a call of its environment
        // (checked); the callers only move between strong and weak, so the
        // count stays 0 or 1.
        unsafe {
            if strong {
                sys::napi_reference_ref(js.raw(), self.raw, &mut count);
            } else {
                sys::napi_reference_unref(js.raw(), self.raw, &mut count);
            }
        }
    }
}

impl Drop for OwnedRef {
    fn drop(&mut self) {
        if self.life.alive() {
            // SAFETY: our reference, deleted once, on its environment's
            // thread (an OwnedRef is not Send), while the environment lives.
            unsafe { sys::napi_delete_reference(self.env, self.raw) };
        }
    }
}
