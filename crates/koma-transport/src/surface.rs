//! Generated from schema/ by scripts/generate.mjs: do not edit.
//! The protocol's methods (with their params), events and error codes, and
//! the values the core builds, as the core checks and reports them (see
//! `docs/protocol.md`).

use crate::raw_json::{JsonValue, JsonWriter, LiftedText, WriteJson};
use crate::tables::{error_codes, Field, FieldType, Method};

/// The methods of the protocol.
pub const METHODS: &[Method] = &[
    Method {
        name: "create",
        fields: &[
            Field { name: "cwd", ty: FieldType::String, required: false },
            Field { name: "model", ty: FieldType::String, required: false },
        ],
    },
    Method {
        name: "resume",
        fields: &[
            Field { name: "session", ty: FieldType::String, required: true },
            Field { name: "after", ty: FieldType::Integer, required: false },
        ],
    },
    Method { name: "state", fields: &[] },
    Method { name: "submit", fields: &[Field { name: "text", ty: FieldType::String, required: true }] },
    Method { name: "enqueue", fields: &[Field { name: "text", ty: FieldType::String, required: true }] },
    Method { name: "interrupt", fields: &[] },
    Method { name: "interrupt_and_submit", fields: &[Field { name: "text", ty: FieldType::String, required: true }] },
    Method {
        name: "approve",
        fields: &[
            Field { name: "approval", ty: FieldType::String, required: true },
            Field { name: "decision", ty: FieldType::Enum(&["allow", "deny"]), required: true },
        ],
    },
    Method { name: "configure", fields: &[Field { name: "model", ty: FieldType::String, required: false }] },
    Method { name: "detach", fields: &[] },
];

/// The names of the event catalog: events with another name are sequence-checked, then ignored.
pub const EVENT_CATALOG: &[&str] = &[
    "state",
    "turn_started",
    "output",
    "tool_call",
    "tool_result",
    "approval_requested",
    "turn_finished",
    "diagnostic",
];

error_codes! {
    /// koma answered with an error; `err.remote` is `{code, message, data}`
    Remote = "remote",
    /// written, then the stream ended or failed before the answer: koma may or may not have acted
    DeliveryUnknown = "delivery_unknown",
    /// koma could not be talked to (it exited, crashed, closed a pipe, sent no hello in time);
    /// every later call on a failed client
    TransportFailure = "transport_failure",
    /// the executable could not be started (not found, not executable, a working directory that
    /// cannot be entered)
    SpawnFailed = "spawn_failed",
    /// koma broke the protocol (a bad frame, a bad hello, a sequence gap, a frame over 40 MiB)
    ProtocolError = "protocol_error",
    /// hello's protocol is not the integer 1
    ProtocolMismatch = "protocol_mismatch",
    /// this request would be over 40 MiB
    FrameTooLarge = "frame_too_large",
    /// 64 requests already wait for their answers
    TooManyPending = "too_many_pending",
    /// out of order: `create`/`resume` not first or twice, anything after `detach`
    Lifecycle = "lifecycle",
    /// the method is not in hello's `capabilities`
    Unsupported = "unsupported",
    /// bad params, constructor options or call options
    InvalidParams = "invalid_params",
    /// the client was closed before this call
    Closed = "closed",
    /// the call's `signal` was aborted
    Aborted = "aborted",
    /// the call's `timeout` passed
    Timeout = "timeout",
}

/// What a turn came to: `status` as `turn_finished` said, `output` the `output` texts joined, the
/// tool calls, how many events the turn had, and whether an overflow cost its loop events. `turn`
/// is null only in the `result` of an error of a turn that koma never started (the submit failed,
/// or the options were bad).
#[derive(Debug)]
pub struct TurnResult {
    pub turn: Option<String>,
    pub status: String,
    /// All the turn's `output` text, joined.
    pub output: LiftedText,
    pub tool_calls: Vec<ToolCallRecord>,
    /// How many events the turn had.
    pub events: u64,
    /// An overflow cost the turn's loop events (the result is still collected from every event,
    /// unless they were dropped before the turn was known: then `output` may lack pieces).
    pub overflowed: bool,
}

impl WriteJson for TurnResult {
    fn write_json(self, w: &mut JsonWriter) {
        w.begin_object();
        w.member("turn", self.turn);
        w.member("status", self.status);
        w.member("output", self.output);
        w.member("toolCalls", self.tool_calls);
        w.member("events", self.events);
        w.member("overflowed", self.overflowed);
        w.end_object();
    }
}

/// A tool call of a turn, from its `tool_call` and `tool_result` events: what was asked (`tool`,
/// `input`), what came of it (`output`, `error`, once its result came), and the answer to its
/// approval if one was asked.
#[derive(Debug)]
pub struct ToolCallRecord {
    pub call: String,
    pub tool: String,
    pub input: JsonValue,
    /// The `tool_result`'s output, once it came.
    pub output: Option<JsonValue>,
    /// Whether the tool failed, once its result came.
    pub error: Option<bool>,
    /// How its approval was answered: by `onApproval`, by the application's `approve()`, or denied
    /// for want of anyone to answer.
    pub approval: Option<&'static str>,
}

impl WriteJson for ToolCallRecord {
    fn write_json(self, w: &mut JsonWriter) {
        w.begin_object();
        w.member("call", self.call);
        w.member("tool", self.tool);
        w.member("input", self.input);
        w.optional_member("output", self.output);
        w.optional_member("error", self.error);
        w.optional_member("approval", self.approval);
        w.end_object();
    }
}

/// The default of `helloTimeout` (15 s), which a host passes on when it is not given.
pub const HELLO_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(15000);
