//! The stderr drain (A.3): read koma's stderr as it comes, so the child never
//! blocks on a full pipe, and keep the newest 64 KiB. With the trace on, each
//! whole line is traced too.

use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::link::Link;
use super::stderr_lines::StderrLines;

pub(super) async fn drain_stderr(link: Arc<Link>, mut stderr: pipe::Receiver) {
    // Small at first (most children write little), larger once a read fills it.
    let mut buf: Vec<u8> = Vec::with_capacity(4 * 1024);
    let mut traced = link.trace.as_ref().map(|t| (t, StderrLines::default()));
    loop {
        buf.clear();
        match stderr.read_buf(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if let Some((t, lines)) = &mut traced {
                    lines.push(&buf[..n], |l| t.stderr_line(l));
                }
                link.lock().stderr.push(&buf[..n]);
                if n == buf.capacity() && buf.capacity() < 64 * 1024 {
                    buf = Vec::with_capacity(64 * 1024);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    if let Some((t, lines)) = &mut traced {
        lines.finish(|l| t.stderr_line(l));
    }
}
