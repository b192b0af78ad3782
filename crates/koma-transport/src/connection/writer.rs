//! The writer task: what could not be written straight from the caller's
//! thread (see `stdin.rs`), written in order, in batches.

use std::io;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::link::Link;
use super::stdin::WriterMsg;

/// How the writer task ended.
pub(super) enum WriteEnd {
    /// Stdin was closed on purpose (shutdown, or the connection let it go).
    Closed,
    /// A write failed (EPIPE and the like: the child is gone or closed stdin).
    Failed(io::Error),
}

/// The writer's end of stdin: whenever it is dropped (the task ends, is
/// aborted, or panics), direct writes stop first, then the descriptor closes.
struct OwnedStdin {
    link: Arc<Link>,
    pipe: crate::child::PipeWriter,
}

impl Drop for OwnedStdin {
    fn drop(&mut self) {
        self.link.lock().stdin.fd = None;
    }
}

pub(super) async fn write_stdin(
    link: Arc<Link>,
    mut rx: mpsc::UnboundedReceiver<WriterMsg>,
    stdin: crate::child::PipeWriter,
) -> WriteEnd {
    let mut stdin = OwnedStdin { link: link.clone(), pipe: stdin };
    let mut batch: Vec<WriterMsg> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let end = loop {
        if rx.recv_many(&mut batch, 256).await == 0 {
            break WriteEnd::Closed; // the connection let go of stdin
        }
        let mut shutdown = false;
        {
            let mut s = link.lock();
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
        let mut s = link.lock();
        if rx.is_empty() {
            s.stdin.backlog = false;
        }
    };
    drop(stdin);
    end
}
