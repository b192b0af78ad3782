//! The supervisor: one task per started connection that owns the child from
//! spawn to reap. It starts the reader, writer and stderr tasks, stops the
//! child when asked (`close()`, a failure, the client object gone), sees its
//! exit, stops what is left of its group, reaps it, and waits until every
//! task has ended and every descriptor is closed. Only then is the
//! connection's life over: it lets go of the I/O threads (ending them if it
//! was the last), and `close()` resolves after that, never before.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::drain::drain_stderr;
use super::link::Link;
use super::link::Stop;
use super::phase::Phase;
use super::reader::{read_stdout, ReadEnd};
use super::stdin::WriterMsg;
use super::trace_record::Traced;
use super::writer::{write_stdin, WriteEnd};
use crate::child::{self, ExitInfo, LaunchError, Process, Spawned, Spawner};
use crate::error::{ErrorCode, KomaError};
use crate::lifecycle::Lifecycle;

/// How long `close()` waits for a detach to be answered and the child to exit.
pub const DETACH_GRACE: Duration = Duration::from_secs(2);
/// How long after stdin's end, then after SIGTERM, before the next step.
pub const STOP_GRACE: Duration = Duration::from_millis(1000);
/// How long a failure waits for stderr to close and the child to exit, so the
/// child's last words are in the message.
pub const LAST_WORDS_GRACE: Duration = Duration::from_millis(500);
/// How long after the child's exit (and its group's) stdout may stay open
/// (held by a process that left the group) before it is cut.
pub const EXIT_EOF_GRACE: Duration = Duration::from_millis(300);
/// How long, after koma's exit and the SIGKILL to its group, the supervisor
/// waits for the rest of the group to die.
const GROUP_GRACE: Duration = Duration::from_secs(2);

/// Start the supervisor of a connection (its first call has been made): the
/// connection holds the I/O threads (starting them if none run) until the
/// supervisor is done.
pub(super) fn start(link: Arc<Link>) {
    let (io, spawner) = link.hold_io();
    let guard = link.clone();
    let task = io.spawn(supervise(link, spawner));
    // A panic in the supervisor must not leave a child or a call behind.
    io.spawn(async move {
        if let Err(e) = task.await {
            if e.is_panic() {
                let msg =
                    guard.with_stderr_tail("an internal error (a panic) in the client's supervisor task".to_owned());
                guard.fail(KomaError::new(ErrorCode::TransportFailure, msg));
                let process = guard.lock().child.process.take();
                if let Some(p) = process {
                    p.kill_now();
                    let _ = p.exited().await;
                    p.reap();
                }
                supervisor_done(&guard);
            }
        }
    });
}

async fn supervise(link: Arc<Link>, spawner: Result<Spawner, LaunchError>) {
    let launched = match spawner {
        Ok(spawner) => {
            let mut launch = link.options.launch.clone();
            if let Some(context) = link.lock().child.trace_context.take() {
                context.apply(&mut launch);
            }
            child::launch(&spawner, launch).await
        }
        Err(e) => Err(e),
    };
    let spawned = match launched {
        Ok(s) => s,
        Err(e) => {
            link.fail(e.into_error());
            supervisor_done(&link);
            return;
        }
    };
    let Spawned { process, stdin, stdout, stderr } = spawned;
    let process = Arc::new(process);
    #[cfg(unix)]
    let pipes = (
        child::PipeWriter::from_owned_fd(stdin),
        child::PipeReader::from_owned_fd(stdout),
        child::PipeReader::from_owned_fd(stderr),
    );
    #[cfg(windows)]
    let pipes = (child::register_pipe(stdin), child::register_pipe(stdout), child::register_pipe(stderr));
    let (stdin, stdout, stderr) = match pipes {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, c) => {
            drop((a, b, c));
            process.kill_now();
            let _ = process.exited().await;
            process.reap();
            drop(process);
            link.fail(KomaError::new(ErrorCode::SpawnFailed, "could not register koma's pipes with the I/O runtime"));
            supervisor_done(&link);
            return;
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    link.trace.set_pid(process.pid());
    {
        let mut s = link.lock();
        s.child.process = Some(process.clone());
        s.stdin.writer = Some(tx);
        // Written straight from the caller's thread while nothing is queued
        // (Unix; on Windows every line goes through the writer task).
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            s.stdin.fd = Some(stdin.as_raw_fd());
        }
        link.note(&mut s, || Traced::Spawned);
        link.wake_if_needed(s);
    }
    // The client object may already be gone.
    if *link.signals.stop.borrow() == Some(Stop::Kill) {
        process.kill_now();
    }
    let mut reader = tokio::spawn(read_stdout(link.clone(), stdout));
    let mut drain = tokio::spawn(drain_stderr(link.clone(), stderr));
    let mut writer = tokio::spawn(write_stdin(link.clone(), rx, stdin));

    // koma: stopped when asked, its exit seen, its group stopped, then reaped.
    let exit_part = async {
        let info = tokio::select! {
            info = process.exited() => info,
            never = stop_when_asked(&link, &process) => match never {},
        };
        end_group(&process); // what is left of its group
        process.reap();
        exited(&link, info);
        process.group_gone(GROUP_GRACE).await;
    };
    // stdout: read to its end (cut if something outside the group still holds it).
    let stdout_part = async {
        let end = tokio::select! {
            r = &mut reader => r.unwrap_or(ReadEnd::Panicked),
            () = after_exit(&link, EXIT_EOF_GRACE) => {
                cut(&mut reader).await;
                ReadEnd::Cut
            }
        };
        stdout_ended(&link, end).await;
    };
    // stdin: written until the connection lets go of it.
    let stdin_part = async {
        let end = tokio::select! {
            r = &mut writer => r.map_err(|_| ()),
            () = after_exit(&link, STOP_GRACE) => {
                link.lock().stdin.fd = None;
                cut(&mut writer).await;
                Ok(WriteEnd::Closed)
            }
        };
        match end {
            Ok(WriteEnd::Closed) => {}
            Ok(WriteEnd::Failed(e)) => write_failed(&link, e).await,
            Err(()) => {
                let msg = link.with_stderr_tail("an internal error (a panic) in the client's writer task".to_owned());
                link.fail(KomaError::new(ErrorCode::TransportFailure, msg));
            }
        }
    };
    // stderr: drained to its end.
    let stderr_part = async {
        tokio::select! {
            _ = &mut drain => {}
            () = after_exit(&link, LAST_WORDS_GRACE) => cut(&mut drain).await,
        }
        link.signals.stderr_end.send_replace(true);
    };
    tokio::join!(exit_part, stdout_part, stdin_part, stderr_part);
    drop(process);
    supervisor_done(&link);
}

/// Abort a task and wait until it is gone (its descriptors closed).
async fn cut<T>(task: &mut JoinHandle<T>) {
    task.abort();
    let _ = task.await;
}

/// Resolves `grace` after the child's exit.
fn after_exit(link: &Link, grace: Duration) -> impl Future<Output = ()> + '_ {
    let mut exit = link.signals.exit.subscribe();
    async move {
        let _ = exit.wait_for(Option::is_some).await;
        tokio::time::sleep(grace).await;
    }
}

/// Stop the child when asked: for a detach, wait for it first; then stdin's
/// end, SIGTERM, SIGKILL, each after a grace. Never returns: the caller races
/// it against the child's exit.
async fn stop_when_asked(link: &Link, process: &Process) -> std::convert::Infallible {
    let mut stop = link.signals.stop.subscribe();
    let Ok(first) = stop.wait_for(Option::is_some).await.map(|s| (*s).expect("checked")) else {
        return std::future::pending().await;
    };
    let escalate = async {
        if first == Stop::AfterDetach {
            tokio::time::sleep(DETACH_GRACE).await;
        }
        if first != Stop::Kill {
            shutdown_stdin(link);
            tokio::time::sleep(STOP_GRACE).await;
            // Windows has no SIGTERM: after the end of stdin, the job's end.
            #[cfg(unix)]
            {
                process.signal(libc::SIGTERM);
                process.signal_group(libc::SIGTERM);
                tokio::time::sleep(STOP_GRACE).await;
            }
        }
        process.kill_now();
    };
    // A later, stronger request (the client object gone) kills at once.
    let killed = async {
        let _ = stop.wait_for(|s| *s == Some(Stop::Kill)).await;
        process.kill_now();
    };
    tokio::select! {
        () = escalate => {}
        () = killed => {}
    }
    std::future::pending().await
}

/// After koma's exit: stop what is left of its group (Unix), or of its job (Windows).
fn end_group(process: &Process) {
    #[cfg(unix)]
    process.signal_group(libc::SIGKILL);
    #[cfg(windows)]
    process.end_tree();
}

/// koma has exited and been reaped: nothing more is written to it.
fn exited(link: &Link, info: ExitInfo) {
    {
        let mut s = link.lock();
        s.stdin.fd = None;
        s.stdin.writer = None; // the writer task ends, and closes stdin
        link.note(&mut s, || Traced::Exit(info));
        link.wake_if_needed(s);
    }
    link.signals.exit.send_replace(Some(info));
}

/// Close stdin once what is queued has been written.
fn shutdown_stdin(link: &Link) {
    let s = link.lock();
    if let Some(w) = &s.stdin.writer {
        let _ = w.send(WriterMsg::Shutdown);
    }
}

/// A write to stdin failed (EPIPE: the child is gone or closed stdin). The
/// end of stdout usually says more: wait for it briefly.
async fn write_failed(link: &Link, e: std::io::Error) {
    let mut end = link.signals.stdout_end.subscribe();
    if tokio::time::timeout(LAST_WORDS_GRACE * 2, end.wait_for(|v| *v)).await.is_err() {
        let msg = link.with_stderr_tail(format!("writing to koma's stdin failed: {e}"));
        link.fail(KomaError::new(ErrorCode::TransportFailure, msg));
    }
}

/// The end of stdout: the normal end after detach, or a transport failure.
async fn stdout_ended(link: &Link, end: ReadEnd) {
    link.signals.stdout_end.send_replace(true);
    let io_error = match end {
        ReadEnd::Failed => return, // the client has failed with it
        ReadEnd::Panicked => {
            let msg = link.with_stderr_tail("an internal error (a panic) in the client's reader task".to_owned());
            link.fail(KomaError::new(ErrorCode::TransportFailure, msg));
            return;
        }
        ReadEnd::Io(e) => Some(e),
        ReadEnd::Eof | ReadEnd::Cut => None,
    };
    let detached = {
        let s = link.lock();
        if s.phase.is_over() {
            return; // closed (close settles) or failed (already settled)
        }
        s.session.lifecycle == Lifecycle::Detached
    };
    let mut exit = link.signals.exit.subscribe();
    if detached && io_error.is_none() {
        // The normal end: wait (bounded) for the exit, then settle.
        if tokio::time::timeout(DETACH_GRACE, exit.wait_for(Option::is_some)).await.is_err() {
            link.signals.request_stop(Stop::Now);
            let _ = exit.wait_for(Option::is_some).await;
        }
        let mut s = link.lock();
        if s.phase.is_over() {
            return;
        }
        s.phase = Phase::Ended;
        s.wind_up(
            "koma's stdout ended after detach without its answer",
            "the session was detached before the turn finished",
        );
        link.wake_if_needed(s);
        return;
    }
    // A transport failure: wait briefly for the child's last words and its exit.
    let mut stderr_end = link.signals.stderr_end.subscribe();
    let _ = tokio::time::timeout(LAST_WORDS_GRACE, async {
        let _ = stderr_end.wait_for(|v| *v).await;
        let _ = exit.wait_for(Option::is_some).await;
    })
    .await;
    let exit_info = *link.signals.exit.borrow();
    let what = match (&io_error, exit_info) {
        (Some(e), _) => format!("reading koma's stdout failed: {e}"),
        (None, Some(info)) => format!("koma {} without detach (stdout ended)", info.describe()),
        (None, None) => "koma closed its stdout without detach".to_owned(),
    };
    let msg = link.with_stderr_tail(what);
    link.fail(KomaError::new(ErrorCode::TransportFailure, msg));
}

/// The supervisor is done: the child is reaped and every task and
/// descriptor of the connection is gone. A `close()` waiting for that
/// is settled now.
fn supervisor_done(link: &Link) {
    // Drop the process (its pidfd) outside the lock, before anyone can
    // learn that close is done.
    let process = link.lock().child.process.take();
    drop(process);
    // Let go of the I/O threads before that too: if this is the last
    // connection, they are asked to end now, and the host's thread waits for
    // their end before it hands over the close.
    link.release_io();
    let mut s = link.lock();
    s.child.supervisor_done = true;
    link.supervised.notify_all();
    if s.phase == Phase::Closing {
        link.finish_close(&mut s);
    }
    link.wake_if_needed(s);
}
