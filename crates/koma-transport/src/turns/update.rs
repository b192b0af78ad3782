//! What the turn layer tells the host about one of its turns. Each comes as
//! a completion for the turn's key (`Outcome::Turn`), in the order it
//! happened. A host hands each to its language's turn object as it is: what
//! to do with it is said here (resolve the id, ask the function, serve the
//! loops, settle the result and, if [`TurnError::fails_id`], the id).

use crate::error::KomaError;
use crate::raw_json::RawJson;

#[derive(Debug)]
pub enum TurnUpdate {
    /// The submit was answered: the turn's id.
    Id(String),
    /// An approval for the host's function (the turn's approval option is a
    /// function). Answer it with `Connection::answer_approval`; an answer
    /// that comes after the turn is over (see `Ended`) is ignored.
    Approval(ApprovalAsked),
    /// The turn's reader waited (`take_turn_events` found nothing) and
    /// something is ready now.
    Ready,
    /// The turn is over (see [`TurnEnd`]).
    Ended(TurnEnd),
}

/// An approval the host's function is to answer.
#[derive(Debug)]
pub struct ApprovalAsked {
    pub approval: String,
    /// The `approval_requested` event's data: what the function is given.
    pub data: RawJson,
}

/// A turn is over: nothing more comes for it, and its approvals can no
/// longer be answered (a host stops whatever still computes one). A loop
/// over the turn ends the way this does: after its events, normally or with
/// `error`.
#[derive(Debug)]
pub struct TurnEnd {
    /// What it collected, as JSON: `{turn, status, output, toolCalls,
    /// events, overflowed}`, with `turn` null when it never got an id,
    /// `status` what `turn_finished` said (as it said it) or `"unknown"`
    /// when none came, and each tool call `{call, tool, input}` plus
    /// `output`, `error` and `approval` once known.
    pub result: RawJson,
    /// Why the result fails, if it does (it carries `result` as what the
    /// turn got so far).
    pub error: Option<TurnError>,
    /// A traced turn's record (JSON text; see `crate::telemetry`).
    pub telemetry: Option<String>,
}

/// Why a turn's result fails.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnError {
    pub error: KomaError,
    pub cause: Cause,
    /// The turn never got an id (no `Id` came before): its id fails with
    /// this error too.
    pub fails_id: bool,
}

/// What the error comes from, for a host that keeps the original as its
/// cause (what the approval function threw, what stopped the turn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The client, the submit, or the options.
    Client,
    /// The approval function failed, or gave something other than a
    /// decision, for this approval.
    Handler(String),
    /// The host stopped the turn (`Connection::stop_turn`, or the timeout).
    Stop,
}
