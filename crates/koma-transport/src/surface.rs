//! Generated from surface/protocol.json by scripts/surface.mjs: do not edit.
//! The protocol's methods (with their params), events and error codes, as
//! the core checks and reports them (see `docs/protocol.md`).

/// The type a param field must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    String,
    /// A non-negative integer.
    Integer,
    Boolean,
    /// Any JSON value.
    Any,
    /// One of these strings.
    Enum(&'static [&'static str]),
}

/// One field of a method's params.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    pub required: bool,
}

/// One method of the protocol.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    /// The wire name.
    pub name: &'static str,
    pub fields: &'static [Field],
}

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

/// The `code` of every error the SDK reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// koma answered with an error; `err.remote` is `{code, message, data}`
    Remote,
    /// written, then the stream ended or failed before the answer: koma may or may not have acted
    DeliveryUnknown,
    /// koma could not be talked to (it exited, crashed, closed a pipe, sent no hello in time);
    /// every later call on a failed client
    TransportFailure,
    /// the executable could not be started (not found, not executable, a working directory that
    /// cannot be entered)
    SpawnFailed,
    /// koma broke the protocol (a bad frame, a bad hello, a sequence gap, a frame over 40 MiB)
    ProtocolError,
    /// hello's protocol is not the integer 1
    ProtocolMismatch,
    /// this request would be over 40 MiB
    FrameTooLarge,
    /// 64 requests already wait for their answers
    TooManyPending,
    /// out of order: `create`/`resume` not first or twice, anything after `detach`
    Lifecycle,
    /// the method is not in hello's `capabilities`
    Unsupported,
    /// bad params, constructor options or call options
    InvalidParams,
    /// the client was closed before this call
    Closed,
    /// the call's `signal` was aborted
    Aborted,
    /// the call's `timeout` passed
    Timeout,
}

impl ErrorCode {
    /// Every code, in the order of the protocol's table.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::Remote,
        ErrorCode::DeliveryUnknown,
        ErrorCode::TransportFailure,
        ErrorCode::SpawnFailed,
        ErrorCode::ProtocolError,
        ErrorCode::ProtocolMismatch,
        ErrorCode::FrameTooLarge,
        ErrorCode::TooManyPending,
        ErrorCode::Lifecycle,
        ErrorCode::Unsupported,
        ErrorCode::InvalidParams,
        ErrorCode::Closed,
        ErrorCode::Aborted,
        ErrorCode::Timeout,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Remote => "remote",
            ErrorCode::DeliveryUnknown => "delivery_unknown",
            ErrorCode::TransportFailure => "transport_failure",
            ErrorCode::SpawnFailed => "spawn_failed",
            ErrorCode::ProtocolError => "protocol_error",
            ErrorCode::ProtocolMismatch => "protocol_mismatch",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::TooManyPending => "too_many_pending",
            ErrorCode::Lifecycle => "lifecycle",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::Closed => "closed",
            ErrorCode::Aborted => "aborted",
            ErrorCode::Timeout => "timeout",
        }
    }

    /// The code named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
