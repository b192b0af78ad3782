//! The vocabulary of a turn: what the agent does next. The keyword agent
//! and a scenario both plan a turn as a list of steps, and the core plays
//! them one by one.

use serde_json::Value;
use std::borrow::Cow;

#[derive(Clone, Debug)]
pub enum Step {
    /// Wait this long (an interrupt cuts it short).
    Sleep(u64),
    /// Wait until the turn is interrupted (or the process ends).
    Hang,
    /// An event, with its data as given.
    Event(Cow<'static, str>, Value),
    /// `output {turn, text}` for the turn that plays it.
    Output(String),
    /// A call with a fresh id: `tool_call {turn, call, tool, input}`, then
    /// `tool_result {turn, call, output, error}`.
    Tool { tool: String, input: Value, output: Value, error: bool },
    /// `approval_requested`, then `state` (waiting): the turn waits for
    /// `approve`.
    Approval(Box<Ask>),
    /// What a `bench_turn` turn still has to send: a chunk per step, so that
    /// the lock is let go between chunks (an interrupt gets in).
    BenchOutputs { left: u64, bytes: u64 },
    /// `turn_finished {turn, status, error?}`: the turn ends here.
    Finish { status: String, error: Option<String> },
    /// The process exits with this code (what is queued is written first).
    Exit(i32),
    /// The process dies of this signal (what is queued is written first).
    Crash { signal: i32, name: &'static str },
    /// No more answers and no more events; requests are still read.
    StopAnswering,
    /// This line (a terminator is added), which is not JSON.
    BrokenFrame(String),
}

impl Step {
    /// The end of a turn that ran out of steps.
    pub fn completed() -> Step {
        Step::Finish { status: "completed".into(), error: None }
    }
}

/// An approval to ask for.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The approval's and the call's ids when the plan gave them (the
    /// keyword agent, which sends the `tool_call` as a step of its own);
    /// None: fresh ids, and a `tool_call` before `approval_requested`.
    pub ids: Option<(String, String)>,
    pub tool: String,
    pub input: Value,
    pub allow: Decided,
    pub deny: Decided,
}

/// What follows a decision: the call's `tool_result` (sent before the
/// answer to `approve`), then these steps, before the rest of the turn.
#[derive(Clone, Debug)]
pub struct Decided {
    pub output: Value,
    pub error: bool,
    pub then: Vec<Step>,
}
