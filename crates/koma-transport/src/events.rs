//! The event buffer (A.12): at most 256 event frames and 64 MiB of JSON text
//! received and not yet handed to the application, wherever they wait (here,
//! or lent out in a batch that the application has not finished taking).
//!
//! On overflow the buffer is cleared, the client pauses (events are still
//! sequence-checked by the reader, then discarded here) and one overflow
//! report is queued; the pause ends when the application takes that report.

use std::collections::VecDeque;

use crate::error::KomaError;
use crate::{MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES};

/// An event of the catalog, as the JSON the application receives.
#[derive(Debug, Clone)]
pub struct BufferedEvent {
    /// `{"type":"event","seq":N,"name":"...","data":...}`
    pub json: Vec<u8>,
    /// Bytes of the frame's JSON text, as counted against the bound.
    pub frame_bytes: usize,
}

#[derive(Debug)]
enum Item {
    Event(BufferedEvent),
    Overflow,
}

/// Why the stream of events ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Detach, close: the iterator finishes.
    Finished,
    /// A transport failure or protocol error: the iterator throws it.
    Failed(KomaError),
}

/// What the application gets when it asks for events.
#[derive(Debug, PartialEq)]
pub enum Take {
    /// A batch of events: their JSON joined as one array, and each one's frame size.
    Batch { json: Vec<u8>, sizes: Vec<usize>, epoch: u64 },
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
    lent_frames: usize,
    lent_bytes: usize,
    /// Bumped when an overflow revokes what was lent.
    epoch: u64,
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
            lent_frames: 0,
            lent_bytes: 0,
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

    pub fn is_ended(&self) -> bool {
        self.end.is_some()
    }

    /// Offer one sequence-checked event. Returns true if it overflowed now.
    pub fn push(&mut self, event: BufferedEvent) -> bool {
        if self.end.is_some() {
            return false;
        }
        if self.paused {
            self.dropped += 1;
            return false;
        }
        if self.frames + 1 > self.max_frames || self.bytes + event.frame_bytes > self.max_bytes {
            self.dropped += self.frames as u64 + 1;
            self.queue.clear();
            self.queue.push_back(Item::Overflow);
            self.frames = 0;
            self.bytes = 0;
            self.lent_frames = 0;
            self.lent_bytes = 0;
            self.epoch += 1;
            self.paused = true;
            return true;
        }
        self.frames += 1;
        self.bytes += event.frame_bytes;
        self.queue.push_back(Item::Event(event));
        false
    }

    /// Hand the application what is waiting: a batch of events up to
    /// [`BATCH_BYTES`] (still counted until [`EventBuffer::taken`]), or the
    /// overflow report (which ends the pause), or the end.
    pub fn take(&mut self) -> Take {
        match self.queue.front() {
            Some(Item::Overflow) => {
                self.queue.pop_front();
                self.paused = false;
                let dropped = std::mem::take(&mut self.dropped);
                Take::Overflow { dropped }
            }
            Some(Item::Event(_)) => {
                let mut json = Vec::with_capacity(BATCH_BYTES.min(self.bytes + 64));
                let mut sizes = Vec::new();
                json.push(b'[');
                while let Some(Item::Event(e)) = self.queue.front() {
                    if !sizes.is_empty() && json.len() + e.json.len() > BATCH_BYTES {
                        break;
                    }
                    let Some(Item::Event(e)) = self.queue.pop_front() else { unreachable!() };
                    if !sizes.is_empty() {
                        json.push(b',');
                    }
                    json.extend_from_slice(&e.json);
                    sizes.push(e.frame_bytes);
                    self.lent_frames += 1;
                    self.lent_bytes += e.frame_bytes;
                }
                json.push(b']');
                Take::Batch { json, sizes, epoch: self.epoch }
            }
            None => match &self.end {
                Some(end) => Take::Ended(end.clone()),
                None => Take::Empty,
            },
        }
    }

    /// The application took one event of a batch lent under `epoch`.
    /// Returns false if an overflow revoked that batch (the rest must be discarded).
    pub fn taken(&mut self, epoch: u64, frame_bytes: usize) -> bool {
        if epoch != self.epoch {
            return false;
        }
        self.lent_frames -= 1;
        self.lent_bytes -= frame_bytes;
        self.frames -= 1;
        self.bytes -= frame_bytes;
        true
    }

    /// Is a batch lent under `epoch` still good?
    pub fn is_current(&self, epoch: u64) -> bool {
        epoch == self.epoch
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

    fn ev(n: usize) -> BufferedEvent {
        BufferedEvent { json: format!("{{\"n\":{n}}}").into_bytes(), frame_bytes: 100 }
    }

    #[test]
    fn overflow_clears_pauses_and_reports_once() {
        let mut b = EventBuffer::default();
        for i in 0..256 {
            assert!(!b.push(ev(i)));
        }
        assert_eq!(b.counted_frames(), 256);
        assert!(b.push(ev(256)), "the 257th overflows");
        assert_eq!(b.counted_frames(), 0);
        assert!(b.is_paused());
        for i in 0..10 {
            assert!(!b.push(ev(i)), "paused: discarded, not a second report");
        }
        assert_eq!(b.take(), Take::Overflow { dropped: 267 });
        assert!(!b.is_paused());
        assert_eq!(b.take(), Take::Empty);
        b.push(ev(1));
        assert!(matches!(b.take(), Take::Batch { .. }));
    }

    #[test]
    fn lent_events_count_until_taken() {
        let mut b = EventBuffer::default();
        for i in 0..200 {
            b.push(ev(i));
        }
        let Take::Batch { json, sizes, epoch } = b.take() else { panic!() };
        assert_eq!(sizes.len(), 200);
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(parsed.as_array().unwrap().len(), 200);
        assert_eq!(b.counted_frames(), 200, "lent, not yet taken");
        for _ in 0..50 {
            assert!(b.taken(epoch, 100));
        }
        assert_eq!(b.counted_frames(), 150);
        for i in 0..106 {
            assert!(!b.push(ev(i)));
        }
        assert!(b.push(ev(0)), "150 lent + 106 queued + 1 is over 256");
        assert!(!b.taken(epoch, 100), "the lent batch was revoked");
        assert!(!b.is_current(epoch));
        assert_eq!(b.take(), Take::Overflow { dropped: 257 });
    }

    #[test]
    fn byte_bound() {
        let mut b = EventBuffer::default();
        let big = |n| BufferedEvent { json: vec![b'1'], frame_bytes: n };
        assert!(!b.push(big(40 << 20)));
        assert!(!b.push(big(24 << 20)));
        assert_eq!(b.counted_bytes(), 64 << 20);
        assert!(b.push(big(1)));
    }

    #[test]
    fn batches_are_capped_and_end_comes_after_the_queue() {
        let mut b = EventBuffer::default();
        for _ in 0..40 {
            b.push(BufferedEvent { json: vec![b'7'; 64 * 1024], frame_bytes: 65_600 });
        }
        b.end(End::Finished);
        let Take::Batch { sizes, .. } = b.take() else { panic!() };
        assert_eq!(sizes.len(), 15);
        let mut n = sizes.len();
        while let Take::Batch { sizes, .. } = b.take() {
            n += sizes.len();
        }
        assert_eq!(n, 40);
        assert_eq!(b.take(), Take::Ended(End::Finished));
    }
}
