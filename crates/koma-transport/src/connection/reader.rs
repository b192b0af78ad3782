//! The reader: koma's stdout, split into lines, each line checked and routed
//! (see `route.rs`); the frames of a read are applied in groups under one lock.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::link::Link;
use super::route::{apply, route, Routed};
use super::trace_record::{Direction, TraceRecord};
use crate::error::{ErrorCode, KomaError};
use crate::frame::{LineSplitter, Violation};
use crate::lifecycle::Lifecycle;
use crate::limits::MAX_BUFFERED_EVENTS;
use crate::quote::escape_path;

/// How the reading of stdout ended.
pub(super) enum ReadEnd {
    /// The end of the stream.
    Eof,
    /// Reading failed.
    Io(std::io::Error),
    /// A protocol violation, or no hello in time: the client has already failed with it.
    Failed,
    /// The supervisor stopped reading (koma exited and something else held stdout open).
    Cut,
    /// The reader panicked.
    Panicked,
}

/// The read buffer starts small (an idle client holds little) and grows to
/// `READ_CHUNK` once a read fills it (data is streaming).
const READ_FIRST: usize = 16 * 1024;
const READ_CHUNK: usize = 256 * 1024;
/// The frames of a read are checked and applied this many at a time.
const APPLY_GROUP: usize = 32;
/// The longest the reader waits for the host's thread to take a wake.
const READ_PAUSE: Duration = Duration::from_millis(5);
/// How long, in steps, the reader gives a consuming application to make room
/// in the event buffer before an overflow (see `wait_for_room`).
const ROOM_WAIT_STEP: Duration = Duration::from_millis(1);
const ROOM_WAIT_STEPS: usize = 100;
/// Steps without one event taken after which the application counts as not consuming.
const ROOM_IDLE_STEPS: usize = 10;
/// Only a small read (a trickle of answers) makes the reader wait; a large
/// one means data is streaming, and the pipe must keep draining.
const READ_PAUSE_BELOW: usize = 16 * 1024;

pub(super) async fn read_stdout(link: Arc<Link>, mut stdout: crate::child::PipeReader) -> ReadEnd {
    let mut splitter = LineSplitter::new();
    // Read into spare capacity: pages no read reached are never touched.
    let mut buf: Vec<u8> = Vec::with_capacity(READ_FIRST);
    let mut traced: Vec<TraceRecord> = Vec::new();
    let panic_on_frame = link.options.panics_in_reader();
    // Until the first line is whole, reading waits for hello at most this long.
    let mut hello_deadline = link.options.hello_timeout.map(|d| (Instant::now() + d, d));
    loop {
        buf.clear();
        let read = match hello_deadline {
            None => stdout.read_buf(&mut buf).await,
            Some((at, limit)) => match tokio::time::timeout_at(at, stdout.read_buf(&mut buf)).await {
                Ok(read) => read,
                Err(_) => {
                    no_hello(&link, limit);
                    return ReadEnd::Failed;
                }
            },
        };
        let n = match read {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return ReadEnd::Io(e),
        };
        // Asked per read: the host may start keeping frames at any time.
        let trace = link.trace.frames().then_some(&link.trace);
        let filled = n == buf.capacity();
        let mut lines = Vec::new();
        let too_large = splitter
            .feed(
                &buf[..n],
                |line| -> Result<(), Violation> {
                    lines.push(line);
                    Ok(())
                },
                |v| v,
            )
            .err();
        if !lines.is_empty() {
            hello_deadline = None; // the first frame came: hello, or a violation
        }
        // Applied in groups: the host's thread takes the first events
        // while later ones are checked, and a read of more events than the
        // buffer holds flows through it instead of overflowing it.
        // A violation fails `apply`, which ends the reader.
        let mut lines = lines.into_iter().peekable();
        while lines.peek().is_some() {
            let mut frames = Vec::with_capacity(APPLY_GROUP);
            for line in lines.by_ref().take(APPLY_GROUP) {
                if let Some(t) = trace {
                    traced.extend(t.frame(Direction::Read, line.bytes()));
                }
                if panic_on_frame {
                    panic!("a fault a test asked for: a panic in the reader");
                }
                let r = route(line);
                let violation = matches!(r, Routed::Violation(_));
                frames.push(r);
                if violation {
                    break;
                }
            }
            if !traced.is_empty() {
                // Queued before the frames are applied (which wakes the host),
                // so they come before the records of what they cause.
                let mut s = link.lock();
                for r in traced.drain(..) {
                    s.outbox.trace.push(r);
                }
            }
            wait_for_room(&link, &frames).await;
            if apply(&link, frames).is_err() {
                return ReadEnd::Failed;
            }
        }
        // A line over the bound ends the read after its complete lines.
        if let Some(v) = too_large {
            let _ = apply(&link, vec![Routed::Violation(v)]);
            return ReadEnd::Failed;
        }
        // While the host's thread has not taken the last wake, more
        // answers can pile up in the pipe and be read in one go (small reads
        // only). Bounded, so the reader never depends on the host's
        // thread to make progress. Only while other answers are due: a lone
        // answer (a caller awaiting each call in turn) would only be delayed.
        let pause = n < READ_PAUSE_BELOW && {
            let s = link.lock();
            s.outbox.wake_scheduled && !s.calls.pending.is_empty()
        };
        if pause {
            let _ = tokio::time::timeout(READ_PAUSE, link.drained.notified()).await;
        }
        if filled && buf.capacity() < READ_CHUNK {
            buf = Vec::with_capacity(READ_CHUNK);
        }
    }
    match splitter.finish() {
        Ok(()) => ReadEnd::Eof,
        // A partial last line after detach is let go; before it, a violation.
        Err(_) if link.lock().session.lifecycle == Lifecycle::Detached => ReadEnd::Eof,
        Err(v) => {
            let _ = apply(&link, vec![Routed::Violation(v)]);
            ReadEnd::Failed
        }
    }
}

/// The child started and sent no hello within `limit`: the client fails (and
/// the child is stopped, as after any failure).
fn no_hello(link: &Link, limit: Duration) {
    let exe = escape_path(&link.options.launch.executable.to_string_lossy());
    let within = link.options.wording.duration(limit);
    link.fail_with_stderr(KomaError::new(
        ErrorCode::TransportFailure,
        format!("no hello from `{exe} sdk serve` within {within}: is `{exe}` koma? Nothing was written to it"),
    ));
}

/// Before events that would overflow the buffer: if the application is
/// taking events right now, give it a moment (bounded) to make room, so a
/// burst is not dropped while it is being read. The frames wait in the
/// pipe meanwhile; a consumer that stalls still gets the overflow.
async fn wait_for_room(link: &Link, frames: &[Routed<'_>]) {
    let incoming = frames.iter().filter(|f| f.is_catalog_event()).count();
    if incoming == 0 {
        return;
    }
    let taken = || link.counters.taken();
    let mut last = taken();
    let mut idle = 0;
    for _ in 0..ROOM_WAIT_STEPS {
        {
            let mut s = link.lock();
            s.stream.events.settle(last.0, last.1);
            if s.stream.events.is_paused() || s.stream.events.counted_frames() + incoming <= MAX_BUFFERED_EVENTS {
                return;
            }
        }
        tokio::time::sleep(ROOM_WAIT_STEP).await;
        let now = taken();
        if now == last {
            idle += 1;
            if idle >= ROOM_IDLE_STEPS {
                return; // not consuming: the overflow is the answer
            }
        } else {
            idle = 0;
            last = now;
        }
    }
}
