//! An `Error` with a `code` of docs/protocol.md (Error codes): a `KomaError`, made by
//! `lib/errors.js` (so `instanceof KomaError` holds, and its `name` says
//! what it is), or a plain `Error` where the package's JavaScript half is
//! not registered (the binding loaded alone).

use std::cell::RefCell;
use std::ptr;
use std::rc::Rc;

use koma_transport::KomaError;
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, Object, Unknown};
use napi::{JsValue, Property, PropertyAttributes};

use super::js::{check, EnvLife, Js};
use super::reference::OwnedRef;
use super::strings::text;

/// A `KomaError` with `e`'s code and message; a remote error carries `remote`
/// (`{code, message, data}`, its data parsed by `json_parse`), and `cause`
/// is set as `new Error(message, { cause })` sets it (not enumerable).
pub fn coded_error<'e>(
    js: Js<'e>,
    e: &KomaError,
    json_parse: Option<&Function<'e>>,
    cause: Option<Unknown<'e>>,
) -> napi::Result<Unknown<'e>> {
    let env = js.env();
    let code = text(js, e.code.as_str().as_bytes())?;
    let message = text(js, e.message.as_bytes())?;
    let mut err = match made_by_lib(js, code, message) {
        Some(err) => err,
        None => {
            let mut raw = ptr::null_mut();
            // SAFETY: two strings of this environment, made above; `raw` receives the error.
            let status = unsafe { napi::sys::napi_create_error(js.raw(), code.raw(), message.raw(), &mut raw) };
            check(status, "napi_create_error")?;
            Object::from_raw(js.raw(), raw)
        }
    };
    if let Some(r) = &e.remote {
        let mut remote = Object::new(&env)?;
        remote.set_named_property("code", r.code.as_str())?;
        remote.set_named_property("message", r.message.as_str())?;
        match (&r.data, json_parse) {
            (Some(data), Some(parse)) => remote.set_named_property("data", parse.call(text(js, data.as_bytes())?)?)?,
            _ => remote.set_named_property("data", ())?,
        }
        err.set_named_property("remote", remote)?;
    }
    if let Some(cause) = cause {
        let attributes = PropertyAttributes::Writable | PropertyAttributes::Configurable;
        let property = Property::new().with_utf8_name("cause")?.with_value(&cause).with_property_attributes(attributes);
        err.define_properties(&[property])?;
    }
    Ok(err.to_unknown())
}

thread_local! {
    /// `makeError` of `lib/errors.js`, registered with the package's
    /// JavaScript half in this thread's environment (one per thread).
    static MAKER: RefCell<Option<OwnedRef>> = const { RefCell::new(None) };
}

/// Make the errors of this thread's environment with `make` (`makeError` of `lib/errors.js`).
pub fn set_error_maker<'e>(js: Js<'e>, life: &Rc<EnvLife>, make: &Unknown<'e>) -> napi::Result<()> {
    let r = OwnedRef::new(js, life, make, true)?;
    MAKER.with(|m| *m.borrow_mut() = Some(r));
    Ok(())
}

/// `makeError(code, message)` of `lib/errors.js`, if this environment registered it.
fn made_by_lib<'e>(js: Js<'e>, code: Unknown<'e>, message: Unknown<'e>) -> Option<Object<'e>> {
    let make = MAKER.with(|m| m.borrow().as_ref().map(|r| r.value(js)))?.ok()?;
    let make: Function<'e, FnArgs<(Unknown<'e>, Unknown<'e>)>, Object<'e>> = Function::from_unknown(make).ok()?;
    match make.call(FnArgs::from((code, message))) {
        Ok(err) => Some(err),
        Err(_) => {
            let _ = js.take_exception();
            None
        }
    }
}
