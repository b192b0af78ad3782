//! The reader: koma's stdout, split into lines, each line checked and routed
//! (see `route.rs`); the frames of a read are applied in groups under one lock.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::route::{route, Routed};
use super::Connection;
use crate::frame::{LineSplitter, Violation};
use crate::lifecycle::Lifecycle;

/// How the reading of stdout ended.
pub(super) enum ReadEnd {
    /// The end of the stream.
    Eof,
    /// Reading failed.
    Io(std::io::Error),
    /// A protocol violation: the client has already failed with it.
    Violation,
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
/// The longest the reader waits for the JavaScript thread to take a wake.
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

pub(super) async fn read_stdout(conn: Connection, mut stdout: pipe::Receiver) -> ReadEnd {
    let mut splitter = LineSplitter::new();
    // Read into spare capacity: pages no read reached are never touched.
    let mut buf: Vec<u8> = Vec::with_capacity(READ_FIRST);
    let trace_on = conn.inner.options.trace;
    #[cfg(feature = "testing")]
    let panic_on_frame = conn.inner.options.faults.panic_in_reader;
    #[cfg(not(feature = "testing"))]
    let panic_on_frame = false;
    loop {
        buf.clear();
        let n = match stdout.read_buf(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return ReadEnd::Io(e),
        };
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
        // Applied in groups: the JavaScript thread takes the first events
        // while later ones are checked, and a read of more events than the
        // buffer holds flows through it instead of overflowing it.
        // A violation fails `apply`, which ends the reader.
        let mut lines = lines.into_iter().peekable();
        while lines.peek().is_some() {
            let mut frames = Vec::with_capacity(APPLY_GROUP);
            for line in lines.by_ref().take(APPLY_GROUP) {
                if trace_on {
                    super::trace("<-", line.bytes());
                }
                if panic_on_frame {
                    panic!("faults.panic_in_reader");
                }
                let r = route(line);
                let violation = matches!(r, Routed::Violation(_));
                frames.push(r);
                if violation {
                    break;
                }
            }
            conn.wait_for_room(&frames).await;
            if conn.apply(frames).is_err() {
                return ReadEnd::Violation;
            }
        }
        // A line over the bound ends the read after its complete lines.
        if let Some(v) = too_large {
            let _ = conn.apply(vec![Routed::Violation(v)]);
            return ReadEnd::Violation;
        }
        // While the JavaScript thread has not taken the last wake, more
        // answers can pile up in the pipe and be read in one go (small reads
        // only). Bounded, so the reader never depends on the JavaScript
        // thread to make progress. Only while other answers are due: a lone
        // answer (a caller awaiting each call in turn) would only be delayed.
        let pause = n < READ_PAUSE_BELOW && {
            let s = conn.inner.lock();
            s.outbox.wake_scheduled && !s.calls.pending.is_empty()
        };
        if pause {
            let _ = tokio::time::timeout(READ_PAUSE, conn.inner.drained.notified()).await;
        }
        if filled && buf.capacity() < READ_CHUNK {
            buf = Vec::with_capacity(READ_CHUNK);
        }
    }
    match splitter.finish() {
        Ok(()) => ReadEnd::Eof,
        // A partial last line after detach is let go; before it, a violation.
        Err(_) if conn.inner.lock().session.lifecycle == Lifecycle::Detached => ReadEnd::Eof,
        Err(v) => {
            let _ = conn.apply(vec![Routed::Violation(v)]);
            ReadEnd::Violation
        }
    }
}

impl Connection {
    /// Before events that would overflow the buffer: if the application is
    /// taking events right now, give it a moment (bounded) to make room, so a
    /// burst is not dropped while it is being read. The frames wait in the
    /// pipe meanwhile; a consumer that stalls still gets the overflow.
    async fn wait_for_room(&self, frames: &[Routed<'_>]) {
        let incoming = frames.iter().filter(|f| f.is_catalog_event()).count();
        if incoming == 0 {
            return;
        }
        let taken = || self.inner.counters.taken();
        let mut last = taken();
        let mut idle = 0;
        for _ in 0..ROOM_WAIT_STEPS {
            {
                let mut s = self.inner.lock();
                s.stream.events.settle(last.0, last.1);
                if s.stream.events.is_paused()
                    || s.stream.events.counted_frames() + incoming <= crate::MAX_BUFFERED_EVENTS
                {
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
}
