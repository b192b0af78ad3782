//! Long strings lifted out of a frame, so neither serde nor the
//! application's thread scans them byte by byte.
//!
//! The big payloads of this protocol are strings: the text of an `output`
//! event, a file's content in a tool result, a large result. Here the I/O
//! thread cuts every string of at least [`LIFT_MIN_BYTES`] out of a line,
//! leaving `""` in its place, checks and decodes it; serde then validates
//! and classifies the short rest (the skeleton), and the host parses the
//! skeleton and puts each string back at its path as a ready-made string of
//! its own (for ASCII, one that can use these bytes without a copy).
//!
//! Why the skeleton's check stands for the line's: a string token is
//! recognised the same way by any lexer (outside a string `"` opens one;
//! inside, `\` escapes the next byte and `"` closes it), so replacing one
//! string token by another keeps the token sequence. The line is valid JSON
//! exactly when the skeleton is and every cut string's content is valid:
//! no control character, valid escapes and valid UTF-8 (ASCII, or decoded
//! by serde).
//!
//! The restored value is the one a parser of the whole line gives. Where it
//! could differ, nothing is lifted: an object on a lifted string's path with
//! a duplicate key (a parser keeps the last one, and the path could lead
//! into the value that lost), or a `__proto__` key on the path (which some
//! parsers give a meaning of its own). Nor where the work
//! could grow: deeper than [`MAX_DEPTH`], or an object on the path with more
//! than [`MAX_KEYS`] keys.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// Strings shorter than this (as JSON text, quotes excluded) stay in the JSON.
pub const LIFT_MIN_BYTES: usize = 4096;
/// Nesting deeper than this is not lifted (serde's own limit is 128).
pub const MAX_DEPTH: usize = 128;
/// Keys kept per object for the duplicate check; an object with more is not lifted through.
pub const MAX_KEYS: usize = 1024;

/// One step from a value's root towards a lifted string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(u32),
}

/// A lifted string's characters.
#[derive(Debug, PartialEq, Eq)]
pub enum Text {
    /// ASCII without escapes: exactly these bytes of the input.
    Source(Range<usize>),
    /// Decoded; every character is at most U+00FF: one byte each.
    Latin1(Vec<u8>),
    /// Decoded; wider characters: UTF-16 code units.
    Utf16(Vec<u16>),
}

#[derive(Debug, PartialEq, Eq)]
pub struct Lift {
    pub path: Vec<Step>,
    pub text: Text,
}

/// A value with its long strings cut out.
#[derive(Debug, PartialEq, Eq)]
pub struct Lifted {
    /// The value's JSON with `""` in place of each lifted string.
    pub skeleton: Vec<u8>,
    /// In the order they occur.
    pub lifts: Vec<Lift>,
}

/// A lifted string that owns its characters, ready for the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chars {
    /// One byte per character: `bytes[range]` (shared with the line it was
    /// cut from when that line is owned, so a large string is never copied).
    Latin1 {
        bytes: Arc<Vec<u8>>,
        range: Range<usize>,
    },
    Utf16(Vec<u16>),
}

impl Chars {
    /// The number of bytes held for the characters.
    pub fn byte_len(&self) -> usize {
        match self {
            Chars::Latin1 { range, .. } => range.len(),
            Chars::Utf16(u) => u.len() * 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiftedString {
    pub path: Vec<Step>,
    pub chars: Chars,
}

/// A string shares its line only if it is at least 1/this of it: what a
/// shared string keeps alive is then at most twice what it is.
pub const SHARE_MIN_FRACTION: usize = 2;

/// Where the bytes of [`Text::Source`] come from.
pub enum Source<'a> {
    /// A buffer that is reused (a read): copy them out.
    Copy(&'a [u8]),
    /// An owned line, `offset` bytes before the lifted value: share it.
    Share { line: Arc<Vec<u8>>, offset: usize },
}

impl Lifted {
    /// The lifted strings in their owned form, each path without its first `skip` steps.
    pub fn into_strings(self, source: Source<'_>, skip: usize) -> (Vec<u8>, Vec<LiftedString>) {
        let strings = self
            .lifts
            .into_iter()
            .map(|l| {
                let chars = match l.text {
                    Text::Source(r) => match &source {
                        Source::Copy(bytes) => {
                            let owned = bytes[r].to_vec();
                            let range = 0..owned.len();
                            Chars::Latin1 { bytes: Arc::new(owned), range }
                        }
                        // Shared only with a string that is most of the line:
                        // a short string must not keep a long line alive
                        // (a host accounts for the string's size, not the line's).
                        Source::Share { line, offset } if r.len() * SHARE_MIN_FRACTION >= line.len() => {
                            Chars::Latin1 { bytes: line.clone(), range: r.start + offset..r.end + offset }
                        }
                        Source::Share { line, offset } => {
                            let owned = line[r.start + offset..r.end + offset].to_vec();
                            let range = 0..owned.len();
                            Chars::Latin1 { bytes: Arc::new(owned), range }
                        }
                    },
                    Text::Latin1(b) => {
                        let range = 0..b.len();
                        Chars::Latin1 { bytes: Arc::new(b), range }
                    }
                    Text::Utf16(u) => Chars::Utf16(u),
                };
                let mut path = l.path;
                path.drain(..skip.min(path.len()));
                LiftedString { path, chars }
            })
            .collect();
        (self.skeleton, strings)
    }
}

enum Container<'a> {
    Object {
        /// Raw key texts (without quotes) and whether each has an escape; at
        /// most [`MAX_KEYS`] + 1.
        keys: Vec<(&'a [u8], bool)>,
        expect_key: bool,
        lift_below: bool,
    },
    Array {
        index: u32,
        lift_below: bool,
    },
}

/// Cut the strings of at least `min` bytes out of `json`, a line that should
/// be one JSON value. `None` when there is nothing to lift, when lifting
/// could change the parsed value, or when a cut string is not valid
/// (control characters, escapes, UTF-8: then the caller checks the whole
/// line, for the precise error). For any other input the skeleton is valid
/// JSON (UTF-8 included) exactly when `json` is. Linear time; memory bounded
/// by the input plus [`MAX_DEPTH`] × [`MAX_KEYS`] keys.
pub fn lift(json: &[u8], min: usize) -> Option<Lifted> {
    if json.len().saturating_sub(2) < min {
        return None;
    }
    let mut stack: Vec<Container<'_>> = Vec::new();
    let mut skeleton: Vec<u8> = Vec::new();
    let mut lifts: Vec<Lift> = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'{' | b'[' if stack.len() >= MAX_DEPTH => return None,
            b'{' => {
                stack.push(Container::Object { keys: Vec::new(), expect_key: true, lift_below: false });
                i += 1;
            }
            b'[' => {
                stack.push(Container::Array { index: 0, lift_below: false });
                i += 1;
            }
            b'}' | b']' => {
                let below = match stack.pop() {
                    Some(Container::Object { keys, lift_below, .. }) => {
                        if lift_below && (keys.len() > MAX_KEYS || has_duplicate(&keys)) {
                            return None;
                        }
                        lift_below
                    }
                    Some(Container::Array { lift_below, .. }) => lift_below,
                    None => return None,
                };
                if below {
                    mark_lift_below(stack.last_mut());
                }
                i += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Container::Array { index, .. }) => *index = index.saturating_add(1),
                    Some(Container::Object { expect_key, .. }) => *expect_key = true,
                    None => return None,
                }
                i += 1;
            }
            b':' => {
                if let Some(Container::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
                i += 1;
            }
            b'"' => {
                let (end, escaped) = string_end(json, i)?;
                let inner = i + 1..end - 1;
                let is_key = matches!(stack.last(), Some(Container::Object { expect_key: true, .. }));
                if is_key {
                    if let Some(Container::Object { keys, .. }) = stack.last_mut() {
                        if keys.len() <= MAX_KEYS {
                            keys.push((&json[inner], escaped));
                        }
                    }
                } else if inner.len() >= min {
                    mark_lift_below(stack.last_mut());
                    let path = path_of(&stack)?;
                    let text = if escaped {
                        decode(&json[i..end])? // serde checks the escapes and control characters
                    } else {
                        let (control, ascii) = classify_bytes(&json[inner.clone()]);
                        if control {
                            return None;
                        }
                        if ascii {
                            Text::Source(inner)
                        } else {
                            decode(&json[i..end])?
                        }
                    };
                    skeleton.extend_from_slice(&json[copied..i]);
                    skeleton.extend_from_slice(b"\"\"");
                    copied = end;
                    lifts.push(Lift { path, text });
                }
                i = end;
            }
            _ => i += 1, // whitespace, digits, signs, literals
        }
    }
    if lifts.is_empty() || !stack.is_empty() {
        return None;
    }
    skeleton.extend_from_slice(&json[copied..]);
    Some(Lifted { skeleton, lifts })
}

/// Whether `bytes` holds a control character (below 0x20), and whether it is all ASCII.
fn classify_bytes(bytes: &[u8]) -> (bool, bool) {
    // Lane-wise minimum and maximum over 32-byte chunks: this form compiles
    // to vector instructions (a fold over each chunk does not).
    const LANES: usize = 32;
    let (mut lo, mut hi) = ([u8::MAX; LANES], [0u8; LANES]);
    let mut chunks = bytes.chunks_exact(LANES);
    for c in &mut chunks {
        for j in 0..LANES {
            lo[j] = lo[j].min(c[j]);
            hi[j] = hi[j].max(c[j]);
        }
    }
    let mut l = lo.iter().copied().fold(u8::MAX, u8::min);
    let mut h = hi.iter().copied().fold(0, u8::max);
    for &b in chunks.remainder() {
        l = l.min(b);
        h = h.max(b);
    }
    (l < 0x20, h < 0x80)
}

fn mark_lift_below(top: Option<&mut Container<'_>>) {
    match top {
        Some(Container::Object { lift_below, .. }) | Some(Container::Array { lift_below, .. }) => *lift_below = true,
        None => {}
    }
}

/// The index just past the closing quote of the string that opens at
/// `start`, and whether it holds an escape.
fn string_end(json: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut j = start + 1;
    let mut escaped = false;
    loop {
        let at = j + memchr::memchr2(b'"', b'\\', json.get(j..)?)?;
        if json[at] == b'"' {
            return Some((at + 1, escaped));
        }
        escaped = true;
        j = at + 2;
    }
}

fn key_text(raw: &[u8], escaped: bool) -> Option<Cow<'_, str>> {
    if escaped {
        let mut quoted = Vec::with_capacity(raw.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(raw);
        quoted.push(b'"');
        serde_json::from_slice::<String>(&quoted).ok().map(Cow::Owned)
    } else {
        std::str::from_utf8(raw).ok().map(Cow::Borrowed)
    }
}

fn has_duplicate(keys: &[(&[u8], bool)]) -> bool {
    let any_escaped = keys.iter().any(|(_, e)| *e);
    if !any_escaped {
        let mut raw: Vec<&[u8]> = keys.iter().map(|(k, _)| *k).collect();
        raw.sort_unstable();
        return raw.windows(2).any(|w| w[0] == w[1]);
    }
    let mut decoded: Vec<Option<Cow<'_, str>>> = keys.iter().map(|(k, e)| key_text(k, *e)).collect();
    if decoded.iter().any(Option::is_none) {
        return true; // cannot tell: treat as unsafe
    }
    decoded.sort_unstable();
    decoded.windows(2).any(|w| w[0] == w[1])
}

fn path_of(stack: &[Container<'_>]) -> Option<Vec<Step>> {
    let mut path = Vec::with_capacity(stack.len());
    for c in stack {
        match c {
            Container::Object { keys, .. } => {
                let (raw, escaped) = *keys.last()?;
                let key = key_text(raw, escaped)?;
                if key == "__proto__" {
                    return None;
                }
                path.push(Step::Key(key.into_owned()));
            }
            Container::Array { index, .. } => path.push(Step::Index(*index)),
        }
    }
    Some(path)
}

/// Decode one JSON string (quotes included) into Latin-1 bytes or UTF-16.
fn decode(quoted: &[u8]) -> Option<Text> {
    let s: Cow<'_, str> = serde_json::from_slice(quoted).ok()?;
    if s.chars().all(|c| (c as u32) <= 0xFF) {
        Some(Text::Latin1(s.chars().map(|c| c as u8).collect()))
    } else {
        Some(Text::Utf16(s.encode_utf16().collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rng::Rng;
    use serde_json::Value;

    /// Put the lifted strings back into the parsed skeleton, as a host does.
    fn restore(json: &[u8], l: &Lifted) -> Value {
        let mut v: Value = serde_json::from_slice(&l.skeleton).unwrap();
        for lift in &l.lifts {
            let s = match &lift.text {
                Text::Source(r) => String::from_utf8(json[r.clone()].to_vec()).unwrap(),
                Text::Latin1(b) => b.iter().map(|&c| c as char).collect(),
                Text::Utf16(u) => String::from_utf16(u).unwrap(),
            };
            let mut at = &mut v;
            for step in &lift.path {
                at = match step {
                    Step::Key(k) => at.get_mut(k.as_str()).unwrap(),
                    Step::Index(i) => at.get_mut(*i as usize).unwrap(),
                };
            }
            assert_eq!(*at, Value::String(String::new()), "the placeholder is an empty string");
            *at = Value::String(s);
        }
        v
    }

    fn roundtrip(json: &str, min: usize) -> Option<Lifted> {
        let l = lift(json.as_bytes(), min)?;
        let expected: Value = serde_json::from_str(json).unwrap();
        assert_eq!(restore(json.as_bytes(), &l), expected, "for {json}");
        Some(l)
    }

    #[test]
    fn a_long_ascii_string_is_cut_out_without_a_copy() {
        let long = "x".repeat(5000);
        let json = format!(r#"{{"turn":"t1","text":"{long}","n":[1,2]}}"#);
        let l = roundtrip(&json, LIFT_MIN_BYTES).unwrap();
        assert_eq!(l.skeleton, br#"{"turn":"t1","text":"","n":[1,2]}"#);
        assert_eq!(l.lifts.len(), 1);
        assert_eq!(l.lifts[0].path, vec![Step::Key("text".into())]);
        assert!(matches!(l.lifts[0].text, Text::Source(_)));
    }

    #[test]
    fn short_strings_and_keys_stay() {
        assert!(lift(br#"{"a":"short","b":[1,2,3]}"#, 6).is_none());
        let json = format!(r#"{{"{}":1}}"#, "k".repeat(100));
        assert!(lift(json.as_bytes(), 10).is_none(), "a long key is not lifted");
    }

    #[test]
    fn paths_through_arrays_and_nested_objects() {
        let json = r#"{"a":[1,{"b":"0123456789"},["","abcdefghij"]],"c":{"d":{"e":"klmnopqrst"}}}"#;
        let l = roundtrip(json, 10).unwrap();
        let paths: Vec<_> = l.lifts.iter().map(|l| l.path.clone()).collect();
        assert_eq!(
            paths,
            vec![
                vec![Step::Key("a".into()), Step::Index(1), Step::Key("b".into())],
                vec![Step::Key("a".into()), Step::Index(2), Step::Index(1)],
                vec![Step::Key("c".into()), Step::Key("d".into()), Step::Key("e".into())],
            ]
        );
    }

    #[test]
    fn a_string_value_itself_has_the_empty_path() {
        let l = roundtrip(r#""0123456789abc""#, 10).unwrap();
        assert_eq!(l.skeleton, b"\"\"");
        assert_eq!(l.lifts[0].path, Vec::<Step>::new());
    }

    #[test]
    fn escapes_and_wide_characters_are_decoded() {
        let l = roundtrip(r#"{"t":"line one\nline \"two\"\t\u00e9"}"#, 10).unwrap();
        assert!(matches!(&l.lifts[0].text, Text::Latin1(b) if b.ends_with(&[b'\t', 0xE9])));
        let l = roundtrip(r#"{"t":"snow ☃ and \ud83d\ude00 here"}"#, 10).unwrap();
        assert!(matches!(l.lifts[0].text, Text::Utf16(_)));
        let l = roundtrip(r#"{"t":"caf\u00e9 caf\u00e9 café"}"#, 10).unwrap();
        assert!(matches!(l.lifts[0].text, Text::Latin1(_)), "é fits Latin-1");
    }

    #[test]
    fn escaped_keys_are_decoded_in_the_path() {
        let l = roundtrip(r#"{"k\"ey\u0041":"0123456789"}"#, 10).unwrap();
        assert_eq!(l.lifts[0].path, vec![Step::Key("k\"eyA".into())]);
    }

    #[test]
    fn duplicate_keys_on_the_path_prevent_lifting() {
        assert!(lift(br#"{"d":{"t":"0123456789"},"d":{"x":1}}"#, 10).is_none());
        assert!(lift(br#"{"t":"0123456789","t":1}"#, 10).is_none());
        assert!(lift(br#"{"a":{"t":"0123456789"},"\u0061":2}"#, 10).is_none(), "escaped duplicates too");
        // A duplicate elsewhere (not on the path) is harmless.
        roundtrip(r#"{"a":{"x":1,"x":2},"t":"0123456789"}"#, 10).unwrap();
    }

    #[test]
    fn proto_keys_prevent_lifting() {
        assert!(lift(br#"{"__proto__":{"t":"0123456789"}}"#, 10).is_none());
        assert!(lift(br#"{"__proto__":"0123456789"}"#, 10).is_none());
    }

    #[test]
    fn whitespace_and_literals_are_kept() {
        roundtrip(" { \"a\" : [ true , null , -1.5e3 ] , \"t\" : \"0123456789\" } ", 10).unwrap();
    }

    #[test]
    fn invalid_input_never_panics() {
        for bad in [
            &b"\"0123456789"[..],
            b"{\"t\":\"0123456789\\",
            b"]]]]]]]]]]]]]]",
            b"{\"a\":\"0123456789\"",
            b"\\\\\\\\\\\\\\\\\\\\\\\\",
        ] {
            let _ = lift(bad, 4);
        }
    }

    fn gen_string(r: &mut Rng, out: &mut String) {
        const PIECES: &[&str] =
            &["a", "b", "é", "☃", "😀", "\\n", "\\\"", "\\u00e9", "\\ud83d\\ude00", " ", "\\\\", "k"];
        out.push('"');
        for _ in 0..r.below(12) {
            out.push_str(PIECES[r.below(PIECES.len() as u64) as usize]);
        }
        out.push('"');
    }

    fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
        let ws = |r: &mut Rng, out: &mut String| {
            if r.below(4) == 0 {
                out.push(' ');
            }
        };
        match if depth > 4 { r.below(3) } else { r.below(6) } {
            0 => gen_string(r, out),
            1 => out.push_str(["1", "-2.5e3", "true", "null", "false", "0"][r.below(6) as usize]),
            2 => gen_string(r, out),
            3 | 4 => {
                out.push('{');
                for k in 0..r.below(4) {
                    if k > 0 {
                        out.push(',');
                    }
                    ws(r, out);
                    // Few distinct keys, so duplicates happen.
                    out.push_str(["\"a\"", "\"b\"", "\"\\u0061\"", "\"__proto__\"", "\"\""][r.below(5) as usize]);
                    ws(r, out);
                    out.push(':');
                    gen_value(r, depth + 1, out);
                }
                out.push('}');
            }
            _ => {
                out.push('[');
                for k in 0..r.below(4) {
                    if k > 0 {
                        out.push(',');
                    }
                    ws(r, out);
                    gen_value(r, depth + 1, out);
                }
                out.push(']');
            }
        }
    }

    fn valid(bytes: &[u8]) -> bool {
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    }

    /// Over generated values and mutations of them: the skeleton is valid
    /// exactly when the input is, and a valid input restores to its own parse.
    #[test]
    fn skeleton_validity_matches_the_input_and_values_restore() {
        let mut r = Rng::new(0x9E37_79B9_7F4A_7C15);
        let (mut lifted, mut checked) = (0, 0);
        for _ in 0..40_000 {
            let mut text = String::new();
            gen_value(&mut r, 0, &mut text);
            let mut bytes = text.into_bytes();
            if r.below(2) == 0 && !bytes.is_empty() {
                let at = r.below(bytes.len() as u64) as usize;
                match r.below(3) {
                    0 => {
                        bytes.remove(at);
                    }
                    1 => bytes.insert(at, b"\"\\{}[],:\x01 x"[r.below(11) as usize]),
                    _ => bytes[at] = b"\"\\{}[],:\x01 x"[r.below(11) as usize],
                }
            }
            if std::str::from_utf8(&bytes).is_err() {
                continue;
            }
            checked += 1;
            if let Some(l) = lift(&bytes, 3) {
                lifted += 1;
                assert_eq!(valid(&l.skeleton), valid(&bytes), "{}", String::from_utf8_lossy(&bytes));
                if valid(&bytes) {
                    let expected: Value = serde_json::from_slice(&bytes).unwrap();
                    assert_eq!(restore(&bytes, &l), expected, "{}", String::from_utf8_lossy(&bytes));
                }
            }
        }
        assert!(lifted > 5_000 && checked > 30_000, "lifted {lifted} of {checked}");
    }

    #[test]
    fn deep_nesting_and_many_keys_are_not_lifted_through() {
        let deep = format!("{}\"0123456789\"{}", "[".repeat(200), "]".repeat(200));
        assert!(lift(deep.as_bytes(), 4).is_none());
        let mut wide = String::from("{");
        for k in 0..2000 {
            wide.push_str(&format!("\"k{k}\":1,"));
        }
        wide.push_str("\"t\":\"0123456789\"}");
        assert!(lift(wide.as_bytes(), 4).is_none());
    }
}
