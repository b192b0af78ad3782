//! What a call gets in the end: a [`Completion`] for its token, handed to the
//! host in batches, and the [`Waker`] that tells the host a batch is ready.

use std::sync::Arc;

use crate::error::KomaError;
use crate::hello::Hello;
pub use crate::raw_json::RawJson;
use crate::turns::TurnUpdate;

#[derive(Debug)]
pub enum Outcome {
    /// A success response's `result`.
    Result(RawJson),
    /// `probe()`: the checked hello.
    Hello(Arc<Hello>),
    /// Done, with nothing to hand over: `close()`, a turn's interrupt.
    Done,
    Error(KomaError),
    /// An update of the turn whose key the completion carries (see [`TurnUpdate`]).
    Turn(TurnUpdate),
}

#[derive(Debug)]
pub struct Completion {
    pub token: u64,
    pub outcome: Outcome,
}

/// Called (from any thread) when completions or events are ready for the
/// host. It is called once per batch, not per completion: the host's thread
/// then drains everything that is ready in one go.
pub trait Waker: Send + Sync + 'static {
    fn wake(&self);
}
