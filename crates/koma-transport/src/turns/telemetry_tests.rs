//! A traced turn's record (`super::telemetry`), driven through the router
//! as the connection drives it.

use serde_json::Value;

use super::effects::RequestKind;
use super::event::Event;
use super::router::Turns;
use super::spec::{Answer, ApprovalOption, Entry, TurnSpec};
use super::update::TurnUpdate;
use crate::events::EventBuffer;
use crate::telemetry::TelemetryOptions;

/// A traced turn `1` of `Entry::Run` with a handler, driven through the router.
struct Harness {
    turns: Turns,
    buf: EventBuffer,
    seq: u64,
    token: u64,
    sent: Vec<(u64, RequestKind)>,
    updates: Vec<TurnUpdate>,
}

impl Harness {
    fn new(content: bool, approvals: ApprovalOption) -> Harness {
        Harness::with(Some(TelemetryOptions { content }), approvals)
    }

    fn with(telemetry: Option<TelemetryOptions>, approvals: ApprovalOption) -> Harness {
        let mut turns = Turns::default().traced(telemetry);
        turns.answered_session("create", br#"{"session":"s-1","state":{}}"#);
        let mut h =
            Harness { turns, buf: EventBuffer::default(), seq: 0, token: 0, sent: Vec::new(), updates: Vec::new() };
        let params = Some(r#"{"text":"deploy"}"#.into());
        let spec =
            TurnSpec { entry: Entry::Run, params, mode: None, approvals, timeout: None, stopped: None, refused: None };
        h.turns.open(1, spec);
        h.flush();
        h.answer(RequestKind::Submit, r#"{"turn":"t-1"}"#);
        h
    }

    fn flush(&mut self) {
        let effects = self.turns.take_effects();
        for s in effects.requests {
            self.token += 1;
            self.turns.sent(self.token, s.key, s.kind);
            self.sent.push((self.token, s.kind));
        }
        self.updates.extend(effects.updates.into_iter().map(|(_, n)| n));
    }

    fn answer(&mut self, what: RequestKind, json: &str) {
        let t = self.sent.iter().rev().find(|(_, w)| *w == what).unwrap().0;
        self.turns.answered(&mut self.buf, t, Ok(json.as_bytes()));
        self.flush();
    }

    fn event(&mut self, name: &'static str, data: &str) {
        self.seq += 1;
        self.turns.deliver(&mut self.buf, Event::new(self.seq, name, 100, data.as_bytes(), Vec::new()));
        self.flush();
    }

    /// The record the turn's end carried (`None`: the turn did not end, or had none).
    fn ended_with(&self) -> Option<Option<String>> {
        self.updates.iter().find_map(|n| match n {
            TurnUpdate::Ended(end) => Some(end.telemetry.clone()),
            _ => None,
        })
    }

    fn record(&self) -> Value {
        serde_json::from_str(&self.ended_with().flatten().expect("a record")).unwrap()
    }
}

#[test]
fn a_turn_with_two_tools_and_two_approvals_records_its_tree() {
    let mut h = Harness::new(false, ApprovalOption::Handler);
    h.event("turn_started", r#"{"turn":"t-1","text":"deploy"}"#);
    h.event("output", r#"{"turn":"t-1","text":"a"}"#);
    h.event("tool_call", r#"{"turn":"t-1","call":"c-1","tool":"git_push","input":{}}"#);
    h.event("approval_requested", r#"{"turn":"t-1","approval":"a-1","tool":"git_push","input":{}}"#);
    h.turns.answer(1, "a-1", Answer::text("allow", "\"allow\""));
    h.flush();
    h.event("tool_result", r#"{"turn":"t-1","call":"c-1","output":"pushed","error":false}"#);
    h.event("tool_call", r#"{"turn":"t-1","call":"c-2","tool":"rm","input":{}}"#);
    h.event("approval_requested", r#"{"turn":"t-1","approval":"a-2","tool":"rm","input":{}}"#);
    h.turns.answer(1, "a-2", Answer::Failed("boom".into()));
    h.flush();
    h.event("tool_result", r#"{"turn":"t-1","call":"c-2","output":"no","error":true}"#);
    h.event("output", r#"{"turn":"t-1","text":"b"}"#);
    h.event("turn_finished", r#"{"turn":"t-1","status":"completed"}"#);
    let r = h.record();
    let a = &r["attributes"];
    assert_eq!(a["koma.turn.id"], "t-1");
    assert_eq!(a["gen_ai.conversation.id"], "s-1");
    assert_eq!((a["koma.turn.status"].as_str(), a["koma.turn.output_events"].as_u64()), (Some("completed"), Some(2)));
    assert_eq!(a["koma.turn.tool_calls"], 2);
    assert!(a.get("gen_ai.input.messages").is_none(), "no content unless asked");
    assert_eq!(r["error"], "invalid_params", "the handler failed: the turn fails");
    let spans = r["spans"].as_array().unwrap();
    let names: Vec<_> = spans.iter().map(|s| (s["name"].as_str().unwrap(), s["parent"].as_u64())).collect();
    assert_eq!(
        names,
        [
            ("execute_tool git_push", None),
            ("execute_tool rm", None),
            ("approval git_push", Some(0)),
            ("approval rm", Some(1))
        ]
    );
    assert_eq!(spans[0]["attributes"]["koma.tool.outcome"], "ok");
    assert_eq!(spans[1]["attributes"]["koma.tool.outcome"], "denied");
    assert_eq!(spans[1]["error"], "tool_error");
    assert_eq!(spans[2]["attributes"]["koma.approval.decision"], "allow");
    assert_eq!(spans[2]["attributes"]["koma.approval.answered_by"], "handler");
    assert_eq!(spans[3]["attributes"]["koma.approval.decision"], "deny");
    assert_eq!(spans[3]["error"], "invalid_params");
    for s in spans {
        let (start, end) = (s["start"].as_u64().unwrap(), s["end"].as_u64().unwrap());
        assert!(start <= end && end <= r["end"].as_u64().unwrap(), "{s}");
    }
    let points: Vec<_> = r["metrics"].as_array().unwrap().iter().map(|m| m["instrument"].as_str().unwrap()).collect();
    assert_eq!(
        points,
        [
            "gen_ai.client.operation.duration",
            "koma.tool.calls",
            "koma.tool.calls",
            "koma.approval.duration",
            "koma.approval.duration"
        ]
    );
}

#[test]
fn content_is_recorded_only_when_asked() {
    let mut h = Harness::new(true, ApprovalOption::Text("allow".into()));
    h.event("turn_started", r#"{"turn":"t-1","text":"deploy"}"#);
    h.event("tool_call", r#"{"turn":"t-1","call":"c-1","tool":"read","input":{"path":"a"}}"#);
    h.event("tool_result", r#"{"turn":"t-1","call":"c-1","output":"text","error":false}"#);
    h.event("output", r#"{"turn":"t-1","text":"Done."}"#);
    h.event("turn_finished", r#"{"turn":"t-1","status":"failed","error":"out of time"}"#);
    let r = h.record();
    let a = &r["attributes"];
    assert_eq!(a["gen_ai.input.messages"], r#"[{"parts":[{"content":"deploy","type":"text"}],"role":"user"}]"#);
    assert!(a["gen_ai.output.messages"].as_str().unwrap().contains(r#""content":"Done.""#));
    assert_eq!(r["spans"][0]["attributes"]["gen_ai.tool.call.arguments"], r#"{"path":"a"}"#);
    assert_eq!(r["spans"][0]["attributes"]["gen_ai.tool.call.result"], r#""text""#);
    assert_eq!((r["error"].as_str(), r["message"].as_str()), (Some("turn_failed"), Some("out of time")));
}

#[test]
fn an_untraced_clients_turn_hands_over_no_record() {
    let mut h = Harness::with(None, ApprovalOption::Text("allow".into()));
    h.event("turn_started", r#"{"turn":"t-1","text":"deploy"}"#);
    h.event("tool_call", r#"{"turn":"t-1","call":"c-1","tool":"read","input":{}}"#);
    h.event("output", r#"{"turn":"t-1","text":"x"}"#);
    h.event("turn_finished", r#"{"turn":"t-1","status":"completed"}"#);
    assert_eq!(h.ended_with(), Some(None), "it ended, with no record");
}

#[test]
fn a_traced_turn_refused_at_once_still_has_a_record() {
    // Refused by its options: no timeline, only why it failed (the first line).
    let mut turns = Turns::default().traced(Some(TelemetryOptions { content: false }));
    let mode = Some("later".into());
    let approvals = ApprovalOption::Text("allow".into());
    let spec =
        TurnSpec { entry: Entry::Run, params: None, mode, approvals, timeout: None, stopped: None, refused: None };
    turns.open(7, spec);
    let ended = turns.take_effects().updates.into_iter().find_map(|(_, u)| match u {
        TurnUpdate::Ended(end) => end.telemetry,
        _ => None,
    });
    let r: Value = serde_json::from_str(&ended.expect("a record")).unwrap();
    assert_eq!(r["error"], "invalid_params");
    assert_eq!(r["message"], "run: `mode` must be \"submit\" or \"interrupt\", not \"later\"");
    // Refused by the client (closed): the same, from the core's connection.
    let closed = crate::error::KomaError::new(crate::error::ErrorCode::Closed, "the client was closed\nkoma said: bye");
    let end = Turns::refused_end(closed, true);
    let r: Value = serde_json::from_str(&end.telemetry.expect("a record")).unwrap();
    assert_eq!((r["error"].as_str(), r["message"].as_str()), (Some("closed"), Some("the client was closed")));
    assert!(Turns::refused_end(crate::error::KomaError::new(crate::error::ErrorCode::Closed, "x"), false)
        .telemetry
        .is_none());
}
