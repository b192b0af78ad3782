//! koma's stdin as the caller's thread sees it: a request as the line
//! written, and that line written straight to the pipe when nothing is
//! queued ahead of it (no thread hop), or else handed to the writer task
//! (`writer.rs`), which keeps the order.

use std::io;
#[cfg(unix)]
use std::os::fd::RawFd;

use tokio::sync::mpsc;

use crate::error::{ErrorCode, KomaError};
use crate::limits::MAX_FRAME_BYTES;
use crate::params;
use crate::pending::PendingTable;

/// What the writer task is asked to do.
pub(super) enum WriterMsg {
    Line {
        token: u64,
        line: Vec<u8>,
    },
    /// The rest of a line whose start was written directly.
    Rest(Vec<u8>),
    /// Close stdin.
    Shutdown,
}

#[derive(Default)]
pub(super) struct Stdin {
    pub writer: Option<mpsc::UnboundedSender<WriterMsg>>,
    /// The writer's pipe (non-blocking), for writing directly from the
    /// caller's thread while nothing is queued: no thread hop. Cleared (under
    /// the lock) before the writer task closes it.
    pub fd: Option<RawFd>,
    /// The writer task has lines queued or in progress: keep the order, queue behind them.
    pub backlog: bool,
}

impl Stdin {
    /// Write `line` straight to stdin when nothing is queued ahead of it;
    /// otherwise (or for what does not fit in the pipe now) hand it to the
    /// writer task. The request is marked written in `pending` once its
    /// first byte is.
    pub fn write_or_queue(&mut self, pending: &mut PendingTable, token: u64, line: Vec<u8>) {
        let Some(writer) = self.writer.clone() else { return };
        if let (false, Some(fd)) = (self.backlog, self.fd) {
            let mut done = 0;
            while done < line.len() {
                let n = write_direct(fd, &line[done..]);
                if n > 0 {
                    done += n as usize;
                } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                } else {
                    break; // full (EAGAIN) or an error: the writer task takes it from here
                }
            }
            if done == line.len() {
                pending.mark_written(token);
                return;
            }
            self.backlog = true;
            if done > 0 {
                pending.mark_written(token);
                let _ = writer.send(WriterMsg::Rest(line[done..].to_vec()));
                return;
            }
        }
        self.backlog = true;
        let _ = writer.send(WriterMsg::Line { token, line });
    }
}

/// Write straight to stdin's pipe.
#[cfg(unix)]
fn write_direct(fd: RawFd, bytes: &[u8]) -> isize {
    // SAFETY: write(2) from a live slice to the open, non-blocking pipe: `fd`
    // is cleared (under the connection's lock, which the caller holds) before
    // the writer task closes the pipe.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) }
}

/// On Windows there is no direct write (`fd` is never set).
#[cfg(windows)]
fn write_direct(fd: RawFd, _: &[u8]) -> isize {
    match fd {}
}

/// No descriptor to write to directly on Windows.
#[cfg(windows)]
type RawFd = std::convert::Infallible;

/// `{"id":"N","method":M,"params":P}\n`, with `params` checked (`frame_too_large` over 40 MiB).
pub(super) fn request_line(token: u64, method: &str, params_json: Option<&str>) -> Result<Vec<u8>, KomaError> {
    let params = params::check(method, params_json)?;
    let method_json = serde_json::to_string(method).expect("string");
    let mut line = Vec::with_capacity(params.len() + method_json.len() + 40);
    line.extend_from_slice(b"{\"id\":\"");
    line.extend_from_slice(itoa::Buffer::new().format(token).as_bytes());
    line.extend_from_slice(b"\",\"method\":");
    line.extend_from_slice(method_json.as_bytes());
    line.extend_from_slice(b",\"params\":");
    line.extend_from_slice(params.as_bytes());
    line.push(b'}');
    if line.len() > MAX_FRAME_BYTES {
        return Err(KomaError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "the `{method}` request would be {} bytes, over the 40 MiB frame bound ({MAX_FRAME_BYTES}); nothing was written",
                line.len()
            ),
        ));
    }
    line.push(b'\n');
    Ok(line)
}
