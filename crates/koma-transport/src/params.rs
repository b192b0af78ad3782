//! The methods of part B and the local check of their params.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, KomaError};

/// The type a param field must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    String,
    /// A non-negative integer.
    Integer,
    /// `"allow"` or `"deny"`.
    Decision,
}

/// One field of a method's params.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    pub required: bool,
}

/// One method of part B.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    /// The wire name.
    pub name: &'static str,
    pub fields: &'static [Field],
}

const fn req(name: &'static str, ty: FieldType) -> Field {
    Field { name, ty, required: true }
}
const fn opt(name: &'static str, ty: FieldType) -> Field {
    Field { name, ty, required: false }
}

/// The method table of part B.
pub const METHODS: &[Method] = &[
    Method { name: "create", fields: &[opt("cwd", FieldType::String), opt("model", FieldType::String)] },
    Method { name: "resume", fields: &[req("session", FieldType::String), opt("after", FieldType::Integer)] },
    Method { name: "state", fields: &[] },
    Method { name: "submit", fields: &[req("text", FieldType::String)] },
    Method { name: "enqueue", fields: &[req("text", FieldType::String)] },
    Method { name: "interrupt", fields: &[] },
    Method { name: "interrupt_and_submit", fields: &[req("text", FieldType::String)] },
    Method {
        name: "approve",
        fields: &[req("approval", FieldType::String), req("decision", FieldType::Decision)],
    },
    Method { name: "configure", fields: &[opt("model", FieldType::String)] },
    Method { name: "detach", fields: &[] },
];

pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

fn invalid(method: &str, msg: String) -> KomaError {
    KomaError::new(ErrorCode::InvalidParams, format!("{method}: {msg}"))
}

/// Check `params` (JSON text, or `None` for no params) for `method` and
/// return the JSON text to write. A method of the table must get exactly its
/// fields with their types; any other method gets any JSON object, sent as given.
pub fn check(method_name: &str, params: Option<&str>) -> Result<String, KomaError> {
    let text = match params {
        None => return Ok("{}".to_owned()),
        Some(t) => t,
    };
    let Some(method) = method(method_name) else {
        // Not in the table: any JSON object, as given.
        return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) if text.trim_start().starts_with('{') => Ok(text.to_owned()),
            _ => Err(invalid(method_name, "params must be a JSON object".into())),
        };
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|_| invalid(method_name, "params must be a JSON object".into()))?;
    let Value::Object(map) = value else {
        return Err(invalid(method_name, "params must be an object".into()));
    };
    check_fields(method, &map)?;
    Ok(text.to_owned())
}

fn check_fields(method: &Method, map: &Map<String, Value>) -> Result<(), KomaError> {
    for key in map.keys() {
        if !method.fields.iter().any(|f| f.name == key) {
            let allowed: Vec<&str> = method.fields.iter().map(|f| f.name).collect();
            return Err(invalid(
                method.name,
                if allowed.is_empty() {
                    format!("unknown field `{key}` (this method takes no params)")
                } else {
                    format!("unknown field `{key}` (expected {})", allowed.join(", "))
                },
            ));
        }
    }
    for field in method.fields {
        match map.get(field.name) {
            None if field.required => {
                return Err(invalid(method.name, format!("missing field `{}`", field.name)))
            }
            None => {}
            Some(v) => {
                let ok = match field.ty {
                    FieldType::String => v.is_string(),
                    FieldType::Integer => v.is_u64(),
                    FieldType::Decision => matches!(v.as_str(), Some("allow" | "deny")),
                };
                if !ok {
                    let want = match field.ty {
                        FieldType::String => "a string",
                        FieldType::Integer => "a non-negative integer",
                        FieldType::Decision => "\"allow\" or \"deny\"",
                    };
                    return Err(invalid(method.name, format!("field `{}` must be {want}", field.name)));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(m: &str, p: &str) -> Result<String, ErrorCode> {
        check(m, Some(p)).map_err(|e| e.code)
    }

    #[test]
    fn table_methods() {
        assert_eq!(code("submit", r#"{"text":"hi"}"#).unwrap(), r#"{"text":"hi"}"#);
        assert_eq!(code("submit", r#"{"txt":"hi"}"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("submit", r#"{}"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("submit", r#"{"text":5}"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("submit", r#"[1]"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("state", r#"{}"#).unwrap(), "{}");
        assert_eq!(code("state", r#"{"x":1}"#), Err(ErrorCode::InvalidParams));
        assert!(code("resume", r#"{"session":"s","after":3}"#).is_ok());
        assert_eq!(code("resume", r#"{"session":"s","after":1.5}"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("resume", r#"{"session":"s","after":-1}"#), Err(ErrorCode::InvalidParams));
        assert!(code("approve", r#"{"approval":"a","decision":"deny"}"#).is_ok());
        assert_eq!(code("approve", r#"{"approval":"a","decision":"maybe"}"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("configure", r#"{"model":null}"#), Err(ErrorCode::InvalidParams));
        assert_eq!(check("state", None).unwrap(), "{}");
    }

    #[test]
    fn names_the_field() {
        let e = check("submit", Some(r#"{"txt":"x"}"#)).unwrap_err();
        assert!(e.message.contains("`txt`"), "{}", e.message);
        let e = check("approve", Some(r#"{"approval":"a","decision":1}"#)).unwrap_err();
        assert!(e.message.contains("`decision`"), "{}", e.message);
    }

    #[test]
    fn other_methods_take_any_object() {
        assert_eq!(code("bench_blob", r#"{"bytes":10,"x":[1]}"#).unwrap(), r#"{"bytes":10,"x":[1]}"#);
        assert_eq!(code("bench_blob", r#"[1]"#), Err(ErrorCode::InvalidParams));
        assert_eq!(code("bench_blob", r#"3"#), Err(ErrorCode::InvalidParams));
    }
}
