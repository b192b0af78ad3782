//! The hello: its frame (and the hello faults' versions of it), the waits
//! before it, and sending it.

use crate::agent::json_str;
use crate::capabilities::{BENCH_METHODS, METHODS};
use crate::config::Config;
use crate::server::shared::Shared;
use serde_json::{json, Value};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

pub fn hello_frame(cfg: &Config, tool_pid: Option<u32>) -> String {
    let f = &cfg.faults;
    let path = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| "koma-sim".into());
    let mut diagnostics = vec![json!({"pid": std::process::id()})];
    if let Some(p) = tool_pid {
        diagnostics.push(json!({"tool_pid": p}));
    }
    let mut caps: Vec<&str> = METHODS.to_vec();
    if cfg.bench {
        caps.extend(BENCH_METHODS);
    }
    let protocol = if f.protocol_2 {
        Some("2")
    } else if f.protocol_string {
        Some("\"1\"")
    } else if f.protocol_float {
        Some("1.0")
    } else if f.protocol_true {
        Some("true")
    } else if f.protocol_missing {
        None
    } else {
        Some("1")
    };
    format!(
        "{{\"type\":\"hello\",{}\"binary\":{{\"path\":{},\"version\":{}}},\"diagnostics\":{},\"capabilities\":{}}}",
        protocol.map(|p| format!("\"protocol\":{p},")).unwrap_or_default(),
        json_str(&path),
        json_str(env!("CARGO_PKG_VERSION")),
        Value::Array(diagnostics),
        json!(caps),
    )
}

/// The waits before hello (`late_hello`, `KOMA_SIM_HELLO_DELAY_MS`), then
/// hello itself, unless `no_hello`. `counting_only`: a hello fault after
/// which every byte read is reported at the end, not here.
pub fn send_hello(sh: &Shared, counting_only: bool) {
    let f = &sh.cfg.faults;
    if f.late_hello {
        std::thread::sleep(Duration::from_millis(300));
    }
    if sh.cfg.hello_delay_ms > 0 {
        hello_delay(Duration::from_millis(sh.cfg.hello_delay_ms));
    }
    if f.no_hello {
        return;
    }
    let early = stdin_pending();
    if early > 0 && !counting_only {
        eprintln!("koma-sim: client wrote {early} bytes before hello");
    }
    let mut b = Vec::new();
    if f.bom {
        b.extend_from_slice(b"\xEF\xBB\xBF");
    }
    b.extend_from_slice(&sh.out.encode(&sh.hello));
    sh.out.raw(b);
    sh.out.sync();
}

/// How many bytes wait unread on stdin.
#[cfg(windows)]
fn stdin_pending() -> usize {
    crate::windows::stdin_pending().unwrap_or(0)
}

#[cfg(windows)]
fn hello_delay(delay: Duration) {
    crate::windows::hello_delay(delay);
}

/// How many bytes wait unread on stdin.
#[cfg(unix)]
fn stdin_pending() -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which is a live
    // local; on a descriptor that does not support it, ioctl fails and
    // writes nothing.
    let r = unsafe { libc::ioctl(0, libc::FIONREAD, &mut n) };
    if r == 0 && n > 0 {
        n as usize
    } else {
        0
    }
}

/// `KOMA_SIM_HELLO_DELAY_MS`: wait before hello, but no longer than stdin
/// stays open. Nothing is read: poll(2) with no requested events reports only
/// the end of stdin (POLLHUP, once every writer has closed it) or an error,
/// so bytes the client writes early neither end the wait nor get consumed.
#[cfg(unix)]
fn hello_delay(delay: Duration) {
    let deadline = Instant::now() + delay;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let mut pfd = libc::pollfd { fd: 0, events: 0, revents: 0 };
        let ms = left.as_millis().clamp(1, libc::c_int::MAX as u128) as libc::c_int;
        // SAFETY: one pollfd, a live local, and a count of 1 to match.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r > 0 {
            if pfd.revents & libc::POLLHUP != 0 {
                eprintln!("koma-sim: stdin closed during the hello delay; sending hello now");
                return;
            }
            if pfd.revents & libc::POLLNVAL != 0 {
                // No stdin at all: just wait.
                std::thread::sleep(left);
                return;
            }
            // POLLERR: keep waiting, with a pause so it cannot spin.
            std::thread::sleep(left.min(Duration::from_millis(1)));
        } else if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            std::thread::sleep(left);
            return;
        }
    }
}
