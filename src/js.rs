//! Small helpers over Node-API for the hot paths: promises resolved from one
//! wake-up of the JavaScript thread, `JSON.parse` of a batch, coded errors.
//! Everything here runs on the JavaScript thread of `env`.

use std::ffi::c_void;
use std::ptr;

use koma_transport::KomaError;
use napi::sys;

pub type Value = sys::napi_value;

/// Check a Node-API status; a failure becomes a napi error.
macro_rules! ok {
    ($e:expr) => {{
        let status = $e;
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(napi::Status::from(status), format!("Node-API call failed: {}", stringify!($e))));
        }
    }};
}

/// A Node-API status as a result.
pub fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(napi::Status::from(status), "Node-API call failed"))
    }
}

#[derive(Clone, Copy)]
pub struct Js(pub sys::napi_env);

impl Js {
    pub fn undefined(self) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_get_undefined(self.0, &mut v) });
        Ok(v)
    }

    pub fn boolean(self, b: bool) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_get_boolean(self.0, b, &mut v) });
        Ok(v)
    }

    pub fn number(self, n: f64) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_create_double(self.0, n, &mut v) });
        Ok(v)
    }

    /// A string from UTF-8 bytes; ASCII takes the cheaper Latin-1 path.
    pub fn string(self, bytes: &[u8]) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        if bytes.is_ascii() {
            ok!(unsafe { sys::napi_create_string_latin1(self.0, bytes.as_ptr().cast(), bytes.len() as isize, &mut v) });
        } else {
            ok!(unsafe { sys::napi_create_string_utf8(self.0, bytes.as_ptr().cast(), bytes.len() as isize, &mut v) });
        }
        Ok(v)
    }

    pub fn object(self) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_create_object(self.0, &mut v) });
        Ok(v)
    }

    pub fn set(self, obj: Value, name: &str, value: Value) -> napi::Result<()> {
        let key = self.string(name.as_bytes())?;
        ok!(unsafe { sys::napi_set_property(self.0, obj, key, value) });
        Ok(())
    }

    /// Set a property whose name is a static C string (no key string created here).
    pub fn set_named(self, obj: Value, name: &std::ffi::CStr, value: Value) -> napi::Result<()> {
        ok!(unsafe { sys::napi_set_named_property(self.0, obj, name.as_ptr(), value) });
        Ok(())
    }

    pub fn get(self, obj: Value, name: &str) -> napi::Result<Value> {
        let key = self.string(name.as_bytes())?;
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_get_property(self.0, obj, key, &mut v) });
        Ok(v)
    }

    pub fn element(self, array: Value, i: u32) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_get_element(self.0, array, i, &mut v) });
        Ok(v)
    }

    pub fn type_of(self, v: Value) -> napi::Result<i32> {
        let mut t = 0;
        ok!(unsafe { sys::napi_typeof(self.0, v, &mut t) });
        Ok(t)
    }

    pub fn is_nullish(self, v: Value) -> napi::Result<bool> {
        let t = self.type_of(v)?;
        Ok(t == sys::ValueType::napi_undefined || t == sys::ValueType::napi_null)
    }

    pub fn get_bool(self, v: Value) -> napi::Result<bool> {
        let mut b = false;
        ok!(unsafe { sys::napi_get_value_bool(self.0, v, &mut b) });
        Ok(b)
    }

    pub fn get_f64(self, v: Value) -> napi::Result<f64> {
        let mut n = 0.0;
        ok!(unsafe { sys::napi_get_value_double(self.0, v, &mut n) });
        Ok(n)
    }

    /// A JavaScript string's UTF-8 bytes.
    pub fn get_string(self, v: Value) -> napi::Result<String> {
        let mut len = 0usize;
        ok!(unsafe { sys::napi_get_value_string_utf8(self.0, v, ptr::null_mut(), 0, &mut len) });
        let mut buf = vec![0u8; len + 1];
        let mut written = 0usize;
        ok!(unsafe { sys::napi_get_value_string_utf8(self.0, v, buf.as_mut_ptr().cast(), len + 1, &mut written) });
        buf.truncate(written);
        String::from_utf8(buf).map_err(|e| napi::Error::from_reason(e.to_string()))
    }

    pub fn call(self, f: Value, this: Value, args: &[Value]) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_call_function(self.0, this, f, args.len(), args.as_ptr(), &mut v) });
        Ok(v)
    }

    /// Take the pending JavaScript exception, if any.
    pub fn take_exception(self) -> Option<Value> {
        let mut pending = false;
        unsafe { sys::napi_is_exception_pending(self.0, &mut pending) };
        if !pending {
            return None;
        }
        let mut v = ptr::null_mut();
        unsafe { sys::napi_get_and_clear_last_exception(self.0, &mut v) };
        Some(v)
    }

    pub fn reference(self, v: Value, count: u32) -> napi::Result<sys::napi_ref> {
        let mut r = ptr::null_mut();
        ok!(unsafe { sys::napi_create_reference(self.0, v, count, &mut r) });
        Ok(r)
    }

    pub fn deref(self, r: sys::napi_ref) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        ok!(unsafe { sys::napi_get_reference_value(self.0, r, &mut v) });
        Ok(v)
    }

    pub fn delete_reference(self, r: sys::napi_ref) {
        unsafe { sys::napi_delete_reference(self.0, r) };
    }

    pub fn promise(self) -> napi::Result<(sys::napi_deferred, Value)> {
        let mut d = ptr::null_mut();
        let mut p = ptr::null_mut();
        ok!(unsafe { sys::napi_create_promise(self.0, &mut d, &mut p) });
        Ok((d, p))
    }

    pub fn resolve(self, d: sys::napi_deferred, v: Value) {
        unsafe { sys::napi_resolve_deferred(self.0, d, v) };
    }

    pub fn reject(self, d: sys::napi_deferred, v: Value) {
        unsafe { sys::napi_reject_deferred(self.0, d, v) };
    }

    pub fn resolved(self, v: Value) -> napi::Result<Value> {
        let (d, p) = self.promise()?;
        self.resolve(d, v);
        Ok(p)
    }

    pub fn rejected(self, e: &KomaError) -> napi::Result<Value> {
        let err = self.error(e, None)?;
        let (d, p) = self.promise()?;
        self.reject(d, err);
        Ok(p)
    }

    /// An `Error` with the protocol file's `code`; remote errors carry `remote`.
    pub fn error(self, e: &KomaError, json_parse: Option<Value>) -> napi::Result<Value> {
        let code = self.string(e.code.as_str().as_bytes())?;
        let msg = self.string(e.message.as_bytes())?;
        let mut err = ptr::null_mut();
        ok!(unsafe { sys::napi_create_error(self.0, code, msg, &mut err) });
        if let Some(r) = &e.remote {
            let remote = self.object()?;
            self.set(remote, "code", self.string(r.code.as_bytes())?)?;
            self.set(remote, "message", self.string(r.message.as_bytes())?)?;
            let data = match (&r.data, json_parse) {
                (Some(text), Some(parse)) => {
                    let s = self.string(text.as_bytes())?;
                    let global = self.undefined()?;
                    self.call(parse, global, &[s])?
                }
                _ => self.undefined()?,
            };
            self.set(remote, "data", data)?;
            self.set(err, "remote", remote)?;
        }
        Ok(err)
    }

    pub fn global(self) -> napi::Result<Value> {
        let mut g = ptr::null_mut();
        ok!(unsafe { sys::napi_get_global(self.0, &mut g) });
        Ok(g)
    }

    /// A native function whose `data` is freed when the function is collected.
    pub fn function<T>(
        self,
        name: &str,
        cb: unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> Value,
        data: Box<T>,
    ) -> napi::Result<Value> {
        unsafe extern "C" fn free<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
            drop(unsafe { Box::from_raw(data.cast::<T>()) });
        }
        let raw = Box::into_raw(data);
        let mut f = ptr::null_mut();
        let status = unsafe {
            sys::napi_create_function(self.0, name.as_ptr().cast(), name.len() as isize, Some(cb), raw.cast(), &mut f)
        };
        if status != sys::Status::napi_ok {
            drop(unsafe { Box::from_raw(raw) });
            return Err(napi::Error::from_reason("napi_create_function failed"));
        }
        ok!(unsafe { sys::napi_add_finalizer(self.0, f, raw.cast(), Some(free::<T>), ptr::null_mut(), ptr::null_mut()) });
        Ok(f)
    }
}

/// The `data` pointer of a native function call.
pub unsafe fn callback_data<T>(env: sys::napi_env, info: sys::napi_callback_info) -> Option<&'static T> {
    let mut data = ptr::null_mut();
    let mut argc = 0usize;
    let status = unsafe {
        sys::napi_get_cb_info(env, info, &mut argc, ptr::null_mut(), ptr::null_mut(), &mut data)
    };
    if status != sys::Status::napi_ok || data.is_null() {
        return None;
    }
    Some(unsafe { &*(data.cast::<T>()) })
}
