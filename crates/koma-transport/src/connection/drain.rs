//! The stderr drain (docs/protocol.md, stderr): read koma's stderr as it comes, so the child never
//! blocks on a full pipe, and keep the newest 64 KiB. With the trace on, each
//! whole line is traced too (printed, or queued for the host, who is woken).

use std::sync::{Arc, MutexGuard};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::link::Link;
use super::state::Shared;
use super::stderr_lines::StderrLines;
use super::trace_record::TraceRecord;

pub(super) async fn drain_stderr(link: Arc<Link>, mut stderr: pipe::Receiver) {
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
