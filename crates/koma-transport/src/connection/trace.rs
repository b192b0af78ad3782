//! The trace: with `trace` on, every frame in both directions and every
//! stderr line is printed to this process's stderr, each line starting with
//! `[label]` (see [`super::options::ConnectionOptions::label`]).

use super::options::ConnectionOptions;
use crate::quote::escape_text;

/// The most bytes of a frame printed; a longer one is cut, with its size.
const FRAME_SHOWN: usize = 4096;

pub(super) struct Trace {
    /// `[label]`.
    prefix: String,
}

impl Trace {
    /// The connection's trace, if it has one.
    pub fn new(options: &ConnectionOptions) -> Option<Trace> {
        let label = if options.label.is_empty() { "koma-transport" } else { options.label.as_str() };
        options.trace.then(|| Trace { prefix: format!("[{}]", escape_text(label, false)) })
    }

    /// A frame read (`<-`) or written (`->`), without its line terminator.
    pub fn frame(&self, dir: &str, bytes: &[u8]) {
        eprintln!("{}", self.frame_line(dir, bytes));
    }

    /// One whole line of koma's stderr.
    pub fn stderr_line(&self, line: &[u8]) {
        eprintln!("{}", self.stderr_text(line));
    }

    /// At most [`FRAME_SHOWN`] bytes of a frame, escaped, and its size if cut.
    fn frame_line(&self, dir: &str, bytes: &[u8]) -> String {
        let shown = &bytes[..bytes.len().min(FRAME_SHOWN)];
        let more = if bytes.len() > shown.len() { format!(" … ({} bytes)", bytes.len()) } else { String::new() };
        format!("{} {dir} {}{more}", self.prefix, escape_text(&String::from_utf8_lossy(shown), false))
    }

    /// A stderr line, escaped (invalid UTF-8 shows as U+FFFD).
    fn stderr_text(&self, line: &[u8]) -> String {
        format!("{} stderr {}", self.prefix, escape_text(&String::from_utf8_lossy(line), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(label: &str) -> Trace {
        Trace::new(&ConnectionOptions { trace: true, label: label.into(), ..Default::default() }).expect("on")
    }

    #[test]
    fn lines_start_with_the_label() {
        assert!(Trace::new(&ConnectionOptions::default()).is_none(), "off unless asked for");
        assert_eq!(trace("").frame_line("->", b"{}"), "[koma-transport] -> {}");
        assert_eq!(trace("my-host").stderr_text(b"hi"), "[my-host] stderr hi");
    }

    #[test]
    fn what_koma_wrote_is_escaped() {
        let t = trace("x");
        assert_eq!(t.stderr_text(b"bad \xFF \x1b[2J"), "[x] stderr bad \u{fffd} \\u{1b}[2J");
        let long = vec![b'a'; FRAME_SHOWN + 1];
        assert!(t.frame_line("<-", &long).ends_with(&format!("a … ({} bytes)", FRAME_SHOWN + 1)));
    }
}
