//! What a turn collects from its events for its result: its output, its tool
//! calls (with their results and how their approvals were answered), how it
//! ended, how many events it had, and whether an overflow cost its reader
//! events. Built into the result's JSON once, at the end, as the
//! `TurnResult` of `schema/sdk.schema.json` (generated into `surface.rs`).

use crate::lift::LiftedString;
use crate::raw_json::{JsonValue, JsonWriter, LiftedText, RawJson};
use crate::surface::{ToolCallRecord, TurnResult};

use super::spec::Decision;
use super::text::Text;

/// A JSON value as the data held it, with the strings lifted out of it
/// (paths from the value).
pub(super) use crate::raw_json::JsonValue as Value;

pub(super) struct ToolCall {
    pub call: Option<String>,
    pub tool: Option<String>,
    pub input: Option<Value>,
    pub output: Option<Value>,
    pub error: Option<bool>,
    /// Its `tool_result` came (with or without an `output`).
    pub done: bool,
    pub approval: Option<Decision>,
}

#[derive(Default)]
pub(super) struct Collected {
    output: Text,
    tool_calls: Vec<ToolCall>,
    /// What `turn_finished` said.
    status: Option<String>,
    pub events: u64,
    pub overflowed: bool,
}

impl Collected {
    /// A piece of output: its text, or the lifted string it was.
    pub fn output(&mut self, text: Option<&str>, lifted: Option<&LiftedString>) {
        match (lifted, text) {
            (Some(l), _) => self.output.push_chars(&l.chars),
            (None, Some(t)) => self.output.push_str(t),
            (None, None) => {}
        }
    }

    pub fn tool_call(&mut self, call: Option<String>, tool: Option<String>, input: Option<Value>) {
        self.tool_calls.push(ToolCall { call, tool, input, output: None, error: None, done: false, approval: None });
    }

    /// The tool call a `tool_result` naming `call` is for: the first with that id.
    pub fn find_call(&self, call: Option<&str>) -> Option<usize> {
        self.tool_calls.iter().position(|c| call.is_some() && c.call.as_deref() == call)
    }

    pub fn tool_result(&mut self, call: Option<&str>, output: Option<Value>, error: Option<bool>) {
        if let Some(rec) = self.find_call(call).map(|i| &mut self.tool_calls[i]) {
            rec.output = output;
            rec.error = error;
            rec.done = true;
        }
    }

    /// The tool call an approval request is for: the latest call of that
    /// tool with no approval and no result yet.
    pub fn call_for_approval(&self, tool: Option<&str>) -> Option<usize> {
        self.tool_calls.iter().rposition(|c| c.tool.as_deref() == tool && c.approval.is_none() && !c.done)
    }

    pub fn approved(&mut self, call: Option<usize>, decision: Decision) {
        if let Some(rec) = call.and_then(|i| self.tool_calls.get_mut(i)) {
            rec.approval = Some(decision);
        }
    }

    pub fn finished(&mut self, status: Option<String>) {
        self.status = status;
    }

    // ---- read by a traced turn's record (`super::telemetry`)

    pub fn calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// The status as the result says it.
    pub fn status(&self) -> &str {
        self.status.as_deref().unwrap_or("unknown")
    }

    pub fn output_text(&self) -> String {
        self.output.to_string_lossy()
    }

    /// The result's JSON: `{turn, status, output, toolCalls, events,
    /// overflowed}` (see `TurnUpdate::Ended`), the output and the long strings
    /// of the tool calls lifted out.
    pub fn build(self, id: Option<&str>) -> RawJson {
        let status = self.status().to_owned();
        let tool_calls = self
            .tool_calls
            .into_iter()
            .map(|c| ToolCallRecord {
                call: c.call.unwrap_or_default(),
                tool: c.tool.unwrap_or_default(),
                input: c.input.unwrap_or_else(JsonValue::null),
                output: c.done.then(|| c.output.unwrap_or_else(JsonValue::null)),
                error: if c.done { c.error } else { None },
                approval: c.approval.map(Decision::as_str),
            })
            .collect::<Vec<_>>();
        let capacity = 128 + tool_calls.len() * 96;
        let output =
            if self.output.is_empty() { LiftedText::Empty } else { LiftedText::Lifted(self.output.into_chars()) };
        JsonWriter::with_capacity(capacity).write(TurnResult {
            turn: id.map(str::to_owned),
            status,
            output,
            tool_calls,
            events: self.events,
            overflowed: self.overflowed,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::lift::{Chars, Step};

    #[test]
    fn the_result_json_with_its_strings_lifted() {
        let mut c = Collected::default();
        c.output(Some("Hi "), None);
        let long =
            LiftedString { path: vec![], chars: Chars::Latin1 { bytes: Arc::new(b"there".to_vec()), range: 0..5 } };
        c.output(Some(""), Some(&long));
        let content = LiftedString {
            path: vec![Step::Key("content".into())],
            chars: Chars::Utf16("é".encode_utf16().collect()),
        };
        let input = Value { json: r#"{"path":"a","content":""}"#.into(), lifts: vec![content] };
        c.tool_call(Some("c-1".into()), Some("write_file".into()), Some(input));
        c.tool_call(Some("c-2".into()), Some("read_file".into()), None);
        assert_eq!(c.call_for_approval(Some("write_file")), Some(0));
        c.approved(Some(0), Decision::Deny);
        c.tool_result(Some("c-1"), Some(Value { json: "\"no\"".into(), lifts: vec![] }), Some(true));
        c.events = 7;
        c.finished(Some("completed".into()));
        let r = c.build(Some("t-1"));
        let v: serde_json::Value = serde_json::from_slice(r.text()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"turn":"t-1","status":"completed","output":"","toolCalls":[
                {"call":"c-1","tool":"write_file","input":{"path":"a","content":""},"output":"no","error":true,"approval":"deny"},
                {"call":"c-2","tool":"read_file","input":null}],"events":7,"overflowed":false})
        );
        let paths: Vec<_> = r.lifts.iter().map(|l| l.path.clone()).collect();
        assert_eq!(paths[0], vec![Step::Key("output".into())]);
        assert_eq!(
            paths[1],
            vec![Step::Key("toolCalls".into()), Step::Index(0), Step::Key("input".into()), Step::Key("content".into())]
        );
        let r = Collected::default().build(None);
        let v: serde_json::Value = serde_json::from_slice(r.text()).unwrap();
        assert_eq!(v["turn"], serde_json::Value::Null);
        assert_eq!(v["status"], "unknown");
        assert!(r.lifts.is_empty());
    }
}
