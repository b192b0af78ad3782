//! The event buffer (A.12): at most 256 event frames and 64 MiB of JSON text
//! received and not yet handed to the application, wherever they wait (here,
//! or lent out in a batch that the application has not finished taking).
//!
//! On overflow the buffer is cleared, the client pauses (events are still
//! sequence-checked by the reader, then discarded here) and one overflow
//! report is queued; the pause ends when the application takes that report.

use std::collections::VecDeque;

use crate::error::KomaError;
use crate::lift::LiftedString;
use crate::limits::{MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES};

/// Events joined as they arrive into a batch of JSON (`[e1,e2,...` without
/// the closing bracket; what each event writes is up to the caller, and the
/// buffer adds its frame's size after it), so handing them over is a move,
/// not a copy.
#[derive(Debug)]
struct Segment {
    json: Vec<u8>,
    count: usize,
    /// The frame bytes of its events.
    bytes: usize,
    /// Strings lifted out of the events (see [`crate::lift`]), by index in the batch.
    lifts: Vec<(u32, LiftedString)>,
}

#[derive(Debug)]
enum Item {
    Events(Segment),
    Overflow,
}

/// Why the stream of events ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Detach, close: the host's stream of events ends.
    Finished,
    /// A transport failure or protocol error: the host's stream of events ends with it.
    Failed(KomaError),
}

/// What the application gets when it asks for events.
#[derive(Debug, PartialEq)]
pub enum Take {
    /// A batch of `count` events (`bytes` of frames): their JSON joined as
    /// one array, and the strings lifted out of them, by the event's index
    /// in the batch.
    Batch { json: Vec<u8>, count: usize, bytes: usize, epoch: u32, lifts: Vec<(u32, LiftedString)> },
    /// The one overflow report.
    Overflow { dropped: u64 },
    /// Nothing waiting now.
    Empty,
    /// Nothing more will come.
    Ended(End),
}

#[derive(Debug)]
pub struct EventBuffer {
    queue: VecDeque<Item>,
    /// Frames and bytes counted against the bound: queued here plus lent out.
    frames: usize,
    bytes: usize,
    /// The application's running counts of events and of their bytes taken
    /// (see [`EventBuffer::settle`]), as last seen.
    settled: (u32, u32),
    /// Bumped when an overflow revokes what was lent.
    epoch: u32,
    paused: bool,
    dropped: u64,
    end: Option<End>,
    max_frames: usize,
    max_bytes: usize,
}

impl Default for EventBuffer {
    fn default() -> Self {
        Self::with_bounds(MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES)
    }
}

/// The most JSON handed over in one batch (at least one event).
pub const BATCH_BYTES: usize = 1 << 20;

impl EventBuffer {
    pub fn with_bounds(max_frames: usize, max_bytes: usize) -> Self {
        EventBuffer {
            queue: VecDeque::new(),
            frames: 0,
            bytes: 0,
            settled: (0, 0),
            epoch: 0,
            paused: false,
            dropped: 0,
            end: None,
            max_frames,
            max_bytes,
        }
    }

    /// Frames counted against the bound (waiting here or lent out).
    pub fn counted_frames(&self) -> usize {
        self.frames
    }

    pub fn counted_bytes(&self) -> usize {
        self.bytes
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Something is ready for the application (events, the report, or the end).
    pub fn is_ready(&self) -> bool {
        !self.queue.is_empty() || self.end.is_some()
    }

    /// Offer one sequence-checked event of `frame_bytes` (counted against the
    /// bound), whose JSON for the application (about `len` bytes) `write`
    /// appends to the batch (the buffer then appends `,frame_bytes`), with
    /// the strings lifted out of it. Returns true
    /// if it overflowed now.
    pub fn push(
        &mut self,
        frame_bytes: usize,
        len: usize,
        lifts: Vec<LiftedString>,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> bool {
        if self.end.is_some() {
            return false;
        }
        if self.paused {
            self.dropped += 1;
            return false;
        }
        if self.frames + 1 > self.max_frames || self.bytes + frame_bytes > self.max_bytes {
            self.dropped += self.frames as u64 + 1;
            self.queue.clear();
            self.queue.push_back(Item::Overflow);
            self.frames = 0;
            self.bytes = 0;
            self.epoch = self.epoch.wrapping_add(1);
            self.paused = true;
            return true;
        }
        self.frames += 1;
        self.bytes += frame_bytes;
        let fits = matches!(self.queue.back(), Some(Item::Events(seg)) if seg.json.len() + len < BATCH_BYTES);
        if !fits {
            // Room for the whole batch and its closing bracket; pages not written cost nothing.
            let mut json = Vec::with_capacity((BATCH_BYTES + 64).max(len + 2));
            json.push(b'[');
            self.queue.push_back(Item::Events(Segment { json, count: 0, bytes: 0, lifts: Vec::new() }));
        }
        let Some(Item::Events(seg)) = self.queue.back_mut() else { unreachable!() };
        if seg.count > 0 {
            seg.json.push(b',');
        }
        write(&mut seg.json);
        seg.json.push(b',');
        seg.json.extend_from_slice(itoa::Buffer::new().format(frame_bytes).as_bytes());
        let index = seg.count as u32;
        seg.lifts.extend(lifts.into_iter().map(|l| (index, l)));
        seg.count += 1;
        seg.bytes += frame_bytes;
        false
    }

    /// Hand the application what is waiting: a batch of events up to about
    /// [`BATCH_BYTES`] (still counted until [`EventBuffer::settle`]), or the
    /// overflow report (which ends the pause), or the end.
    pub fn take(&mut self) -> Take {
        match self.queue.front() {
            Some(Item::Overflow) => {
                self.queue.pop_front();
                self.paused = false;
                let dropped = std::mem::take(&mut self.dropped);
                Take::Overflow { dropped }
            }
            Some(Item::Events(_)) => {
                let Some(Item::Events(mut seg)) = self.queue.pop_front() else { unreachable!() };
                seg.json.push(b']');
                let (count, bytes) = (seg.count, seg.bytes);
                Take::Batch { json: seg.json, count, bytes, epoch: self.epoch, lifts: seg.lifts }
            }
            None => match &self.end {
                Some(end) => Take::Ended(end.clone()),
                None => Take::Empty,
            },
        }
    }

    /// The application has taken `count` events and `bytes` bytes of event
    /// frames in all (running, wrapping counts it keeps itself, counting only
    /// events of the current epoch, each with the size its batch gave it):
    /// those stop counting against the bound. Events may be taken in any
    /// order (a Turn takes its own, `events()` the rest).
    pub fn settle(&mut self, count: u32, bytes: u32) {
        let (n, b) = (count.wrapping_sub(self.settled.0), bytes.wrapping_sub(self.settled.1));
        self.settled = (count, bytes);
        // Saturating: a count that raced with an overflow (which reset the
        // totals) must not wrap them.
        self.frames = self.frames.saturating_sub(n as usize);
        self.bytes = self.bytes.saturating_sub(b as usize);
    }

    /// The epoch lent batches belong to; an overflow bumps it (revoking them).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// No more events will come; what is queued is still delivered first.
    pub fn end(&mut self, end: End) {
        if self.end.is_none() {
            self.end = Some(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event of `frame_bytes` whose JSON is `json`.
    fn push(b: &mut EventBuffer, json: &[u8], frame_bytes: usize) -> bool {
        b.push(frame_bytes, json.len(), Vec::new(), |out| out.extend_from_slice(json))
    }

    fn ev(b: &mut EventBuffer, n: usize) -> bool {
        push(b, format!("{{\"n\":{n}}}").as_bytes(), 100)
    }

    #[test]
    fn overflow_clears_pauses_and_reports_once() {
        let mut b = EventBuffer::default();
        for i in 0..256 {
            assert!(!ev(&mut b, i));
        }
        assert_eq!(b.counted_frames(), 256);
        assert!(ev(&mut b, 256), "the 257th overflows");
        assert_eq!(b.counted_frames(), 0);
        assert!(b.is_paused());
        for i in 0..10 {
            assert!(!ev(&mut b, i), "paused: discarded, not a second report");
        }
        assert_eq!(b.take(), Take::Overflow { dropped: 267 });
        assert!(!b.is_paused());
        assert_eq!(b.take(), Take::Empty);
        ev(&mut b, 1);
        assert!(matches!(b.take(), Take::Batch { .. }));
    }

    #[test]
    fn lent_events_count_until_taken() {
        let mut b = EventBuffer::default();
        for i in 0..200 {
            ev(&mut b, i);
        }
        let Take::Batch { json, count, epoch, .. } = b.take() else { panic!() };
        assert_eq!(count, 200);
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(parsed.as_array().unwrap().len(), 400, "each event and its frame's size");
        assert_eq!(parsed[1], 100);
        assert_eq!(b.counted_frames(), 200, "lent, not yet taken");
        b.settle(50, 50 * 100);
        assert_eq!(b.counted_frames(), 150);
        assert_eq!(b.counted_bytes(), 150 * 100);
        for i in 0..106 {
            assert!(!ev(&mut b, i));
        }
        assert!(ev(&mut b, 0), "150 lent + 106 queued + 1 is over 256");
        assert_ne!(b.epoch(), epoch, "the lent batch was revoked");
        b.settle(51, 51 * 100); // a late count that raced the overflow cannot wrap the totals
        assert_eq!(b.counted_frames(), 0);
        assert_eq!(b.take(), Take::Overflow { dropped: 257 });
        ev(&mut b, 1);
        b.settle(51, 51 * 100);
        assert_eq!(b.counted_frames(), 1);
    }

    #[test]
    fn byte_bound() {
        let mut b = EventBuffer::default();
        assert!(!push(&mut b, b"1", 40 << 20));
        assert!(!push(&mut b, b"1", 24 << 20));
        assert_eq!(b.counted_bytes(), 64 << 20);
        assert!(push(&mut b, b"1", 1));
    }

    #[test]
    fn batches_are_capped_and_end_comes_after_the_queue() {
        let mut b = EventBuffer::default();
        for _ in 0..40 {
            push(&mut b, &[b'7'; 64 * 1024], 65_600);
        }
        b.end(End::Finished);
        let Take::Batch { count, .. } = b.take() else { panic!() };
        assert_eq!(count, 15);
        let mut n = count;
        while let Take::Batch { count, .. } = b.take() {
            n += count;
        }
        assert_eq!(n, 40);
        assert_eq!(b.take(), Take::Ended(End::Finished));
    }
}

#[cfg(test)]
mod out_of_order {
    use super::*;

    #[test]
    fn events_taken_out_of_order_free_their_own_bytes() {
        let mut b = EventBuffer::with_bounds(256, 1000);
        for size in [100, 500, 300] {
            assert!(!b.push(size, 1, Vec::new(), |out| out.push(b'1')));
        }
        let Take::Batch { .. } = b.take() else { panic!() };
        // The 500-byte event is taken first (a Turn's), then the 300 one.
        b.settle(1, 500);
        assert_eq!((b.counted_frames(), b.counted_bytes()), (2, 400));
        b.settle(2, 800);
        assert_eq!((b.counted_frames(), b.counted_bytes()), (1, 100));
        assert!(!b.push(900, 1, Vec::new(), |out| out.push(b'1')), "100 + 900 fits in 1000");
        assert!(b.push(1, 1, Vec::new(), |out| out.push(b'1')), "one byte more does not");
    }
}
