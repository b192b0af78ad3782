//! A request as the methods see it, and its answer: a result or a remote
//! error, and the response frame that carries it.

use crate::agent::json_str;
use serde_json::{json, Value};
use std::borrow::Cow;

/// A request that has an id and a method.
#[derive(Clone)]
pub struct Req {
    pub id: String,
    pub method: String,
    /// The first request this process read (the frame faults replace its answer).
    pub first: bool,
    /// A scenario's `delay_ms`: the answer goes this much later.
    pub delay_ms: u64,
}

pub struct RpcError {
    pub code: Cow<'static, str>,
    pub message: String,
    pub data: Option<Value>,
}

pub fn err(code: &'static str, message: impl Into<String>) -> RpcError {
    RpcError { code: Cow::Borrowed(code), message: message.into(), data: None }
}

/// `invalid_params`, naming the field.
pub fn invalid(field: &str, message: String) -> RpcError {
    RpcError { code: Cow::Borrowed("invalid_params"), message, data: Some(json!({"field": field})) }
}

/// A result is serialized JSON (so that big results are built only once).
pub type Res = Result<String, RpcError>;

pub fn ok(v: Value) -> Res {
    Ok(v.to_string())
}

pub fn response_frame(id: &str, res: &Res) -> String {
    match res {
        Ok(r) => {
            let idj = json_str(id);
            let mut f = String::with_capacity(r.len() + idj.len() + 16);
            f.push_str("{\"id\":");
            f.push_str(&idj);
            f.push_str(",\"result\":");
            f.push_str(r);
            f.push('}');
            f
        }
        Err(e) => {
            let mut eo = json!({"code": e.code, "message": e.message});
            if let Some(d) = &e.data {
                eo["data"] = d.clone();
            }
            format!("{{\"id\":{},\"error\":{eo}}}", json_str(id))
        }
    }
}
