//! What a consumer gets when it asks its stream for events.

use crate::error::KomaError;
use crate::lift::LiftedString;

/// Why a stream of events ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Detach, close, or (a turn's stream) the turn is over: the stream ends.
    Finished,
    /// A transport failure or protocol error: the stream ends with it.
    Failed(KomaError),
}

/// How the host counts the events of a batch it was lent (see
/// `EventCounters`). Its number is what the core writes into the
/// `BATCH_COUNTING` slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// The events do not count against the bound (a turn that finished
    /// while nobody read it, or whose reader left): hand them over as they are.
    Uncounted = 0,
    /// Each event counts until it is taken, and an overflow revokes the
    /// rest: while the epoch still matches, count it and hand it over; else
    /// drop it. The client's own stream.
    Revocable = 1,
    /// Each event counts until it is taken; an overflow only stops it
    /// counting: while the epoch matches, count it; hand it over either way.
    /// A turn's stream, whose batch may hold an approval request that the
    /// application is answering.
    Kept = 2,
}

impl Counting {
    /// Each way of counting by the name a host gives it, with the number the
    /// core writes into `BATCH_COUNTING` (hosts take these from here).
    pub const KINDS: [(&'static str, Counting); 3] =
        [("UNCOUNTED", Counting::Uncounted), ("REVOCABLE", Counting::Revocable), ("KEPT", Counting::Kept)];

    /// The way of counting whose number is `n`.
    pub fn from_number(n: u32) -> Option<Counting> {
        Counting::KINDS.into_iter().map(|(_, c)| c).find(|c| *c as u32 == n)
    }
}

/// What a consumer gets when it asks for events.
#[derive(Debug, PartialEq)]
pub enum Take {
    /// A batch of `count` events (`bytes` of frames): their JSON joined as
    /// one array, and the strings lifted out of them, by the event's index
    /// in the batch.
    Batch { json: Vec<u8>, count: usize, bytes: usize, epoch: u32, counting: Counting, lifts: Vec<(u32, LiftedString)> },
    /// The one overflow report.
    Overflow { dropped: u64 },
    /// Nothing waiting now.
    Empty,
    /// Nothing more will come.
    Ended(End),
}
