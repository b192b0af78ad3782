//! The methods' params: checked against each method's fields, then read.

use crate::server::rpc::{invalid, RpcError};
use serde_json::{Map, Value};

#[derive(Clone, Copy)]
pub enum Kind {
    Str,
    UInt,
}

/// A method's fields: name, kind, required.
pub type Fields = [(&'static str, Kind, bool)];

/// The fields of each method's params (the bench methods' too).
pub fn fields(method: &str) -> &'static Fields {
    use Kind::*;
    match method {
        "create" => &[("cwd", Str, false), ("model", Str, false)],
        "resume" => &[("session", Str, true), ("after", UInt, false)],
        "submit" | "enqueue" | "interrupt_and_submit" => &[("text", Str, true)],
        "approve" => &[("approval", Str, true), ("decision", Str, true)],
        "configure" => &[("model", Str, false)],
        "bench_events" => &[("count", UInt, true), ("bytes", UInt, true)],
        "bench_blob" => &[("bytes", UInt, true)],
        "bench_exit" => &[("code", UInt, true)],
        _ => &[],
    }
}

/// Rejects unknown fields, missing required fields and wrong types. An
/// optional field may be `null`, which means absent.
pub fn check(p: &Map<String, Value>, fields: &Fields) -> Result<(), RpcError> {
    if let Some(k) = p.keys().find(|k| !fields.iter().any(|f| f.0 == k.as_str())) {
        return Err(invalid(k, format!("unknown field `{k}`")));
    }
    for &(name, kind, required) in fields {
        match p.get(name) {
            None if required => return Err(invalid(name, format!("missing field `{name}`"))),
            None => {}
            Some(Value::Null) if !required => {}
            Some(v) => {
                let good = match kind {
                    Kind::Str => v.is_string(),
                    Kind::UInt => v.as_u64().is_some(),
                };
                if !good {
                    let want = match kind {
                        Kind::Str => "a string",
                        Kind::UInt => "a non-negative integer",
                    };
                    return Err(invalid(name, format!("field `{name}` must be {want}")));
                }
            }
        }
    }
    Ok(())
}

/// A string field (absent, null or checked away: None).
pub fn s(p: &Map<String, Value>, k: &str) -> Option<String> {
    p.get(k).and_then(Value::as_str).map(str::to_string)
}

/// A non-negative integer field.
pub fn u(p: &Map<String, Value>, k: &str) -> Option<u64> {
    p.get(k).and_then(Value::as_u64)
}
