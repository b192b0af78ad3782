//! The core's side of the shared counters, driven step by step: what a
//! host's counting code is checked against. `testdata/counting.json` holds
//! the cases (docs/python-internals.md, "The shared counters"); the core's
//! tests run them with a cursor of their own (`tests/counting.rs`), and each
//! host runs them with its own cursor against this rig, so that every
//! side of the rule is the real one: the counters are the core's
//! [`EventCounters`], the epoch and the bound are the core's [`Bound`], and
//! a batch is lent as `Connection::take_events` lends it (its epoch and how
//! it counts written into `BATCH_EPOCH` and `BATCH_COUNTING`).

use std::collections::VecDeque;
use std::sync::Arc;

use super::counters::EventCounters;
use super::route::BATCH_STRIDE;
use crate::events::{Bound, Counting};

/// A batch queued by [`CountingRig::lend`]: its events' frame sizes, and how it counts.
struct Lent {
    sizes: Vec<u32>,
    counting: Counting,
}

/// The core's counters and bound, with batches lent by hand.
pub struct CountingRig {
    counters: Arc<EventCounters>,
    bound: Bound,
    lent: VecDeque<Lent>,
    seq: u64,
}

impl Default for CountingRig {
    fn default() -> Self {
        CountingRig {
            counters: Arc::new(EventCounters::default()),
            // No bound in the way: a case's overflow is its own step.
            bound: Bound::with_limits(usize::MAX, usize::MAX),
            lent: VecDeque::new(),
            seq: 0,
        }
    }
}

impl CountingRig {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared counters, which the host's cursor reads and writes.
    pub fn counters(&self) -> Arc<EventCounters> {
        self.counters.clone()
    }

    /// Queue a batch of events of these frame sizes (their seqs go on from
    /// one) for the next [`CountingRig::pull`]; `counting` is the number of
    /// a [`Counting`]. A counted batch's events count against the bound
    /// from now, as an event counts from the moment it is read.
    pub fn lend(&mut self, sizes: &[u32], counting: u32) -> Result<(), String> {
        let counting =
            Counting::from_number(counting).ok_or_else(|| format!("{counting} is no way of counting (0, 1 or 2)"))?;
        if counting != Counting::Uncounted {
            for &size in sizes {
                self.bound.admit(size as usize);
            }
        }
        self.lent.push_back(Lent { sizes: sizes.to_vec(), counting });
        Ok(())
    }

    /// Lend the next batch, as a host's pull gets one: the host's counts so
    /// far settled against the bound, then the batch's epoch and counting
    /// written for the host. The batch is a JSON array of [`BATCH_STRIDE`]
    /// entries per event (seq, name, data, frame size); `None` when none waits.
    pub fn pull(&mut self) -> Option<String> {
        let (taken, bytes) = self.counters.taken();
        self.bound.settle(taken, bytes);
        let lent = self.lent.pop_front()?;
        self.counters.set_batch(self.bound.epoch(), lent.counting);
        let mut json = String::from("[");
        for size in lent.sizes {
            self.seq += 1;
            if json.len() > 1 {
                json.push(',');
            }
            json.push_str(&format!(r#"{},"output",{{"turn":"t-1","text":"x"}},{size}"#, self.seq));
        }
        debug_assert_eq!(BATCH_STRIDE, 4, "the batch above has four entries per event");
        json.push(']');
        Some(json)
    }

    /// An overflow: what counts is dropped and the epoch moves on, which
    /// revokes what was lent before (as the reader does when an event does
    /// not fit).
    pub fn overflow(&mut self) {
        self.bound.overflow();
        self.counters.set_epoch(self.bound.epoch());
    }

    /// The events that still count against the bound, once the host's
    /// counts so far are settled: those lent at this epoch and not counted
    /// as taken.
    pub fn counted(&mut self) -> usize {
        let (taken, bytes) = self.counters.taken();
        self.bound.settle(taken, bytes);
        self.bound.counted_frames()
    }
}
