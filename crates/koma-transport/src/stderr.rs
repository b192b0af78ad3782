//! The stderr ring (docs/protocol.md, stderr): the newest 64 KiB of the child's stderr.

use std::collections::VecDeque;

use crate::limits::STDERR_KEEP_BYTES;
use crate::quote::escape_text;

#[derive(Debug)]
pub struct StderrRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl Default for StderrRing {
    fn default() -> Self {
        Self::with_capacity(STDERR_KEEP_BYTES)
    }
}

impl StderrRing {
    /// A ring that keeps at most `capacity` bytes (it grows to that as
    /// stderr comes: a quiet child costs nothing).
    pub fn with_capacity(capacity: usize) -> Self {
        StderrRing { bytes: VecDeque::new(), capacity, total: 0 }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = if chunk.len() > self.capacity { &chunk[chunk.len() - self.capacity..] } else { chunk };
        let over = (self.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        self.bytes.drain(..over);
        self.bytes.extend(chunk);
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes seen in all, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept tail as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        if b.is_empty() {
            String::from_utf8_lossy(a).into_owned()
        } else {
            let mut v = Vec::with_capacity(self.bytes.len());
            v.extend_from_slice(a);
            v.extend_from_slice(b);
            String::from_utf8_lossy(&v).into_owned()
        }
    }

    /// The last `lines` lines, at most `max_bytes`, with control characters
    /// escaped: what an error message may show of stderr.
    pub fn last_lines(&self, lines: usize, max_bytes: usize) -> String {
        let text = self.text();
        let trimmed = text.trim_end_matches(['\n', '\r']);
        let mut start = trimmed.len();
        for _ in 0..lines {
            match trimmed[..start].rfind('\n') {
                Some(i) => start = i,
                None => {
                    start = 0;
                    break;
                }
            }
        }
        let mut tail = trimmed[start..].trim_start_matches('\n');
        if tail.len() > max_bytes {
            let mut cut = tail.len() - max_bytes;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail = &tail[cut..];
        }
        escape_text(tail, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_64_kib() {
        let mut r = StderrRing::default();
        for i in 0..20_000u32 {
            r.push(format!("line {i:08}\n").as_bytes());
        }
        assert_eq!(r.len(), STDERR_KEEP_BYTES);
        assert!(r.text().ends_with("line 00019999\n"));
        assert_eq!(r.total(), 20_000 * 14);
        r.push(&vec![b'z'; 100_000]);
        assert_eq!(r.len(), STDERR_KEEP_BYTES);
        assert!(r.text().bytes().all(|b| b == b'z'));
    }

    #[test]
    fn last_lines_are_escaped() {
        let mut r = StderrRing::default();
        r.push(b"one\ntwo\nthree \x1b[2J\n");
        assert_eq!(r.last_lines(2, 1000), "two\nthree \\u{1b}[2J");
        assert_eq!(r.last_lines(10, 1000), "one\ntwo\nthree \\u{1b}[2J");
        assert_eq!(r.last_lines(10, 5), " \\u{1b}[2J");
    }
}
