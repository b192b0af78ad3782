//! The property check behind the `frames` fuzz target, which
//! `tests/chunking.rs` also runs over the fuzz corpus.
//!
//! Properties (docs/protocol.md: Lines, Bounds, Events; issue "fuzz the frame reader"):
//! - no panic in `LineSplitter::feed` / `finish` / `classify` / `hello::check`;
//! - the same verdict whatever the chunking: the same lines, the same
//!   classification of each line, and the same closing error (too large, or
//!   unterminated at the end of the stream), as feeding the input in one read;
//!   the lines are those of a plain, independent split at `\n` with one
//!   trailing `\r` removed;
//! - `classify` (with its fast path for events) gives exactly what
//!   `classify_full` (without it) gives, for every line;
//! - stopping at the first violation (as the reader does) delivers a prefix;
//! - the splitter never holds more than `MAX_FRAME_BYTES + 1` bytes of capacity,
//!   nor (for partial lines up to 512 KiB, so for every fuzz input) more than
//!   twice the partial line plus 8 KiB; `partial_len()` is the exact length of
//!   the unterminated tail fed so far;
//! - every violation's quote has no control character (nor bidi override) and
//!   is at most 200 bytes plus the `…` marker; its `what` has no control character.
use std::ops::Range;

use crate::frame::{classify, classify_full, Frame, LineSplitter, ResponseBody, Violation};
use crate::limits::MAX_FRAME_BYTES;
use crate::quote::QUOTE_BYTES;

/// The partial line may hold the frame bound plus a `\r`.
pub const PARTIAL_LIMIT: usize = MAX_FRAME_BYTES + 1;
/// Capacity the splitter may hold beyond twice its partial line.
pub const CAPACITY_SLACK: usize = 8 * 1024;
/// Up to this partial line length the capacity stays within twice the length
/// plus the slack; past it the splitter may reserve the whole bound at once
/// (pages not yet written cost no memory), so only the bound is checked there.
pub const CAPACITY_TIGHT_UP_TO: usize = 512 * 1024;
/// Inputs at most this long are classified again in each chunking, and fed
/// again stopping at the first violation (longer ones are the 40 MiB tests,
/// where that adds nothing but time).
pub const CLASSIFY_AGAIN_MAX: usize = 1 << 20;
/// Inputs at most this long are also fed split at every single position.
pub const EXHAUSTIVE_SPLIT_MAX: usize = 64;

/// How a run ended.
#[derive(Debug, PartialEq)]
pub enum End {
    /// Every line was complete and nothing was left over.
    Clean,
    /// `feed` reported a line over the bound (through its `too_large` callback).
    TooLarge(Violation),
    /// `finish` reported an unterminated last line.
    Unterminated(Violation),
    /// `on_line` stopped the feed at the line with this index (its verdict was a violation).
    Stopped(usize),
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum EndKind {
    Clean,
    TooLarge,
    Unterminated,
}

fn kind(end: &End) -> EndKind {
    match end {
        End::Clean => EndKind::Clean,
        End::TooLarge(_) => EndKind::TooLarge,
        End::Unterminated(_) => EndKind::Unterminated,
        End::Stopped(_) => panic!("no kind for a stopped run"),
    }
}

/// The independent model: split at `\n`, drop one trailing `\r`.
pub struct Model {
    /// Each complete line's range within the payload.
    pub lines: Vec<Range<usize>>,
    end: EndKind,
}

impl Model {
    pub fn new(payload: &[u8]) -> Model {
        let mut lines = Vec::new();
        let mut start = 0;
        loop {
            match memchr::memchr(b'\n', &payload[start..]) {
                Some(i) => {
                    let mut end = start + i;
                    if end > start && payload[end - 1] == b'\r' {
                        end -= 1;
                    }
                    if end - start > MAX_FRAME_BYTES {
                        return Model { lines, end: EndKind::TooLarge };
                    }
                    lines.push(start..end);
                    start += i + 1;
                }
                None => {
                    let rest = payload.len() - start;
                    let end = if rest == 0 {
                        EndKind::Clean
                    } else if rest > PARTIAL_LIMIT {
                        EndKind::TooLarge
                    } else {
                        EndKind::Unterminated
                    };
                    return Model { lines, end };
                }
            }
        }
    }
}

/// The result of feeding one chunking.
pub struct Outcome {
    /// Verdicts of the lines delivered (only when the run classified).
    pub verdicts: Vec<Result<Frame, Violation>>,
    /// How many lines were delivered.
    pub delivered: usize,
    pub end: End,
}

/// Yields chunk lengths: the sizes in turn, over and over (a 0 is an empty read).
pub struct Cycle<'a> {
    sizes: &'a [usize],
    at: usize,
}

impl<'a> Cycle<'a> {
    pub fn new(sizes: &'a [usize]) -> Self {
        assert!(sizes.iter().any(|&s| s > 0), "a chunking must make progress");
        Cycle { sizes, at: 0 }
    }
}

impl Iterator for Cycle<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        let s = self.sizes[self.at % self.sizes.len()];
        self.at += 1;
        Some(s)
    }
}

enum Stop {
    Line(usize),
    TooLarge(Violation),
}

/// Feed `payload` in chunks of the lengths `sizes` yields (the last one cut to
/// what is left). Each line is compared with the model's; when `classify_lines`
/// each is classified; when `stop_at_violation` (what the reader does) `on_line`
/// stops the feed at the first line whose model verdict is a violation.
pub fn run(
    payload: &[u8],
    model: &Model,
    model_verdicts: Option<&[Result<Frame, Violation>]>,
    sizes: &mut dyn Iterator<Item = usize>,
    classify_lines: bool,
    stop_at_violation: bool,
) -> Outcome {
    let mut s = LineSplitter::new();
    let mut verdicts = Vec::new();
    let mut delivered = 0usize;
    let mut fed = 0usize;
    let mut line_start = 0usize; // where the unterminated tail begins
    while fed < payload.len() {
        let n = sizes.next().expect("sizes").min(payload.len() - fed);
        let chunk = &payload[fed..fed + n];
        let r = s.feed(
            chunk,
            |line| -> Result<(), Stop> {
                let i = delivered;
                let want = model
                    .lines
                    .get(i)
                    .unwrap_or_else(|| panic!("line {i} delivered, the model has only {} lines", model.lines.len()));
                let got = line.bytes();
                if got != &payload[want.clone()] {
                    panic!(
                        "line {i} differs from the model's: got {} bytes {:?}, want {} bytes {:?}",
                        got.len(),
                        String::from_utf8_lossy(&got[..got.len().min(300)]),
                        want.len(),
                        String::from_utf8_lossy(&payload[want.start..want.end.min(want.start + 300)])
                    );
                }
                delivered += 1;
                if classify_lines {
                    verdicts.push(classify(got));
                }
                if stop_at_violation {
                    let bad = match model_verdicts {
                        Some(v) => v[i].is_err(),
                        None => classify(got).is_err(),
                    };
                    if bad {
                        return Err(Stop::Line(i));
                    }
                }
                Ok(())
            },
            Stop::TooLarge,
        );
        match r {
            Ok(()) => {}
            Err(Stop::Line(i)) => return Outcome { verdicts, delivered, end: End::Stopped(i) },
            Err(Stop::TooLarge(v)) => return Outcome { verdicts, delivered, end: End::TooLarge(v) },
        }
        fed += n;
        if let Some(p) = memchr::memrchr(b'\n', chunk) {
            line_start = fed - n + p + 1;
        }
        let tail = fed - line_start;
        assert_eq!(s.partial_len(), tail, "partial_len after {fed} bytes");
        let cap = s.partial_capacity();
        assert!(cap <= PARTIAL_LIMIT, "partial capacity {cap} over the bound {PARTIAL_LIMIT}");
        assert!(
            tail > CAPACITY_TIGHT_UP_TO || cap <= 2 * tail + CAPACITY_SLACK,
            "partial capacity {cap} for a partial line of {tail} bytes"
        );
    }
    let end = match s.finish() {
        Ok(()) => End::Clean,
        Err(v) => End::Unterminated(v),
    };
    assert_eq!(s.partial_len(), 0);
    Outcome { verdicts, delivered, end }
}

fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text shown to a user: no control character, no bidi override.
pub fn check_text(label: &str, text: &str) {
    for c in text.chars() {
        assert!(!c.is_control() && !is_bidi_override(c), "{label} holds {:?} (U+{:04X}): {text:?}", c, c as u32);
    }
}

/// A violation's quote: escaped, at most 200 bytes plus the `…` marker, and
/// the line itself when that is short plain text.
pub fn check_violation(v: &Violation, line: &[u8]) {
    check_text("a violation's what", &v.what);
    check_text("a violation's quote", &v.quote);
    let body = v.quote.strip_suffix('…').unwrap_or(&v.quote);
    assert!(
        body.len() <= QUOTE_BYTES,
        "a quote of {} bytes (over {QUOTE_BYTES} plus the marker): {:?}",
        v.quote.len(),
        v.quote
    );
    let n = line.len().min(QUOTE_BYTES);
    if line[..n].iter().all(|&b| (0x20..=0x7e).contains(&b) && b != b'\\') {
        let plain = std::str::from_utf8(&line[..n]).unwrap();
        if line.len() <= QUOTE_BYTES {
            assert_eq!(v.quote, plain, "the quote of a short plain line is the line");
        } else {
            assert_eq!(
                v.quote,
                format!("{plain}…"),
                "the quote of a long plain line is its first 200 bytes and the marker"
            );
        }
    }
}

fn check_json(label: &str, line: &[u8], range: &Range<usize>) {
    assert!(
        range.start <= range.end && range.end <= line.len(),
        "{label} range {range:?} outside a line of {}",
        line.len()
    );
    // As the reader hands it on: raw JSON text (a lone surrogate escape is JSON text too).
    if let Err(e) = serde_json::from_slice::<&serde_json::value::RawValue>(&line[range.clone()]) {
        panic!("{label} range {range:?} is not JSON ({e}): {:?}", String::from_utf8_lossy(&line[range.clone()]));
    }
}

/// One line's verdict, checked on its own.
pub fn check_verdict(line: &[u8], verdict: &Result<Frame, Violation>) {
    assert!(!line.contains(&b'\n'), "a line holds a newline");
    match verdict {
        Ok(Frame::Hello) => {
            // No panic; a rejected hello's message carries no control character.
            if let Err(e) = crate::hello::check(line) {
                check_text("a hello error", &e.message);
            }
        }
        Ok(Frame::Response { body: ResponseBody::Result(r), .. }) => check_json("a result", line, r),
        Ok(Frame::Response { body: ResponseBody::Error(_), .. }) => {}
        Ok(Frame::Event { seq, name, data }) => {
            assert!(*seq > 0, "seq {seq}");
            if name.is_some() || !data.is_empty() {
                check_json("an event's data", line, data);
            }
        }
        Err(v) => check_violation(v, line),
    }
}

/// Check `payload` fed in one read, in each of `chunkings` (lengths cycled;
/// a 0 is an empty read), each both classifying every line and stopping at
/// the first violation; when `exhaustive`, also byte by byte and, for short
/// payloads, split in two at every position.
pub fn check(payload: &[u8], chunkings: &[&[usize]], exhaustive: bool) {
    let model = Model::new(payload);
    let verdicts: Vec<Result<Frame, Violation>> = model.lines.iter().map(|r| classify(&payload[r.clone()])).collect();
    for (r, v) in model.lines.iter().zip(&verdicts) {
        check_verdict(&payload[r.clone()], v);
        // The fast path for events gives what the full path gives.
        assert_eq!(v, &classify_full(&payload[r.clone()]), "fast path against full path");
    }
    let first_bad = verdicts.iter().position(|v| v.is_err());
    let one_read = [payload.len().max(1)];
    let whole = run(payload, &model, Some(&verdicts), &mut Cycle::new(&one_read), true, false);
    assert_eq!(whole.delivered, model.lines.len(), "one read: lines delivered");
    assert_eq!(whole.verdicts, verdicts, "one read: verdicts");
    assert_eq!(kind(&whole.end), model.end, "one read: how it ended ({:?})", whole.end);
    if let End::TooLarge(v) | End::Unterminated(v) = &whole.end {
        let tail_start = model.lines.last().map_or(0, |r| {
            // past the line, its `\r` if any, and its `\n`
            r.end + memchr::memchr(b'\n', &payload[r.end..]).unwrap() + 1
        });
        let tail = &payload[tail_start..];
        let line = &tail[..memchr::memchr(b'\n', tail).unwrap_or(tail.len())];
        check_violation(v, line);
    }
    let same = |label: &str, o: Outcome, classified: bool| {
        assert_eq!(o.delivered, model.lines.len(), "{label}: lines delivered");
        if classified {
            assert_eq!(o.verdicts, verdicts, "{label}: verdicts");
        }
        assert_eq!(o.end, whole.end, "{label}: how it ended");
    };
    let stopped = |label: &str, o: Outcome| match first_bad {
        Some(j) => {
            assert_eq!(o.end, End::Stopped(j), "{label}: stopping at the first violation");
            assert_eq!(o.delivered, j + 1, "{label}: lines delivered before the stop");
        }
        None => same(label, o, false),
    };
    let feed = |sizes: &[usize], classify_lines: bool, stop: bool| {
        run(payload, &model, Some(&verdicts), &mut Cycle::new(sizes), classify_lines, stop)
    };
    for sizes in chunkings {
        if sizes.iter().all(|&s| s == 0) {
            continue;
        }
        let label = format!("chunks {:?}", &sizes[..sizes.len().min(16)]);
        // Equal lines make equal verdicts; classifying again is only a cross-check.
        let again = payload.len() <= CLASSIFY_AGAIN_MAX;
        same(&label, feed(sizes, again, false), again);
        if again {
            stopped(&label, feed(sizes, false, true));
        }
    }
    if exhaustive && !payload.is_empty() {
        same("byte by byte", feed(&[1], false, false), false);
        stopped("byte by byte", feed(&[1], false, true));
        if payload.len() <= EXHAUSTIVE_SPLIT_MAX {
            for at in 1..payload.len() {
                let sizes = [at, payload.len()];
                same(&format!("split at {at}"), feed(&sizes, false, false), false);
            }
        }
    }
}

/// A fuzz input: byte 0 modulo 16 says how many chunk lengths follow (one
/// byte each, 0 an empty read); the rest is the stdout stream.
pub fn check_fuzz_input(data: &[u8]) {
    let (sizes, payload) = split_fuzz_input(data);
    check(payload, &[&sizes], true);
}

/// Split a fuzz input into its chunk lengths and its payload.
pub fn split_fuzz_input(data: &[u8]) -> (Vec<usize>, &[u8]) {
    match data.split_first() {
        None => (Vec::new(), data),
        Some((&head, rest)) => {
            let k = (head as usize % 16).min(rest.len());
            (rest[..k].iter().map(|&b| b as usize).collect(), &rest[k..])
        }
    }
}
