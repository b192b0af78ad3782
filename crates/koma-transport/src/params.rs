//! The local check of a method's params, against the protocol's method table
//! (`crate::surface`, generated from `schema/protocol.schema.json`).

use serde_json::{Map, Value};

use crate::error::{ErrorCode, KomaError};

pub use crate::surface::METHODS;
pub use crate::tables::{Field, FieldType, Method};

pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

fn invalid(method: &str, msg: String) -> KomaError {
    KomaError::new(ErrorCode::InvalidParams, format!("{method}: {msg}"))
}

/// Check `params` (JSON text, or `None` for no params) for `method` and
/// return the JSON text to write. A method of the table must get exactly its
/// fields with their types (no params is an empty object: a required field
/// is then missing); any other method gets any JSON object, sent as given.
pub fn check(method_name: &str, params: Option<&str>) -> Result<String, KomaError> {
    let Some(method) = method(method_name) else {
        // Not in the table: any JSON object, as given.
        let Some(text) = params else { return Ok("{}".to_owned()) };
        // (Ignoring the strings' contents accepts lone surrogates: look for them too.)
        return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) if text.trim_start().starts_with('{') && lone_surrogates(text).is_empty() => Ok(text.to_owned()),
            _ => Err(invalid(
                method_name,
                unsendable(text, None).unwrap_or_else(|| "params must be a JSON object".into()),
            )),
        };
    };
    let Some(text) = params else {
        check_fields(method, &Map::new())?;
        return Ok("{}".to_owned());
    };
    let value: Value = serde_json::from_str(text).map_err(|_| {
        invalid(method_name, unsendable(text, Some(method)).unwrap_or_else(|| "params must be a JSON object".into()))
    })?;
    let Value::Object(map) = value else {
        return Err(invalid(method_name, "params must be an object".into()));
    };
    check_fields(method, &map)?;
    Ok(text.to_owned())
}

/// Why JSON text that a host made from its own strings cannot be sent: a
/// string with a lone surrogate (half of a UTF-16 pair, what slicing a
/// UTF-16 string inside an emoji gives), which a serializer of such strings
/// writes as `\uD800` and strict JSON parsers (serde_json among them, and so
/// koma) refuse.
/// Names the top-level field that holds it, where it can.
fn unsendable(text: &str, method: Option<&Method>) -> Option<String> {
    let at = lone_surrogates(text);
    let first = *at.first()?;
    // Replace each lone escape by one of the same length, and find the field.
    let mut fixed = text.as_bytes().to_vec();
    for &i in &at {
        fixed[i..i + 6].copy_from_slice(b"\\ufffd");
    }
    let fixed = String::from_utf8(fixed).ok()?;
    let code = &text[first + 2..first + 6];
    let why = format!(
        "holds a lone surrogate (\\u{code}, half of a UTF-16 pair: a string cut inside an emoji?), which cannot be sent: strict JSON parsers such as serde_json refuse it"
    );
    let fields: Option<Map<String, Value>> =
        serde_json::from_str::<std::collections::BTreeMap<String, &serde_json::value::RawValue>>(&fixed).ok().map(
            |m| {
                m.into_iter()
                    .filter(|(_, raw)| {
                        let start = raw.get().as_ptr() as usize - fixed.as_ptr() as usize;
                        let end = start + raw.get().len();
                        at.iter().any(|&i| i >= start && i < end)
                    })
                    .map(|(k, _)| (k, Value::Null))
                    .collect()
            },
        );
    match fields.as_ref().and_then(|f| f.keys().next()) {
        Some(field) if method.is_none_or(|m| m.fields.iter().any(|f| f.name == field)) => {
            Some(format!("field `{field}` {why}"))
        }
        _ => Some(format!("params {why}")),
    }
}

/// Byte offsets of the `\uXXXX` escapes of unpaired surrogates in JSON text.
fn lone_surrogates(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let hex = |i: usize| -> Option<u16> {
        let s = std::str::from_utf8(b.get(i..i + 4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] != b'\\' {
            match memchr::memchr(b'\\', &b[i..]) {
                Some(k) => i += k,
                None => break,
            }
            continue;
        }
        if b[i + 1] != b'u' {
            i += 2; // another escape (`\\`, `\"`, ...): skip both bytes
            continue;
        }
        let Some(unit) = hex(i + 2) else {
            i += 2;
            continue;
        };
        match unit {
            0xD800..=0xDBFF => {
                let paired = b.get(i + 6) == Some(&b'\\')
                    && b.get(i + 7) == Some(&b'u')
                    && matches!(hex(i + 8), Some(0xDC00..=0xDFFF));
                if paired {
                    i += 12;
                    continue;
                }
                out.push(i);
            }
            0xDC00..=0xDFFF => out.push(i),
            _ => {}
        }
        i += 6;
    }
    out
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
            None if field.required => return Err(invalid(method.name, format!("missing field `{}`", field.name))),
            None => {}
            Some(v) => {
                let ok = match field.ty {
                    FieldType::String => v.is_string(),
                    FieldType::Integer => v.is_u64(),
                    FieldType::Boolean => v.is_boolean(),
                    FieldType::Any => true,
                    FieldType::Enum(values) => v.as_str().is_some_and(|s| values.contains(&s)),
                };
                if !ok {
                    let want = match field.ty {
                        FieldType::String => "a string".to_owned(),
                        FieldType::Integer => "a non-negative integer".to_owned(),
                        FieldType::Boolean => "a boolean".to_owned(),
                        FieldType::Any => unreachable!("any value is accepted"),
                        FieldType::Enum(values) => {
                            let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
                            match quoted.split_last() {
                                Some((last, [])) => last.clone(),
                                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                                None => "nothing".to_owned(),
                            }
                        }
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
        assert_eq!(check("create", None).unwrap(), "{}");
    }

    #[test]
    fn no_params_is_an_empty_object_and_names_the_missing_field() {
        let e = check("submit", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert!(e.message.contains("missing field `text`"), "{}", e.message);
        let e = check("approve", None).unwrap_err();
        assert!(e.message.contains("missing field `approval`"), "{}", e.message);
    }

    #[test]
    fn a_lone_surrogate_is_named_with_its_field() {
        for (text, field) in
            [(r#"{"text":"a\ud800b"}"#, "text"), (r#"{"text":"\udc00"}"#, "text"), (r#"{"text":"end \ud83d"}"#, "text")]
        {
            let e = check("submit", Some(text)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParams);
            assert!(
                e.message.contains(&format!("field `{field}`")) && e.message.contains("lone surrogate"),
                "{}",
                e.message
            );
        }
        // A pair is fine; an escaped backslash before `u` is not an escape.
        assert!(check("submit", Some(r#"{"text":"\ud83d\ude00"}"#)).is_ok());
        assert!(check("submit", Some(r#"{"text":"\\ud800"}"#)).is_ok());
        let e = check("bench_blob", Some(r#"{"x":["\ud800"]}"#)).unwrap_err();
        assert!(e.message.contains("field `x`"), "{}", e.message);
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
