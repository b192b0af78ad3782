//! A JSON value as raw text, with its long strings lifted out (see
//! [`crate::lift`]): what the core hands a host to parse once. The value
//! types generated from `schema/` (in `surface.rs`) are written with
//! [`JsonWriter`], which lifts the strings they hold lifted.

use std::ops::Range;

use crate::lift::{Chars, LiftedString, Step};

/// `bytes[range]`, with its long strings lifted out: put back at their
/// paths after parsing.
#[derive(Debug)]
pub struct RawJson {
    pub bytes: Vec<u8>,
    pub range: Range<usize>,
    pub lifts: Vec<LiftedString>,
}

impl RawJson {
    /// A whole buffer of JSON text.
    pub fn whole(bytes: Vec<u8>, lifts: Vec<LiftedString>) -> Self {
        let range = 0..bytes.len();
        RawJson { bytes, range, lifts }
    }

    pub fn text(&self) -> &[u8] {
        &self.bytes[self.range.clone()]
    }
}

/// Any JSON value as its text, with the strings lifted out of it (paths
/// from the value).
#[derive(Debug, Default)]
pub struct JsonValue {
    pub json: String,
    pub lifts: Vec<LiftedString>,
}

impl JsonValue {
    pub fn null() -> Self {
        JsonValue { json: "null".into(), lifts: Vec::new() }
    }
}

/// A string that is written as `""` with its characters lifted out (long
/// text the host should not parse), or as itself when it is empty.
#[derive(Debug)]
pub enum LiftedText {
    Empty,
    Lifted(Chars),
}

/// Writes one value's JSON and gathers its lifted strings with their paths.
pub struct JsonWriter {
    out: Vec<u8>,
    lifts: Vec<LiftedString>,
    path: Vec<PathPart>,
}

enum PathPart {
    Key(&'static str),
    Index(u32),
}

impl JsonWriter {
    pub fn with_capacity(bytes: usize) -> Self {
        JsonWriter { out: Vec::with_capacity(bytes), lifts: Vec::new(), path: Vec::new() }
    }

    /// Write `value`; the writer then holds its JSON.
    pub fn write<T: WriteJson>(mut self, value: T) -> RawJson {
        value.write_json(&mut self);
        RawJson::whole(self.out, self.lifts)
    }

    /// `{`: members follow with [`JsonWriter::member`], then [`JsonWriter::end_object`].
    pub fn begin_object(&mut self) {
        self.out.push(b'{');
    }

    pub fn end_object(&mut self) {
        self.out.push(b'}');
    }

    /// A member `"name": value` of the object being written.
    pub fn member<T: WriteJson>(&mut self, name: &'static str, value: T) {
        if self.out.last() != Some(&b'{') {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.path.push(PathPart::Key(name));
        value.write_json(self);
        self.path.pop();
    }

    /// A member that is left out when it is `None`.
    pub fn optional_member<T: WriteJson>(&mut self, name: &'static str, value: Option<T>) {
        if let Some(v) = value {
            self.member(name, v);
        }
    }

    /// Where the writer is, as a lift's path.
    fn here(&self) -> Vec<Step> {
        self.path
            .iter()
            .map(|p| match p {
                PathPart::Key(k) => Step::Key((*k).into()),
                PathPart::Index(i) => Step::Index(*i),
            })
            .collect()
    }
}

/// A value that a [`JsonWriter`] writes.
pub trait WriteJson {
    fn write_json(self, w: &mut JsonWriter);
}

impl WriteJson for &str {
    fn write_json(self, w: &mut JsonWriter) {
        // A string of Rust is valid UTF-8: serde_json only escapes it.
        w.out.extend_from_slice(serde_json::to_string(self).unwrap_or_default().as_bytes());
    }
}

impl WriteJson for String {
    fn write_json(self, w: &mut JsonWriter) {
        self.as_str().write_json(w);
    }
}

impl WriteJson for bool {
    fn write_json(self, w: &mut JsonWriter) {
        w.out.extend_from_slice(if self { b"true" } else { b"false" });
    }
}

impl WriteJson for u64 {
    fn write_json(self, w: &mut JsonWriter) {
        w.out.extend_from_slice(itoa::Buffer::new().format(self).as_bytes());
    }
}

/// `null` for `None`.
impl<T: WriteJson> WriteJson for Option<T> {
    fn write_json(self, w: &mut JsonWriter) {
        match self {
            Some(v) => v.write_json(w),
            None => w.out.extend_from_slice(b"null"),
        }
    }
}

impl<T: WriteJson> WriteJson for Vec<T> {
    fn write_json(self, w: &mut JsonWriter) {
        w.out.push(b'[');
        for (i, item) in self.into_iter().enumerate() {
            if i > 0 {
                w.out.push(b',');
            }
            w.path.push(PathPart::Index(i as u32));
            item.write_json(w);
            w.path.pop();
        }
        w.out.push(b']');
    }
}

/// Its text as it is, and its lifted strings moved under the writer's path.
impl WriteJson for JsonValue {
    fn write_json(self, w: &mut JsonWriter) {
        w.out.extend_from_slice(self.json.as_bytes());
        if !self.lifts.is_empty() {
            let here = w.here();
            for l in self.lifts {
                let mut path = here.clone();
                path.extend(l.path);
                w.lifts.push(LiftedString { path, chars: l.chars });
            }
        }
    }
}

impl WriteJson for LiftedText {
    fn write_json(self, w: &mut JsonWriter) {
        w.out.extend_from_slice(b"\"\"");
        if let LiftedText::Lifted(chars) = self {
            w.lifts.push(LiftedString { path: w.here(), chars });
        }
    }
}
