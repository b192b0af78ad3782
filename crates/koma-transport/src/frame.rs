//! Framing (docs/protocol.md: Lines, Bounds) and frame classification
//! (Requests and responses, Events).
//!
//! [`LineSplitter`] turns stdout's reads into lines, whatever the chunking,
//! holding at most one partial line of at most [`MAX_FRAME_BYTES`] + 1 bytes.
//! [`classify`] checks one line and says which frame it is.

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::limits::MAX_FRAME_BYTES;
use crate::quote::quote_line;

/// One complete line, terminator (`\n` or `\r\n`) removed.
pub enum Line<'a> {
    /// The line lies within the chunk just fed.
    Borrowed(&'a [u8]),
    /// The line spanned reads and was assembled; it is handed over whole.
    Owned(Vec<u8>),
}

impl Line<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Line::Borrowed(b) => b,
            Line::Owned(v) => v,
        }
    }

    pub fn into_owned(self) -> Vec<u8> {
        match self {
            Line::Borrowed(b) => b.to_vec(),
            Line::Owned(v) => v,
        }
    }
}

/// A fatal violation of docs/protocol.md on stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// What rule was broken, in words.
    pub what: String,
    /// At most 200 bytes of the offending line, escaped (empty when there is none).
    pub quote: String,
}

impl Violation {
    pub fn new(what: impl Into<String>, line: &[u8]) -> Self {
        Violation { what: what.into(), quote: quote_line(line) }
    }

    pub fn message(&self) -> String {
        if self.quote.is_empty() {
            self.what.clone()
        } else {
            format!("{}: `{}`", self.what, self.quote)
        }
    }
}

/// Splits a byte stream into lines.
#[derive(Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
}

/// The partial line may hold the frame bound plus a `\r` that a `\n` will follow.
const PARTIAL_LIMIT: usize = MAX_FRAME_BYTES + 1;
/// Lines up to this size grow by doubling; longer ones reserve the bound.
const BIG_LINE: usize = 1 << 20;

impl LineSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held for a line not yet complete.
    pub fn partial_len(&self) -> usize {
        self.partial.len()
    }

    /// Capacity held for a line not yet complete.
    pub fn partial_capacity(&self) -> usize {
        self.partial.capacity()
    }

    /// Feed one read. Calls `on_line` for each complete line, in order; stops
    /// at the first error (from the size bound or from `on_line`).
    pub fn feed<'c, E>(
        &mut self,
        mut chunk: &'c [u8],
        mut on_line: impl FnMut(Line<'c>) -> Result<(), E>,
        too_large: impl Fn(Violation) -> E,
    ) -> Result<(), E> {
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(nl) => {
                    let (head, rest) = (&chunk[..nl], &chunk[nl + 1..]);
                    chunk = rest;
                    if self.partial.is_empty() {
                        let line = strip_cr(head);
                        if line.len() > MAX_FRAME_BYTES {
                            return Err(too_large(oversize(line)));
                        }
                        on_line(Line::Borrowed(line))?;
                    } else {
                        if self.partial.len() + head.len() > PARTIAL_LIMIT {
                            // Quote the line's start, whatever the chunking.
                            let mut start = self.partial[..self.partial.len().min(256)].to_vec();
                            start.extend_from_slice(&head[..head.len().min(256 - start.len())]);
                            return Err(too_large(oversize(&start)));
                        }
                        self.append(head);
                        let mut line = std::mem::take(&mut self.partial);
                        if line.last() == Some(&b'\r') {
                            line.pop();
                        }
                        if line.len() > MAX_FRAME_BYTES {
                            return Err(too_large(oversize(&line)));
                        }
                        on_line(Line::Owned(line))?;
                    }
                }
                None => {
                    if self.partial.len() + chunk.len() > PARTIAL_LIMIT {
                        let mut start = self.partial[..self.partial.len().min(256)].to_vec();
                        start.extend_from_slice(&chunk[..chunk.len().min(256 - start.len())]);
                        return Err(too_large(oversize(&start)));
                    }
                    self.append(chunk);
                    chunk = &[];
                }
            }
        }
        Ok(())
    }

    /// Grow the partial line without ever reserving past the bound. Past
    /// 1 MiB it reserves the whole bound at once: one copy instead of a
    /// doubling series (whose old and new buffers would coexist), and pages
    /// not yet written cost no memory.
    fn append(&mut self, bytes: &[u8]) {
        let needed = self.partial.len() + bytes.len();
        if needed > self.partial.capacity() {
            let target = if needed > BIG_LINE {
                PARTIAL_LIMIT
            } else {
                (self.partial.capacity() * 2).max(8 * 1024).max(needed).min(BIG_LINE)
            };
            self.partial.reserve_exact(target - self.partial.len());
        }
        self.partial.extend_from_slice(bytes);
    }

    /// The stream ended: a partial line is a violation (a frame must end with `\n`).
    pub fn finish(&mut self) -> Result<(), Violation> {
        if self.partial.is_empty() {
            Ok(())
        } else {
            let v = Violation::new("stdout ended inside a line (no terminating newline)", &self.partial);
            self.partial = Vec::new();
            Err(v)
        }
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    }
}

fn oversize(start: &[u8]) -> Violation {
    Violation::new(format!("a stdout frame is over {} bytes (40 MiB)", MAX_FRAME_BYTES), &start[..start.len().min(256)])
}

pub use crate::surface::EVENT_CATALOG;

/// What a line is.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A `hello` frame; the line is kept for [`crate::hello::check`].
    Hello,
    /// A response. `result` is the byte range of the raw result JSON within the line.
    Response { id: String, body: ResponseBody },
    /// An event. `name` is `None` when it is not in the catalog (checked, then ignored).
    Event { seq: u64, name: Option<&'static str>, data: Range<usize> },
}

#[derive(Debug, PartialEq)]
pub enum ResponseBody {
    Result(Range<usize>),
    Error(crate::error::RemoteError),
}

#[derive(Deserialize)]
struct WireFrame<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    error: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    seq: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    data: Option<&'a RawValue>,
}

/// Keeps `null` as a present value (plain `Option` would turn it into `None`).
fn raw_present<'de, D>(d: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&'de RawValue>::deserialize(d).map(Some)
}

/// Check that `line` is one complete JSON object, valid UTF-8, without a BOM.
pub fn check_object_text(line: &[u8]) -> Result<&str, Violation> {
    if line.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(Violation::new("a stdout line starts with a byte-order mark", line));
    }
    if line.is_empty() {
        return Err(Violation::new("a blank line on stdout", line));
    }
    let text = std::str::from_utf8(line).map_err(|_| Violation::new("a stdout line is not valid UTF-8", line))?;
    match text.trim_start_matches([' ', '\t']).as_bytes().first() {
        Some(b'{') => Ok(text),
        _ => Err(Violation::new("a stdout line is not a JSON object", line)),
    }
}

/// Classify one line (terminator removed).
pub fn classify(line: &[u8]) -> Result<Frame, Violation> {
    match classify_event_fast(line) {
        Some(frame) => Ok(frame),
        None => classify_full(line),
    }
}

/// `classify` without its fast path: the reference the fast path must agree
/// with (the fuzz target and the unit tests compare the two).
#[doc(hidden)]
pub fn classify_full(line: &[u8]) -> Result<Frame, Violation> {
    let text = check_object_text(line)?;
    let frame: WireFrame<'_> = serde_json::from_str(text)
        .map_err(|e| Violation::new(format!("a stdout line is not one complete JSON object ({})", e), line))?;
    let range_of = |raw: &RawValue| -> Range<usize> {
        let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        start..start + raw.get().len()
    };
    match frame.kind.as_deref() {
        Some("hello") => Ok(Frame::Hello),
        Some("event") => {
            let seq = frame
                .seq
                .and_then(|raw| parse_positive_integer(raw.get()))
                .ok_or_else(|| Violation::new("an event without a positive integer seq", line))?;
            let name = match frame.name {
                // Borrowed when it has no escape (serde's `Cow` would always copy).
                Some(raw) => match serde_json::from_str::<&str>(raw.get()) {
                    Ok(name) => Cow::Borrowed(name),
                    Err(_) => serde_json::from_str::<String>(raw.get())
                        .map(Cow::Owned)
                        .map_err(|_| Violation::new("an event whose name is not a string", line))?,
                },
                None => return Err(Violation::new("an event without a name", line)),
            };
            let name = EVENT_CATALOG.iter().copied().find(|n| *n == name);
            let data = match (name, frame.data) {
                (_, Some(raw)) => range_of(raw),
                (None, None) => 0..0,
                (Some(_), None) => return Err(Violation::new("an event without data", line)),
            };
            Ok(Frame::Event { seq, name, data })
        }
        Some(_) => Err(Violation::new("a frame of unknown type", line)),
        None => {
            let id = frame
                .id
                .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
                .ok_or_else(|| Violation::new("a frame with neither type nor a string id", line))?;
            let body = match (frame.result, frame.error) {
                (Some(result), None) => ResponseBody::Result(range_of(result)),
                (None, Some(error)) => ResponseBody::Error(
                    parse_remote_error(error.get())
                        .ok_or_else(|| Violation::new("a response error without string code and message", line))?,
                ),
                _ => return Err(Violation::new("a response must hold exactly one of result and error", line)),
            };
            Ok(Frame::Response { id, body })
        }
    }
}

/// The fast path for the common event frame, as koma writes it (compact,
/// in this key order): `{"type":"event","seq":N,"name":"NAME","data":DATA}`.
/// It reads the fixed parts by position and validates only `data` (its
/// UTF-8 and its JSON), where the full path parses the whole object with
/// serde. It gives the same frame as the full path, or `None` (anything else:
/// another shape, an escape in the name, a violation), and the full path then
/// decides, with its exact messages.
fn classify_event_fast(line: &[u8]) -> Option<Frame> {
    const PREFIX: &[u8] = b"{\"type\":\"event\",\"seq\":";
    let rest = line.strip_prefix(PREFIX)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || rest[0] == b'0' {
        return None;
    }
    let mut seq: u64 = 0;
    for &d in &rest[..digits] {
        seq = seq.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    let rest = rest[digits..].strip_prefix(b",\"name\":\"")?;
    let quote = memchr::memchr(b'"', rest)?;
    let name = &rest[..quote];
    if name.iter().any(|&b| b == b'\\' || !(0x20..0x80).contains(&b)) {
        return None;
    }
    let rest = rest[quote + 1..].strip_prefix(b",\"data\":")?;
    let data = rest.strip_suffix(b"}")?;
    // Compact only: with whitespace around `data`, the full path decides
    // (its range leaves the whitespace out).
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    if data.first().is_some_and(space) || data.last().is_some_and(space) {
        return None;
    }
    // Nested 127 deep, `data` would pass alone but not as a member of the
    // frame (serde's depth limit of 128): that takes 127 opening brackets
    // and their 127 closing ones, so a shorter `data` cannot be that deep.
    if data.len() >= 254 && memchr::memchr2_iter(b'[', b'{', data).nth(126).is_some() {
        return None;
    }
    let text = std::str::from_utf8(data).ok()?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    let start = line.len() - 1 - data.len();
    let name = EVENT_CATALOG.iter().copied().find(|n| n.as_bytes() == name);
    Some(Frame::Event { seq, name, data: start..start + data.len() })
}

fn parse_remote_error(text: &str) -> Option<crate::error::RemoteError> {
    #[derive(Deserialize)]
    struct E<'a> {
        code: String,
        message: String,
        #[serde(borrow, default, deserialize_with = "raw_present")]
        data: Option<&'a RawValue>,
    }
    let e: E<'_> = serde_json::from_str(text).ok()?;
    Some(crate::error::RemoteError { code: e.code, message: e.message, data: e.data.map(|d| d.get().to_owned()) })
}

/// A JSON number text that is a positive integer (no fraction, no exponent).
pub fn parse_positive_integer(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.starts_with('0') {
        return None;
    }
    text.parse::<u64>().ok()
}

#[cfg(test)]
mod fast_path {
    use super::*;

    #[test]
    fn the_fast_path_agrees_with_the_full_one() {
        let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let deeper = format!("{}{}", "[".repeat(128), "]".repeat(128));
        let datas = [
            r#"{"turn":"t","text":"hi"}"#.to_owned(),
            r#"{"turn":"t","text":"a \"quoted\" \u00e9 é"}"#.to_owned(),
            r#"{}"#.to_owned(),
            r#"null"#.to_owned(),
            r#"[1,2,{"a":[true,false]}]"#.to_owned(),
            r#"{"a":1}}"#.to_owned(),
            r#"{"a":1"#.to_owned(),
            r#"{"a":1},"extra":2"#.to_owned(),
            r#"{"a":"\x"}"#.to_owned(),
            "{\"a\":\"\u{7}\"}".to_owned(),
            deep.clone(),
            deeper.clone(),
            format!("{{\"k\":{deep}}}"),
            // JSON whitespace around `data` is not part of it; a form feed is not JSON whitespace.
            r#" {"a":1}"#.to_owned(),
            "{\"a\":1}\t\r\n ".to_owned(),
            " \n null ".to_owned(),
            "\u{c}{}".to_owned(),
            "{}\u{c}".to_owned(),
        ];
        for name in ["output", "state", "mystery", "out\\u0070ut", ""] {
            for seq in ["1", "42", "0", "01", "18446744073709551615", "18446744073709551616", "-1", "1.5"] {
                for data in &datas {
                    let line = format!(r#"{{"type":"event","seq":{seq},"name":"{name}","data":{data}}}"#);
                    let line = line.as_bytes();
                    let (got, want) = (classify(line), classify_full(line));
                    match (&got, &want) {
                        (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", String::from_utf8_lossy(line)),
                        (Err(_), Err(_)) => {}
                        _ => panic!("{}: fast {got:?}, full {want:?}", String::from_utf8_lossy(line)),
                    }
                    if classify_event_fast(line).is_some() {
                        assert!(
                            want.is_ok(),
                            "the fast path accepted what the full path refuses: {}",
                            String::from_utf8_lossy(line)
                        );
                    }
                }
            }
        }
        let mut bad_utf8 = br#"{"type":"event","seq":3,"name":"output","data":{"text":"#.to_vec();
        bad_utf8.extend_from_slice(&[b'"', 0xFF, b'"', b'}', b'}']);
        assert!(classify_event_fast(&bad_utf8).is_none());
        assert!(classify(&bad_utf8).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, Violation> {
        let mut s = LineSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.feed(
                c,
                |l| -> Result<(), Violation> {
                    out.push(l.into_owned());
                    Ok(())
                },
                |v| v,
            )?;
        }
        s.finish()?;
        Ok(out)
    }

    #[test]
    fn splits_at_every_byte_boundary_and_inside_utf8() {
        let input = "{\"id\":\"1\",\"result\":\"é€😀\"}\n{\"id\":\"2\",\"result\":2}\r\n{\"type\":\"event\",\"seq\":1,\"name\":\"output\",\"data\":{\"text\":\"ü\"}}\n".as_bytes();
        let whole = split_all(&[input]).unwrap();
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[1], b"{\"id\":\"2\",\"result\":2}");
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let parts = [&input[..i], &input[i..j], &input[j..]];
                assert_eq!(split_all(&parts).unwrap(), whole, "split at {i},{j}");
            }
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(split_all(&bytes).unwrap(), whole);
        for l in &whole {
            classify(l).unwrap();
        }
    }

    #[test]
    fn many_lines_in_one_read() {
        let input = "{\"id\":\"1\",\"result\":1}\n".repeat(1000);
        assert_eq!(split_all(&[input.as_bytes()]).unwrap().len(), 1000);
    }

    #[test]
    fn crlf_is_accepted() {
        let lines = split_all(&[b"{\"id\":\"1\",\"result\":{}}\r\n"]).unwrap();
        assert!(matches!(classify(&lines[0]).unwrap(), Frame::Response { .. }));
    }

    #[test]
    fn end_inside_a_line_is_a_violation() {
        assert!(split_all(&[b"{\"id\":\"1\""]).is_err());
    }

    fn frame_of_len(n: usize) -> Vec<u8> {
        // {"id":"1","result":"xxxx"}
        let overhead = "{\"id\":\"1\",\"result\":\"\"}".len();
        let mut v = Vec::with_capacity(n + 2);
        v.extend_from_slice(b"{\"id\":\"1\",\"result\":\"");
        v.resize(n - 2, b'x');
        v.extend_from_slice(b"\"}");
        assert_eq!(v.len(), n);
        let _ = overhead;
        v
    }

    #[test]
    fn exactly_40_mib_is_accepted_and_one_more_is_fatal() {
        for (terminator, extra) in [(&b"\n"[..], 0usize), (&b"\r\n"[..], 0)] {
            let mut line = frame_of_len(MAX_FRAME_BYTES + extra);
            line.extend_from_slice(terminator);
            // in 64 KiB reads
            let mut s = LineSplitter::new();
            let mut got = 0;
            for c in line.chunks(65536) {
                s.feed(
                    c,
                    |l| -> Result<(), Violation> {
                        got = l.bytes().len();
                        assert!(matches!(classify(l.bytes()).unwrap(), Frame::Response { .. }));
                        Ok(())
                    },
                    |v| v,
                )
                .unwrap();
                assert!(s.partial_capacity() <= MAX_FRAME_BYTES + 1);
            }
            assert_eq!(got, MAX_FRAME_BYTES);
        }
        for terminator in [&b"\n"[..], &b"\r\n"[..]] {
            let mut line = frame_of_len(MAX_FRAME_BYTES + 1);
            line.extend_from_slice(terminator);
            let mut s = LineSplitter::new();
            let mut err = None;
            for c in line.chunks(65536) {
                if let Err(e) = s.feed(c, |_| -> Result<(), Violation> { panic!("accepted") }, |v| v) {
                    err = Some(e);
                    break;
                }
                assert!(s.partial_capacity() <= MAX_FRAME_BYTES + 1);
            }
            let e = err.expect("over 40 MiB must fail");
            assert!(e.what.contains("over"));
            assert!(e.quote.len() <= 204);
            // in one read, too
            let mut s = LineSplitter::new();
            assert!(s.feed(&line, |_| -> Result<(), Violation> { panic!("accepted") }, |v| v).is_err());
        }
    }

    #[test]
    fn bom_blank_non_objects_invalid_utf8() {
        let bad: &[(&[u8], &str)] = &[
            (b"\xEF\xBB\xBF{\"type\":\"hello\"}", "byte-order mark"),
            (b"", "blank"),
            (b"INFO starting worker", "not a JSON object"),
            (b"[1,2,3]", "not a JSON object"),
            (b"42", "not a JSON object"),
            (b"\"s\"", "not a JSON object"),
            (b"{", "not one complete"),
            (b"{\"id\":\"1\",\"result\":1} {}", "not one complete"),
            (b"{\"id\":\"1\",\"result\":\"\xff\xfe\"}", "UTF-8"),
            (b"{\"type\":\"bogus\"}", "unknown type"),
            (b"{\"foo\":1}", "neither type"),
            (b"{\"id\":7,\"result\":1}", "neither type"),
            (b"{\"id\":\"1\",\"result\":1,\"error\":{\"code\":\"x\",\"message\":\"y\"}}", "exactly one"),
            (b"{\"id\":\"1\"}", "exactly one"),
            (b"{\"id\":\"1\",\"error\":\"busy\"}", "code and message"),
            (b"{\"type\":\"event\",\"seq\":0,\"name\":\"output\",\"data\":{}}", "seq"),
            (b"{\"type\":\"event\",\"seq\":1.5,\"name\":\"output\",\"data\":{}}", "seq"),
            (b"{\"type\":\"event\",\"seq\":\"1\",\"name\":\"output\",\"data\":{}}", "seq"),
            (b"{\"type\":\"event\",\"seq\":1,\"name\":\"output\"}", "without data"),
        ];
        for (line, what) in bad {
            let err = classify(line).expect_err(&String::from_utf8_lossy(line));
            assert!(err.what.contains(what), "{:?}: {}", String::from_utf8_lossy(line), err.what);
        }
        assert!(classify(b"{\n").is_err());
    }

    #[test]
    fn classifies_frames_and_ignores_unknown_fields() {
        let line = br#"{"id":"7","result":{"turn":"t-1"},"extra":[1,{"x":2}]}"#;
        match classify(line).unwrap() {
            Frame::Response { id, body: ResponseBody::Result(r) } => {
                assert_eq!(id, "7");
                assert_eq!(&line[r], br#"{"turn":"t-1"}"#);
            }
            f => panic!("{f:?}"),
        }
        let line = br#"{"id":"7","result":null}"#;
        assert!(matches!(classify(line).unwrap(), Frame::Response { body: ResponseBody::Result(_), .. }));
        let line = br#"{"id":"8","error":{"code":"busy","message":"a turn is running","data":{"turn":"t"}}}"#;
        match classify(line).unwrap() {
            Frame::Response { body: ResponseBody::Error(e), .. } => {
                assert_eq!(e.code, "busy");
                assert_eq!(e.data.as_deref(), Some(r#"{"turn":"t"}"#));
            }
            f => panic!("{f:?}"),
        }
        let line = br#"{"type":"event","seq":12,"name":"output","data":{"turn":"t","text":"hi"},"x":1}"#;
        match classify(line).unwrap() {
            Frame::Event { seq: 12, name: Some("output"), data } => {
                assert_eq!(&line[data], br#"{"turn":"t","text":"hi"}"#)
            }
            f => panic!("{f:?}"),
        }
        let line = br#"{"type":"event","seq":13,"name":"mystery"}"#;
        assert!(matches!(classify(line).unwrap(), Frame::Event { seq: 13, name: None, .. }));
        assert_eq!(classify(br#"{"type":"hello","protocol":2}"#).unwrap(), Frame::Hello);
    }
}
