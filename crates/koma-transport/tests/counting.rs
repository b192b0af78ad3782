//! The shared counters' cases (testdata/counting.json), run by the core: a
//! cursor written here to the rule of docs/python-internals.md ("The shared
//! counters") takes the batches the core's rig lends, counting in the core's
//! own counters, and after every step the core's bound counts exactly the
//! events lent at the current epoch that the cursor has not counted as
//! taken: what a host counts is what the core frees. The hosts run the
//! same cases with their own cursors against the same rig
//! (`__test__/counting.test.mjs`, `python/tests/test_counting.py`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use koma_transport::connection::CountingRig;
use koma_transport::events::Counting;
use koma_transport::EventCounters;
use serde_json::Value;

/// The slots as the host sees them: the counters' memory, by index.
struct Slots(Arc<EventCounters>);

impl Slots {
    fn at(&self, slot: usize) -> &AtomicU32 {
        assert!(slot < EventCounters::SLOTS);
        // SAFETY: `as_ptr` is the first of `SLOTS` aligned 32-bit slots, which
        // live as long as the Arc this holds; the core reads and writes them
        // only atomically, as this does.
        unsafe { AtomicU32::from_ptr(self.0.as_ptr().add(slot)) }
    }
    fn get(&self, slot: usize) -> u32 {
        self.at(slot).load(Ordering::Acquire)
    }
    fn set(&self, slot: usize, v: u32) {
        self.at(slot).store(v, Ordering::Release)
    }
}

fn slot(name: &str) -> usize {
    EventCounters::LAYOUT.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no slot {name}")).1
}

/// A host's cursor, to the letter of the rule.
struct Cursor {
    slots: Slots,
    batch: Vec<(u64, u32)>,
    index: usize,
    epoch: u32,
    counting: u32,
    /// Events this cursor counted as taken at the epoch they were lent in.
    counted: Vec<u32>,
}

impl Cursor {
    fn count(&mut self, size: u32) {
        let (taken, bytes) = (slot("TAKEN"), slot("TAKEN_BYTES"));
        self.slots.set(taken, self.slots.get(taken).wrapping_add(1));
        self.slots.set(bytes, self.slots.get(bytes).wrapping_add(size));
        self.counted.push(self.epoch);
    }

    fn next(&mut self, rig: &mut CountingRig) -> Option<u64> {
        loop {
            if let Some(&(seq, size)) = self.batch.get(self.index) {
                self.index += 1;
                if self.counting != Counting::Uncounted as u32 {
                    if self.slots.get(slot("EPOCH")) == self.epoch {
                        self.count(size);
                    } else if self.counting == Counting::Revocable as u32 {
                        self.batch.clear(); // an overflow revoked the rest
                        self.index = 0;
                        continue;
                    }
                }
                return Some(seq);
            }
            let json = rig.pull()?;
            let flat: Vec<Value> = serde_json::from_str(&json).unwrap();
            self.batch = flat.chunks(4).map(|e| (e[0].as_u64().unwrap(), e[3].as_u64().unwrap() as u32)).collect();
            self.index = 0;
            self.epoch = self.slots.get(slot("BATCH_EPOCH"));
            self.counting = self.slots.get(slot("BATCH_COUNTING"));
        }
    }

    /// The loop leaves: the rest of a counted batch counts as taken if the epochs still match.
    fn release(&mut self) {
        if self.counting != Counting::Uncounted as u32 && self.slots.get(slot("EPOCH")) == self.epoch {
            let rest: Vec<u32> = self.batch[self.index..].iter().map(|&(_, size)| size).collect();
            for size in rest {
                self.count(size);
            }
        }
        self.counting = Counting::Uncounted as u32;
    }
}

#[test]
fn the_core_passes_the_shared_counters_cases() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/counting.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 8, "the cases are all there");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let mut rig = CountingRig::new();
        let mut cursor = Cursor {
            slots: Slots(rig.counters()),
            batch: Vec::new(),
            index: 0,
            epoch: 0,
            counting: 0,
            counted: Vec::new(),
        };
        // Events lent counted, by the epoch they were lent at.
        let mut lent_at: Vec<u32> = Vec::new();
        for step in case["steps"].as_array().unwrap() {
            let at = format!("{name}: {step}");
            if let Some(sizes) = step.get("lend") {
                let sizes: Vec<u32> = sizes.as_array().unwrap().iter().map(|s| s.as_u64().unwrap() as u32).collect();
                let counting = step["counting"].as_u64().unwrap() as u32;
                rig.lend(&sizes, counting).unwrap();
                if counting != Counting::Uncounted as u32 {
                    let epoch = cursor.slots.get(slot("EPOCH"));
                    lent_at.extend(sizes.iter().map(|_| epoch));
                }
            } else if let Some(n) = step.get("take") {
                let got: Vec<u64> = (0..n.as_u64().unwrap()).filter_map(|_| cursor.next(&mut rig)).collect();
                let want: Vec<u64> = step["got"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
                assert_eq!(got, want, "{at}");
            } else if step.get("overflow").is_some() {
                rig.overflow();
            } else if step.get("release").is_some() {
                cursor.release();
            } else if let Some(set) = step.get("set") {
                for (k, v) in set.as_object().unwrap() {
                    cursor.slots.set(slot(k), v.as_u64().unwrap() as u32);
                }
            } else {
                for (k, v) in step["counters"].as_object().unwrap() {
                    assert_eq!(u64::from(cursor.slots.get(slot(k))), v.as_u64().unwrap(), "{at}: slot {k}");
                }
            }
            // The core frees exactly what the host counted: what still counts
            // is what was lent at this epoch and not counted as taken.
            let epoch = cursor.slots.get(slot("EPOCH"));
            let lent = lent_at.iter().filter(|e| **e == epoch).count();
            let taken = cursor.counted.iter().filter(|e| **e == epoch).count();
            assert_eq!(rig.counted(), lent - taken, "{at}: the core's bound after the step");
        }
    }
}

#[test]
fn every_way_of_counting_has_its_number() {
    for (name, counting) in Counting::KINDS {
        assert_eq!(Counting::from_number(counting as u32), Some(counting), "{name}");
    }
    assert_eq!(Counting::from_number(3), None);
    assert!(CountingRig::new().lend(&[1], 3).is_err());
}
