//! One consumer's stream of events: the client's own (`events()`), or a
//! turn's. Events are joined as they arrive into batches of JSON (`[e1,e2,...`
//! without the closing bracket; what each event writes is up to the caller,
//! and the stream adds its frame's size after it), so handing them over is a
//! move, not a copy. The bound they count against is kept by the caller
//! (see [`super::Bound`]): a stream only remembers what of its own counts.

use std::collections::VecDeque;

use super::take::{Counting, End, Take};
use crate::lift::LiftedString;

/// The most JSON handed over in one batch (at least one event).
pub const BATCH_BYTES: usize = 1 << 20;

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

#[derive(Debug)]
pub struct Stream {
    queue: VecDeque<Item>,
    /// Its events count against the bound (until taken).
    counted: bool,
    /// An overflow revokes its lent batch ([`Counting::Revocable`]) rather
    /// than only stop it counting ([`Counting::Kept`]).
    revocable: bool,
    /// The frames and bytes of the events waiting here that count.
    queued: (usize, usize),
    /// After an overflow, until the report is taken: events are discarded.
    paused: bool,
    dropped: u64,
    end: Option<End>,
    /// Batches started so far, and batches gone (handed over or cleared):
    /// the batch an event went into is still here while its number is at
    /// least `gone`.
    started: u64,
    gone: u64,
    /// Its consumer waits: tell the host when something is ready.
    pub wanted: bool,
}

impl Stream {
    /// A stream whose events count against the bound; `revocable`: an
    /// overflow revokes its lent batch.
    pub fn counted(revocable: bool) -> Self {
        Stream {
            queue: VecDeque::new(),
            counted: true,
            revocable,
            queued: (0, 0),
            paused: false,
            dropped: 0,
            end: None,
            started: 0,
            gone: 0,
            wanted: false,
        }
    }

    pub fn is_counted(&self) -> bool {
        self.counted
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Something is ready for the consumer (events, the report, or the end).
    pub fn is_ready(&self) -> bool {
        !self.queue.is_empty() || self.end.is_some()
    }

    /// Nothing waits here (the end aside).
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// A new event would be kept (not ended, not paused). A paused stream
    /// discards it: call [`Stream::discard`].
    pub fn accepts(&self) -> bool {
        self.end.is_none() && !self.paused
    }

    /// An event this stream would have had was discarded (paused, or lost
    /// to an overflow as it came).
    pub fn discard(&mut self) {
        if self.end.is_none() {
            self.dropped += 1;
        }
    }

    /// Append an event of `frame_bytes` (already admitted to the bound if
    /// this stream counts), whose JSON for the consumer (about `len` bytes)
    /// `write` appends to the batch, with the strings lifted out of it.
    /// Returns the number of the batch it went into (see [`Stream::holds`]).
    pub fn push(
        &mut self,
        frame_bytes: usize,
        len: usize,
        lifts: Vec<LiftedString>,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> u64 {
        let fits = matches!(self.queue.back(), Some(Item::Events(seg)) if seg.json.len() + len < BATCH_BYTES);
        if !fits {
            // Room for the whole batch and its closing bracket; pages not written cost nothing.
            let mut json = Vec::with_capacity((BATCH_BYTES + 64).max(len + 2));
            json.push(b'[');
            self.queue.push_back(Item::Events(Segment { json, count: 0, bytes: 0, lifts: Vec::new() }));
            self.started += 1;
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
        if self.counted {
            self.queued.0 += 1;
            self.queued.1 += frame_bytes;
        }
        self.started - 1
    }

    /// Whether the batch numbered `batch` (as [`Stream::push`] gave it) still
    /// waits here: not handed over, not cleared.
    pub fn holds(&self, batch: u64) -> bool {
        batch >= self.gone
    }

    /// An overflow dropped `dropped` events: if this stream counts and is not
    /// paused already, clear what waits, queue the report and pause. Returns
    /// whether it did.
    pub fn overflow(&mut self, dropped: u64) -> bool {
        if !self.counted || self.paused {
            return false;
        }
        self.queue.clear();
        self.gone = self.started;
        self.queued = (0, 0);
        self.queue.push_back(Item::Overflow);
        self.paused = true;
        self.dropped += dropped;
        true
    }

    /// Stop counting (its consumer left, or its turn finished while nobody
    /// read it): what waits stays, and no longer counts; a pause ends (it
    /// only ever throttled a counted consumer). Returns what counted, for
    /// the bound to release.
    pub fn uncount(&mut self) -> (usize, usize) {
        self.counted = false;
        self.paused = false;
        std::mem::take(&mut self.queued)
    }

    /// Hand the consumer what is waiting: a batch of events up to about
    /// [`BATCH_BYTES`] (still counted until the host counts it taken), or
    /// the overflow report (which ends the pause), or the end.
    pub fn take(&mut self, epoch: u32) -> Take {
        match self.queue.front() {
            Some(Item::Overflow) => {
                self.queue.pop_front();
                self.paused = false;
                Take::Overflow { dropped: std::mem::take(&mut self.dropped) }
            }
            Some(Item::Events(_)) => {
                let Some(Item::Events(mut seg)) = self.queue.pop_front() else { unreachable!() };
                self.gone += 1;
                seg.json.push(b']');
                let counting = match (self.counted, self.revocable) {
                    (false, _) => Counting::Uncounted,
                    (true, true) => Counting::Revocable,
                    (true, false) => Counting::Kept,
                };
                if self.counted {
                    self.queued.0 = self.queued.0.saturating_sub(seg.count);
                    self.queued.1 = self.queued.1.saturating_sub(seg.bytes);
                }
                Take::Batch { json: seg.json, count: seg.count, bytes: seg.bytes, epoch, counting, lifts: seg.lifts }
            }
            None => match &self.end {
                Some(end) => Take::Ended(end.clone()),
                None => Take::Empty,
            },
        }
    }

    /// No more events will come; what is queued is still delivered first.
    pub fn end(&mut self, end: End) {
        if self.end.is_none() {
            self.end = Some(end);
        }
    }
}
