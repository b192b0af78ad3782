//! The turn layer driven without a child: events in stream order, the
//! answers to its requests, and what the host takes, checked against the
//! rules of `docs/semantics.md` ("Turns") and the protocol's bound.

use super::approvals::AnsweredBy;
use super::effects::{RequestKind, TurnRequest};
use super::event::Event;
use super::router::Turns;
use super::spec::{Answer, ApprovalOption, Decision, Entry, TurnSpec};
use super::update::{Cause, TurnEnd, TurnUpdate};
use crate::error::{ErrorCode, KomaError};
use crate::events::{Bound, Counting, End, EventBuffer, Take};
use crate::stop::Why;

struct Harness {
    turns: Turns,
    buf: EventBuffer,
    seq: u64,
    next_token: u64,
    /// Requests written, by token.
    sent: Vec<(u64, TurnRequest)>,
    updates: Vec<(u64, TurnUpdate)>,
    done: Vec<u64>,
    /// Requests the connection was told to abandon, by token.
    abandoned: Vec<u64>,
    /// The host's running counts of events and bytes taken.
    taken: (u32, u32),
}

impl Harness {
    fn new() -> Self {
        Self::with(Bound::default())
    }

    fn with(bound: Bound) -> Self {
        Harness {
            turns: Turns::default(),
            buf: EventBuffer::with_bound(bound),
            seq: 0,
            next_token: 100,
            sent: Vec::new(),
            updates: Vec::new(),
            done: Vec::new(),
            abandoned: Vec::new(),
            taken: (0, 0),
        }
    }

    /// What the connection does after each step: tokens for the requests.
    fn flush(&mut self) {
        loop {
            let effects = self.turns.take_effects();
            if effects.is_empty() {
                return;
            }
            for s in effects.requests {
                self.next_token += 1;
                self.turns.sent(self.next_token, s.key, s.kind);
                self.sent.push((self.next_token, s));
            }
            self.updates.extend(effects.updates);
            self.done.extend(effects.done);
            self.abandoned.extend(effects.abandon);
        }
    }

    fn open(&mut self, key: u64, entry: Entry, approvals: ApprovalOption) {
        let spec = TurnSpec {
            entry,
            params: Some("{\"text\":\"x\"}".into()),
            mode: None,
            approvals,
            timeout: None,
            stopped: None,
            refused: None,
        };
        self.turns.open(key, spec);
        self.flush();
    }

    fn token_of(&self, key: u64, what: RequestKind) -> u64 {
        self.sent.iter().rev().find(|(_, s)| s.key == key && s.kind == what).expect("sent").0
    }

    fn answer(&mut self, key: u64, what: RequestKind, json: &str) {
        let t = self.token_of(key, what);
        self.turns.answered(&mut self.buf, t, Ok(json.as_bytes()));
        self.flush();
    }

    fn submitted(&mut self, key: u64, id: &str) {
        self.answer(key, RequestKind::Submit, &format!("{{\"turn\":\"{id}\"}}"));
    }

    /// An event of `frame` bytes, in stream order.
    fn event_sized(&mut self, name: &'static str, data: &str, frame: usize) {
        self.seq += 1;
        if self.turns.routes_nothing() {
            let e = Event::new(self.seq, name, frame, data.as_bytes(), Vec::new());
            let entry_len = e.data_json().len() + 24;
            let (mut buf, seq) = (std::mem::take(&mut self.buf), self.seq);
            self.turns.push_main(&mut buf, frame, entry_len, Vec::new(), |out| {
                out.extend_from_slice(format!("{seq},\"{name}\",{data}").as_bytes())
            });
            self.buf = buf;
        } else {
            self.turns.deliver(&mut self.buf, Event::new(self.seq, name, frame, data.as_bytes(), Vec::new()));
        }
        self.flush();
    }

    fn event(&mut self, name: &'static str, data: &str) {
        self.event_sized(name, data, 100);
    }

    /// Take every event of a stream (the host counting each), as `seq:name`, and `overflow`.
    fn drain(&mut self, key: Option<u64>) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            self.buf.settle(self.taken.0, self.taken.1);
            let epoch = self.buf.epoch();
            let t = match key {
                None => self.buf.take(),
                Some(k) => self.turns.take(k, epoch, false),
            };
            match t {
                Take::Batch { json, counting, epoch, .. } => {
                    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
                    for e in v.as_array().unwrap().chunks(4) {
                        if counting != Counting::Uncounted && epoch == self.buf.epoch() {
                            self.taken.0 += 1;
                            self.taken.1 += e[3].as_u64().unwrap() as u32;
                        }
                        out.push(format!("{}:{}", e[0], e[1].as_str().unwrap()));
                    }
                }
                Take::Overflow { .. } => out.push("overflow".into()),
                Take::Empty | Take::Ended(_) => return out,
            }
        }
    }

    fn ended(&self, key: u64) -> Option<(serde_json::Value, Option<(ErrorCode, Cause)>)> {
        self.updates.iter().find_map(|(k, n)| match n {
            TurnUpdate::Ended(TurnEnd { result, error, .. }) if *k == key => Some((
                serde_json::from_slice(result.text()).unwrap(),
                error.as_ref().map(|e| (e.error.code, e.cause.clone())),
            )),
            _ => None,
        })
    }

    fn approvals_sent(&self) -> Vec<String> {
        self.sent
            .iter()
            .filter(|(_, s)| s.kind == RequestKind::Approve)
            .map(|(_, s)| s.params.clone().unwrap_or_default())
            .collect()
    }

    /// A plain turn `id`: started, `n` outputs, finished.
    fn plain_turn(&mut self, id: &str, n: usize) {
        self.event("turn_started", &format!("{{\"turn\":\"{id}\",\"text\":\"x\"}}"));
        self.event("state", "{\"status\":\"running\"}");
        for i in 0..n {
            self.event("output", &format!("{{\"turn\":\"{id}\",\"text\":\"{i};\"}}"));
        }
        self.event("turn_finished", &format!("{{\"turn\":\"{id}\",\"status\":\"completed\"}}"));
    }
}

// ---- the bound and the client's own stream (no turn)

#[test]
fn overflow_clears_pauses_and_reports_once() {
    let mut h = Harness::new();
    for _ in 0..256 {
        h.event("state", "{}");
    }
    assert_eq!(h.buf.counted_frames(), 256);
    h.event("state", "{}"); // the 257th
    assert_eq!(h.buf.counted_frames(), 0);
    assert!(h.buf.is_paused());
    for _ in 0..10 {
        h.event("state", "{}"); // paused: discarded, not a second report
    }
    assert_eq!(h.buf.take(), Take::Overflow { dropped: 267 });
    assert!(!h.buf.is_paused());
    assert_eq!(h.buf.take(), Take::Empty);
    h.event("state", "{}");
    assert_eq!(h.drain(None), vec![format!("{}:state", h.seq)]);
}

#[test]
fn lent_events_count_until_taken_and_an_overflow_revokes_them() {
    let mut h = Harness::new();
    for _ in 0..200 {
        h.event("state", "{}");
    }
    let Take::Batch { count, epoch, counting, .. } = h.buf.take() else { panic!() };
    assert_eq!((count, counting), (200, Counting::Revocable));
    assert_eq!(h.buf.counted_frames(), 200, "lent, not yet taken");
    h.buf.settle(50, 50 * 100);
    assert_eq!(h.buf.counted_frames(), 150);
    for _ in 0..106 {
        h.event("state", "{}");
    }
    assert!(!h.buf.is_paused());
    h.event("state", "{}"); // 150 lent + 106 queued + 1 is over 256
    assert_ne!(h.buf.epoch(), epoch, "the lent batch was revoked");
    h.buf.settle(51, 51 * 100); // a late count that raced the overflow cannot wrap the totals
    assert_eq!(h.buf.counted_frames(), 0);
    assert_eq!(h.buf.take(), Take::Overflow { dropped: 257 });
}

#[test]
fn the_byte_bound() {
    let mut h = Harness::new();
    h.event_sized("state", "{}", 40 << 20);
    h.event_sized("state", "{}", 24 << 20);
    assert_eq!(h.buf.counted_bytes(), 64 << 20);
    h.event_sized("state", "{}", 1);
    assert!(h.buf.is_paused(), "one byte more overflows");
}

#[test]
fn batches_are_capped_and_the_end_comes_after_what_is_queued() {
    let mut h = Harness::new();
    let big = format!("\"{}\"", "7".repeat(64 * 1024));
    for _ in 0..40 {
        h.event_sized("state", &big, 65_600);
    }
    h.buf.end(End::Finished);
    let Take::Batch { count, .. } = h.buf.take() else { panic!() };
    assert_eq!(count, 15);
    let mut n = count;
    while let Take::Batch { count, .. } = h.buf.take() {
        n += count;
    }
    assert_eq!(n, 40);
    assert_eq!(h.buf.take(), Take::Ended(End::Finished));
}

// ---- routing

#[test]
fn events_wait_for_the_submit_then_go_to_their_consumers_in_order() {
    let mut h = Harness::new();
    h.event("diagnostic", "{\"level\":\"info\",\"message\":\"created\"}");
    h.open(1, Entry::Turn, ApprovalOption::Text("allow".into()));
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("state", "{\"status\":\"running\"}");
    assert!(h.drain(Some(1)).is_empty(), "nothing is routed before the submit answers");
    assert_eq!(h.drain(None), vec!["1:diagnostic"], "what came before the turn opened is events()'");
    h.submitted(1, "t-1");
    h.event("output", "{\"turn\":\"t-1\",\"text\":\"a\"}");
    h.event("output", "{\"turn\":\"t-0\",\"text\":\"not mine\"}");
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"completed\"}");
    h.event("state", "{\"status\":\"idle\"}");
    assert_eq!(h.drain(Some(1)), vec!["2:turn_started", "3:state", "4:output", "6:turn_finished"]);
    assert_eq!(h.drain(None), vec!["5:output", "7:state"], "no event reaches both");
    let (r, error) = h.ended(1).expect("ended");
    assert!(error.is_none());
    assert_eq!(
        (r["turn"].as_str(), r["status"].as_str(), r["events"].as_u64()),
        (Some("t-1"), Some("completed"), Some(4))
    );
}

#[test]
fn a_run_keeps_no_event_and_its_result_is_whole() {
    let mut h = Harness::new();
    h.open(1, Entry::Run, ApprovalOption::Text("deny".into()));
    h.submitted(1, "t-1");
    h.plain_turn("t-1", 1000);
    assert_eq!(h.buf.counted_frames(), 0, "nothing kept, nothing counted");
    assert!(!h.buf.is_paused());
    let (r, _) = h.ended(1).unwrap();
    assert_eq!(r["events"], 1003);
    assert_eq!(r["status"], "completed");
    assert!(h.drain(Some(1)).is_empty());
    assert!(h.turns.routes_nothing(), "the turn is gone once it ended");
}

#[test]
fn a_turn_nobody_reads_counts_until_it_finishes_and_its_events_stay() {
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::Text("allow".into()));
    h.submitted(1, "t-1");
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("output", "{\"turn\":\"t-1\",\"text\":\"a\"}");
    assert_eq!(h.buf.counted_frames(), 2, "held for a loop that may come");
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"completed\"}");
    assert_eq!(h.buf.counted_frames(), 0, "finished and unread: no longer counted");
    assert_eq!(h.drain(Some(1)), vec!["1:turn_started", "2:output", "3:turn_finished"]);
    assert_eq!(h.taken, (0, 0), "uncounted: a late loop counts nothing");
}

#[test]
fn leaving_a_loop_interrupts_the_turn_and_what_it_left_stops_counting() {
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::Text("allow".into()));
    h.submitted(1, "t-1");
    h.turns.read(&mut h.buf, 1, true);
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("output", "{\"turn\":\"t-1\",\"text\":\"a\"}");
    h.turns.read(&mut h.buf, 1, false);
    h.flush();
    assert_eq!(h.buf.counted_frames(), 0);
    assert_eq!(h.sent.iter().filter(|(_, s)| s.kind == RequestKind::Interrupt).count(), 1, "the turn is interrupted");
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"interrupted\"}");
    assert!(h.ended(1).is_none(), "the result waits for its interrupt's answer");
    h.answer(1, RequestKind::Interrupt, "{\"turn\":\"t-1\"}");
    let (r, error) = h.ended(1).unwrap();
    assert_eq!((r["status"].as_str(), error), (Some("interrupted"), None), "it resolves: leaving is not a failure");
    assert_eq!(h.drain(Some(1)), vec!["1:turn_started", "2:output", "3:turn_finished"], "kept for a later loop");
}

// ---- approvals

#[test]
fn approvals_by_a_decision_a_function_and_the_application() {
    let mut h = Harness::new();
    let asked = |id: &str, a: &str| {
        format!("{{\"turn\":\"{id}\",\"approval\":\"{a}\",\"tool\":\"write_file\",\"input\":{{\"path\":\"n\"}}}}")
    };
    let call =
        |id: &str, c: &str| format!("{{\"turn\":\"{id}\",\"call\":\"{c}\",\"tool\":\"write_file\",\"input\":{{}}}}");
    // A fixed decision: answered at once, by the core.
    h.open(1, Entry::Run, ApprovalOption::Text("deny".into()));
    h.submitted(1, "t-1");
    h.event("tool_call", &call("t-1", "c-1"));
    h.event("approval_requested", &asked("t-1", "a-1"));
    assert_eq!(h.approvals_sent(), vec![r#"{"approval":"a-1","decision":"deny"}"#]);
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"completed\"}");
    assert_eq!(h.ended(1).unwrap().0["toolCalls"][0]["approval"], "deny");
    // A function: asked through updates; what it gives goes back as the answer.
    h.open(2, Entry::Run, ApprovalOption::Handler);
    h.submitted(2, "t-2");
    h.event("tool_call", &call("t-2", "c-2"));
    h.event("approval_requested", &asked("t-2", "a-2"));
    assert!(h.updates.iter().any(|(k, n)| *k == 2 && matches!(n, TurnUpdate::Approval(a) if a.approval == "a-2")));
    h.turns.answer(2, "a-2", Answer::text("yes", "\"yes\""));
    h.flush();
    assert_eq!(h.turns.approval_history(2), vec![("a-2".into(), Decision::Deny, AnsweredBy::HandlerFailed)]);
    h.turns.answer(2, "a-2", Answer::text("allow", "\"allow\"")); // answered already: ignored
    h.event("turn_finished", "{\"turn\":\"t-2\",\"status\":\"completed\"}");
    let (r, error) = h.ended(2).unwrap();
    assert_eq!(error, Some((ErrorCode::InvalidParams, Cause::Handler("a-2".into()))));
    assert_eq!(r["toolCalls"][0]["approval"], "deny");
    // The application, as it reads the turn; nobody reading: denied on the host's thread.
    h.open(3, Entry::Turn, ApprovalOption::None);
    h.submitted(3, "t-3");
    h.event("tool_call", &call("t-3", "c-3"));
    h.event("approval_requested", &asked("t-3", "a-3"));
    assert!(h.turns.needs_host());
    h.turns.read(&mut h.buf, 3, true);
    h.turns.decide_unread();
    h.flush();
    assert_eq!(h.approvals_sent().len(), 2, "a loop reads it: left to the application");
    h.turns.approved_by_application(r#"{"approval":"a-3","decision":"allow"}"#);
    assert_eq!(h.turns.approval_history(3), vec![("a-3".into(), Decision::Allow, AnsweredBy::Application)]);
    h.event("turn_finished", "{\"turn\":\"t-3\",\"status\":\"completed\"}");
    assert_eq!(h.ended(3).unwrap().0["toolCalls"][0]["approval"], "allow", "the application's answer is recorded");
    h.open(4, Entry::Turn, ApprovalOption::None);
    h.submitted(4, "t-4");
    h.event("approval_requested", &asked("t-4", "a-4"));
    h.turns.decide_unread();
    h.flush();
    assert_eq!(
        h.approvals_sent().last().unwrap(),
        r#"{"approval":"a-4","decision":"deny"}"#,
        "nobody reads it: denied"
    );
}

// ---- overflow, stops, failure

#[test]
fn an_overflow_costs_a_loop_events_never_the_turn_its_result() {
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::None);
    h.submitted(1, "t-1");
    h.turns.read(&mut h.buf, 1, true);
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("approval_requested", "{\"turn\":\"t-1\",\"approval\":\"a-1\",\"tool\":\"w\",\"input\":null}");
    for i in 0..300 {
        h.event("output", &format!("{{\"turn\":\"t-1\",\"text\":\"{i},\"}}"));
    }
    assert_eq!(
        h.approvals_sent(),
        vec![r#"{"approval":"a-1","decision":"deny"}"#],
        "its request was cleared unseen: denied"
    );
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"completed\"}");
    let seen = h.drain(Some(1));
    assert_eq!(seen.first().map(String::as_str), Some("overflow"), "the loop gets the report first");
    let (r, _) = h.ended(1).unwrap();
    assert_eq!(r["overflowed"], true);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["events"], 303, "the core collected every event");
}

#[test]
fn events_dropped_before_their_turn_was_known_still_tell_it_how_it_ended() {
    let mut h = Harness::new();
    h.open(1, Entry::Run, ApprovalOption::Text("allow".into()));
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("approval_requested", "{\"turn\":\"t-1\",\"approval\":\"a-1\",\"tool\":\"w\",\"input\":null}");
    for i in 0..300 {
        h.event("output", &format!("{{\"turn\":\"t-1\",\"text\":\"{i},\"}}"));
    }
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"completed\"}");
    h.submitted(1, "t-1");
    let (r, error) = h.ended(1).expect("it learned its end from a note");
    assert_eq!((r["status"].as_str(), r["overflowed"].as_bool(), error), (Some("completed"), Some(true), None));
    assert!(
        h.approvals_sent().contains(&r#"{"approval":"a-1","decision":"deny"}"#.to_owned()),
        "nobody saw it: denied"
    );
    assert_eq!(h.drain(None).first().map(String::as_str), Some("overflow"));
}

#[test]
fn a_stop_before_the_id_interrupts_once_it_is_known_and_fails_the_result_after_the_end() {
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::Text("allow".into()));
    assert!(h.turns.expire(1, std::time::Duration::from_millis(50)), "its grace starts");
    assert!(!h.turns.stop(1, &Why::Cancelled), "once");
    h.flush();
    assert!(h.sent.iter().all(|(_, s)| s.kind != RequestKind::Interrupt), "no id yet: nothing to name");
    h.submitted(1, "t-1");
    assert!(h.sent.iter().any(|(_, s)| s.kind == RequestKind::Interrupt));
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"escalated\"}");
    h.answer(1, RequestKind::Interrupt, "{\"turn\":\"t-1\"}");
    let (r, error) = h.ended(1).unwrap();
    assert_eq!(error, Some((ErrorCode::Timeout, Cause::Stop)));
    assert_eq!(r["status"], "escalated", "a status outside the catalog is passed on");
}

#[test]
fn the_client_failing_ends_open_turns_and_what_waited_goes_to_events() {
    let mut h = Harness::new();
    h.open(1, Entry::Run, ApprovalOption::Text("allow".into()));
    h.open(2, Entry::Turn, ApprovalOption::Text("allow".into()));
    h.submitted(1, "t-1");
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("output", "{\"turn\":\"t-9\",\"text\":\"?\"}"); // waits: turn 2 has no id
    let gone = KomaError::new(ErrorCode::TransportFailure, "koma was killed");
    h.turns.end_all(&mut h.buf, &gone);
    h.flush();
    let (r1, e1) = h.ended(1).unwrap();
    assert_eq!((r1["turn"].as_str(), r1["status"].as_str()), (Some("t-1"), Some("unknown")));
    assert_eq!(e1, Some((ErrorCode::TransportFailure, Cause::Client)));
    let (r2, _) = h.ended(2).unwrap();
    assert!(r2["turn"].is_null(), "no id: no turn");
    assert_eq!(r1["events"], 1, "what waited went to its turn first");
    assert_eq!(h.drain(None), vec!["2:output"], "and the rest to events()");
}

#[test]
fn the_core_judges_what_a_handler_returned() {
    // The host hands over what the function gave, as it is: the core says
    // whether it is a decision, and the words of the refusal.
    let mut h = Harness::new();
    let answers = [
        (Answer::text("allow", "'allow'"), Decision::Allow, AnsweredBy::Handler, None),
        (Answer::text("deny", "\"deny\""), Decision::Deny, AnsweredBy::Handler, None),
        (
            Answer::text("Allow", "\"Allow\""),
            Decision::Deny,
            AnsweredBy::HandlerFailed,
            Some("`onApproval` returned \"Allow\"; it must return \"allow\" or \"deny\" (the approval was denied)"),
        ),
        (
            Answer::Returned { text: None, shown: "None".into() },
            Decision::Deny,
            AnsweredBy::HandlerFailed,
            Some("`onApproval` returned None; it must return \"allow\" or \"deny\" (the approval was denied)"),
        ),
        (
            Answer::Failed("ValueError: no".into()),
            Decision::Deny,
            AnsweredBy::HandlerFailed,
            Some("`onApproval` failed, so the approval was denied: ValueError: no"),
        ),
    ];
    for (i, (answer, decision, by, refusal)) in answers.into_iter().enumerate() {
        let key = i as u64 + 1;
        let id = format!("t-{key}");
        h.open(key, Entry::Run, ApprovalOption::Handler);
        h.submitted(key, &id);
        h.event("tool_call", &format!("{{\"turn\":\"{id}\",\"call\":\"c-1\",\"tool\":\"write_file\",\"input\":{{}}}}"));
        h.event("approval_requested", &format!("{{\"turn\":\"{id}\",\"approval\":\"a-1\",\"tool\":\"write_file\"}}"));
        h.turns.answer(key, "a-1", answer);
        h.flush();
        assert_eq!(h.turns.approval_history(key), vec![("a-1".into(), decision, by)]);
        h.event("turn_finished", &format!("{{\"turn\":\"{id}\",\"status\":\"completed\"}}"));
        let message = h.updates.iter().find_map(|(k, n)| match n {
            TurnUpdate::Ended(end) if *k == key => Some(end.error.as_ref().map(|e| e.error.message.clone())),
            _ => None,
        });
        assert_eq!(message, Some(refusal.map(String::from)), "answer {key}");
    }
}

#[test]
fn a_turn_that_never_got_an_id_fails_its_id_and_one_that_did_does_not() {
    let fails_id = |h: &Harness, key: u64| {
        h.updates.iter().find_map(|(k, n)| match n {
            TurnUpdate::Ended(end) if *k == key => end.error.as_ref().map(|e| e.fails_id),
            _ => None,
        })
    };
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::Text("allow".into()));
    let submit = h.token_of(1, RequestKind::Submit);
    h.turns.answered(&mut h.buf, submit, Err(KomaError::new(ErrorCode::Remote, "busy")));
    h.flush();
    assert_eq!(fails_id(&h, 1), Some(true), "the submit failed");
    h.open(2, Entry::Turn, ApprovalOption::Text("allow".into()));
    h.submitted(2, "t-2");
    h.turns.end_all(&mut h.buf, &KomaError::new(ErrorCode::TransportFailure, "gone"));
    h.flush();
    assert_eq!(fails_id(&h, 2), Some(false), "its id came before");
    let refused = Turns::refused_end(KomaError::new(ErrorCode::Closed, "the client was closed"), false);
    let error = refused.error.expect("fails");
    assert!(error.fails_id && error.cause == Cause::Client);
    let result: serde_json::Value = serde_json::from_slice(refused.result.text()).unwrap();
    assert_eq!(
        result,
        serde_json::json!({"turn": null, "status": "unknown", "output": "", "toolCalls": [], "events": 0, "overflowed": false})
    );
}

#[test]
fn bad_options_end_the_turn_at_once_and_write_nothing() {
    let mut h = Harness::new();
    let spec = TurnSpec {
        entry: Entry::Run,
        params: Some("{\"text\":\"x\"}".into()),
        mode: Some("later".into()),
        approvals: ApprovalOption::Text("allow".into()),
        timeout: None,
        stopped: None,
        refused: None,
    };
    h.turns.open(1, spec);
    h.flush();
    assert!(h.sent.is_empty());
    let (r, error) = h.ended(1).unwrap();
    assert_eq!(error.map(|e| e.0), Some(ErrorCode::InvalidParams));
    assert!(r["turn"].is_null());
    h.open(2, Entry::Run, ApprovalOption::None);
    assert_eq!(h.ended(2).unwrap().1.map(|e| e.0), Some(ErrorCode::InvalidParams), "run() needs an approval option");
}

#[test]
fn a_stopped_turn_that_koma_never_ends_is_given_up_and_its_later_events_go_to_events() {
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::Text("deny".into()));
    h.submitted(1, "t-1");
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.event("output", "{\"turn\":\"t-1\",\"text\":\"a\"}");
    assert!(h.turns.stop(1, &Why::Signal { reason: Some("TimeoutError".into()) }));
    h.flush();
    let interrupt = h.token_of(1, RequestKind::Interrupt);
    assert!(h.ended(1).is_none(), "it waits for koma within the grace");
    h.turns.give_up(&mut h.buf, 1);
    h.flush();
    let (r, error) = h.ended(1).expect("given up: settled");
    assert_eq!(error, Some((ErrorCode::Timeout, Cause::Stop)));
    assert_eq!(
        (r["turn"].as_str(), r["status"].as_str(), r["events"].as_u64()),
        (Some("t-1"), Some("unknown"), Some(2))
    );
    assert_eq!(h.abandoned, vec![interrupt], "its interrupt is abandoned");
    assert_eq!(h.drain(Some(1)), vec!["1:turn_started", "2:output"], "its loop gets what it took in, then ends");
    // Its later events, by its id or not, are events()'s, in order, once each.
    h.event("output", "{\"turn\":\"t-1\",\"text\":\"b\"}");
    h.event("state", "{\"status\":\"running\"}");
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"interrupted\"}");
    assert_eq!(h.drain(None), vec!["3:output", "4:state", "5:turn_finished"]);
    // A late answer to the interrupt changes nothing.
    h.turns.answered(&mut h.buf, interrupt, Ok(b"{\"turn\":\"t-1\"}"));
    h.flush();
    assert_eq!(h.updates.iter().filter(|(k, n)| *k == 1 && matches!(n, TurnUpdate::Ended(_))).count(), 1);
}

#[test]
fn a_turn_given_up_before_its_submit_answered_abandons_it_and_releases_the_held_events() {
    let mut h = Harness::new();
    h.open(1, Entry::Run, ApprovalOption::Text("deny".into()));
    let submit = h.token_of(1, RequestKind::Submit);
    h.event("output", "{\"turn\":\"t-7\",\"text\":\"?\"}"); // held: it may be turn 1's
    assert!(h.turns.stop(1, &Why::Cancelled));
    h.flush();
    assert!(h.sent.iter().all(|(_, s)| s.kind != RequestKind::Interrupt), "no id: nothing written yet");
    h.turns.give_up(&mut h.buf, 1);
    h.flush();
    let (r, error) = h.ended(1).expect("given up");
    assert_eq!(error, Some((ErrorCode::Aborted, Cause::Stop)));
    assert!(r["turn"].is_null());
    assert_eq!(h.abandoned, vec![submit]);
    assert_eq!(h.drain(None), vec!["1:output"], "what was held goes on");
    h.turns.answered(&mut h.buf, submit, Ok(b"{\"turn\":\"t-1\"}"));
    h.flush();
    assert!(h.sent.iter().all(|(_, s)| s.kind != RequestKind::Interrupt), "a late answer writes nothing");
}

#[test]
fn a_stop_after_turn_finished_keeps_the_result_and_the_grace_bounds_the_interrupts_answer() {
    let mut h = Harness::new();
    h.open(1, Entry::Turn, ApprovalOption::Text("deny".into()));
    h.submitted(1, "t-1");
    h.event("turn_started", "{\"turn\":\"t-1\",\"text\":\"x\"}");
    h.turns.read(&mut h.buf, 1, false); // a loop left: interrupt
    h.flush();
    h.event("turn_finished", "{\"turn\":\"t-1\",\"status\":\"interrupted\"}");
    assert!(h.ended(1).is_none(), "it waits for its interrupt's answer");
    assert!(h.turns.expire(1, std::time::Duration::from_millis(10)));
    h.turns.give_up(&mut h.buf, 1);
    h.flush();
    let (r, error) = h.ended(1).expect("settled by the grace");
    assert_eq!((r["status"].as_str(), error), (Some("interrupted"), None), "its turn_finished had come");
}
