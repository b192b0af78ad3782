//! Reading a scenario's JSON into the types of `format` (generated from
//! schema/scenario.schema.json): a serde deserializer over a parsed
//! `serde_json::Value` that keeps the path to each value, so that a mistake
//! is named by its place, and words it as koma-sim's messages do, from the
//! table the generator writes beside the types (`format::SHAPES`).
//!
//! Why not serde_json's own deserializer and `serde_path_to_error`: a union
//! told apart by a member (a step's `do`) is buffered by serde's derive
//! before its variant is read, which loses the path inside the step and the
//! member's words (`steps[0].text: must be a string`); serde's messages
//! (`invalid type: integer 42, expected a string`) are not koma-sim's. Here a
//! union is read in place: the tag first, then the same object as the
//! variant's struct. Every other rule (which fields, which are required,
//! what type each is) is serde's derive of the generated types.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Map, Value};
use std::fmt::Display;

/// A type of the format, as a message names it.
pub struct Shape {
    /// Its name in `format` (what serde's derive hands the deserializer).
    pub name: &'static str,
    /// How a message calls a value of it (`a turn`); empty when it has none.
    pub title: &'static str,
    pub kind: Kind,
}

pub enum Kind {
    /// An object with these members, in the schema's order.
    Object(&'static [Field]),
    /// A union of objects told apart by this member (`do`), each read as
    /// the struct of its variant.
    Tagged(&'static str),
    /// A union of objects of one member each (`{"turn": 2}`); `member` is
    /// what each is called (`matcher`).
    Keyed { member: &'static str, keys: &'static [Field] },
    /// A string of a fixed set.
    Enum,
}

/// A member of an object: its name, and what it must be (`a positive integer`).
pub struct Field {
    pub name: &'static str,
    pub want: &'static str,
}

/// A step of a path from the scenario's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A mistake: where, and what is wrong.
#[derive(Debug)]
pub struct Wrong {
    /// The path, from the place of the mistake outwards (each level adds
    /// its step as the error goes up).
    rev_path: Vec<Seg>,
    what: What,
}

#[derive(Debug)]
enum What {
    /// A value of the wrong type: what it must be (the member's words, once
    /// a level that knows them has seen it; serde's until then) and what it
    /// is (once the level that holds the value has seen it).
    Type {
        want: Option<String>,
        expected: String,
        got: Option<String>,
    },
    /// Serde's words for an unknown field, a missing one or an unknown
    /// variant, until the level that knows the type words them.
    UnknownField(String),
    Missing(&'static str),
    UnknownVariant(String),
    /// The whole problem, worded.
    Said(String),
}

impl Wrong {
    fn said(problem: impl Into<String>) -> Wrong {
        Wrong { rev_path: Vec::new(), what: What::Said(problem.into()) }
    }

    fn want(want: impl Into<String>, v: &Value) -> Wrong {
        let what = What::Type { want: Some(want.into()), expected: String::new(), got: Some(not(v)) };
        Wrong { rev_path: Vec::new(), what }
    }

    fn at(mut self, seg: Seg) -> Wrong {
        self.rev_path.push(seg);
        self
    }

    fn here(&self) -> bool {
        self.rev_path.is_empty()
    }

    /// The path from the root, and the problem in words.
    pub fn into_parts(self) -> (Vec<Seg>, String) {
        let problem = match self.what {
            What::Type { want, expected, got } => {
                format!("must be {}, not {}", want.unwrap_or(expected), got.unwrap_or_else(|| "that".into()))
            }
            What::UnknownField(f) => format!("unknown field {}", quote(&f)),
            What::Missing(f) => format!("missing (needs `{f}`)"),
            What::UnknownVariant(v) => format!("unknown value {}", quote(&v)),
            What::Said(s) => s,
        };
        let mut path = self.rev_path;
        path.reverse();
        (path, problem)
    }
}

impl std::fmt::Display for Wrong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.what)
    }
}

impl std::error::Error for Wrong {}

impl de::Error for Wrong {
    fn custom<T: Display>(msg: T) -> Wrong {
        Wrong::said(msg.to_string())
    }

    fn invalid_type(_: de::Unexpected, expected: &dyn de::Expected) -> Wrong {
        Wrong { rev_path: Vec::new(), what: What::Type { want: None, expected: expected.to_string(), got: None } }
    }

    fn invalid_value(unexpected: de::Unexpected, expected: &dyn de::Expected) -> Wrong {
        Self::invalid_type(unexpected, expected)
    }

    fn unknown_field(field: &str, _: &'static [&'static str]) -> Wrong {
        Wrong { rev_path: Vec::new(), what: What::UnknownField(field.to_string()) }
    }

    fn missing_field(field: &'static str) -> Wrong {
        Wrong { rev_path: Vec::new(), what: What::Missing(field) }
    }

    fn unknown_variant(variant: &str, _: &'static [&'static str]) -> Wrong {
        Wrong { rev_path: Vec::new(), what: What::UnknownVariant(variant.to_string()) }
    }
}

/// Reads `v` as a `T` of the format, whose types `shapes` describes.
pub fn read<'a, T: de::Deserialize<'a>>(v: &'a Value, shapes: &'static [Shape]) -> Result<T, Wrong> {
    T::deserialize(At { v, shapes, variant: None })
}

/// A variant of a tagged union, read from the union's object: its tag
/// (skipped as a member) and how a message names it (`the step `exit``).
#[derive(Clone, Copy)]
struct Variant<'a> {
    tag: &'static str,
    value: &'a str,
    union: &'static str,
}

/// A value of the scenario, and what it is read as.
struct At<'a> {
    v: &'a Value,
    shapes: &'static [Shape],
    variant: Option<Variant<'a>>,
}

impl<'a> At<'a> {
    fn shape(&self, name: &str) -> &'static Shape {
        self.shapes.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name} is not in the table"))
    }

    fn object(&self, want: &str) -> Result<&'a Map<String, Value>, Wrong> {
        self.v.as_object().ok_or_else(|| Wrong::want(want, self.v))
    }

    fn child(&self, v: &'a Value) -> At<'a> {
        At { v, shapes: self.shapes, variant: None }
    }
}

/// `an object (a turn)`: what a value of an object's or a union's type must be.
fn object_of(shape: &Shape) -> String {
    if shape.title.is_empty() {
        "an object".into()
    } else {
        format!("an object ({})", shape.title)
    }
}

/// `step` from `a step`.
fn noun(title: &str) -> &str {
    ["a ", "an ", "the "].iter().find_map(|a| title.strip_prefix(a)).unwrap_or(title)
}

impl<'de> de::Deserializer<'de> for At<'de> {
    type Error = Wrong;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Wrong> {
        let v = self.v;
        let r = match v {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(a) => visitor.visit_seq(Items { items: a.iter(), at: 0, owner: self.child(v) }),
            Value::Object(map) => visitor.visit_map(Members::new(map, &self, None, &[])),
        };
        // The value's own type mistake: say what it is.
        r.map_err(|mut e| {
            if let What::Type { got: got @ None, .. } = &mut e.what {
                if e.rev_path.is_empty() {
                    *got = Some(not(v));
                }
            }
            e
        })
    }

    /// A member that is there is `Some`, null included: no member of the
    /// format takes null unless it takes any JSON value, where null is a
    /// value (a scripted `result: null`).
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Wrong> {
        visitor.visit_some(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Wrong> {
        let shape = self.shape(name);
        let Kind::Object(fields) = shape.kind else { panic!("{name} is not an object in the table") };
        // A variant of a tagged union is named by its tag: `the step `exit``.
        let owner = match self.variant {
            Some(var) => format!("the {} `{}`", noun(var.union), var.value),
            None => shape.title.to_string(),
        };
        let map = self.object(&object_of(shape))?;
        let skip = self.variant.map(|var| var.tag);
        let r = visitor.visit_map(Members::new(map, &self, skip, fields).owned_by(&owner));
        r.map_err(|e| match e.what {
            What::Missing(field) if e.here() => {
                Wrong::said(format!("missing ({owner} needs `{field}`)")).at(key(field))
            }
            _ => e,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Wrong> {
        let shape = self.shape(name);
        match shape.kind {
            Kind::Tagged(tag) => {
                let map = self.object(&object_of(shape))?;
                let kinds = variants.join(", ");
                let (n, ns) = (noun(shape.title), plural(noun(shape.title)));
                let value = match map.get(tag) {
                    None => {
                        return Err(
                            Wrong::said(format!("missing (every {n} has `{tag}`, one of: {kinds})")).at(key(tag))
                        )
                    }
                    Some(Value::String(s)) => s.as_str(),
                    Some(other) => return Err(Wrong::want("a string", other).at(key(tag))),
                };
                if !variants.contains(&value) {
                    let problem = format!("unknown {n} {} (the {ns} are: {kinds})", quote(value));
                    return Err(Wrong::said(problem).at(key(tag)));
                }
                let variant = Variant { tag, value, union: shape.title };
                visitor.visit_enum(OneOf { name: value, value: At { variant: Some(variant), ..self }, want: None })
            }
            Kind::Keyed { member, keys } => {
                let map = self.object(&object_of(shape))?;
                let names = || keys.iter().map(|k| k.name).collect::<Vec<_>>().join(", ");
                if let Some(k) = map.keys().find(|k| !keys.iter().any(|f| f.name == k.as_str())) {
                    let problem = format!("unknown {member} ({} has one of: {})", shape.title, names());
                    return Err(Wrong::said(problem).at(key(k)));
                }
                let mut given: Vec<&str> = map.keys().map(String::as_str).collect();
                given.sort_unstable();
                let (k, v) = match (given.as_slice(), map.iter().next()) {
                    ([_], Some(kv)) => kv,
                    ([], _) => return Err(Wrong::said(format!("has no {member} (give one of: {})", names()))),
                    _ => {
                        let problem =
                            format!("has {} {} ({}); give one", given.len(), plural(member), given.join(", "));
                        return Err(Wrong::said(problem));
                    }
                };
                let want = keys.iter().find(|f| f.name == k.as_str()).map(|f| f.want);
                visitor.visit_enum(OneOf { name: k, value: self.child(v), want })
            }
            Kind::Enum => {
                let Value::String(s) = self.v else {
                    let want = if shape.title.is_empty() { alternatives(variants) } else { "a string".into() };
                    return Err(Wrong::want(want, self.v));
                };
                if !variants.contains(&s.as_str()) {
                    let problem = if shape.title.is_empty() {
                        format!("must be {}, not {}", alternatives(variants), quote(s))
                    } else {
                        let n = noun(shape.title);
                        format!("unknown {n} {} (the {} are: {})", quote(s), plural(n), variants.join(", "))
                    };
                    return Err(Wrong::said(problem));
                }
                visitor.visit_enum(s.as_str().into_deserializer())
            }
            Kind::Object(_) => panic!("{name} is an object in the table"),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// `"agent" or "error"`, `"a", "b" or "c"`.
fn alternatives(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// `steps` from `step`, `method entries` from `method entry`.
pub fn plural(word: &str) -> String {
    match word.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{word}s"),
    }
}

/// A path's step into the member `k`.
pub fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// The members of an object, its unknown ones first (so that a stray
/// member is told before anything else), then those of its type in the
/// schema's order; a variant's tag is not one of its struct's members.
struct Members<'a> {
    entries: Vec<(&'a str, &'a Value)>,
    next: usize,
    at: At<'a>,
    fields: &'static [Field],
    /// How a message names the object (`a turn`); empty for a JSON value.
    owner: String,
}

impl<'a> Members<'a> {
    fn new(map: &'a Map<String, Value>, of: &At<'a>, skip: Option<&str>, fields: &'static [Field]) -> Members<'a> {
        let known = |k: &str| fields.iter().any(|f| f.name == k);
        let mut entries: Vec<(&'a str, &'a Value)> =
            map.iter().filter(|(k, _)| Some(k.as_str()) != skip && !known(k)).map(|(k, v)| (k.as_str(), v)).collect();
        for f in fields {
            if let Some((k, v)) = map.get_key_value(f.name) {
                if Some(f.name) != skip {
                    entries.push((k.as_str(), v));
                }
            }
        }
        Members { entries, next: 0, at: of.child(of.v), fields, owner: String::new() }
    }

    fn owned_by(mut self, owner: &str) -> Members<'a> {
        self.owner = owner.to_string();
        self
    }
}

impl<'de> de::MapAccess<'de> for Members<'de> {
    type Error = Wrong;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Wrong> {
        let Some(&(k, _)) = self.entries.get(self.next) else { return Ok(None) };
        let r = seed.deserialize(BorrowedStrDeserializer::<Wrong>::new(k));
        r.map(Some).map_err(|e| match e.what {
            What::UnknownField(_) => {
                let names: Vec<&str> = self.fields.iter().map(|f| f.name).collect();
                Wrong::said(format!("unknown field ({} has: {})", self.owner, names.join(", "))).at(key(k))
            }
            _ => e.at(key(k)),
        })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Wrong> {
        let (k, v) = self.entries[self.next];
        self.next += 1;
        seed.deserialize(self.at.child(v)).map_err(|mut e| {
            // A member of the wrong type, in the member's words.
            if let What::Type { want: want @ None, .. } = &mut e.what {
                if e.rev_path.is_empty() {
                    *want = self.fields.iter().find(|f| f.name == k).map(|f| f.want.to_string());
                }
            }
            e.at(key(k))
        })
    }
}

struct Items<'a> {
    items: std::slice::Iter<'a, Value>,
    at: usize,
    owner: At<'a>,
}

impl<'de> de::SeqAccess<'de> for Items<'de> {
    type Error = Wrong;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Wrong> {
        let Some(v) = self.items.next() else { return Ok(None) };
        let i = self.at;
        self.at += 1;
        seed.deserialize(self.owner.child(v)).map(Some).map_err(|e| e.at(Seg::Index(i)))
    }
}

/// The variant of a union: its name (the tag's value, or the one key) and
/// its value (the union's object, for a tagged one; the key's value, for a
/// keyed one, whose type mistake is in the key's words, `want`).
struct OneOf<'a> {
    name: &'a str,
    value: At<'a>,
    want: Option<&'static str>,
}

impl<'de> de::EnumAccess<'de> for OneOf<'de> {
    type Error = Wrong;
    type Variant = OneOf<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, OneOf<'de>), Wrong> {
        let name = seed.deserialize(BorrowedStrDeserializer::<Wrong>::new(self.name))?;
        Ok((name, self))
    }
}

impl<'de> de::VariantAccess<'de> for OneOf<'de> {
    type Error = Wrong;

    fn unit_variant(self) -> Result<(), Wrong> {
        Err(Wrong::said("a variant of a union holds a value"))
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Wrong> {
        let keyed = self.value.variant.is_none();
        let (name, want) = (self.name, self.want);
        seed.deserialize(self.value).map_err(|mut e| {
            if !keyed {
                return e;
            }
            if let What::Type { want: w @ None, .. } = &mut e.what {
                if e.rev_path.is_empty() {
                    *w = want.map(str::to_string);
                }
            }
            e.at(key(name))
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Wrong> {
        Err(Wrong::said("a variant of a union holds one value"))
    }

    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> Result<V::Value, Wrong> {
        Err(Wrong::said("a variant of a union holds one value"))
    }
}

/// A string as JSON writes it: quoted, on one line, with every control
/// character escaped (serde_json escapes those below U+0020 only; DEL and
/// the C1 controls too, so that a message is one plain line whatever the
/// file holds: found by the `scenario` fuzz target).
pub fn quote(s: &str) -> String {
    plain(&serde_json::to_string(s).expect("a string serializes")).into_owned()
}

/// `s` with every control character escaped as JSON would (`\u007f`): a
/// name from the file shown as it is in a message.
pub fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars().map(|c| if c.is_control() { format!("\\u{:04x}", c as u32) } else { c.to_string() }).collect()
}

/// What a value that does not fit is, for a message: numbers as written.
pub fn not(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}
