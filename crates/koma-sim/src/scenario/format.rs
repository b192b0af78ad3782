//! Generated from schema/ by scripts/generate.mjs: do not edit.
//! The scenario format (schema/scenario.schema.json) as koma-sim reads it:
//! its types, which serde fills from a file's JSON through `read` (which
//! keeps the path to each mistake), and `SHAPES`, from which `read` words
//! its messages. What a schema cannot say is checked by `parse`.

// Members that koma-sim ignores (`about`) are read all the same.
#![allow(dead_code)]

use crate::scenario::read::{Field, Kind, Shape};
use serde::Deserialize;
use serde_json::Value;

/// A scenario: the turn entries, tried in order for each turn that starts; the scripted answers to
/// requests; and what a turn that no entry matches gets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The turn entries, tried in this order for each turn that starts: the first that matches its
    /// text and has turns left plays it. `[]` if absent.
    #[serde(default)]
    pub turns: Vec<ScriptedTurn>,
    /// Scripted answers to requests: for each request read, the first entry of its method (and call
    /// number) scripts its answer. `[]` if absent.
    #[serde(default)]
    pub methods: Vec<MethodAnswer>,
    /// What a turn that no entry matches gets. `"error"` if absent.
    #[serde(default = "default_scenario_unscripted")]
    pub unscripted: Unscripted,
    /// A comment; ignored.
    pub about: Option<String>,
    /// The format's version; 1 if absent.
    pub format: Option<u64>,
    /// Ignored: for editors.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
}

fn default_scenario_unscripted() -> Unscripted {
    Unscripted::Error
}

/// What a turn that no entry matches gets: `"error"` refuses the request that would start it with
/// the remote error `unscripted`, which names the text (a queued text's turn fails), and `"agent"`
/// lets koma-sim's keyword agent play it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Unscripted {
    #[serde(rename = "agent")]
    Agent,
    #[serde(rename = "error")]
    Error,
}

impl Unscripted {
    /// Its name in the file.
    pub const fn as_str(self) -> &'static str {
        match self {
            Unscripted::Agent => "agent",
            Unscripted::Error => "error",
        }
    }
}

/// A turn entry: the turns it plays (those whose text `match` takes, `times` of them) and their
/// steps.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    /// Which texts it plays; any text if absent.
    pub r#match: Option<Match>,
    /// How many turns it plays: a positive integer, or `"always"` for any number. A text that only
    /// a used-up entry matches is refused with the remote error `unscripted`, whose message names
    /// that entry (`turns[0] (any text) matches it, but is used up (times 1: it has played 1
    /// turn)`). `1` if absent.
    #[serde(default = "default_scripted_turn_times")]
    pub times: Value,
    /// Played in order; a `finish` step is the last of its list. When they run out, the turn
    /// finishes `completed`.
    pub steps: Vec<Step>,
    /// A comment; ignored.
    pub about: Option<String>,
}

fn default_scripted_turn_times() -> Value {
    serde_json::json!(1)
}

/// Which texts a turn entry plays: exactly one matcher.
#[derive(Debug, Deserialize)]
pub enum Match {
    /// The Nth turn this koma-sim starts (1 is the first; every turn counts, scripted or not).
    #[serde(rename = "turn")]
    Turn(u64),
    /// Exactly this text.
    #[serde(rename = "text")]
    Text(String),
    /// A text that contains this (case-sensitive).
    #[serde(rename = "contains")]
    Contains(String),
    /// A text in which this regular expression finds a match: Rust's `regex` syntax, not anchored
    /// unless it says `^` and `$` (`(?i)` ignores case). The check compiles it as koma-sim does;
    /// look-around and backreferences are refused (Rust has neither).
    #[serde(rename = "regex")]
    Regex(String),
}

/// What the agent does next: its `do` says which step it is.
#[derive(Debug, Deserialize)]
pub enum Step {
    /// `output {turn, text}`.
    #[serde(rename = "output")]
    Output(OutputStep),
    /// A call with a fresh id (`c-N`): `tool_call {turn, call, tool, input}`, then `tool_result
    /// {turn, call, output, error}`.
    #[serde(rename = "tool")]
    Tool(ToolStep),
    /// A call with fresh ids (`c-N`, `a-N`): `tool_call`, `approval_requested {turn, approval,
    /// tool, input}` and `state` (waiting); the turn waits for `approve`. The decision's
    /// `tool_result` and a `state` (running) come before the answer to `approve`; then the branch's
    /// steps play, then the rest of the turn.
    #[serde(rename = "approval")]
    Approval(ApprovalStep),
    /// With `ms`, waits that long; without, until the turn is interrupted (or koma-sim stops). The
    /// state stays `running`, and an interrupt ends the turn at once either way.
    #[serde(rename = "pause")]
    Pause(PauseStep),
    /// An event of this name and data, numbered as every event is: outside the catalog too, or a
    /// catalog name with odd data.
    #[serde(rename = "event")]
    Event(EventStep),
    /// `turn_finished {turn, status, error?}`: the turn ends here, so nothing may follow it in its
    /// list; the queue goes on.
    #[serde(rename = "finish")]
    Finish(FinishStep),
    /// koma-sim exits with this code; what it queued before is written first.
    #[serde(rename = "exit")]
    Exit(ExitStep),
    /// koma-sim dies of this signal (its default action, without a core file, whatever the fault
    /// switches say of it); what it queued before is written first.
    #[serde(rename = "crash")]
    Crash(CrashStep),
    /// No more answers and no more events: requests are still read (and recorded), and `detach` is
    /// ignored; koma-sim exits 0 at the end of stdin and dies of SIGTERM.
    #[serde(rename = "stop_answering")]
    StopAnswering(StopAnsweringStep),
    /// This line on koma-sim's stdout, then the terminator; then the turn goes on.
    #[serde(rename = "broken_frame")]
    BrokenFrame(BrokenFrameStep),
}

/// `output {turn, text}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputStep {
    pub text: String,
}

/// A call with a fresh id (`c-N`): `tool_call {turn, call, tool, input}`, then `tool_result {turn,
/// call, output, error}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolStep {
    pub tool: String,
    /// Any JSON value. `{}` if absent.
    #[serde(default = "default_tool_step_input")]
    pub input: Value,
    /// Any JSON value: the result's output.
    pub output: Value,
    /// Whether the tool failed. `false` if absent.
    #[serde(default = "default_tool_step_error")]
    pub error: bool,
}

fn default_tool_step_input() -> Value {
    serde_json::json!({})
}

fn default_tool_step_error() -> bool {
    false
}

/// A call with fresh ids (`c-N`, `a-N`): `tool_call`, `approval_requested {turn, approval, tool,
/// input}` and `state` (waiting); the turn waits for `approve`. The decision's `tool_result` and a
/// `state` (running) come before the answer to `approve`; then the branch's steps play, then the
/// rest of the turn.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalStep {
    pub tool: String,
    /// Any JSON value. `{}` if absent.
    #[serde(default = "default_approval_step_input")]
    pub input: Value,
    /// After an allow; if absent, the output `"allowed"`, not an error, and no steps.
    pub allow: Option<ApprovalBranch>,
    /// After a deny; if absent, the output `"denied"`, an error, and no steps.
    pub deny: Option<ApprovalBranch>,
}

fn default_approval_step_input() -> Value {
    serde_json::json!({})
}

/// What follows a decision of an approval: the call's `tool_result`, then these steps.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBranch {
    /// Any JSON value: the `tool_result`'s output (`"allowed"` or `"denied"` if absent).
    pub output: Option<Value>,
    /// The `tool_result`'s error (false after an allow, true after a deny, if absent).
    pub error: Option<bool>,
    /// Played after the `tool_result`, before the rest of the turn; none if absent.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// With `ms`, waits that long; without, until the turn is interrupted (or koma-sim stops). The
/// state stays `running`, and an interrupt ends the turn at once either way.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseStep {
    pub ms: Option<u64>,
}

/// An event of this name and data, numbered as every event is: outside the catalog too, or a
/// catalog name with odd data.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventStep {
    pub name: String,
    /// Any JSON value. `{}` if absent.
    #[serde(default = "default_event_step_data")]
    pub data: Value,
}

fn default_event_step_data() -> Value {
    serde_json::json!({})
}

/// `turn_finished {turn, status, error?}`: the turn ends here, so nothing may follow it in its
/// list; the queue goes on.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishStep {
    /// Any string, outside the catalog too. `"completed"` if absent.
    #[serde(default = "default_finish_step_status")]
    pub status: String,
    pub error: Option<String>,
}

fn default_finish_step_status() -> String {
    "completed".to_string()
}

/// koma-sim exits with this code; what it queued before is written first.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitStep {
    pub code: u64,
}

/// koma-sim dies of this signal (its default action, without a core file, whatever the fault
/// switches say of it); what it queued before is written first.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashStep {
    pub signal: CrashSignal,
}

/// The signals a `crash` step may die of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CrashSignal {
    #[serde(rename = "SIGABRT")]
    Sigabrt,
    #[serde(rename = "SIGALRM")]
    Sigalrm,
    #[serde(rename = "SIGBUS")]
    Sigbus,
    #[serde(rename = "SIGFPE")]
    Sigfpe,
    #[serde(rename = "SIGHUP")]
    Sighup,
    #[serde(rename = "SIGILL")]
    Sigill,
    #[serde(rename = "SIGINT")]
    Sigint,
    #[serde(rename = "SIGKILL")]
    Sigkill,
    #[serde(rename = "SIGPIPE")]
    Sigpipe,
    #[serde(rename = "SIGQUIT")]
    Sigquit,
    #[serde(rename = "SIGSEGV")]
    Sigsegv,
    #[serde(rename = "SIGTERM")]
    Sigterm,
    #[serde(rename = "SIGUSR1")]
    Sigusr1,
    #[serde(rename = "SIGUSR2")]
    Sigusr2,
}

impl CrashSignal {
    /// Its name in the file.
    pub const fn as_str(self) -> &'static str {
        match self {
            CrashSignal::Sigabrt => "SIGABRT",
            CrashSignal::Sigalrm => "SIGALRM",
            CrashSignal::Sigbus => "SIGBUS",
            CrashSignal::Sigfpe => "SIGFPE",
            CrashSignal::Sighup => "SIGHUP",
            CrashSignal::Sigill => "SIGILL",
            CrashSignal::Sigint => "SIGINT",
            CrashSignal::Sigkill => "SIGKILL",
            CrashSignal::Sigpipe => "SIGPIPE",
            CrashSignal::Sigquit => "SIGQUIT",
            CrashSignal::Sigsegv => "SIGSEGV",
            CrashSignal::Sigterm => "SIGTERM",
            CrashSignal::Sigusr1 => "SIGUSR1",
            CrashSignal::Sigusr2 => "SIGUSR2",
        }
    }
}

/// No more answers and no more events: requests are still read (and recorded), and `detach` is
/// ignored; koma-sim exits 0 at the end of stdin and dies of SIGTERM.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopAnsweringStep {}

/// This line on koma-sim's stdout, then the terminator; then the turn goes on.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokenFrameStep {
    /// One line of text. `"this line is not JSON (koma-sim scenario)"` if absent.
    #[serde(default = "default_broken_frame_step_line")]
    pub line: String,
}

fn default_broken_frame_step_line() -> String {
    "this line is not JSON (koma-sim scenario)".to_string()
}

/// A scripted answer to the requests of `method` (the `nth` one, or every one). With `result` or
/// `error` the request is answered so and not carried out; with `delay_ms` alone it is carried out
/// at once and its answer goes that much later.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodAnswer {
    /// One of the protocol's methods (those hello lists): a name outside them is a mistake, since
    /// no client would send it.
    pub method: String,
    /// The Nth request of this method (1 is the first); every one if absent.
    pub nth: Option<u64>,
    /// Any JSON value: the answer's result.
    pub result: Option<Value>,
    /// The answer's remote error.
    pub error: Option<ScriptedError>,
    /// Milliseconds between reading the request and sending its answer; requests read meanwhile are
    /// answered as usual.
    pub delay_ms: Option<u64>,
    /// A comment; ignored.
    pub about: Option<String>,
}

/// A scripted remote error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    pub code: String,
    /// `"<code> (scripted by the scenario)"` if absent.
    pub message: Option<String>,
    /// Any JSON value; none if absent.
    pub data: Option<Value>,
}

/// Each type of the format: what a message calls it, and what each member must be.
pub const SHAPES: &[Shape] = &[
    Shape {
        name: "Scenario",
        title: "the scenario",
        kind: Kind::Object(&[
            Field { name: "turns", want: "an array of turns" },
            Field { name: "methods", want: "an array of method entries" },
            Field { name: "unscripted", want: "\"agent\" or \"error\"" },
            Field { name: "about", want: "a string" },
            Field { name: "format", want: "1" },
            Field { name: "$schema", want: "a string" },
        ]),
    },
    Shape { name: "Unscripted", title: "", kind: Kind::Enum },
    Shape {
        name: "ScriptedTurn",
        title: "a turn",
        kind: Kind::Object(&[
            Field { name: "match", want: "an object (a match)" },
            Field { name: "times", want: "a positive integer or \"always\"" },
            Field { name: "steps", want: "an array of steps" },
            Field { name: "about", want: "a string" },
        ]),
    },
    Shape {
        name: "Match",
        title: "a match",
        kind: Kind::Keyed {
            member: "matcher",
            keys: &[
                Field { name: "turn", want: "a positive integer" },
                Field { name: "text", want: "a string" },
                Field { name: "contains", want: "a string" },
                Field { name: "regex", want: "a string" },
            ],
        },
    },
    Shape { name: "Step", title: "a step", kind: Kind::Tagged("do") },
    Shape {
        name: "OutputStep",
        title: "an `output` event",
        kind: Kind::Object(&[Field { name: "do", want: "\"output\"" }, Field { name: "text", want: "a string" }]),
    },
    Shape {
        name: "ToolStep",
        title: "a tool call and its result",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"tool\"" },
            Field { name: "tool", want: "a string" },
            Field { name: "input", want: "any JSON value" },
            Field { name: "output", want: "any JSON value" },
            Field { name: "error", want: "a boolean" },
        ]),
    },
    Shape {
        name: "ApprovalStep",
        title: "a tool call that asks for approval, and waits",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"approval\"" },
            Field { name: "tool", want: "a string" },
            Field { name: "input", want: "any JSON value" },
            Field { name: "allow", want: "an object (an approval's branch)" },
            Field { name: "deny", want: "an object (an approval's branch)" },
        ]),
    },
    Shape {
        name: "ApprovalBranch",
        title: "an approval's branch",
        kind: Kind::Object(&[
            Field { name: "output", want: "any JSON value" },
            Field { name: "error", want: "a boolean" },
            Field { name: "steps", want: "an array of steps" },
        ]),
    },
    Shape {
        name: "PauseStep",
        title: "waits; without `ms`, until the turn is interrupted",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"pause\"" },
            Field { name: "ms", want: "a non-negative integer" },
        ]),
    },
    Shape {
        name: "EventStep",
        title: "any event, outside the catalog too",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"event\"" },
            Field { name: "name", want: "a string" },
            Field { name: "data", want: "any JSON value" },
        ]),
    },
    Shape {
        name: "FinishStep",
        title: "`turn_finished` with any status: the turn ends there",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"finish\"" },
            Field { name: "status", want: "a string" },
            Field { name: "error", want: "a string" },
        ]),
    },
    Shape {
        name: "ExitStep",
        title: "koma exits with that code",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"exit\"" },
            Field { name: "code", want: "an integer from 0 to 255" },
        ]),
    },
    Shape {
        name: "CrashStep",
        title: "koma dies of a signal",
        kind: Kind::Object(&[
            Field { name: "do", want: "\"crash\"" },
            Field { name: "signal", want: "a string (a signal)" },
        ]),
    },
    Shape { name: "CrashSignal", title: "a signal", kind: Kind::Enum },
    Shape {
        name: "StopAnsweringStep",
        title: "koma answers nothing more: a hung koma",
        kind: Kind::Object(&[Field { name: "do", want: "\"stop_answering\"" }]),
    },
    Shape {
        name: "BrokenFrameStep",
        title: "a line that is not JSON on koma's stdout",
        kind: Kind::Object(&[Field { name: "do", want: "\"broken_frame\"" }, Field { name: "line", want: "a string" }]),
    },
    Shape {
        name: "MethodAnswer",
        title: "a method entry",
        kind: Kind::Object(&[
            Field { name: "method", want: "a string" },
            Field { name: "nth", want: "a positive integer" },
            Field { name: "result", want: "any JSON value" },
            Field { name: "error", want: "an object (an error)" },
            Field { name: "delay_ms", want: "a non-negative integer" },
            Field { name: "about", want: "a string" },
        ]),
    },
    Shape {
        name: "ScriptedError",
        title: "an error",
        kind: Kind::Object(&[
            Field { name: "code", want: "a string" },
            Field { name: "message", want: "a string" },
            Field { name: "data", want: "any JSON value" },
        ]),
    },
];
