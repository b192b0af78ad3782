//! What the turn layer reads of an event's data: the turn it names, and the
//! fields its result is collected from, in one pass. Read leniently: a field
//! missing or of another type is as if absent.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
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

/// A string, or nothing (for any other value).
struct Lenient<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Lenient<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Lenient(Some(Cow::Owned(s))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A key, borrowed from the data when it has no escape (serde's `Cow`
/// would always copy it).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut f = Fields::default();
                let mut seen = [false; 9];
                while let Some(Key(key)) = a.next_key::<Key<'de>>()? {
                    let slot = match key.as_ref() {
                        "turn" => 0,
                        "text" => 1,
                        "call" => 2,
                        "tool" => 3,
                        "approval" => 4,
                        "status" => 5,
                        "input" => 6,
                        "output" => 7,
                        "error" => 8,
                        _ => {
                            a.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[slot], true) {
                        return Err(de::Error::custom("a key twice")); // nothing is guessed
                    }
                    match slot {
                        0 => f.turn = a.next_value::<Lenient<'de>>()?.0,
                        1 => f.text = a.next_value::<Lenient<'de>>()?.0,
                        2 => f.call = a.next_value::<Lenient<'de>>()?.0,
                        3 => f.tool = a.next_value::<Lenient<'de>>()?.0,
                        4 => f.approval = a.next_value::<Lenient<'de>>()?.0,
                        5 => f.status = a.next_value::<Lenient<'de>>()?.0,
                        6 => f.input = Some(a.next_value::<&'de RawValue>()?.get()),
                        7 => f.output = Some(a.next_value::<&'de RawValue>()?.get()),
                        _ => {
                            f.error = match a.next_value::<&'de RawValue>()?.get() {
                                "true" => Some(true),
                                "false" => Some(false),
                                _ => None,
                            }
                        }
                    }
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

/// The fields of `data` (JSON text the reader has checked). Data that is not
/// an object, or holds a key twice, has none.
pub(super) fn read(data: &[u8]) -> Fields<'_> {
    let Ok(text) = std::str::from_utf8(data) else { return Fields::default() };
    serde_json::from_str::<Fields<'_>>(text).unwrap_or_default()
}

/// Just the turn an event names (a submit's answer).
pub(super) fn turn_of(data: &[u8]) -> Option<Cow<'_, str>> {
    read(data).turn
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
        let f =
            read(br#"{"turn":"t-1","call":"c-\u0031","input":{"a":[1]},"error":true,"status":7,"x":{"turn":"no"}}"#);
        assert_eq!(f.turn.as_deref(), Some("t-1"));
        assert!(matches!(f.turn, Some(Cow::Borrowed(_))), "no copy without an escape");
        assert_eq!(f.call.as_deref(), Some("c-1"));
        assert_eq!(f.input, Some(r#"{"a":[1]}"#));
        assert_eq!(f.error, Some(true));
        assert_eq!(f.status, None, "not a string: as if absent");
        assert!(read(b"[1,2]").turn.is_none());
        assert!(read(br#"{"turn":"a","turn":"b"}"#).turn.is_none(), "a key twice: nothing is guessed");
        assert_eq!(turn_of(br#"{"text":"x","turn":"t-9"}"#).as_deref(), Some("t-9"));
        assert_eq!(turn_of(br#"{"turn":null}"#), None);
        assert_eq!(turn_of(br#"{"t\u0075rn":"t-2"}"#).as_deref(), Some("t-2"), "an escaped key is the key");
    }
}
