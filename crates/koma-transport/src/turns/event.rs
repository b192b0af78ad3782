//! A catalog event as the turn layer handles it: borrowed from the read it
//! came in while it is routed at once, owned while it waits for its
//! consumer to be known.

use std::borrow::Cow;

use crate::events::Stream;
use crate::lift::LiftedString;

#[derive(Debug)]
pub struct Event<'a> {
    pub seq: u64,
    pub name: &'static str,
    /// The size of its frame (its JSON text, without the line terminator).
    pub frame_bytes: usize,
    /// Its `data`, as JSON text (with `""` for each lifted string).
    data: Cow<'a, [u8]>,
    /// The strings lifted out of `data`, with paths from it.
    pub lifts: Vec<LiftedString>,
}

impl<'a> Event<'a> {
    pub fn new(seq: u64, name: &'static str, frame_bytes: usize, data: &'a [u8], lifts: Vec<LiftedString>) -> Self {
        Event { seq, name, frame_bytes, data: Cow::Borrowed(data), lifts }
    }

    /// The event with its data copied out of the read (to wait for its consumer).
    pub fn into_owned(self) -> Event<'static> {
        let Event { seq, name, frame_bytes, data, lifts } = self;
        Event { seq, name, frame_bytes, data: Cow::Owned(data.into_owned()), lifts }
    }

    pub fn data_json(&self) -> &[u8] {
        &self.data
    }

    /// Append it to `stream` (already admitted to the bound if the stream
    /// counts) as the core's batch format has it (`seq,"name",data`: see
    /// `BATCH_STRIDE`); the number of the batch it went into.
    pub fn push_to(self, stream: &mut Stream) -> u64 {
        let Event { seq, name, frame_bytes, data, lifts } = self;
        let len = data.len() + name.len() + 24;
        stream.push(frame_bytes, len, lifts, |out| {
            out.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\",");
            out.extend_from_slice(&data);
        })
    }
}
