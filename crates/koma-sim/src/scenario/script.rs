//! A scenario as koma-sim plays it: its turns, each with the texts it
//! matches and its steps, and its scripted answers to requests, with what
//! each has used up so far (`progress`).

use crate::scenario::progress::Progress;
use crate::step::Step;
use serde_json::Value;
use std::path::PathBuf;

pub struct Scenario {
    pub turns: Turns,
    pub methods: Methods,
}

impl Scenario {
    /// Keep the progress in this file, shared with every koma-sim given it
    /// (`KOMA_SIM_PROGRESS`).
    pub fn share_progress(&mut self, file: PathBuf) {
        self.turns.progress = Progress::new(Some(file.clone()));
        self.methods.progress = Progress::new(Some(file));
    }
}

/// What a turn that no entry matches gets: the keyword agent plays it
/// (`Agent`), or the request that would start it gets the remote error
/// `unscripted` (`Error`; a queued text's turn fails).
pub use crate::scenario::format::Unscripted;

/// Which turns an entry plays.
pub enum Matcher {
    /// Any text.
    Any,
    /// The Nth turn started (1 is the first).
    Turn(u64),
    /// Exactly this text.
    Text(String),
    /// A text that contains this.
    Contains(String),
    /// A text in which this regular expression finds a match.
    Regex(regex::Regex),
}

impl Matcher {
    fn matches(&self, ordinal: u64, text: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Turn(n) => *n == ordinal,
            Matcher::Text(t) => t == text,
            Matcher::Contains(t) => text.contains(t.as_str()),
            Matcher::Regex(r) => r.is_match(text),
        }
    }
}

pub struct TurnEntry {
    /// How a message names it: `turns[0] (contains "deploy")`.
    pub label: String,
    pub matcher: Matcher,
    /// How many turns it plays (None: any number).
    pub times: Option<u64>,
    pub steps: Vec<Step>,
}

pub struct Turns {
    pub entries: Vec<TurnEntry>,
    pub unscripted: Unscripted,
    progress: Progress,
}

impl Turns {
    pub fn new(entries: Vec<TurnEntry>, unscripted: Unscripted) -> Turns {
        Turns { entries, unscripted, progress: Progress::new(None) }
    }

    /// The entry that plays the next turn, given its `text`: the first, in
    /// the order listed, that still has a turn to play and matches it (its
    /// index and its steps; `start` counts it). Else, why none does: the
    /// first entry that matches the text but has played all its turns
    /// (`turns[0] (any text) matches it, but is used up (times 1: it has
    /// played 1 turn)`), if one does.
    pub fn choose(&mut self, text: &str) -> Result<(usize, Vec<Step>), Option<String>> {
        let counts = self.progress.read();
        let ordinal = counts.started + 1;
        let matching = || self.entries.iter().enumerate().filter(|(_, e)| e.matcher.matches(ordinal, text));
        if let Some((i, e)) = matching().find(|(i, e)| e.times.is_none_or(|t| counts.used(*i) < t)) {
            return Ok((i, e.steps.clone()));
        }
        Err(matching().next().map(|(i, e)| {
            let used = counts.used(i);
            let turns = if used == 1 { "turn" } else { "turns" };
            format!("{} matches it, but is used up (times {used}: it has played {used} {turns})", e.label)
        }))
    }

    /// A turn starts: played by entry `entry`, or unscripted (`None`).
    pub fn start(&mut self, entry: Option<usize>) {
        self.progress.update(|c| c.start(entry));
    }
}

/// A scripted answer.
pub enum Reply {
    /// The request is carried out and answered as usual (only later).
    Real,
    /// This result, and nothing is carried out.
    Result(Value),
    /// This remote error, and nothing is carried out.
    Error { code: String, message: String, data: Option<Value> },
}

pub struct MethodEntry {
    pub method: String,
    /// The Nth request of this method (1 is the first); None: every one.
    pub nth: Option<u64>,
    pub reply: Reply,
    /// The answer goes this many ms after the request is read.
    pub delay_ms: u64,
}

pub struct Methods {
    pub entries: Vec<MethodEntry>,
    progress: Progress,
}

impl Methods {
    pub fn new(entries: Vec<MethodEntry>) -> Methods {
        Methods { entries, progress: Progress::new(None) }
    }

    /// Counts a request of `method` and returns the first entry, in the
    /// order listed, that scripts its answer.
    pub fn take(&mut self, method: &str) -> Option<&MethodEntry> {
        let n = self.progress.update(|c| {
            let n = c.methods.entry(method.to_string()).or_insert(0);
            *n += 1;
            *n
        });
        self.entries.iter().find(|e| e.method == method && e.nth.is_none_or(|k| k == n))
    }
}
