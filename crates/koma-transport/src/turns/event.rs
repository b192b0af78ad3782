//! A catalog event as the turn layer holds it: owned, so it can wait for its
//! consumer to be known.

use std::ops::Range;

use crate::events::Stream;
use crate::lift::LiftedString;

#[derive(Debug)]
pub struct Event {
    pub seq: u64,
    pub name: &'static str,
    /// The size of its frame (its JSON text, without the line terminator).
    pub frame_bytes: usize,
    /// `seq,"name",data`: the event's first three entries in its batch (the
    /// core's batch format: see `BATCH_STRIDE`).
    entry: Vec<u8>,
    /// Where `data` lies in `entry`.
    data: Range<usize>,
    /// The strings lifted out of `data`, with paths from it.
    pub lifts: Vec<LiftedString>,
}

impl Event {
    pub fn new(seq: u64, name: &'static str, frame_bytes: usize, data: &[u8], lifts: Vec<LiftedString>) -> Self {
        let mut entry = Vec::with_capacity(data.len() + name.len() + 24);
        entry.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        entry.extend_from_slice(b",\"");
        entry.extend_from_slice(name.as_bytes());
        entry.extend_from_slice(b"\",");
        let start = entry.len();
        entry.extend_from_slice(data);
        let data = start..entry.len();
        Event { seq, name, frame_bytes, entry, data, lifts }
    }

    /// Its `data`, as JSON text (with `""` for each lifted string).
    pub fn data_json(&self) -> &[u8] {
        &self.entry[self.data.clone()]
    }

    /// Append it to `stream` (already admitted to the bound if the stream
    /// counts); the number of the batch it went into.
    pub fn push_to(self, stream: &mut Stream) -> u64 {
        let Event { frame_bytes, entry, lifts, .. } = self;
        stream.push(frame_bytes, entry.len(), lifts, |out| out.extend_from_slice(&entry))
    }
}
