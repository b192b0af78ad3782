//! The stderr drain (docs/protocol.md, stderr): read koma's stderr as it
//! comes, so the child never blocks on a full pipe, and keep the newest 64
//! KiB. With the trace on, each whole line is traced too (printed, or queued
//! for the host, who is woken): [`StderrLines`] cuts the bytes into lines,
//! since a line written in two writes (or read in two reads) must still be
//! traced as one line.

use std::sync::{Arc, MutexGuard};

use tokio::io::AsyncReadExt;

use super::link::Link;
use super::state::Shared;
use super::trace_record::TraceRecord;

pub(super) async fn drain_stderr(link: Arc<Link>, mut stderr: crate::child::PipeReader) {
    // Small at first (most children write little), larger once a read fills it.
    let mut buf: Vec<u8> = Vec::with_capacity(4 * 1024);
    let mut lines = link.trace.stderr_lines().then(StderrLines::default);
    let mut records = Vec::new();
    loop {
        buf.clear();
        match stderr.read_buf(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if lines.is_none() && link.trace.stderr_lines() {
                    lines = Some(StderrLines::default()); // the host began to keep them
                }
                if let Some(lines) = &mut lines {
                    lines.push(&buf[..n], |l| records.extend(link.trace.stderr_line(l)));
                }
                let mut s = link.lock();
                s.stderr.push(&buf[..n]);
                keep(&link, s, &mut records);
                if n == buf.capacity() && buf.capacity() < 64 * 1024 {
                    buf = Vec::with_capacity(64 * 1024);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    if let Some(lines) = &mut lines {
        lines.finish(|l| records.extend(link.trace.stderr_line(l)));
        keep(&link, link.lock(), &mut records);
    }
}

/// Queue the lines' records for the host, and wake it.
fn keep(link: &Link, mut s: MutexGuard<'_, Shared>, records: &mut Vec<TraceRecord>) {
    if !records.is_empty() {
        for r in records.drain(..) {
            s.outbox.trace.push(r);
        }
        link.wake_if_needed(s);
    }
}

/// A partial line waits for its newline at most this long; past that, what
/// is there is traced as a line of its own, so a child that writes without
/// newlines cannot make the drain hold its output.
const MAX_WAITING_BYTES: usize = 64 * 1024;

#[derive(Default)]
struct StderrLines {
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
}

impl StderrLines {
    /// Take the next bytes of the stream; `line` gets each whole line, without
    /// its `\n` or `\r\n` (a line that lies within `chunk` is not copied).
    pub fn push(&mut self, chunk: &[u8], mut line: impl FnMut(&[u8])) {
        let mut rest = chunk;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            if self.partial.is_empty() {
                line(without_cr(&rest[..i]));
            } else {
                self.partial.extend_from_slice(&rest[..i]);
                line(without_cr(&self.partial));
                self.partial.clear();
            }
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > MAX_WAITING_BYTES {
            // Keep an unfinished UTF-8 sequence for the next piece, so no
            // character is split between two lines of the trace.
            let cut = self.partial.len() - unfinished_utf8(&self.partial);
            line(&self.partial[..cut]);
            self.partial.drain(..cut);
        }
    }

    /// The end of the stream: a last line without its newline is traced as it is.
    pub fn finish(&mut self, mut line: impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            line(&self.partial);
            self.partial.clear();
        }
    }
}

fn without_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// How many bytes at the end of `bytes` are the start of a UTF-8 sequence
/// that is not complete yet (0 to 3).
fn unfinished_utf8(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: the lead is further back
        }
        let needs = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needs > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `chunks` fed in order, then the end of the stream.
    fn lines_of(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut lines = StderrLines::default();
        let mut out = Vec::new();
        for c in chunks {
            lines.push(c, |l| out.push(l.to_vec()));
        }
        lines.finish(|l| out.push(l.to_vec()));
        out
    }

    #[test]
    fn a_line_split_anywhere_is_one_line() {
        let text: &[u8] = "first line\nsecond, é and 😀\n\nfourth\n".as_bytes();
        let whole = lines_of(&[text]);
        assert_eq!(whole, [&b"first line"[..], "second, é and 😀".as_bytes(), b"", b"fourth"]);
        for a in 0..=text.len() {
            for b in a..=text.len() {
                assert_eq!(lines_of(&[&text[..a], &text[a..b], &text[b..]]), whole, "split at {a} and {b}");
            }
        }
    }

    #[test]
    fn crlf_ends_a_line_too() {
        assert_eq!(lines_of(&[b"one\r\ntwo\r", b"\nthree\n"]), [&b"one"[..], b"two", b"three"]);
        assert_eq!(lines_of(&[b"a\rb\n"]), [&b"a\rb"[..]], "a lone CR is part of the line");
    }

    #[test]
    fn the_end_of_the_stream_ends_the_last_line() {
        assert_eq!(lines_of(&[b"done\nno newline"]), [&b"done"[..], b"no newline"]);
        assert_eq!(lines_of(&[b"cut at CR\r"]), [&b"cut at CR\r"[..]], "printed as it is");
        assert!(lines_of(&[b""]).is_empty());
        assert!(lines_of(&[]).is_empty());
    }

    #[test]
    fn invalid_utf8_passes_through_and_a_split_character_is_whole() {
        let bad: &[u8] = b"bad \xFF\xFE byte\n";
        assert_eq!(lines_of(&[&bad[..5], &bad[5..]]), [&b"bad \xFF\xFE byte"[..]]);
        let emoji = "😀".as_bytes();
        assert_eq!(lines_of(&[&emoji[..1], &emoji[1..3], &emoji[3..], b"\n"]), [emoji]);
    }

    #[test]
    fn a_long_partial_line_is_traced_past_the_bound_without_splitting_a_character() {
        let mut lines = StderrLines::default();
        let mut out: Vec<Vec<u8>> = Vec::new();
        let piece = "é".repeat(1000); // 2,000 bytes
        let mut fed = 0;
        // Chunks of an odd size, so a character falls across the bound.
        let text = format!("x{}", piece.repeat(40)); // 80,001 bytes, no newline
        for chunk in text.as_bytes().chunks(4099) {
            lines.push(chunk, |l| out.push(l.to_vec()));
            fed += chunk.len();
            let waiting = fed - out.iter().map(Vec::len).sum::<usize>();
            assert!(waiting <= MAX_WAITING_BYTES, "{waiting} bytes wait");
        }
        assert_eq!(out.len(), 1, "printed once it passed the bound");
        assert!(out[0].len() > MAX_WAITING_BYTES);
        lines.finish(|l| out.push(l.to_vec()));
        for l in &out {
            assert!(std::str::from_utf8(l).is_ok(), "no character split");
        }
        assert_eq!(out.concat(), text.as_bytes());
    }

    #[test]
    fn unfinished_sequences_are_found() {
        let e = "€".as_bytes(); // 3 bytes
        assert_eq!(unfinished_utf8(b"abc"), 0);
        assert_eq!(unfinished_utf8(e), 0);
        assert_eq!(unfinished_utf8(&e[..1]), 1);
        assert_eq!(unfinished_utf8(&e[..2]), 2);
        assert_eq!(unfinished_utf8(b"\x80\x80\x80"), 0, "stray continuation bytes are let through");
        assert_eq!(unfinished_utf8(b"a\xF0\x9F\x98"), 3);
    }
}
