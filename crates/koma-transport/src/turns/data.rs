//! What the turn layer reads of an event's data: the turn it names, and the
//! fields its result is collected from. Read leniently: a field missing or
//! of another type is as if absent.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::lift::{LiftedString, Step};

#[derive(Default)]
pub(super) struct Fields<'a> {
    pub turn: Option<Cow<'a, str>>,
    pub text: Option<Cow<'a, str>>,
    pub call: Option<Cow<'a, str>>,
    pub tool: Option<Cow<'a, str>>,
    pub approval: Option<Cow<'a, str>>,
    pub status: Option<Cow<'a, str>>,
    /// Raw JSON values, as the data holds them (`""` for a lifted string).
    pub input: Option<&'a str>,
    pub output: Option<&'a str>,
    /// `tool_result`'s `error`, when it is a boolean.
    pub error: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Raw<'a> {
    #[serde(borrow)]
    turn: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    call: Option<&'a RawValue>,
    #[serde(borrow)]
    tool: Option<&'a RawValue>,
    #[serde(borrow)]
    approval: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The fields of `data` (JSON text the reader has checked). Data that is not
/// an object, or holds a key twice, has none.
pub(super) fn fields(data: &[u8]) -> Fields<'_> {
    let Ok(text) = std::str::from_utf8(data) else { return Fields::default() };
    let Ok(raw) = serde_json::from_str::<Raw<'_>>(text) else { return Fields::default() };
    Fields {
        turn: string(raw.turn),
        text: string(raw.text),
        call: string(raw.call),
        tool: string(raw.tool),
        approval: string(raw.approval),
        status: string(raw.status),
        input: raw.input.map(RawValue::get),
        output: raw.output.map(RawValue::get),
        error: raw.error.and_then(|e| match e.get() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }),
    }
}

/// Just the turn an event names (for routing).
pub(super) fn turn_of(data: &[u8]) -> Option<Cow<'_, str>> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Turn<'a> {
        #[serde(borrow)]
        turn: Option<&'a RawValue>,
    }
    let text = std::str::from_utf8(data).ok()?;
    string(serde_json::from_str::<Turn<'_>>(text).ok()?.turn)
}

fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let text = raw?.get();
    // Borrowed when it has no escape (serde's `Cow` would always copy).
    match serde_json::from_str::<&str>(text) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// The lifted strings under the field `key` of data, with paths from that field.
pub(super) fn lifts_under(lifts: &[LiftedString], key: &str) -> Vec<LiftedString> {
    lifts
        .iter()
        .filter(|l| matches!(l.path.first(), Some(Step::Key(k)) if k == key))
        .map(|l| LiftedString { path: l.path[1..].to_vec(), chars: l.chars.clone() })
        .collect()
}

/// The lifted string that is exactly the field `key` of data.
pub(super) fn lifted_field<'l>(lifts: &'l [LiftedString], key: &str) -> Option<&'l LiftedString> {
    lifts.iter().find(|l| matches!(l.path.as_slice(), [Step::Key(k)] if k == key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_leniently() {
        let f = fields(br#"{"turn":"t-1","call":"c-\u0031","input":{"a":[1]},"error":true,"status":7,"x":1}"#);
        assert_eq!(f.turn.as_deref(), Some("t-1"));
        assert_eq!(f.call.as_deref(), Some("c-1"));
        assert_eq!(f.input, Some(r#"{"a":[1]}"#));
        assert_eq!(f.error, Some(true));
        assert_eq!(f.status, None, "not a string: as if absent");
        assert!(fields(b"[1,2]").turn.is_none());
        assert!(fields(br#"{"turn":"a","turn":"b"}"#).turn.is_none(), "a key twice: nothing is guessed");
        assert_eq!(turn_of(br#"{"text":"x","turn":"t-9"}"#).as_deref(), Some("t-9"));
        assert_eq!(turn_of(br#"{"turn":null}"#), None);
    }
}
