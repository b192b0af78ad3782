//! The names a client's telemetry uses, once: spans, attributes and
//! instruments. Where OpenTelemetry's GenAI conventions name one (the
//! invoke-agent client span, the execute-tool span, the operation duration),
//! it is theirs; the rest are under `koma.`.

use serde_json::{json, Value};

/// The agent, as the GenAI conventions name it (`gen_ai.agent.name`,
/// `gen_ai.provider.name`).
pub const AGENT: &str = "koma";

pub const CLIENT_SPAN: &str = "koma.client";
pub const CALL_SPAN: &str = "koma {method}";
pub const TURN_SPAN: &str = "invoke_agent koma";
/// `execute_tool {tool}`.
pub const TOOL_SPAN: &str = "execute_tool";
/// `approval {tool}`.
pub const APPROVAL_SPAN: &str = "approval";

pub const OPERATION: &str = "gen_ai.operation.name";
pub const AGENT_NAME: &str = "gen_ai.agent.name";
pub const PROVIDER: &str = "gen_ai.provider.name";
pub const CONVERSATION: &str = "gen_ai.conversation.id";
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
pub const TOOL_NAME: &str = "gen_ai.tool.name";
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
pub const ERROR_TYPE: &str = "error.type";
pub const REMOTE_CODE: &str = "koma.remote.code";

pub const TURN_ID: &str = "koma.turn.id";
pub const TURN_MODE: &str = "koma.turn.mode";
pub const TURN_STATUS: &str = "koma.turn.status";
pub const TURN_EVENTS: &str = "koma.turn.events";
pub const TURN_OUTPUTS: &str = "koma.turn.output_events";
pub const TURN_TOOL_CALLS: &str = "koma.turn.tool_calls";
pub const TURN_OVERFLOWED: &str = "koma.turn.overflowed";
pub const TOOL_OUTCOME: &str = "koma.tool.outcome";
pub const APPROVAL_ID: &str = "koma.approval.id";
pub const APPROVAL_DECISION: &str = "koma.approval.decision";
pub const APPROVAL_BY: &str = "koma.approval.answered_by";

pub const PID: &str = "process.pid";
pub const EXIT_CODE: &str = "process.exit.code";
pub const EXIT_SIGNAL: &str = "koma.exit.signal";
pub const VERSION: &str = "koma.version";

/// `error.type` of a turn that koma finished with status `failed`.
pub const TURN_FAILED: &str = "turn_failed";
/// `error.type` of a tool call whose result says `error: true`.
pub const TOOL_ERROR: &str = "tool_error";

pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
pub const TOOL_CALLS: &str = "koma.tool.calls";
pub const APPROVAL_DURATION: &str = "koma.approval.duration";
pub const CLIENT_STARTS: &str = "koma.client.starts";
pub const CLIENT_FAILURES: &str = "koma.client.failures";

/// Where a span of the table goes (its `parent`): under the caller's
/// current span, or at the root of a trace of its own.
pub const PARENT_CALLER: &str = "caller";
pub const PARENT_ROOT: &str = "root";
/// What a span of the table links to (its `link`): the caller's current span
/// (when there is one), or the client's own span (when it is traced).
pub const LINK_CALLER: &str = "caller";
pub const LINK_CLIENT: &str = "client";

/// See [`super::table`].
pub fn table() -> Value {
    json!({
        // A client may outlive the request that started it and serve many
        // others (one client per process, shared, as a pooled database
        // client is): its life is a trace of its own, linked to the span
        // that started it, never a child that outlives its parent.
        "client": {"name": CLIENT_SPAN, "kind": "internal", "attributes": {},
                   "parent": PARENT_ROOT, "link": LINK_CALLER},
        // A call and a turn belong to whoever makes them: a child of the
        // caller's span, with a link to the client's life.
        "call": {"name": CALL_SPAN, "kind": "client", "attributes": {"rpc.system": AGENT, "rpc.method": "{method}"},
                 // A remote error's code (`busy`), beside `error.type` `remote`.
                 "remote": REMOTE_CODE,
                 "parent": PARENT_CALLER, "link": LINK_CLIENT},
        "turn": {"name": TURN_SPAN, "kind": "client", "attributes": {
            OPERATION: "invoke_agent", AGENT_NAME: AGENT, PROVIDER: AGENT,
        }, "parent": PARENT_CALLER, "link": LINK_CLIENT},
        // The attribute of a record's `error`, beside the span's error status.
        "error": ERROR_TYPE,
        "instruments": [
            {"name": OPERATION_DURATION, "kind": "histogram", "unit": "s",
             "description": "GenAI operation duration: a turn, from turn() or run() to its end",
             // The GenAI conventions' advice.
             "buckets": [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]},
            {"name": TOOL_CALLS, "kind": "counter", "unit": "{call}",
             "description": "Tool calls of koma's turns, by tool and outcome"},
            {"name": APPROVAL_DURATION, "kind": "histogram", "unit": "s",
             "description": "How long an approval request waited for its answer",
             // A person may take minutes.
             "buckets": [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]},
            {"name": CLIENT_STARTS, "kind": "counter", "unit": "{start}",
             "description": "koma processes started by clients"},
            {"name": CLIENT_FAILURES, "kind": "counter", "unit": "{failure}",
             "description": "Clients that failed (the fatal error), by code"},
        ],
    })
}

/// A metric point of a record: `value` added to (or recorded in) `instrument`.
pub fn point(instrument: &str, value: Value, attributes: Value) -> Value {
    json!({"instrument": instrument, "value": value, "attributes": attributes})
}
