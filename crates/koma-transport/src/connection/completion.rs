//! What a call gets in the end: a [`Completion`] for its token, handed to the
//! host in batches (see [`super::waker::Waker`]).

use std::ops::Range;
use std::sync::Arc;

use crate::error::KomaError;
use crate::hello::Hello;
use crate::lift::LiftedString;

/// A JSON value as raw text: `bytes[range]`, with its long strings lifted
/// out (see [`crate::lift`]): put back at their paths after parsing.
#[derive(Debug)]
pub struct RawJson {
    pub bytes: Vec<u8>,
    pub range: Range<usize>,
    pub lifts: Vec<LiftedString>,
}

impl RawJson {
    pub fn text(&self) -> &[u8] {
        &self.bytes[self.range.clone()]
    }
}

#[derive(Debug)]
pub enum Outcome {
    /// A success response's `result`.
    Result(RawJson),
    /// `probe()`: the checked hello.
    Hello(Arc<Hello>),
    /// `close()` is done.
    Closed,
    Error(KomaError),
}

#[derive(Debug)]
pub struct Completion {
    pub token: u64,
    pub outcome: Outcome,
}
