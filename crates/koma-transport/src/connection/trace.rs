//! The trace: what a connection shows of what it sees (frames both ways,
//! whole lines of koma's stderr, notes of its life), as [`TraceRecord`]s.
//! `trace` prints each to this process's stderr from the thread that saw it;
//! `trace_records` keeps the kinds it names for the host, which the caller
//! queues (under the connection's lock) in a [`TraceQueue`], bounded: the
//! I/O threads never wait on the host, so a host that does not take them in
//! time loses the oldest, and is told how many it lost. Off, a frame costs
//! one branch.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;

use super::options::{ConnectionOptions, TraceKinds};
use super::trace_record::{Direction, TraceRecord, Traced};
use crate::quote::escape_text;

/// The most bytes of a frame shown; a longer one is cut, with its size.
const FRAME_SHOWN: usize = 4096;

pub(super) struct Trace {
    /// Print to this process's stderr.
    print: bool,
    /// What the host gets ([`TraceKinds`] as bits), which it may widen
    /// later ([`Trace::keep`]: a subscriber came).
    kept: AtomicU8,
    /// What is traced (printed, kept, or both), as bits: one load and one
    /// branch per frame when the trace is off.
    traced: AtomicU8,
    label: Arc<str>,
    /// The child's pid once started (0 before).
    pid: AtomicU32,
}

const FRAMES: u8 = 1;
const STDERR: u8 = 2;
const NOTES: u8 = 4;

fn bits(k: TraceKinds) -> u8 {
    (if k.frames { FRAMES } else { 0 }) | (if k.stderr { STDERR } else { 0 }) | (if k.notes { NOTES } else { 0 })
}

impl Trace {
    pub fn new(options: &ConnectionOptions) -> Trace {
        let label = if options.label.is_empty() { "koma-transport" } else { options.label.as_str() };
        let mut records = options.trace_records;
        // A traced client's span is told of its life by the notes.
        records.notes |= options.telemetry.is_some();
        let kept = bits(records);
        let printed = if options.trace { FRAMES | STDERR | NOTES } else { 0 };
        Trace {
            print: options.trace,
            kept: AtomicU8::new(kept),
            traced: AtomicU8::new(kept | printed),
            label: escape_text(label, false).into(),
            pid: AtomicU32::new(0),
        }
    }

    /// The host keeps these kinds too from now on (records of what came
    /// before were not made, and are not there).
    pub fn keep(&self, kinds: TraceKinds) {
        self.kept.fetch_or(bits(kinds), Ordering::Relaxed);
        self.traced.fetch_or(bits(kinds), Ordering::Relaxed);
    }

    fn is(&self, kind: u8) -> bool {
        self.traced.load(Ordering::Relaxed) & kind != 0
    }

    fn kept(&self, kind: u8) -> bool {
        self.kept.load(Ordering::Relaxed) & kind != 0
    }

    /// Frames are traced: the one branch per frame when the trace is off.
    #[inline]
    pub fn frames(&self) -> bool {
        self.is(FRAMES)
    }

    /// Whole stderr lines are traced.
    pub fn stderr_lines(&self) -> bool {
        self.is(STDERR)
    }

    /// Notes are traced.
    pub fn notes(&self) -> bool {
        self.is(NOTES)
    }

    /// The child was started: later records name it by its pid.
    pub fn set_pid(&self, pid: u32) {
        self.pid.store(pid, Ordering::Relaxed);
    }

    /// A frame written or read (without its line terminator): printed if
    /// asked, and the record for the host if it wants frames.
    pub fn frame(&self, direction: Direction, bytes: &[u8]) -> Option<TraceRecord> {
        let shown = &bytes[..bytes.len().min(FRAME_SHOWN)];
        let mut text = escape_text(&String::from_utf8_lossy(shown), false);
        if bytes.len() > shown.len() {
            text.push_str(&format!(" … ({} bytes)", bytes.len()));
        }
        self.emit(self.kept(FRAMES), Traced::Frame { direction, text })
    }

    /// One whole line of koma's stderr (invalid UTF-8 shows as U+FFFD).
    pub fn stderr_line(&self, line: &[u8]) -> Option<TraceRecord> {
        self.emit(self.kept(STDERR), Traced::Stderr(escape_text(&String::from_utf8_lossy(line), false)))
    }

    /// A note of the connection's life (made only if notes are traced).
    pub fn note(&self, what: impl FnOnce() -> Traced) -> Option<TraceRecord> {
        if !self.notes() {
            return None;
        }
        self.emit(self.kept(NOTES), what())
    }

    /// Print the record if asked; give it back if the host keeps this kind.
    fn emit(&self, keep: bool, what: Traced) -> Option<TraceRecord> {
        let pid = self.pid.load(Ordering::Relaxed);
        let record = TraceRecord { label: self.label.clone(), pid: (pid != 0).then_some(pid), what };
        if self.print {
            eprintln!("{}", record.line());
        }
        keep.then_some(record)
    }
}

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

    fn trace(label: &str, kinds: TraceKinds) -> Trace {
        Trace::new(&ConnectionOptions { trace_records: kinds, label: label.into(), ..Default::default() })
    }

    #[test]
    fn off_unless_asked_for() {
        let off = trace("", TraceKinds::NONE);
        assert!(!off.frames() && !off.stderr_lines() && !off.notes());
        assert!(off.note(|| unreachable!("not made when off")).is_none());
        let printing = Trace::new(&ConnectionOptions { trace: true, ..Default::default() });
        assert!(printing.frames() && printing.stderr_lines() && printing.notes());
        assert!(printing.frame(Direction::Written, b"{}").is_none(), "printed, not kept");
    }

    #[test]
    fn records_name_the_client_and_its_pid_once_known() {
        let t = trace("", TraceKinds::ALL);
        let before = t.frame(Direction::Written, b"{}").expect("kept");
        assert_eq!(before.line(), "[koma-transport] -> {}");
        t.set_pid(1234);
        assert_eq!(trace("my-host", TraceKinds::ALL).stderr_line(b"hi").unwrap().line(), "[my-host] stderr hi");
        let after = t.note(|| Traced::Spawned).expect("kept");
        assert_eq!(after.line(), "[koma-transport pid 1234] koma started, pid 1234");
        let only_notes = trace("x", TraceKinds { notes: true, ..TraceKinds::NONE });
        assert!(!only_notes.frames() && only_notes.frame(Direction::Read, b"{}").is_none());
    }

    #[test]
    fn a_host_that_keeps_nothing_may_keep_records_later() {
        let t = trace("x", TraceKinds::NONE);
        assert!(!t.frames() && !t.stderr_lines() && !t.notes());
        t.keep(TraceKinds::ALL);
        assert!(t.frames() && t.stderr_lines() && t.notes());
        assert_eq!(t.frame(Direction::Read, b"{}").expect("kept now").line(), "[x] <- {}");
        assert!(t.note(|| Traced::Spawned).is_some());
    }

    #[test]
    fn what_koma_wrote_is_escaped_and_a_long_frame_cut() {
        let t = trace("x", TraceKinds::ALL);
        assert_eq!(t.stderr_line(b"bad \xFF \x1b[2J").unwrap().text(), "bad \u{fffd} \\u{1b}[2J");
        let long = vec![b'a'; FRAME_SHOWN + 1];
        let r = t.frame(Direction::Read, &long).unwrap();
        assert!(r.line().starts_with("[x] <- aaa"));
        assert!(r.text().ends_with(&format!("a … ({} bytes)", FRAME_SHOWN + 1)));
    }

    // ---- the queue

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
