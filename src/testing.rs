//! Fault injection for the package's own tests, only in a build with the
//! `testing` feature (`node scripts/build.mjs --testing`); the published
//! addon has none of it. The variables are read once per process:
//!
//! - `KOMA_SDK_TEST_PANIC=wake`: the first wake of the JavaScript thread panics;
//! - `KOMA_SDK_TEST_PANIC=reader`: the core's reader panics at the first frame;
//! - `KOMA_SDK_TEST_NAPI_FAIL=parse:N`: the Nth `JSON.parse` of the process
//!   fails as a failed Node-API call would.
//!
//! It also exports `__census()`, the process's live connections and call
//! deadlines.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use koma_transport::connection::Faults;
use napi_derive::napi;

struct Switches {
    panic: Option<String>,
    parse_fails_at: Option<u64>,
}

fn switches() -> &'static Switches {
    static SWITCHES: OnceLock<Switches> = OnceLock::new();
    SWITCHES.get_or_init(|| Switches {
        panic: std::env::var("KOMA_SDK_TEST_PANIC").ok(),
        parse_fails_at: std::env::var("KOMA_SDK_TEST_NAPI_FAIL")
            .ok()
            .and_then(|v| v.strip_prefix("parse:").and_then(|n| n.parse().ok())),
    })
}

/// The core's faults for a new connection.
pub fn faults() -> Faults {
    Faults { panic_in_reader: switches().panic.as_deref() == Some("reader") }
}

/// Whether this wake panics (the first one, with `KOMA_SDK_TEST_PANIC=wake`).
pub fn panic_on_wake() -> bool {
    static FIRED: AtomicBool = AtomicBool::new(false);
    switches().panic.as_deref() == Some("wake") && !FIRED.swap(true, Ordering::Relaxed)
}

/// Whether this `JSON.parse` fails (the Nth of the process).
pub fn fail_this_parse() -> bool {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    match switches().parse_fails_at {
        Some(n) => COUNT.fetch_add(1, Ordering::Relaxed) + 1 == n,
        None => false,
    }
}

/// What `__census()` returns.
#[napi(object)]
pub struct Census {
    pub connections: u32,
    pub timers: u32,
}

/// Live counts of this process: connections whose memory is still held,
/// and call deadlines still running.
#[napi(js_name = "__census", catch_unwind)]
pub fn census() -> Census {
    let c = koma_transport::connection::census();
    Census { connections: c.connections as u32, timers: c.timers as u32 }
}
