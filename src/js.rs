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

/// Call a Node-API function and check its status: a failure becomes a napi error.
///
/// Every call made through this macro is sound for the same reasons: `Js`
/// holds the environment of the JavaScript thread that is running (a `Js` is
/// only made from an env that Node handed to the current callback), the value
/// arguments are live values of that environment, and the out-pointers point
/// at the caller's locals.
macro_rules! napi_call {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        // SAFETY: see the macro's documentation.
        let status = unsafe { sys::$f($($arg),*) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(napi::Status::from(status), format!("Node-API call failed: {}", stringify!($f))));
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
        napi_call!(napi_get_undefined(self.0, &mut v));
        Ok(v)
    }

    pub fn boolean(self, b: bool) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        napi_call!(napi_get_boolean(self.0, b, &mut v));
        Ok(v)
    }

    pub fn number(self, n: f64) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        napi_call!(napi_create_double(self.0, n, &mut v));
        Ok(v)
    }

    /// A string from UTF-8 bytes; ASCII takes the cheaper Latin-1 path.
    pub fn string(self, bytes: &[u8]) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        if bytes.is_ascii() {
            napi_call!(napi_create_string_latin1(self.0, bytes.as_ptr().cast(), bytes.len() as isize, &mut v));
        } else {
            napi_call!(napi_create_string_utf8(self.0, bytes.as_ptr().cast(), bytes.len() as isize, &mut v));
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
            // SAFETY: the Box leaked above, not handed to Node after all.
            let chars = unsafe { Box::from_raw(hint) };
            return self.copied_string(&chars);
        }
        if copied {
            // Node copied after all and has already run the finalizer, which counted it as freed.
            EXTERNAL_FREED.with(|f| f.set(f.get() - len as i64));
        } else {
            let freed = EXTERNAL_FREED.with(|f| f.take());
            let mut total = 0;
            // SAFETY: on this env's thread; only adjusts V8's count of external memory.
            unsafe { sys::napi_adjust_external_memory(self.0, len as i64 - freed, &mut total) };
        }
        Ok(v)
    }

    fn copied_string(self, chars: &Chars) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        match chars {
            Chars::Latin1 { bytes, range } => {
                napi_call!(napi_create_string_latin1(
                    self.0,
                    bytes[range.clone()].as_ptr().cast(),
                    range.len() as isize,
                    &mut v
                ))
            }
            Chars::Utf16(units) => {
                napi_call!(napi_create_string_utf16(self.0, units.as_ptr(), units.len() as isize, &mut v))
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
                    Step::Index(i) => napi_call!(napi_get_element(self.0, at, *i, &mut next)),
                    Step::Key(k) => {
                        let key = self.string(k.as_bytes())?;
                        napi_call!(napi_get_property(self.0, at, key, &mut next))
                    }
                }
                at = next;
            }
            match last {
                Step::Index(i) => napi_call!(napi_set_element(self.0, at, *i, s)),
                Step::Key(k) => {
                    let key = self.string(k.as_bytes())?;
                    napi_call!(napi_set_property(self.0, at, key, s))
                }
            }
        }
        Ok(root)
    }

    pub fn object(self) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        napi_call!(napi_create_object(self.0, &mut v));
        Ok(v)
    }

    pub fn set(self, obj: Value, name: &str, value: Value) -> napi::Result<()> {
        let key = self.string(name.as_bytes())?;
        napi_call!(napi_set_property(self.0, obj, key, value));
        Ok(())
    }

    /// Set a property whose name is a static C string (no key string created here).
    pub fn set_named(self, obj: Value, name: &std::ffi::CStr, value: Value) -> napi::Result<()> {
        napi_call!(napi_set_named_property(self.0, obj, name.as_ptr(), value));
        Ok(())
    }

    pub fn get(self, obj: Value, name: &str) -> napi::Result<Value> {
        let key = self.string(name.as_bytes())?;
        let mut v = ptr::null_mut();
        napi_call!(napi_get_property(self.0, obj, key, &mut v));
        Ok(v)
    }

    pub fn element(self, array: Value, i: u32) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        napi_call!(napi_get_element(self.0, array, i, &mut v));
        Ok(v)
    }

    pub fn type_of(self, v: Value) -> napi::Result<i32> {
        let mut t = 0;
        napi_call!(napi_typeof(self.0, v, &mut t));
        Ok(t)
    }

    pub fn is_nullish(self, v: Value) -> napi::Result<bool> {
        let t = self.type_of(v)?;
        Ok(t == sys::ValueType::napi_undefined || t == sys::ValueType::napi_null)
    }

    pub fn get_bool(self, v: Value) -> napi::Result<bool> {
        let mut b = false;
        napi_call!(napi_get_value_bool(self.0, v, &mut b));
        Ok(b)
    }

    pub fn get_f64(self, v: Value) -> napi::Result<f64> {
        let mut n = 0.0;
        napi_call!(napi_get_value_double(self.0, v, &mut n));
        Ok(n)
    }

    /// A JavaScript string's UTF-8 bytes.
    pub fn get_string(self, v: Value) -> napi::Result<String> {
        let mut len = 0usize;
        napi_call!(napi_get_value_string_utf8(self.0, v, ptr::null_mut(), 0, &mut len));
        let mut buf = vec![0u8; len + 1];
        let mut written = 0usize;
        napi_call!(napi_get_value_string_utf8(self.0, v, buf.as_mut_ptr().cast(), len + 1, &mut written));
        buf.truncate(written);
        String::from_utf8(buf).map_err(|e| napi::Error::from_reason(e.to_string()))
    }

    pub fn call(self, f: Value, this: Value, args: &[Value]) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        napi_call!(napi_call_function(self.0, this, f, args.len(), args.as_ptr(), &mut v));
        Ok(v)
    }

    /// Take the pending JavaScript exception, if any.
    pub fn take_exception(self) -> Option<Value> {
        let mut pending = false;
        // SAFETY: a query on this env's thread.
        unsafe { sys::napi_is_exception_pending(self.0, &mut pending) };
        if !pending {
            return None;
        }
        let mut v = ptr::null_mut();
        // SAFETY: an exception is pending on this env's thread; `v` receives it.
        unsafe { sys::napi_get_and_clear_last_exception(self.0, &mut v) };
        Some(v)
    }

    /// The `message` of a thrown value (or the value itself, if a string).
    pub fn message_of(self, thrown: Value) -> Option<String> {
        let t = self.type_of(thrown).ok()?;
        let text = if t == sys::ValueType::napi_string {
            thrown
        } else if t == sys::ValueType::napi_object {
            let m = self.get(thrown, "message").ok()?;
            (self.type_of(m).ok()? == sys::ValueType::napi_string).then_some(m)?
        } else {
            return None;
        };
        let r = self.get_string(text).ok();
        let _ = self.take_exception();
        r
    }

    /// An `Error` with the protocol file's `code`; remote errors carry `remote`.
    pub fn error(self, e: &KomaError, json_parse: Option<Value>) -> napi::Result<Value> {
        let code = self.string(e.code.as_str().as_bytes())?;
        let msg = self.string(e.message.as_bytes())?;
        let mut err = ptr::null_mut();
        napi_call!(napi_create_error(self.0, code, msg, &mut err));
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

    /// An object's own enumerable string keys.
    pub fn own_keys(self, obj: Value) -> napi::Result<Vec<String>> {
        let mut names = ptr::null_mut();
        napi_call!(napi_get_property_names(self.0, obj, &mut names));
        let mut len = 0u32;
        napi_call!(napi_get_array_length(self.0, names, &mut len));
        (0..len).map(|i| self.get_string(self.element(names, i)?)).collect()
    }

    pub fn null(self) -> napi::Result<Value> {
        let mut v = ptr::null_mut();
        napi_call!(napi_get_null(self.0, &mut v));
        Ok(v)
    }

    /// Throw `error` (it becomes the pending exception).
    pub fn throw(self, error: Value) -> napi::Result<()> {
        napi_call!(napi_throw(self.0, error));
        Ok(())
    }

    /// Compile and run a script (JavaScript source text); its completion value.
    pub fn run_script(self, source: &str) -> napi::Result<Value> {
        let source = self.string(source.as_bytes())?;
        let mut v = ptr::null_mut();
        napi_call!(napi_run_script(self.0, source, &mut v));
        Ok(v)
    }

    /// An `ArrayBuffer` over `len` bytes at `data`, which `owner` keeps alive
    /// until V8 collects the buffer (then `owner` is dropped).
    pub fn external_array_buffer<T: 'static>(self, data: *mut u8, len: usize, owner: T) -> napi::Result<Value> {
        unsafe extern "C" fn release<T>(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
            // SAFETY: the Box leaked below; V8 finalizes the buffer once.
            drop(unsafe { Box::from_raw(hint.cast::<T>()) });
        }
        let hint = Box::into_raw(Box::new(owner));
        let mut v = ptr::null_mut();
        // SAFETY: `data` stays valid while `owner` lives, which is until `release` runs.
        let status = unsafe {
            sys::napi_create_external_arraybuffer(self.0, data.cast(), len, Some(release::<T>), hint.cast(), &mut v)
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not handed to V8: take the Box back.
            drop(unsafe { Box::from_raw(hint) });
            return Err(napi::Error::from_reason("could not create an external ArrayBuffer"));
        }
        Ok(v)
    }

    pub fn global(self) -> napi::Result<Value> {
        let mut g = ptr::null_mut();
        napi_call!(napi_get_global(self.0, &mut g));
        Ok(g)
    }
}

type Finalize = unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void);
type CreateExternalLatin1 = unsafe extern "C" fn(
    sys::napi_env,
    *mut c_char,
    isize,
    Option<Finalize>,
    *mut c_void,
    *mut Value,
    *mut bool,
) -> sys::napi_status;
type CreateExternalUtf16 = unsafe extern "C" fn(
    sys::napi_env,
    *mut u16,
    isize,
    Option<Finalize>,
    *mut c_void,
    *mut Value,
    *mut bool,
) -> sys::napi_status;

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
    // SAFETY: `hint` is the Box<Chars> leaked for this string; V8 finalizes it once.
    let chars = unsafe { Box::from_raw(hint.cast::<Chars>()) };
    let len = chars.byte_len() as i64;
    drop(chars);
    let _ = EXTERNAL_FREED.try_with(|f| f.set(f.get() + len));
}
