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
        eprintln!("{} {dir} {}", self.prefix, frame_text(bytes));
    }

    /// One whole line of koma's stderr.
    pub fn stderr_line(&self, line: &[u8]) {
        eprintln!("{} stderr {}", self.prefix, escape_text(&String::from_utf8_lossy(line), false));
    }
}

/// At most [`FRAME_SHOWN`] bytes of a frame, escaped, and its size if cut.
fn frame_text(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(FRAME_SHOWN)];
    let more = if bytes.len() > shown.len() { format!(" … ({} bytes)", bytes.len()) } else { String::new() };
    format!("{}{more}", escape_text(&String::from_utf8_lossy(shown), false))
}
