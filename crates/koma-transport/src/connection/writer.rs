//! koma's stdin: requests are written straight from the caller's thread when
//! nothing is queued ahead of them (no thread hop), and otherwise by the
//! writer task, which keeps their order.

use std::io;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use super::state::Shared;
use super::Connection;

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

/// How the writer task ended.
pub(super) enum WriteEnd {
    /// Stdin was closed on purpose (shutdown, or the connection let it go).
    Closed,
    /// A write failed (EPIPE and the like: the child is gone or closed stdin).
    Failed(io::Error),
}

/// Write `line` straight to stdin when nothing is queued ahead of it;
/// otherwise (or for what does not fit in the pipe now) hand it to the writer task.
pub(super) fn write_or_queue(s: &mut Shared, token: u64, line: Vec<u8>) {
    let Some(writer) = s.stdin.writer.clone() else { return };
    if let (false, Some(fd)) = (s.stdin.backlog, s.stdin.fd) {
        let mut done = 0;
        while done < line.len() {
            // SAFETY: write(2) on the open, non-blocking pipe; the fd is cleared
            // (under this lock, which the caller holds) before the writer task closes it.
            let n = unsafe { libc::write(fd, line[done..].as_ptr().cast(), line.len() - done) };
            if n > 0 {
                done += n as usize;
            } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            } else {
                break; // full (EAGAIN) or an error: the writer task takes it from here
            }
        }
        if done == line.len() {
            s.calls.pending.mark_written(token);
            return;
        }
        s.stdin.backlog = true;
        if done > 0 {
            s.calls.pending.mark_written(token);
            let _ = writer.send(WriterMsg::Rest(line[done..].to_vec()));
            return;
        }
    }
    s.stdin.backlog = true;
    let _ = writer.send(WriterMsg::Line { token, line });
}

/// The writer's end of stdin: whenever it is dropped (the task ends, is
/// aborted, or panics), direct writes stop first, then the descriptor closes.
struct OwnedStdin {
    conn: Connection,
    pipe: pipe::Sender,
}

impl Drop for OwnedStdin {
    fn drop(&mut self) {
        self.conn.inner.lock().stdin.fd = None;
    }
}

pub(super) async fn write_stdin(
    conn: Connection,
    mut rx: mpsc::UnboundedReceiver<WriterMsg>,
    stdin: pipe::Sender,
) -> WriteEnd {
    let mut stdin = OwnedStdin { conn: conn.clone(), pipe: stdin };
    let mut batch: Vec<WriterMsg> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let end = loop {
        if rx.recv_many(&mut batch, 256).await == 0 {
            break WriteEnd::Closed; // the connection let go of stdin
        }
        let mut shutdown = false;
        {
            let mut s = conn.inner.lock();
            for m in batch.drain(..) {
                match m {
                    WriterMsg::Line { token, line } => {
                        // A request abandoned before it was written is never written.
                        if s.calls.pending.contains(token) {
                            s.calls.pending.mark_written(token);
                            if out.is_empty() && line.len() > 64 * 1024 {
                                out = line;
                            } else {
                                out.extend_from_slice(&line);
                            }
                        }
                    }
                    WriterMsg::Rest(rest) => out.extend_from_slice(&rest),
                    WriterMsg::Shutdown => {
                        shutdown = true;
                        s.stdin.fd = None;
                    }
                }
            }
        }
        if !out.is_empty() {
            let r = stdin.pipe.write_all(&out).await;
            if out.capacity() > 1 << 20 {
                out = Vec::new();
            } else {
                out.clear();
            }
            if let Err(e) = r {
                break WriteEnd::Failed(e);
            }
        }
        if shutdown {
            break WriteEnd::Closed;
        }
        // Caught up: the caller's thread may write directly again.
        let mut s = conn.inner.lock();
        if rx.is_empty() {
            s.stdin.backlog = false;
        }
    };
    drop(stdin);
    end
}
