//! Strings on the hot paths: JSON text handed to `JSON.parse`, and the long
//! strings the core lifted out of frames, put back where they were (copied
//! into V8's heap, or from 1 MiB on left where they are, as external strings).

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::OnceLock;

use koma_transport::lift::{Chars, LiftedString, Step};
use napi::bindgen_prelude::{JsValue, Unknown};
use napi::sys;

use super::js::{check, Js};

/// UTF-8 text as a JavaScript string; ASCII takes the cheaper Latin-1 path.
pub fn text<'e>(js: Js<'e>, bytes: &[u8]) -> napi::Result<Unknown<'e>> {
    let mut v = ptr::null_mut();
    let len = bytes.len() as isize;
    // SAFETY: `bytes` is valid for `len` bytes during the call (Node copies
    // them), on this environment's thread (see `Js`).
    let status = unsafe {
        if bytes.is_ascii() {
            sys::napi_create_string_latin1(js.raw(), bytes.as_ptr().cast(), len, &mut v)
        } else {
            sys::napi_create_string_utf8(js.raw(), bytes.as_ptr().cast(), len, &mut v)
        }
    };
    check(status, "napi_create_string")?;
    Ok(js.value(v))
}

/// Put lifted strings back at their paths in `root` (a parsed skeleton).
/// Returns the root, which a string with an empty path replaces.
pub fn put_lifted<'e>(
    js: Js<'e>,
    mut root: Unknown<'e>,
    lifts: impl IntoIterator<Item = LiftedString>,
) -> napi::Result<Unknown<'e>> {
    let env = js.raw();
    for l in lifts {
        let s = lifted_string(js, l.chars)?;
        let Some((last, init)) = l.path.split_last() else {
            root = s;
            continue;
        };
        let mut at = root.raw();
        for step in init {
            let mut next = ptr::null_mut();
            // SAFETY: `at` is a value of this environment (the root, or a
            // member read from it just above), on its thread (see `Js`).
            let status = unsafe {
                match step {
                    Step::Index(i) => sys::napi_get_element(env, at, *i, &mut next),
                    Step::Key(k) => sys::napi_get_property(env, at, text(js, k.as_bytes())?.raw(), &mut next),
                }
            };
            check(status, "napi_get_property")?;
            at = next;
        }
        // SAFETY: as above; `s` is a string of this environment.
        let status = unsafe {
            match last {
                Step::Index(i) => sys::napi_set_element(env, at, *i, s.raw()),
                Step::Key(k) => sys::napi_set_property(env, at, text(js, k.as_bytes())?.raw(), s.raw()),
            }
        };
        check(status, "napi_set_property")?;
    }
    Ok(root)
}

/// Lifted strings this long become external strings (no copy); shorter ones
/// are copied into V8's heap, where the young generation recycles them
/// cheaply. (A stream of 64 KiB external strings measured slower than copies
/// here: every one is fresh memory, page faults included.)
const EXTERNAL_MIN_BYTES: usize = 1 << 20;

thread_local! {
    /// Bytes of external strings freed on this JavaScript thread and not yet
    /// reported to V8 (reported with the next external string).
    static EXTERNAL_FREED: Cell<i64> = const { Cell::new(0) };
}

/// A lifted string as a JavaScript string: copied, or (from
/// [`EXTERNAL_MIN_BYTES`], where this Node has external strings) left where
/// it is, V8 freeing it through `free_external` when done. V8 is told of
/// external strings' memory, so a stream of them leads to collections
/// instead of growth, and later of what was freed.
fn lifted_string<'e>(js: Js<'e>, chars: Chars) -> napi::Result<Unknown<'e>> {
    let len = chars.byte_len();
    if len < EXTERNAL_MIN_BYTES {
        return copied_string(js, &chars);
    }
    let (latin1, utf16) = *external_string_fns();
    let available = match &chars {
        Chars::Latin1 { .. } => latin1.is_some(),
        Chars::Utf16(_) => utf16.is_some(),
    };
    if !available {
        return copied_string(js, &chars);
    }
    let mut v = ptr::null_mut();
    let mut copied = false;
    let hint = Box::into_raw(Box::new(chars));
    // SAFETY: the characters stay where they are (owned by `hint`) until
    // `free_external` runs; the functions are Node-API's (looked up below),
    // called on this environment's thread.
    let status = unsafe {
        match (&*hint, latin1, utf16) {
            (Chars::Latin1 { bytes, range }, Some(create), _) => {
                let at = bytes[range.clone()].as_ptr() as *mut c_char;
                create(js.raw(), at, range.len() as isize, Some(free_external), hint.cast(), &mut v, &mut copied)
            }
            (Chars::Utf16(units), _, Some(create)) => {
                let at = units.as_ptr() as *mut u16;
                create(js.raw(), at, units.len() as isize, Some(free_external), hint.cast(), &mut v, &mut copied)
            }
            _ => unreachable!("checked above"),
        }
    };
    if status != sys::Status::napi_ok {
        // Not taken (the finalizer was not called): copy instead.
        // SAFETY: the Box leaked above was not handed to Node after all.
        let chars = unsafe { Box::from_raw(hint) };
        return copied_string(js, &chars);
    }
    if copied {
        // Node copied after all and has already run the finalizer, which counted it as freed.
        EXTERNAL_FREED.with(|f| f.set(f.get() - len as i64));
    } else {
        let freed = EXTERNAL_FREED.with(|f| f.take());
        let mut total = 0;
        // SAFETY: on this environment's thread; only adjusts V8's count of external memory.
        unsafe { sys::napi_adjust_external_memory(js.raw(), len as i64 - freed, &mut total) };
    }
    Ok(js.value(v))
}

fn copied_string<'e>(js: Js<'e>, chars: &Chars) -> napi::Result<Unknown<'e>> {
    let mut v = ptr::null_mut();
    // SAFETY: the characters are valid for the length given during the
    // call (Node copies them), on this environment's thread.
    let status = unsafe {
        match chars {
            Chars::Latin1 { bytes, range } => sys::napi_create_string_latin1(
                js.raw(),
                bytes[range.clone()].as_ptr().cast(),
                range.len() as isize,
                &mut v,
            ),
            Chars::Utf16(units) => {
                sys::napi_create_string_utf16(js.raw(), units.as_ptr(), units.len() as isize, &mut v)
            }
        }
    };
    check(status, "napi_create_string")?;
    Ok(js.value(v))
}

type Finalize = unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void);
type CreateExternalLatin1 = unsafe extern "C" fn(
    sys::napi_env,
    *mut c_char,
    isize,
    Option<Finalize>,
    *mut c_void,
    *mut sys::napi_value,
    *mut bool,
) -> sys::napi_status;
type CreateExternalUtf16 = unsafe extern "C" fn(
    sys::napi_env,
    *mut u16,
    isize,
    Option<Finalize>,
    *mut c_void,
    *mut sys::napi_value,
    *mut bool,
) -> sys::napi_status;

/// `node_api_create_external_string_latin1` / `_utf16`, looked up once in
/// the running Node (Node-API 10; present in Node 20.12 and later), or
/// `None`; `KOMA_SDK_NO_EXTERNAL_STRINGS=1` asks for copies only.
fn external_string_fns() -> &'static (Option<CreateExternalLatin1>, Option<CreateExternalUtf16>) {
    static FNS: OnceLock<(Option<CreateExternalLatin1>, Option<CreateExternalUtf16>)> = OnceLock::new();
    FNS.get_or_init(|| {
        if std::env::var_os("KOMA_SDK_NO_EXTERNAL_STRINGS").is_some() {
            return (None, None);
        }
        let latin1 = super::node_symbol::node_symbol(c"node_api_create_external_string_latin1");
        let utf16 = super::node_symbol::node_symbol(c"node_api_create_external_string_utf16");
        // SAFETY: a symbol found in the running Node has Node-API's signature for its name.
        unsafe {
            (
                (!latin1.is_null()).then(|| std::mem::transmute::<*mut c_void, CreateExternalLatin1>(latin1)),
                (!utf16.is_null()).then(|| std::mem::transmute::<*mut c_void, CreateExternalUtf16>(utf16)),
            )
        }
    })
}

/// The finalizer of an external string: frees its characters.
unsafe extern "C" fn free_external(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the Box<Chars> leaked for this string; V8 finalizes it once.
    let chars = unsafe { Box::from_raw(hint.cast::<Chars>()) };
    let len = chars.byte_len() as i64;
    drop(chars);
    let _ = EXTERNAL_FREED.try_with(|f| f.set(f.get() + len));
}
