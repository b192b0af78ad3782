//! Small helpers over Node-API for the hot paths: promises resolved from one
//! wake-up of the JavaScript thread, `JSON.parse` of a batch, coded errors.
//! Everything here runs on the JavaScript thread of `env`.

use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::OnceLock;

use koma_transport::lift::{Chars, LiftedString, Step};
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

    /// A lifted string as a JavaScript string: copied into V8's heap, or, at
    /// [`EXTERNAL_MIN_BYTES`] and more where this Node has external strings,
    /// left where it is (V8 frees it through `free_external` when done).
    /// V8 is told of external strings' memory (so a stream of them leads to
    /// collections instead of growth) and, later, of what was freed.
    pub fn lifted_string(self, chars: Chars) -> napi::Result<Value> {
        let len = chars.byte_len();
        if len < EXTERNAL_MIN_BYTES {
            return self.copied_string(&chars);
        }
        let (latin1, utf16) = *external_string_fns();
        let available = match &chars {
            Chars::Latin1 { .. } => latin1.is_some(),
            Chars::Utf16(_) => utf16.is_some(),
        };
        if !available {
            return self.copied_string(&chars);
        }
        let mut v = ptr::null_mut();
        let mut copied = false;
        let hint = Box::into_raw(Box::new(chars));
        // SAFETY: the characters stay where they are (owned by `hint`) until
        // `free_external` runs; the functions are Node-API's (looked up above).
        let status = unsafe {
            match (&*hint, latin1, utf16) {
                (Chars::Latin1 { bytes, range }, Some(create), _) => {
                    let at = bytes[range.clone()].as_ptr() as *mut c_char;
                    create(self.0, at, range.len() as isize, Some(free_external), hint.cast(), &mut v, &mut copied)
                }
                (Chars::Utf16(units), _, Some(create)) => {
                    let at = units.as_ptr() as *mut u16;
                    create(self.0, at, units.len() as isize, Some(free_external), hint.cast(), &mut v, &mut copied)
                }
                _ => unreachable!("checked above"),
            }
        };
        if status != sys::Status::napi_ok {
            // Not taken (the finalizer was not called): copy instead.
            let chars = unsafe { Box::from_raw(hint) };
            return self.copied_string(&chars);
        }
        if copied {
            // Node copied after all and has already run the finalizer, which counted it as freed.
            EXTERNAL_FREED.with(|f| f.set(f.get() - len as i64));
        } else {
            let freed = EXTERNAL_FREED.with(|f| f.take());
            let mut total = 0;
            unsafe { sys::napi_adjust_external_memory(self.0, len as i64 - freed, &mut total) };
        }
        Ok(v)
    }

    fn copied_string(self, chars: &Chars) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        match chars {
            Chars::Latin1 { bytes, range } => {
                ok!(unsafe { sys::napi_create_string_latin1(self.0, bytes[range.clone()].as_ptr().cast(), range.len() as isize, &mut v) })
            }
            Chars::Utf16(units) => {
                ok!(unsafe { sys::napi_create_string_utf16(self.0, units.as_ptr(), units.len() as isize, &mut v) })
            }
        }
        Ok(v)
    }

    /// Put lifted strings back at their paths in `root` (a parsed skeleton).
    /// Returns the root, which a string with an empty path replaces.
    pub fn put_lifted(self, mut root: Value, lifts: impl IntoIterator<Item = LiftedString>) -> napi::Result<Value> {
        for l in lifts {
            let s = self.lifted_string(l.chars)?;
            let Some((last, init)) = l.path.split_last() else {
                root = s;
                continue;
            };
            let mut at = root;
            for step in init {
                let mut next = ptr::null_mut();
                match step {
                    Step::Index(i) => ok!(unsafe { sys::napi_get_element(self.0, at, *i, &mut next) }),
                    Step::Key(k) => {
                        let key = self.string(k.as_bytes())?;
                        ok!(unsafe { sys::napi_get_property(self.0, at, key, &mut next) })
                    }
                }
                at = next;
            }
            match last {
                Step::Index(i) => ok!(unsafe { sys::napi_set_element(self.0, at, *i, s) }),
                Step::Key(k) => {
                    let key = self.string(k.as_bytes())?;
                    ok!(unsafe { sys::napi_set_property(self.0, at, key, s) })
                }
            }
        }
        Ok(root)
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

type Finalize = unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void);
type CreateExternalLatin1 =
    unsafe extern "C" fn(sys::napi_env, *mut c_char, isize, Option<Finalize>, *mut c_void, *mut Value, *mut bool) -> sys::napi_status;
type CreateExternalUtf16 =
    unsafe extern "C" fn(sys::napi_env, *mut u16, isize, Option<Finalize>, *mut c_void, *mut Value, *mut bool) -> sys::napi_status;

/// `node_api_create_external_string_latin1` / `_utf16`, looked up in the
/// running Node (Node-API 10; present in Node 20.12 and later), or `None`.
fn external_string_fns() -> &'static (Option<CreateExternalLatin1>, Option<CreateExternalUtf16>) {
    static FNS: OnceLock<(Option<CreateExternalLatin1>, Option<CreateExternalUtf16>)> = OnceLock::new();
    FNS.get_or_init(|| {
        if std::env::var_os("KOMA_SDK_NO_EXTERNAL_STRINGS").is_some() {
            return (None, None);
        }
        // SAFETY: dlsym on the process's own symbols; the signatures are Node-API's.
        unsafe {
            let latin1 = libc::dlsym(libc::RTLD_DEFAULT, c"node_api_create_external_string_latin1".as_ptr());
            let utf16 = libc::dlsym(libc::RTLD_DEFAULT, c"node_api_create_external_string_utf16".as_ptr());
            (
                (!latin1.is_null()).then(|| std::mem::transmute::<*mut c_void, CreateExternalLatin1>(latin1)),
                (!utf16.is_null()).then(|| std::mem::transmute::<*mut c_void, CreateExternalUtf16>(utf16)),
            )
        }
    })
}

/// Lifted strings this long become external strings (no copy); shorter ones
/// are copied into V8's heap, where the young generation recycles them
/// cheaply. (A stream of 64 KiB external strings measured slower than copies
/// here: every one is fresh memory, page faults included.)
pub const EXTERNAL_MIN_BYTES: usize = 1 << 20;

thread_local! {
    /// Bytes of external strings freed on this JavaScript thread and not yet
    /// reported to V8 (reported with the next external string).
    static EXTERNAL_FREED: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// The finalizer of an external string: frees its characters.
unsafe extern "C" fn free_external(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    let chars = unsafe { Box::from_raw(hint.cast::<Chars>()) };
    let len = chars.byte_len() as i64;
    drop(chars);
    let _ = EXTERNAL_FREED.try_with(|f| f.set(f.get() + len));
}
