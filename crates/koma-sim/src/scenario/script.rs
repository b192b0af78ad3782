//! A scenario as koma-sim plays it: its turns, each with the texts it
//! matches and its steps, and its scripted answers to requests, with what
//! each has used up so far.

use crate::step::Step;
use serde_json::Value;
use std::collections::HashMap;

pub struct Scenario {
    pub turns: Turns,
    pub methods: Methods,
}

/// What a turn that no entry matches gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unscripted {
    /// The keyword agent plays it.
    Agent,
    /// The request that would start it gets the remote error `unscripted`
    /// (a queued text's turn fails).
    Error,
}

/// Which turns an entry plays.
pub enum Matcher {
    /// Any text.
    Any,
    /// The Nth turn this process starts (1 is the first).
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
    pub matcher: Matcher,
    /// How many turns it plays (None: any number).
    pub times: Option<u64>,
    pub steps: Vec<Step>,
}

pub struct Turns {
    pub entries: Vec<TurnEntry>,
    pub unscripted: Unscripted,
    /// Turns each entry played so far.
    used: Vec<u64>,
}

impl Turns {
    pub fn new(entries: Vec<TurnEntry>, unscripted: Unscripted) -> Turns {
        Turns { used: vec![0; entries.len()], entries, unscripted }
    }

    /// The first entry, in the order listed, that still has a turn to play
    /// and matches the `ordinal`th turn of the process with `text`: its
    /// index and its steps. That turn is counted as played.
    pub fn choose(&mut self, ordinal: u64, text: &str) -> Option<(usize, Vec<Step>)> {
        let i = self
            .entries
            .iter()
            .enumerate()
            .position(|(i, e)| e.times.is_none_or(|t| self.used[i] < t) && e.matcher.matches(ordinal, text))?;
        self.used[i] += 1;
        Some((i, self.entries[i].steps.clone()))
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
    /// Requests read so far, by method.
    seen: HashMap<String, u64>,
}

impl Methods {
    pub fn new(entries: Vec<MethodEntry>) -> Methods {
        Methods { entries, seen: HashMap::new() }
    }

    /// Counts a request of `method` and returns the first entry, in the
    /// order listed, that scripts its answer.
    pub fn take(&mut self, method: &str) -> Option<&MethodEntry> {
        let n = self.seen.entry(method.to_string()).or_insert(0);
        *n += 1;
        let n = *n;
        self.entries.iter().find(|e| e.method == method && e.nth.is_none_or(|k| k == n))
    }
}
