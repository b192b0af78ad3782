//! A session as koma-sim holds it: its numbers, its running turn and its
//! queue, and the log entries not yet written to its file
//! (`session_file`).

use crate::step::{Decided, Step};
use std::collections::VecDeque;
use std::time::Instant;

pub const DEFAULT_MODEL: &str = "sim-1";

/// One entry of a session's event log (its file holds the log; a resume
/// replays it).
pub enum Entry {
    /// An event frame exactly as sent (compact, without terminator).
    Frame { seq: u64, text: String },
    /// A `bench_events` run (`turn` None: the turn id "bench"), or a piece of
    /// a `bench_turn` turn's outputs, kept as a range and regenerated on replay.
    Bench { first: u64, count: u64, bytes: u64, turn: Option<String> },
}

/// A tool call waiting for `approve`.
pub struct Pending {
    pub approval: String,
    pub call: String,
    pub allow: Decided,
    pub deny: Decided,
}

pub struct Turn {
    pub id: String,
    pub steps: VecDeque<Step>,
    pub wait: Option<Pending>,
    pub not_before: Option<Instant>,
    /// A pause until interrupted (or `stop_answering`).
    pub hung: bool,
}

pub struct Session {
    pub id: String,
    pub model: String,
    pub cwd: Option<String>,
    pub next_turn: u64,
    pub next_call: u64,
    pub next_approval: u64,
    /// The log entries since the last save (none are kept when sessions
    /// are not saved: nothing else reads them).
    pub unsaved: Vec<Entry>,
    pub active: Option<Turn>,
    pub queue: VecDeque<String>,
}

impl Session {
    pub fn new(id: String, model: Option<String>, cwd: Option<String>) -> Session {
        Session {
            id,
            model: model.unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            cwd,
            next_turn: 0,
            next_call: 0,
            next_approval: 0,
            unsaved: Vec::new(),
            active: None,
            queue: VecDeque::new(),
        }
    }
}
