//! What a call gets in the end: a [`Completion`] for its token, handed to the
//! host in batches (see [`super::waker::Waker`]).

use std::sync::Arc;

use crate::error::KomaError;
use crate::hello::Hello;
pub use crate::raw_json::RawJson;
use crate::turns::TurnNews;

#[derive(Debug)]
pub enum Outcome {
    /// A success response's `result`.
    Result(RawJson),
    /// `probe()`: the checked hello.
    Hello(Arc<Hello>),
    /// Done, with nothing to hand over: `close()`, a turn's interrupt.
    Done,
    Error(KomaError),
    /// News of the turn whose key the completion carries (see [`TurnNews`]).
    Turn(TurnNews),
}

#[derive(Debug)]
pub struct Completion {
    pub token: u64,
    pub outcome: Outcome,
}
