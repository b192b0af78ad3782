//! Events whose consumer is not known yet: while a turn's submit has not
//! answered, the reader cannot tell whether an event is that turn's, so
//! every event waits here, in order, counted against the bound. An overflow
//! drops them; of each one that tells a turn how it went (it started, asked
//! for an approval, finished) a note stays, so the turn still learns it.

use std::collections::VecDeque;

use super::event::Event;
use super::fields;

/// What a dropped event still tells its turn.
#[derive(Debug)]
pub(super) struct Note {
    pub name: &'static str,
    pub turn: Option<String>,
    pub approval: Option<String>,
    pub status: Option<String>,
}

#[derive(Debug)]
pub(super) enum Held {
    Event(Event<'static>),
    Note(Note),
}

/// Notes kept at most: beyond this a flood of dropped events keeps nothing more.
const MAX_NOTES: usize = 4096;

#[derive(Default)]
pub(super) struct Unrouted {
    queue: VecDeque<Held>,
    notes: usize,
}

impl Unrouted {
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Hold an event (counted against the bound by the caller).
    pub fn push(&mut self, e: Event<'static>) {
        self.queue.push_back(Held::Event(e));
    }

    pub fn pop(&mut self) -> Option<Held> {
        let h = self.queue.pop_front()?;
        if matches!(h, Held::Note(_)) {
            self.notes -= 1;
        }
        Some(h)
    }

    /// An overflow: the events waiting are dropped (the bound forgets them),
    /// each leaving its note.
    pub fn overflow(&mut self) {
        let queue = std::mem::take(&mut self.queue);
        for h in queue {
            match h {
                Held::Event(e) => self.lose(e),
                note @ Held::Note(_) => self.queue.push_back(note),
            }
        }
    }

    /// `e` was dropped as it came (an overflow): keep its note.
    pub fn lose(&mut self, e: Event<'_>) {
        if !matches!(e.name, "turn_started" | "approval_requested" | "turn_finished") || self.notes >= MAX_NOTES {
            return;
        }
        let f = fields::read(e.data_json());
        let own = |s: Option<std::borrow::Cow<'_, str>>| s.map(|s| s.into_owned());
        let note = Note { name: e.name, turn: own(f.turn), approval: own(f.approval), status: own(f.status) };
        self.queue.push_back(Held::Note(note));
        self.notes += 1;
    }
}
