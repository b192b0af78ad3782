//! The trace records waiting for the host, bounded: the I/O threads never
//! wait on the host, so a host that does not take them in time loses the
//! oldest, and is told how many it lost.

use std::collections::VecDeque;
use std::sync::Arc;

use super::trace_record::{TraceRecord, Traced};

/// The most records kept for the host.
pub const TRACE_KEPT_RECORDS: usize = 1024;
/// The most bytes of records kept (a stderr line can be 64 KiB): past it the
/// oldest go too, whatever their number.
pub const TRACE_KEPT_BYTES: usize = 4 << 20;

#[derive(Default)]
pub(super) struct TraceQueue {
    records: VecDeque<TraceRecord>,
    bytes: usize,
    /// Records dropped since the host last took them.
    dropped: u64,
    /// Who the report of the dropped records names (the newest dropped's client).
    dropped_who: Option<(Arc<str>, Option<u32>)>,
}

impl TraceQueue {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.dropped == 0
    }

    /// Keep `r`, dropping the oldest records past the bounds (the newest is always kept).
    pub fn push(&mut self, r: TraceRecord) {
        self.bytes += r.size();
        self.records.push_back(r);
        while self.records.len() > TRACE_KEPT_RECORDS || (self.bytes > TRACE_KEPT_BYTES && self.records.len() > 1) {
            let old = self.records.pop_front().expect("not empty");
            self.bytes -= old.size();
            self.dropped += 1;
            self.dropped_who = Some((old.label, old.pid));
        }
    }

    /// Everything waiting, oldest first; a report of the dropped ones first, if any.
    pub fn take(&mut self) -> Vec<TraceRecord> {
        let mut out = Vec::with_capacity(self.records.len() + 1);
        if let Some((label, pid)) = self.dropped_who.take() {
            out.push(TraceRecord { label, pid, what: Traced::Dropped(self.dropped) });
        }
        self.dropped = 0;
        self.bytes = 0;
        out.extend(self.records.drain(..));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::trace_record::Direction;

    /// Frame `i`, padded to `len` bytes.
    fn frame(i: usize, len: usize) -> TraceRecord {
        let mut text = i.to_string();
        text.push_str(&".".repeat(len.saturating_sub(text.len())));
        TraceRecord { label: "t".into(), pid: Some(9), what: Traced::Frame { direction: Direction::Read, text } }
    }

    /// Which frame `r` is.
    fn index(r: &TraceRecord) -> usize {
        r.text().trim_end_matches('.').parse().expect("a frame of `frame`")
    }

    #[test]
    fn a_flood_keeps_the_newest_and_counts_the_rest() {
        let mut q = TraceQueue::default();
        let n = TRACE_KEPT_RECORDS * 3 + 5;
        for i in 0..n {
            q.push(frame(i, 8));
        }
        let got = q.take();
        assert_eq!(got.len(), TRACE_KEPT_RECORDS + 1, "the kept records and one report");
        assert_eq!(got[0].what, Traced::Dropped((n - TRACE_KEPT_RECORDS) as u64));
        assert_eq!((got[0].label.as_ref(), got[0].pid), ("t", Some(9)), "the report names the client");
        assert_eq!(index(&got[1]), n - TRACE_KEPT_RECORDS, "the oldest kept");
        assert_eq!(index(got.last().unwrap()), n - 1, "the newest kept");
        assert!(q.is_empty());
        q.push(frame(0, 1));
        assert_eq!(q.take().len(), 1, "the count starts again once reported");
    }

    #[test]
    fn the_bytes_are_bounded_too() {
        let mut q = TraceQueue::default();
        let big = 256 * 1024;
        for i in 0..64 {
            q.push(frame(i, big));
        }
        let got = q.take();
        let Traced::Dropped(dropped) = got[0].what else { panic!("no report") };
        let kept = &got[1..];
        assert_eq!(dropped as usize + kept.len(), 64);
        assert!(kept.iter().map(TraceRecord::size).sum::<usize>() <= TRACE_KEPT_BYTES);
        assert_eq!(index(kept.last().unwrap()), 63, "the newest kept");
        assert_eq!(index(&kept[0]), 64 - kept.len(), "the oldest went");
        q.push(frame(0, TRACE_KEPT_BYTES * 2));
        assert_eq!(q.take().len(), 1, "a record larger than the bound alone is kept");
    }
}
