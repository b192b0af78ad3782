//! Small helpers over napi-rs's values, for reading what JavaScript passed
//! in and calling into it.

use napi::bindgen_prelude::{FromNapiValue, JsObjectValue, Object, Unknown};
use napi::{KeyCollectionMode, KeyConversion, KeyFilter, ValueType};

use crate::handles::Js;

/// The value's type (`Unknown` if even that cannot be read).
pub fn kind(v: &Unknown) -> ValueType {
    v.get_type().unwrap_or(ValueType::Unknown)
}

/// `undefined` or `null`.
pub fn is_nullish(v: &Unknown) -> bool {
    matches!(kind(v), ValueType::Undefined | ValueType::Null)
}

/// The value as an object, if it is one (functions are not).
pub fn as_object<'e>(v: Unknown<'e>) -> Option<Object<'e>> {
    (kind(&v) == ValueType::Object).then(|| Object::from_unknown(v).ok()).flatten()
}

/// The value as a string, if it is one.
pub fn as_string(v: Unknown) -> Option<String> {
    (kind(&v) == ValueType::String).then(|| String::from_unknown(v).ok()).flatten()
}

/// A property, or the message of what its getter threw.
pub fn get<'e>(js: Js<'e>, obj: &Object<'e>, name: &str) -> Result<Unknown<'e>, String> {
    obj.get_named_property::<Unknown>(name).map_err(|e| thrown(js, e))
}

/// The object's own enumerable string keys.
pub fn own_keys(obj: &Object) -> napi::Result<Vec<String>> {
    let names =
        obj.get_all_property_names(KeyCollectionMode::OwnOnly, KeyFilter::Enumerable, KeyConversion::NumbersToStrings)?;
    let mut keys = Vec::new();
    for i in 0..names.get_array_length()? {
        if let Some(k) = as_string(names.get_element::<Unknown>(i)?) {
            keys.push(k);
        }
    }
    Ok(keys)
}

/// The message of a failed call: the thrown value's `message` (or the value,
/// if a string) when it threw, taking the exception; else the error's reason.
pub fn thrown(js: Js, e: napi::Error) -> String {
    js.take_exception().and_then(|exc| message_of(js, exc)).unwrap_or(e.reason)
}

/// The `message` of a thrown value, or the value itself if a string.
pub fn message_of(js: Js, thrown: Unknown) -> Option<String> {
    if let Some(s) = as_string(thrown) {
        return Some(s);
    }
    let message = as_object(thrown).and_then(|o| o.get_named_property::<Unknown>("message").ok());
    let _ = js.take_exception(); // a getter that threw
    message.and_then(as_string)
}

/// A value as a message names it: a string quoted, `undefined`, `null`, a
/// number or boolean as written, else its kind (`an object`, `a function`).
pub fn describe(v: Unknown) -> String {
    match kind(&v) {
        ValueType::String => as_string(v).map(|s| serde_json::to_string(&s).unwrap_or_default()).unwrap_or_default(),
        ValueType::Undefined => "undefined".into(),
        ValueType::Null => "null".into(),
        ValueType::Number => f64::from_unknown(v).map(|n| n.to_string()).unwrap_or_else(|_| "a number".into()),
        ValueType::Boolean => bool::from_unknown(v).map(|b| b.to_string()).unwrap_or_else(|_| "a boolean".into()),
        ValueType::Function => "a function".into(),
        ValueType::BigInt => "a BigInt".into(),
        ValueType::Symbol => "a symbol".into(),
        _ => "an object".into(),
    }
}
