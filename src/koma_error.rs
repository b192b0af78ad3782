//! Telling the package's errors apart in a `catch`.

use koma_transport::ErrorCode;
use napi::bindgen_prelude::Unknown;
use napi::{Env, JsValue};
use napi_derive::napi;

use crate::handles::Js;
use crate::values::{as_object, as_string, get};

/// The codes of the protocol file's error table (part C), as the typings of
/// `KomaError` list them.
const CODES: [ErrorCode; 14] = [
    ErrorCode::Remote,
    ErrorCode::DeliveryUnknown,
    ErrorCode::TransportFailure,
    ErrorCode::SpawnFailed,
    ErrorCode::ProtocolError,
    ErrorCode::ProtocolMismatch,
    ErrorCode::FrameTooLarge,
    ErrorCode::TooManyPending,
    ErrorCode::Lifecycle,
    ErrorCode::Unsupported,
    ErrorCode::InvalidParams,
    ErrorCode::Closed,
    ErrorCode::Aborted,
    ErrorCode::Timeout,
];

/// Whether `value` is an error of this package: an `Error` whose `code` is
/// one of the table's. In a `catch`, it narrows to `KomaError`:
///
/// ```ts
/// try { await client.state(); } catch (e) { if (isKomaError(e) && e.code === "timeout") retry(); }
/// ```
#[napi(catch_unwind, ts_args_type = "value: unknown", ts_return_type = "value is KomaError")]
pub fn is_koma_error(env: &Env, value: Unknown) -> bool {
    if !value.is_error().unwrap_or(false) {
        return false;
    }
    let js = Js::new(env);
    let code = as_object(value).and_then(|o| get(js, &o, "code").ok()).and_then(as_string);
    code.is_some_and(|c| CODES.iter().any(|k| k.as_str() == c))
}
