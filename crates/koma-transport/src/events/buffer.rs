//! The client's own stream (what `events()` reads) and the bound every
//! stream counts against. The turn layer (`crate::turns`) decides which
//! stream an event goes to, and what an overflow does to each.

use super::bound::Bound;
use super::stream::Stream;
use super::take::{End, Take};

#[derive(Debug)]
pub struct EventBuffer {
    pub bound: Bound,
    /// The events no turn took: what `events()` reads.
    pub main: Stream,
}

impl Default for EventBuffer {
    fn default() -> Self {
        Self::with_bound(Bound::default())
    }
}

impl EventBuffer {
    pub fn with_bound(bound: Bound) -> Self {
        EventBuffer { bound, main: Stream::counted(true) }
    }

    /// Frames counted against the bound (waiting in a stream, or lent out).
    pub fn counted_frames(&self) -> usize {
        self.bound.counted_frames()
    }

    pub fn counted_bytes(&self) -> usize {
        self.bound.counted_bytes()
    }

    /// The client's own stream is paused after an overflow.
    pub fn is_paused(&self) -> bool {
        self.main.is_paused()
    }

    /// See [`Bound::settle`].
    pub fn settle(&mut self, count: u32, bytes: u32) {
        self.bound.settle(count, bytes);
    }

    /// The epoch lent batches belong to.
    pub fn epoch(&self) -> u32 {
        self.bound.epoch()
    }

    /// Take from the client's own stream.
    pub fn take(&mut self) -> Take {
        self.main.take(self.bound.epoch())
    }

    /// The client's own stream ends (after what is queued).
    pub fn end(&mut self, end: End) {
        self.main.end(end);
    }
}
