//! The property check behind the `lift` fuzz target ([`crate::lift`]),
//! which `tests/lift_corpus.rs` also runs over the fuzz corpus.
//!
//! Input: byte 0 gives the lift threshold, `min = 1 + byte0 % 16` (an ASCII
//! digit `d` gives `d + 1`); the rest is the line. Lines that are not UTF-8
//! are skipped (callers check UTF-8 before lifting).
//!
//! Properties, whenever `lift` returns `Some`:
//! - no panic (also when it returns `None`);
//! - at least one lift; the skeleton is the input with each lifted string's
//!   content (at least `min` bytes each) removed, so at most
//!   `input.len() - lifts * min` bytes;
//! - `Text::Source(r)`: `r` lies in the input, between two quotes, is at
//!   least `min` bytes of ASCII without `\` or control characters, and the
//!   ranges come in input order without overlapping;
//!   `Text::Latin1`: (nothing to check; every byte is a character);
//!   `Text::Utf16`: valid UTF-16 with at least one unit above U+00FF;
//! - the skeleton is valid JSON (`serde_json` into `IgnoredAny`) exactly when
//!   the input is;
//! - the skeleton parses into a `serde_json::Value` exactly when the input does
//!   (these differ from the line above for lone-surrogate escapes and depth,
//!   which `IgnoredAny` lets through), and then every lift's path leads to an
//!   empty string in the parsed skeleton, and putting each lifted string there
//!   gives the input's own `Value` (duplicate keys: the last one wins, as
//!   the hosts' JSON parsers have it).

use crate::lift::{lift, Lifted, Step, Text};
use serde_json::Value;

/// The threshold the fuzz input's first byte selects, and the line.
pub fn split_fuzz_input(data: &[u8]) -> Option<(usize, &[u8])> {
    let (&first, json) = data.split_first()?;
    Some((1 + (first as usize) % 16, json))
}

pub fn check_fuzz_input(data: &[u8]) {
    if let Some((min, json)) = split_fuzz_input(data) {
        if std::str::from_utf8(json).is_ok() {
            check(json, min);
        }
    }
}

fn valid(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

/// The lifted string as a Rust string.
pub fn text_of(json: &[u8], text: &Text) -> String {
    match text {
        Text::Source(r) => String::from_utf8(json[r.clone()].to_vec()).expect("Source is ASCII"),
        Text::Latin1(b) => b.iter().map(|&c| c as char).collect(),
        Text::Utf16(u) => String::from_utf16(u).expect("Utf16 is valid UTF-16"),
    }
}

/// Put the lifted strings back into the parsed skeleton, as a host does.
pub fn restore(json: &[u8], l: &Lifted, mut v: Value) -> Value {
    for (n, lift) in l.lifts.iter().enumerate() {
        let mut at = &mut v;
        for step in &lift.path {
            at = match step {
                Step::Key(k) => at.get_mut(k.as_str()),
                Step::Index(i) => at.get_mut(*i as usize),
            }
            .unwrap_or_else(|| panic!("lift {n}: path {:?} not in the skeleton {}", lift.path, show(&l.skeleton)));
        }
        assert_eq!(
            *at,
            Value::String(String::new()),
            "lift {n}: path {:?} does not lead to the placeholder \"\" in {}",
            lift.path,
            show(&l.skeleton)
        );
        *at = Value::String(text_of(json, &lift.text));
    }
    v
}

/// Check `lift(json, min)`; `json` is UTF-8.
pub fn check(json: &[u8], min: usize) {
    let Some(l) = lift(json, min) else { return };
    let input = show(json);

    assert!(!l.lifts.is_empty(), "Some with no lifts for {input}");
    assert!(
        l.skeleton.len() + l.lifts.len() * min <= json.len(),
        "skeleton {} too long for {} lifts of >= {min} bytes out of {input}",
        show(&l.skeleton),
        l.lifts.len()
    );
    let mut after = 0;
    for (n, lift) in l.lifts.iter().enumerate() {
        match &lift.text {
            Text::Source(r) => {
                assert!(
                    r.start >= 1 && r.end < json.len() && r.start >= after && r.len() >= min,
                    "lift {n}: bad Source range {r:?} (after {after}, min {min}) in {input}"
                );
                assert!(json[r.start - 1] == b'"' && json[r.end] == b'"', "lift {n}: {r:?} not quoted in {input}");
                assert!(
                    json[r.clone()].iter().all(|&b| (0x20..0x80).contains(&b) && b != b'\\' && b != b'"'),
                    "lift {n}: Source {r:?} is not plain ASCII in {input}"
                );
                after = r.end + 1;
            }
            Text::Latin1(_) => {}
            Text::Utf16(u) => {
                assert!(String::from_utf16(u).is_ok(), "lift {n}: Utf16 not valid UTF-16 in {input}");
                assert!(u.iter().any(|&c| c > 0xFF), "lift {n}: Utf16 that fits Latin-1 in {input}");
            }
        }
    }

    let (vi, vs) = (valid(json), valid(&l.skeleton));
    assert_eq!(vs, vi, "skeleton {} valid: {vs}, input {input} valid: {vi}", show(&l.skeleton));

    let parsed: Result<Value, _> = serde_json::from_slice(json);
    let skel: Result<Value, _> = serde_json::from_slice(&l.skeleton);
    match (parsed, skel) {
        (Ok(expected), Ok(skel)) => {
            let restored = restore(json, &l, skel);
            assert_eq!(restored, expected, "restored value differs for {input} (skeleton {})", show(&l.skeleton));
        }
        (Err(_), Err(_)) => {}
        (p, s) => panic!(
            "input {input} parses: {:?}; skeleton {} parses: {:?}",
            p.map(|_| ()),
            show(&l.skeleton),
            s.map(|_| ())
        ),
    }
}
