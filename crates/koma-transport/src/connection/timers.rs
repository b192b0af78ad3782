//! The calls' deadlines: one sleeping task per call that has a `timeout`,
//! cancelled as soon as the call settles, and holding only a weak reference
//! to the connection, so a deadline never keeps a connection's memory alive.
//! A turn has one such timer, under its key: its deadline, then, once it is
//! stopped (by its deadline or by the host), its stop's grace
//! ([`TURN_STOP_GRACE`]), past which it settles whatever koma does.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::completion::Outcome;
use super::link::Link;
use super::state::{Deadline, Shared};
use crate::stop::{deadline_error, Stopped, Why, TURN_STOP_GRACE};

/// Give the call `token` a deadline (with the lock held, so that it is
/// registered before the call can settle).
pub(super) fn expire_after(link: &Arc<Link>, s: &mut Shared, token: u64, after: Duration) {
    // A call is only accepted while the connection holds the I/O threads
    // (from its start until its supervisor is done, by which time it has
    // closed, failed or ended, and refuses calls).
    let Some(io) = link.io() else { return };
    let weak = Arc::downgrade(link);
    let task = io.spawn(async move {
        tokio::time::sleep(after).await;
        expire(weak, token, after);
    });
    s.calls.timers.insert(token, Deadline::new(task.abort_handle()));
}

/// Give turn `key` its deadline: past it, the turn is stopped with
/// `timeout` (the agent is interrupted; the result fails once it finished,
/// or when the stop's grace passed).
pub(super) fn expire_turn_after(link: &Arc<Link>, s: &mut Shared, key: u64, after: Duration) {
    after_turn_timer(link, s, key, after, move |link, s| {
        if s.turns.expire(key, after) {
            grace(link, s, key);
        }
    });
}

/// The host stopped turn `key` (see [`crate::stop::Why`]): the agent is
/// interrupted, and the stop's grace starts.
pub(super) fn stop_turn(link: &Arc<Link>, s: &mut Shared, key: u64, stop: &Why) {
    if s.turns.stop(key, stop) {
        grace(link, s, key);
    }
}

/// Start turn `key`'s stop grace (in place of its deadline, if that still
/// runs: the turn is stopped already): past it, the turn is given up.
fn grace(link: &Arc<Link>, s: &mut Shared, key: u64) {
    after_turn_timer(link, s, key, TURN_STOP_GRACE, move |_, s| {
        let Shared { turns, stream, .. } = s;
        turns.give_up(&mut stream.events, key);
    });
}

/// Run `then` with the lock held `after` from now, as turn `key`'s timer
/// (cancelled when the turn ends, or replaced by its next timer).
fn after_turn_timer(
    link: &Arc<Link>,
    s: &mut Shared,
    key: u64,
    after: Duration,
    then: impl FnOnce(&Arc<Link>, &mut Shared) + Send + 'static,
) {
    // A turn that writes its submit has started the connection, which then
    // holds the I/O threads; one that did not has ended already.
    let Some(io) = link.io() else { return };
    let weak = Arc::downgrade(link);
    let task = io.spawn(async move {
        tokio::time::sleep(after).await;
        let Some(link) = weak.upgrade() else { return };
        let mut s = link.lock();
        if let Some(d) = s.calls.timers.remove(&key) {
            d.fired();
        }
        then(&link, &mut s);
        link.wake_if_needed(s);
    });
    s.calls.timers.insert(key, Deadline::new(task.abort_handle()));
}

/// The deadline of `token` has passed: the call fails with `timeout`, unless
/// it settled meanwhile (or the connection is gone).
fn expire(link: Weak<Link>, token: u64, after: Duration) {
    let Some(link) = link.upgrade() else { return };
    let mut s = link.lock();
    if let Some(d) = s.calls.timers.remove(&token) {
        d.fired(); // this task is ending: nothing to cancel
    }
    if let Some(method) = s.forget(token) {
        let e = deadline_error(&method, Stopped::Call, after, &link.options.wording);
        s.complete(token, Outcome::Error(e));
        link.wake_if_needed(s);
    }
}

#[cfg(test)]
mod tests {
    //! The stop grace, exactly: under a runtime whose clock is paused (it
    //! moves only as the test says, or, when every task waits, straight to
    //! the next timer), a stopped turn is given up neither a millisecond
    //! before [`TURN_STOP_GRACE`] from its stop nor later than it, whether
    //! the host stopped it or its deadline did. The hosts' tests check the
    //! wiring (the interrupt written, the error and the partial result
    //! handed over); the time is checked here.

    use std::sync::Arc;
    use std::time::Duration;

    use super::{expire_turn_after, stop_turn, TURN_STOP_GRACE};
    use crate::connection::completion::{Outcome, Waker};
    use crate::connection::link::Link;
    use crate::connection::options::ConnectionOptions;
    use crate::error::ErrorCode;
    use crate::stop::Why;
    use crate::turns::{ApprovalOption, Entry, RequestKind, TurnSpec, TurnUpdate};

    struct NoWaker;
    impl Waker for NoWaker {
        fn wake(&self) {}
    }

    const KEY: u64 = 7;
    const MS: Duration = Duration::from_millis(1);

    /// A connection on a paused runtime of the test's, with turn `KEY`
    /// running: its submit written and answered.
    fn running_turn(rt: &tokio::runtime::Runtime, timeout: Option<Duration>) -> Arc<Link> {
        let link = Arc::new(Link::new(ConnectionOptions::default(), Box::new(NoWaker)));
        link.hold_io_on(rt.handle().clone());
        let mut s = link.lock();
        let spec = TurnSpec {
            entry: Entry::Run,
            params: Some(r#"{"text":"go"}"#.into()),
            mode: None,
            approvals: ApprovalOption::Text("deny".into()),
            timeout,
            stopped: None,
            refused: None,
        };
        s.turns.open(KEY, spec);
        if let Some(d) = timeout {
            expire_turn_after(&link, &mut s, KEY, d);
        }
        let submit = s.turns.take_effects().requests.pop().expect("the submit");
        assert_eq!(submit.kind, RequestKind::Submit);
        s.turns.sent(1, KEY, RequestKind::Submit);
        let crate::connection::state::Shared { turns, stream, .. } = &mut *s;
        turns.answered(&mut stream.events, 1, Ok(br#"{"turn":"t-1"}"#));
        let effects = s.turns.take_effects();
        assert!(matches!(effects.updates.as_slice(), [(KEY, TurnUpdate::Id(id))] if id == "t-1"));
        drop(s);
        link
    }

    /// The stop's interrupt, handed to the connection to write (queued, as
    /// this connection has no child): its token.
    fn interrupt_written(link: &Link) -> u64 {
        let mut s = link.lock();
        link.run_turns(&mut s);
        let asked: Vec<_> = s.calls.before_hello.iter().map(|q| (q.token, q.method.clone())).collect();
        match asked.as_slice() {
            [(token, method)] if method == "interrupt" => *token,
            other => panic!("the stop interrupts the agent, once: {other:?}"),
        }
    }

    /// Whether the turn has ended (its end handed to the host), and with which message.
    fn ended(link: &Link) -> Option<String> {
        let s = link.lock();
        s.outbox.completions.iter().find_map(|c| match &c.outcome {
            Outcome::Turn(TurnUpdate::Ended(end)) if c.token == KEY => {
                let e = end.error.as_ref().expect("a given-up turn fails");
                Some(format!("{}: {}", e.error.code, e.error.message))
            }
            _ => None,
        })
    }

    fn paused() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap()
    }

    /// Let the clock move `d` (every timer due by then fires, in order).
    fn pass(rt: &tokio::runtime::Runtime, d: Duration) {
        rt.block_on(async {
            tokio::time::sleep(d).await;
            // The timers due now run before this returns.
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
        });
    }

    #[test]
    fn a_turn_stopped_by_the_host_is_given_up_exactly_its_grace_after_the_stop() {
        let rt = paused();
        let link = running_turn(&rt, None);
        pass(&rt, Duration::from_secs(5)); // a while later, koma still working
        let stopped_at = rt.block_on(async { tokio::time::Instant::now() });
        {
            let mut s = link.lock();
            stop_turn(&link, &mut s, KEY, &Why::Cancelled);
        }
        interrupt_written(&link);
        pass(&rt, TURN_STOP_GRACE - MS);
        assert_eq!(ended(&link), None, "not given up a millisecond before the grace");
        pass(&rt, MS);
        let now = rt.block_on(async { tokio::time::Instant::now() });
        assert_eq!(now - stopped_at, TURN_STOP_GRACE);
        let message = ended(&link).expect("given up once the grace passed");
        assert_eq!(
            message,
            "aborted: `run` was cancelled; the agent was interrupted (koma did not end the turn within \
             1000 ms of the stop: the turn was given up, and its later events go to `events`)"
        );
    }

    #[test]
    fn a_turn_past_its_deadline_is_given_up_exactly_its_grace_after_the_deadline() {
        let rt = paused();
        let deadline = Duration::from_millis(2500);
        let link = running_turn(&rt, Some(deadline));
        pass(&rt, deadline - MS);
        {
            let mut s = link.lock();
            link.run_turns(&mut s);
            assert!(s.calls.before_hello.is_empty(), "nothing interrupted before the deadline");
        }
        pass(&rt, MS);
        interrupt_written(&link);
        pass(&rt, TURN_STOP_GRACE - MS);
        assert_eq!(ended(&link), None, "not given up a millisecond before the grace");
        pass(&rt, MS);
        let message = ended(&link).expect("given up at the deadline plus the grace");
        assert!(
            message.starts_with(&format!("{}: the turn did not finish within 2500 ms", ErrorCode::Timeout)),
            "{message}"
        );
        assert!(message.contains("within 1000 ms of the stop"), "{message}");
    }

    #[test]
    fn a_turn_that_ends_within_its_grace_is_not_given_up() {
        let rt = paused();
        let link = running_turn(&rt, None);
        {
            let mut s = link.lock();
            stop_turn(&link, &mut s, KEY, &Why::Cancelled);
        }
        let interrupt = interrupt_written(&link);
        pass(&rt, TURN_STOP_GRACE - MS);
        {
            // koma answers the interrupt and finishes the turn just in time.
            let mut s = link.lock();
            let crate::connection::state::Shared { turns, stream, .. } = &mut *s;
            turns.answered(&mut stream.events, interrupt, Ok(br#"{"turn":"t-1"}"#));
            turns.deliver(
                &mut stream.events,
                crate::turns::Event::new(
                    1,
                    "turn_finished",
                    60,
                    br#"{"turn":"t-1","status":"interrupted"}"#,
                    Vec::new(),
                ),
            );
            link.run_turns(&mut s);
        }
        let message = ended(&link).expect("it ended with koma's end");
        assert!(!message.contains("given up"), "{message}");
        assert!(link.lock().calls.timers.is_empty(), "its grace was cancelled as it ended");
        pass(&rt, Duration::from_secs(10));
    }
}
