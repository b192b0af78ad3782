//! The stderr drain (A.3): read koma's stderr as it comes, so the child never
//! blocks on a full pipe, and keep the newest 64 KiB.

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::Connection;

pub(super) async fn drain_stderr(conn: Connection, mut stderr: pipe::Receiver) {
    // Small at first (most children write little), larger once a read fills it.
    let mut buf: Vec<u8> = Vec::with_capacity(4 * 1024);
    let trace_on = conn.inner.options.trace;
    loop {
        buf.clear();
        match stderr.read_buf(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if trace_on {
                    for l in String::from_utf8_lossy(&buf[..n]).lines() {
                        eprintln!("[koma-sdk] stderr {}", crate::quote::escape_text(l, false));
                    }
                }
                conn.inner.lock().stderr.push(&buf[..n]);
                if n == buf.capacity() && buf.capacity() < 64 * 1024 {
                    buf = Vec::with_capacity(64 * 1024);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}
