//! A turn's output, joined as it streams in, in the form a host makes a
//! string of without decoding it again: one byte per character while every
//! character is at most U+00FF, UTF-16 code units once one is not.

use std::sync::Arc;

use crate::lift::Chars;

#[derive(Debug)]
pub(super) enum Text {
    Latin1(Vec<u8>),
    Utf16(Vec<u16>),
}

impl Default for Text {
    fn default() -> Self {
        Text::Latin1(Vec::new())
    }
}

impl Text {
    pub fn push_str(&mut self, s: &str) {
        match self {
            Text::Latin1(bytes) if s.is_ascii() => bytes.extend_from_slice(s.as_bytes()),
            Text::Latin1(bytes) if s.chars().all(|c| u32::from(c) <= 0xFF) => {
                bytes.extend(s.chars().map(|c| u32::from(c) as u8));
            }
            Text::Latin1(_) => {
                self.widen();
                self.push_str(s);
            }
            Text::Utf16(units) => units.extend(s.encode_utf16()),
        }
    }

    pub fn push_chars(&mut self, chars: &Chars) {
        match (self, chars) {
            (Text::Latin1(out), Chars::Latin1 { bytes, range }) => out.extend_from_slice(&bytes[range.clone()]),
            (Text::Utf16(out), Chars::Latin1 { bytes, range }) => {
                out.extend(bytes[range.clone()].iter().map(|&b| u16::from(b)))
            }
            (Text::Utf16(out), Chars::Utf16(units)) => out.extend_from_slice(units),
            (me @ Text::Latin1(_), Chars::Utf16(_)) => {
                me.widen();
                me.push_chars(chars);
            }
        }
    }

    fn widen(&mut self) {
        if let Text::Latin1(bytes) = self {
            *self = Text::Utf16(bytes.iter().map(|&b| u16::from(b)).collect());
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Text::Latin1(b) => b.is_empty(),
            Text::Utf16(u) => u.is_empty(),
        }
    }

    pub fn to_string_lossy(&self) -> String {
        match self {
            Text::Latin1(bytes) => bytes.iter().map(|&b| char::from(b)).collect(),
            Text::Utf16(units) => String::from_utf16_lossy(units),
        }
    }

    pub fn into_chars(self) -> Chars {
        match self {
            Text::Latin1(bytes) => {
                let range = 0..bytes.len();
                Chars::Latin1 { bytes: Arc::new(bytes), range }
            }
            Text::Utf16(units) => Chars::Utf16(units),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(t: Text) -> String {
        match t.into_chars() {
            Chars::Latin1 { bytes, range } => bytes[range].iter().map(|&b| char::from(b)).collect(),
            Chars::Utf16(u) => String::from_utf16(&u).unwrap(),
        }
    }

    #[test]
    fn pieces_join_in_the_narrowest_form_that_holds_them() {
        let mut t = Text::default();
        t.push_str("ab");
        t.push_str("é");
        t.push_chars(&Chars::Latin1 { bytes: Arc::new(b"xcdx".to_vec()), range: 1..3 });
        assert!(matches!(t, Text::Latin1(_)));
        t.push_str("€");
        assert!(matches!(t, Text::Utf16(_)));
        t.push_chars(&Chars::Latin1 { bytes: Arc::new(vec![0xE9]), range: 0..1 });
        t.push_chars(&Chars::Utf16("😀".encode_utf16().collect()));
        assert_eq!(string(t), "abécd€é😀");
    }
}
