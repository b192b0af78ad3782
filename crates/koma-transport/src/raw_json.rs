//! A JSON value as raw text, with its long strings lifted out (see
//! [`crate::lift`]): what the core hands a host to parse once.

use std::ops::Range;

use crate::lift::LiftedString;

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
