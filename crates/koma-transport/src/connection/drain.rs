//! The stderr drain (A.3): read koma's stderr as it comes, so the child never
//! blocks on a full pipe, and keep the newest 64 KiB.

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::Connection;

pub(super) async fn drain_stderr(conn: Connection, mut stderr: pipe::Receiver) {
    // Small at first (most children write little), larger once a read fills it.
    let mut buf = vec![0u8; 4 * 1024];
    let trace_on = conn.inner.options.trace;
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if trace_on {
                    for l in String::from_utf8_lossy(&buf[..n]).lines() {
                        eprintln!("[koma-sdk] stderr {}", crate::quote::escape_text(l, false));
                    }
                }
                conn.inner.lock().stderr.push(&buf[..n]);
                if n == buf.len() && buf.len() < 64 * 1024 {
                    buf = vec![0u8; 64 * 1024];
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}
