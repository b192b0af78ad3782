//! A traced turn (see `crate::telemetry`): its timeline, kept as its events
//! arrive, and the record it hands the host when it ends.
//!
//! The timeline holds when each tool call started (`tool_call`) and ended
//! (`tool_result`), when each approval was asked and answered, with the
//! decision and who answered (the approval bookkeeping's `AnsweredBy`), and how
//! many `output` events came: a count, nothing else per output. The record
//! (`TurnUpdate::Ended`'s `telemetry`, JSON text) is the turn span's
//! attributes, status and end, its child spans (`execute_tool {tool}` per
//! tool call, `approval {tool}` per approval request under the tool call it
//! is for), and its metric points. A host makes the turn span when the turn
//! starts, in the caller's context, and the child spans from the record.
//!
//! Times are nanoseconds after the turn was opened (monotonic): the host
//! stamped the turn span's start just before it opened the turn, and adds
//! them to that start, so every time of a turn is on the host's own clock.

use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::approvals::AnsweredBy;
use super::event::Event;
use super::fields::Fields;
use super::result::{self, Collected};
use super::spec::{Checked, Decision};
use super::update::TurnError;
use crate::lift::{Chars, Step};
use crate::telemetry::names as n;
use crate::telemetry::TelemetryOptions;

/// A traced client's turns: what each is traced with.
pub(super) struct Tracing {
    content: bool,
    /// The session of `create` or `resume` (`gen_ai.conversation.id`).
    session: Option<Arc<str>>,
}

impl Tracing {
    pub fn new(telemetry: TelemetryOptions) -> Tracing {
        Tracing { content: telemetry.content, session: None }
    }

    /// A request was answered with `result` (JSON text): the session that
    /// `create` or `resume` names is the traced turns' conversation.
    pub fn answered(&mut self, method: &str, result: &[u8]) {
        #[derive(Deserialize)]
        struct Session {
            session: String,
        }
        if matches!(method, "create" | "resume") {
            if let Ok(s) = serde_json::from_slice::<Session>(result) {
                self.session = Some(s.session.into());
            }
        }
    }

    /// The timeline of a turn that opens now (checked as `checked`).
    pub fn timeline(&self, checked: &Checked) -> Box<Timeline> {
        Box::new(Timeline::new(self, checked))
    }
}

struct ToolTimes {
    start: u64,
    end: Option<u64>,
}

struct Asked {
    approval: String,
    tool: Option<String>,
    /// The tool call it is for, by index in the turn's calls.
    call: Option<usize>,
    start: u64,
    answer: Option<(u64, Decision, AnsweredBy)>,
}

pub(super) struct Timeline {
    opened: Instant,
    content: bool,
    session: Option<Arc<str>>,
    mode: &'static str,
    /// The submit's text, when content is recorded.
    prompt: Option<String>,
    outputs: u64,
    /// By index in the turn's tool calls (`Collected::calls`).
    tools: Vec<ToolTimes>,
    approvals: Vec<Asked>,
    /// What `turn_finished` said went wrong.
    finish_error: Option<String>,
}

impl Timeline {
    fn new(t: &Tracing, c: &Checked) -> Timeline {
        #[derive(Deserialize)]
        struct Params {
            text: String,
        }
        let prompt = c.params.as_deref().filter(|_| t.content).and_then(|p| serde_json::from_str::<Params>(p).ok());
        Timeline {
            opened: Instant::now(),
            content: t.content,
            session: t.session.clone(),
            mode: if c.method == "interrupt_and_submit" { "interrupt" } else { "submit" },
            prompt: prompt.map(|p| p.text),
            outputs: 0,
            tools: Vec::new(),
            approvals: Vec::new(),
            finish_error: None,
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// One of the turn's events with fields, before `collected` takes it.
    pub fn saw(&mut self, e: &Event<'_>, f: &Fields<'_>, collected: &Collected) {
        match e.name {
            "output" => self.outputs += 1,
            "tool_call" => self.tools.push(ToolTimes { start: self.now(), end: None }),
            "tool_result" => {
                let now = self.now();
                if let Some(t) = collected.find_call(f.call.as_deref()).and_then(|i| self.tools.get_mut(i)) {
                    t.end = Some(now);
                }
            }
            "approval_requested" => {
                if let Some(approval) = f.approval.as_deref() {
                    let call = collected.call_for_approval(f.tool.as_deref());
                    let tool = f.tool.as_deref().map(str::to_owned);
                    self.approvals.push(Asked {
                        approval: approval.into(),
                        tool,
                        call,
                        start: self.now(),
                        answer: None,
                    });
                }
            }
            "turn_finished" if f.status.as_deref() == Some("failed") => {
                #[derive(Deserialize)]
                struct Finished {
                    error: String,
                }
                self.finish_error = serde_json::from_slice::<Finished>(e.data_json()).ok().map(|f| f.error);
            }
            _ => {}
        }
    }

    /// `approval` was answered (one an overflow lost is asked and answered now).
    pub fn answered(&mut self, approval: &str, decision: Decision, how: AnsweredBy) {
        let now = self.now();
        let asked = match self.approvals.iter().position(|a| a.approval == approval && a.answer.is_none()) {
            Some(i) => &mut self.approvals[i],
            None => {
                let a = Asked { approval: approval.into(), tool: None, call: None, start: now, answer: None };
                self.approvals.push(a);
                self.approvals.last_mut().expect("pushed")
            }
        };
        asked.answer = Some((now, decision, how));
    }

    /// The record of the turn that ends now (JSON text; see the module's doc).
    pub fn record(self, collected: &Collected, id: Option<&str>, error: Option<&TurnError>) -> String {
        let end = self.now();
        let status = collected.status();
        let calls = collected.calls();
        let (error_type, message) = match error {
            Some(e) => (Some(e.error.code.as_str()), Some(e.error.message.as_str())),
            None if status == "failed" => (Some(n::TURN_FAILED), self.finish_error.as_deref()),
            None => (None, None),
        };

        let mut attributes = Map::new();
        let mut put = |k: &str, v: Value| {
            attributes.insert(k.to_owned(), v);
        };
        if let Some(id) = id {
            put(n::TURN_ID, json!(id));
        }
        if let Some(s) = &self.session {
            put(n::CONVERSATION, json!(s.as_ref()));
        }
        put(n::TURN_MODE, json!(self.mode));
        put(n::TURN_STATUS, json!(status));
        put(n::TURN_EVENTS, json!(collected.events));
        put(n::TURN_OUTPUTS, json!(self.outputs));
        put(n::TURN_TOOL_CALLS, json!(calls.len()));
        put(n::TURN_OVERFLOWED, json!(collected.overflowed));
        if let Some(remote) = error.and_then(|e| e.error.remote.as_ref()) {
            put(n::REMOTE_CODE, json!(remote.code)); // the submit's remote error (`busy`)
        }
        if self.content {
            if let Some(p) = &self.prompt {
                let m = json!([{"role": "user", "parts": [{"type": "text", "content": p}]}]);
                put(n::INPUT_MESSAGES, json!(m.to_string()));
            }
            let parts = json!([{"type": "text", "content": collected.output_text()}]);
            let m = json!([{"role": "assistant", "parts": parts, "finish_reason": status}]);
            put(n::OUTPUT_MESSAGES, json!(m.to_string()));
        }

        let mut spans = Vec::with_capacity(calls.len() + self.approvals.len());
        let mut metrics = Vec::with_capacity(1 + calls.len() + self.approvals.len());
        let mut duration = json!({n::OPERATION: "invoke_agent", n::PROVIDER: n::AGENT});
        if let Some(e) = error_type {
            duration[n::ERROR_TYPE] = json!(e);
        }
        metrics.push(n::point(n::OPERATION_DURATION, json!(seconds(end)), duration));

        for (i, c) in calls.iter().enumerate() {
            let times = self.tools.get(i);
            let outcome = match (c.approval, c.error, c.done) {
                (Some(Decision::Deny), _, _) => "denied",
                (_, Some(true), _) => "error",
                (_, _, true) => "ok",
                _ => "unfinished",
            };
            let mut a = Map::new();
            a.insert(n::OPERATION.into(), json!("execute_tool"));
            if let Some(tool) = &c.tool {
                a.insert(n::TOOL_NAME.into(), json!(tool));
            }
            if let Some(call) = &c.call {
                a.insert(n::TOOL_CALL_ID.into(), json!(call));
            }
            a.insert(n::TOOL_OUTCOME.into(), json!(outcome));
            if self.content {
                if let Some(v) = &c.input {
                    a.insert(n::TOOL_ARGUMENTS.into(), json!(whole(v)));
                }
                if let Some(v) = c.output.as_ref().filter(|_| c.done) {
                    a.insert(n::TOOL_RESULT.into(), json!(whole(v)));
                }
            }
            let failed = c.error == Some(true);
            spans.push(json!({
                "name": named(n::TOOL_SPAN, c.tool.as_deref()),
                "kind": "internal",
                "parent": null,
                "start": times.map_or(0, |t| t.start),
                "end": times.and_then(|t| t.end).unwrap_or(end),
                "attributes": a,
                "error": if failed { json!(n::TOOL_ERROR) } else { Value::Null },
            }));
            let mut by = json!({n::TOOL_OUTCOME: outcome});
            if let Some(tool) = &c.tool {
                by[n::TOOL_NAME] = json!(tool);
            }
            metrics.push(n::point(n::TOOL_CALLS, json!(1), by));
        }

        for asked in &self.approvals {
            let tool = asked.tool.as_deref().or_else(|| asked.call.and_then(|i| calls.get(i)?.tool.as_deref()));
            let mut a = Map::new();
            a.insert(n::APPROVAL_ID.into(), json!(asked.approval));
            if let Some(tool) = tool {
                a.insert(n::TOOL_NAME.into(), json!(tool));
            }
            if let Some(call) = asked.call.and_then(|i| calls.get(i)?.call.as_deref()) {
                a.insert(n::TOOL_CALL_ID.into(), json!(call));
            }
            let mut error = Value::Null;
            if let Some((at, decision, how)) = asked.answer {
                let by = answered_by(how);
                a.insert(n::APPROVAL_DECISION.into(), json!(decision.as_str()));
                a.insert(n::APPROVAL_BY.into(), json!(by));
                if how == AnsweredBy::HandlerFailed {
                    // The approval function failed: the turn fails with this code.
                    error = json!("invalid_params");
                }
                let point = json!({n::APPROVAL_DECISION: decision.as_str(), n::APPROVAL_BY: by});
                metrics.push(n::point(n::APPROVAL_DURATION, json!(seconds(at.saturating_sub(asked.start))), point));
            }
            spans.push(json!({
                "name": named(n::APPROVAL_SPAN, tool),
                "kind": "internal",
                // Under its tool call's span (the tools' spans come first, in order).
                "parent": asked.call.filter(|&i| i < calls.len()),
                "start": asked.start,
                "end": asked.answer.map_or(end, |(at, _, _)| at),
                "attributes": a,
                "error": error,
            }));
        }

        json!({
            "end": end,
            "attributes": attributes,
            "error": error_type,
            "message": message,
            "spans": spans,
            "metrics": metrics,
        })
        .to_string()
    }
}

/// Who answered, as the record names it.
/// The record of a traced client's turn that ended before the core held it
/// (its options refused, stopped before anything was written, or the
/// client refused it): no timeline, only why it failed (the first line of
/// the message: a client's failure carries koma's stderr after it).
pub(super) fn untimed_record(error: Option<&TurnError>) -> String {
    let (code, message) = match error {
        Some(e) => (Some(e.error.code.as_str()), e.error.message.split('\n').next()),
        None => (None, None),
    };
    json!({"error": code, "message": message}).to_string()
}

fn answered_by(how: AnsweredBy) -> &'static str {
    match how {
        AnsweredBy::Policy => "policy",
        AnsweredBy::Handler => "handler",
        // Denied for it: the span says `error.type`.
        AnsweredBy::HandlerFailed => "handler",
        AnsweredBy::Application => "approve",
        AnsweredBy::NoReader => "unread",
        AnsweredBy::Overflow => "lost",
    }
}

/// `name {what}`, or `name` alone.
fn named(name: &str, what: Option<&str>) -> String {
    match what {
        Some(w) => format!("{name} {w}"),
        None => name.to_owned(),
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A value's JSON with its lifted strings put back.
fn whole(v: &result::Value) -> String {
    if v.lifts.is_empty() {
        return v.json.clone();
    }
    let Ok(mut root) = serde_json::from_str::<Value>(&v.json) else { return v.json.clone() };
    for l in &v.lifts {
        let slot = l.path.iter().try_fold(&mut root, |at, step| match step {
            Step::Key(k) => at.get_mut(k.as_str()),
            Step::Index(i) => at.get_mut(*i as usize),
        });
        if let Some(slot) = slot {
            *slot = Value::String(match &l.chars {
                Chars::Latin1 { bytes, range } => bytes[range.clone()].iter().map(|&b| char::from(b)).collect(),
                Chars::Utf16(units) => String::from_utf16_lossy(units),
            });
        }
    }
    root.to_string()
}
