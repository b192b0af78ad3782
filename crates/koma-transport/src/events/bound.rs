//! The bound of the protocol's event buffer: frames and bytes received and
//! not yet taken by the application, counted across every stream.

use crate::limits::{MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES};

#[derive(Debug)]
pub struct Bound {
    /// Counted now: waiting in a stream, or lent out in a batch the host has
    /// not finished taking.
    frames: usize,
    bytes: usize,
    /// The host's running counts of events, and of their bytes, taken (see
    /// [`Bound::settle`]), as last seen.
    settled: (u32, u32),
    /// Bumped by an overflow: what was lent before it no longer counts.
    epoch: u32,
    max_frames: usize,
    max_bytes: usize,
}

impl Default for Bound {
    fn default() -> Self {
        Self::with_limits(MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES)
    }
}

impl Bound {
    pub fn with_limits(max_frames: usize, max_bytes: usize) -> Self {
        Bound { frames: 0, bytes: 0, settled: (0, 0), epoch: 0, max_frames, max_bytes }
    }

    pub fn counted_frames(&self) -> usize {
        self.frames
    }

    pub fn counted_bytes(&self) -> usize {
        self.bytes
    }

    /// The epoch lent batches belong to; an overflow bumps it.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The host has taken `count` events and `bytes` bytes of event frames
    /// in all (running, wrapping counts it keeps itself, counting only
    /// events of the current epoch, each with the size its batch gave it):
    /// those stop counting. Events may be taken in any order and from any
    /// stream.
    pub fn settle(&mut self, count: u32, bytes: u32) {
        let (n, b) = (count.wrapping_sub(self.settled.0), bytes.wrapping_sub(self.settled.1));
        self.settled = (count, bytes);
        // Saturating: a count that raced with an overflow (which reset the
        // totals) must not wrap them.
        self.frames = self.frames.saturating_sub(n as usize);
        self.bytes = self.bytes.saturating_sub(b as usize);
    }

    /// Count one more event of `frame_bytes`, if it fits.
    pub fn admit(&mut self, frame_bytes: usize) -> bool {
        if self.frames + 1 > self.max_frames || self.bytes + frame_bytes > self.max_bytes {
            return false;
        }
        self.frames += 1;
        self.bytes += frame_bytes;
        true
    }

    /// Stop counting events that waited in a stream (they are let go, or no
    /// longer count there).
    pub fn release(&mut self, frames: usize, bytes: usize) {
        self.frames = self.frames.saturating_sub(frames);
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    /// An overflow: everything counted is dropped (the streams clear what
    /// waits in them, and the new epoch revokes what was lent). Returns how
    /// many events that is, the one that did not fit included.
    pub fn overflow(&mut self) -> u64 {
        let dropped = self.frames as u64 + 1;
        self.frames = 0;
        self.bytes = 0;
        self.epoch = self.epoch.wrapping_add(1);
        dropped
    }
}
