//! [`Turns`]: which consumer each event belongs to, and the turns' state.
//!
//! The reader hands every catalog event here, in stream order, under the
//! connection's lock. With no turn open an event goes straight to the
//! client's own stream. Otherwise:
//!
//! - while a turn waits for its id (its submit has not answered), every
//!   event waits, in order ([`super::unrouted`]), since it may be that turn's;
//! - an event whose `data.turn` is an open turn's id goes to that turn; a
//!   `state` or `diagnostic` event goes to the turn that started and has
//!   not finished, if there is one; every other event goes to the client's
//!   own stream (`events()`).
//!
//! A turn collects its result from every event routed to it, whether or not
//! its stream keeps the event: an overflow costs a reader events, never the
//! result its turn collects (unless the events were dropped before their
//! turn was known: then `overflowed` says so).

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;

use super::approvals::AnsweredBy;
use super::effects::{Effects, RequestKind, TurnRequest};
use super::event::Event;
use super::fields;
use super::result::Collected;
use super::spec::{Answer, Decision, TurnSpec};
use super::telemetry::{untimed_record, Tracing};
use super::turn::{Reader, Turn};
use super::unrouted::{Held, Note, Unrouted};
use super::update::{Cause, TurnEnd, TurnError, TurnUpdate};
use crate::error::KomaError;
use crate::events::{End, EventBuffer, Stream, Take};
use crate::lift::LiftedString;
use crate::stop::{deadline_error, given_up, Stopped, Why};
use crate::telemetry::TelemetryOptions;
use crate::wording::Wording;

/// The stream of a turn that is over, kept for a loop that reads it.
struct Over {
    stream: Stream,
    reading: bool,
}

#[derive(Default)]
pub struct Turns {
    open: Vec<Turn>,
    unrouted: Unrouted,
    over: HashMap<u64, Over>,
    /// The turns' requests in flight: token -> (turn key, which request).
    requests: HashMap<u64, (u64, RequestKind)>,
    effects: Effects,
    /// Some approval waits for the host's thread (see [`Turns::decide_unread`]).
    undecided: bool,
    wording: Wording,
    /// The client is traced: each turn keeps a timeline (`super::telemetry`).
    tracing: Option<Tracing>,
}

impl Turns {
    pub fn new(wording: Wording) -> Self {
        Turns { wording, ..Default::default() }
    }

    /// The turns of a client with telemetry keep a timeline each (`super::telemetry`).
    pub(crate) fn traced(mut self, telemetry: Option<TelemetryOptions>) -> Self {
        self.tracing = telemetry.map(Tracing::new);
        self
    }

    /// A request was answered with `result` (JSON text): a traced client's
    /// turns take their conversation from `create` or `resume`.
    pub(crate) fn answered_session(&mut self, method: &str, result: &[u8]) {
        if let Some(t) = self.tracing.as_mut() {
            t.answered(method, result);
        }
    }

    /// No turn is open and no event waits for its consumer: every event goes
    /// to the client's own stream ([`Turns::push_main`]).
    pub fn routes_nothing(&self) -> bool {
        self.open.is_empty() && self.unrouted.is_empty()
    }

    /// What the connection is to do now (requests, updates, done calls).
    pub fn take_effects(&mut self) -> Effects {
        std::mem::take(&mut self.effects)
    }

    /// Requests wait to be written.
    pub fn has_requests(&self) -> bool {
        !self.effects.requests.is_empty()
    }

    /// An approval waits for the host's thread to decide it.
    pub fn needs_host(&self) -> bool {
        self.undecided
    }

    // ---- events

    /// An event for the client's own stream, written by `write` (the fast
    /// path, when [`Turns::routes_nothing`]).
    pub fn push_main(
        &mut self,
        buffer: &mut EventBuffer,
        frame_bytes: usize,
        len: usize,
        lifts: Vec<LiftedString>,
        write: impl FnOnce(&mut Vec<u8>),
    ) {
        if !buffer.main.accepts() {
            buffer.main.discard();
            return;
        }
        if self.admit(buffer, frame_bytes) {
            buffer.main.push(frame_bytes, len, lifts, write);
        }
    }

    /// An event, in stream order.
    pub fn deliver(&mut self, buffer: &mut EventBuffer, e: Event<'_>) {
        if self.awaits_id() || !self.unrouted.is_empty() {
            if self.admit(buffer, e.frame_bytes) {
                self.unrouted.push(e.into_owned());
            } else {
                self.unrouted.lose(e);
            }
        } else {
            self.route(buffer, e);
        }
        self.sweep(buffer);
    }

    fn awaits_id(&self) -> bool {
        self.open.iter().any(Turn::awaits_id)
    }

    /// Hand `e` to its consumer: the turn it names (its data read once,
    /// here), the turn that runs for `state` and `diagnostic`, else `events()`.
    fn route(&mut self, buffer: &mut EventBuffer, e: Event<'_>) {
        if matches!(e.name, "state" | "diagnostic") {
            match self.running() {
                Some(i) => {
                    let asked = self.open[i].accept(&e, None, &mut self.effects);
                    self.place(i, buffer, e, asked);
                }
                None => self.give_main(buffer, e),
            }
            return;
        }
        let f = fields::read(e.data_json());
        match f.turn.as_deref().and_then(|id| self.owner(id)) {
            Some(i) => {
                let asked = self.open[i].accept(&e, Some(&f), &mut self.effects);
                drop(f);
                self.place(i, buffer, e, asked);
            }
            None => {
                drop(f);
                self.give_main(buffer, e);
            }
        }
    }

    /// A note of an event an overflow dropped before its consumer was known.
    fn route_note(&mut self, n: Note) {
        if let Some(i) = n.turn.as_deref().and_then(|id| self.owner(id)) {
            self.open[i].accept_note(n, &mut self.effects);
        } // else the client's own stream counted it as dropped
    }

    /// The turn that started and has not finished.
    fn running(&self) -> Option<usize> {
        self.open.iter().position(|t| t.started && t.routable())
    }

    fn owner(&self, id: &str) -> Option<usize> {
        self.open.iter().position(|t| t.routable() && t.is(id))
    }

    fn give_main(&mut self, buffer: &mut EventBuffer, e: Event<'_>) {
        if !buffer.main.accepts() {
            buffer.main.discard();
            return;
        }
        if self.admit(buffer, e.frame_bytes) {
            e.push_to(&mut buffer.main);
        }
    }

    /// Keep an event turn `i` accepted in its stream, if it has one that
    /// takes it; `asked`: the approval it asked the application for, which
    /// is lost (denied) if its event does not reach the stream.
    fn place(&mut self, i: usize, buffer: &mut EventBuffer, e: Event<'_>, asked: Option<String>) {
        let (accepts, counted) = match &self.open[i].stream {
            Some(s) => (s.accepts(), s.is_counted()),
            None => (false, false),
        };
        let mut batch = None;
        if accepts && (!counted || self.admit(buffer, e.frame_bytes)) {
            let t = &mut self.open[i];
            if let Some(s) = t.stream.as_mut() {
                batch = Some(e.push_to(s));
                if s.wanted {
                    s.wanted = false;
                    self.effects.updates.push((t.key, TurnUpdate::Ready));
                }
            }
        } else if !accepts {
            if let Some(s) = self.open[i].stream.as_mut() {
                s.discard();
            }
        } // else it did not fit: the overflow's count has it
        if let Some(approval) = asked {
            let t = &mut self.open[i];
            match batch {
                Some(b) => {
                    t.placed(&approval, b);
                    self.undecided = true;
                }
                None => t.lost(&approval, &mut self.effects),
            }
        }
    }

    /// Count an event against the bound. If it does not fit, that is an
    /// overflow: every counted stream is cleared and reports it, and the
    /// events waiting for their consumer are dropped (see
    /// [`super::unrouted`]). Returns whether it fit.
    fn admit(&mut self, buffer: &mut EventBuffer, frame_bytes: usize) -> bool {
        if buffer.bound.admit(frame_bytes) {
            return true;
        }
        let dropped = buffer.bound.overflow();
        buffer.main.overflow(dropped);
        for t in &mut self.open {
            t.overflow(dropped, &mut self.effects);
        }
        for over in self.over.values_mut() {
            over.stream.overflow(dropped);
        }
        if !self.unrouted.is_empty() {
            self.unrouted.overflow();
            for t in self.open.iter_mut().filter(|t| t.awaits_id()) {
                t.lost_unrouted();
            }
        }
        false
    }

    /// Route what waited for its consumer, once no turn waits for its id.
    fn flush_unrouted(&mut self, buffer: &mut EventBuffer) {
        while !self.awaits_id() {
            match self.unrouted.pop() {
                None => break,
                Some(Held::Event(e)) => {
                    buffer.bound.release(1, e.frame_bytes); // counted again where it goes
                    self.route(buffer, e);
                }
                Some(Held::Note(n)) => self.route_note(n),
            }
        }
    }

    /// Turns whose result is settled leave the routing; what their streams
    /// hold stays for a loop, and stops counting unless a loop reads it.
    fn sweep(&mut self, buffer: &mut EventBuffer) {
        let mut i = 0;
        while i < self.open.len() {
            if !self.open[i].ended {
                i += 1;
                continue;
            }
            let t = self.open.remove(i);
            let reading = t.reader == Reader::Reading;
            let Some(mut stream) = t.stream else { continue };
            stream.end(End::Finished);
            if !reading && stream.is_counted() {
                let (frames, bytes) = stream.uncount();
                buffer.bound.release(frames, bytes);
            }
            if stream.wanted {
                stream.wanted = false;
                self.effects.updates.push((t.key, TurnUpdate::Ready));
            }
            if !stream.is_empty() {
                self.over.insert(t.key, Over { stream, reading });
            }
        }
    }

    // ---- what the host asks

    /// Start turn `key`: its submit is written (see [`Turns::take_effects`]),
    /// or, if its options are refused or it was stopped already, it ends now.
    pub fn open(&mut self, key: u64, spec: TurnSpec) {
        let checked = match spec.check(&self.wording) {
            Ok(c) => c,
            Err(e) => return self.refuse(key, Some(e), None),
        };
        if let Some(stop) = checked.stopped.clone() {
            return self.refuse(key, None, Some(stop));
        }
        let send =
            TurnRequest { key, kind: RequestKind::Submit, method: checked.method, params: checked.params.clone() };
        self.effects.requests.push(send);
        let mut turn = Turn::new(key, &checked);
        turn.timeline = self.tracing.as_ref().map(|t| t.timeline(&checked)); // telemetry
        self.open.push(turn);
    }

    /// The end of a turn the core could not hold (the client was closed or
    /// had failed, or was made before `fork()`): nothing was collected,
    /// there is no id, and the result and the id fail with `error`.
    /// `traced`: the client is traced, and the end carries the record of a
    /// turn without a timeline.
    pub fn refused_end(error: KomaError, traced: bool) -> TurnEnd {
        let error = TurnError { error, cause: Cause::Client, fails_id: true };
        TurnEnd {
            result: Collected::default().build(None),
            telemetry: traced.then(|| untimed_record(Some(&error))),
            error: Some(error),
        }
    }

    /// Turn `key` ends as it starts (see [`Turn::refused`]); a traced
    /// client's gets the record of a turn without a timeline.
    fn refuse(&mut self, key: u64, failure: Option<KomaError>, stop: Option<KomaError>) {
        Turn::refused(key, failure, stop, &mut self.effects);
        if self.tracing.is_some() {
            if let Some((_, TurnUpdate::Ended(end))) = self.effects.updates.last_mut() {
                end.telemetry = Some(untimed_record(end.error.as_ref()));
            }
        }
    }

    /// A request of turn `key` was given `token`.
    pub fn sent(&mut self, token: u64, key: u64, what: RequestKind) {
        self.requests.insert(token, (key, what));
    }

    /// The answer to the turns' request `token` (see [`Turns::owns`]): the
    /// result's JSON text, or why it failed.
    pub fn answered(&mut self, buffer: &mut EventBuffer, token: u64, outcome: Result<&[u8], KomaError>) {
        let Some((key, what)) = self.requests.remove(&token) else { return };
        if let Some(t) = self.open.iter_mut().find(|t| t.key == key) {
            match what {
                RequestKind::Submit => t.submitted(outcome, &mut self.effects),
                RequestKind::Interrupt => t.interrupted(&mut self.effects),
                RequestKind::Approve => {} // denied or late: the turn goes on either way
            }
        }
        if what == RequestKind::Submit {
            self.flush_unrouted(buffer);
        }
        self.sweep(buffer);
    }

    /// Whether call `token` is one of the turns' requests.
    pub fn owns(&self, token: u64) -> bool {
        self.requests.contains_key(&token)
    }

    /// What turn `key`'s stream has for its loop. `wait`: if nothing, tell
    /// the host when something comes (`TurnUpdate::Ready`).
    pub fn take(&mut self, key: u64, epoch: u32, wait: bool) -> Take {
        if let Some(t) = self.open.iter_mut().find(|t| t.key == key) {
            let Some(s) = t.stream.as_mut() else { return Take::Ended(End::Finished) };
            let taken = s.take(epoch);
            s.wanted = wait && taken == Take::Empty;
            return taken;
        }
        if let Some(over) = self.over.get_mut(&key) {
            let taken = over.stream.take(epoch);
            if matches!(taken, Take::Ended(_)) {
                self.over.remove(&key);
            }
            return taken;
        }
        Take::Ended(End::Finished)
    }

    /// A loop starts reading turn `key`, or leaves it early.
    pub fn read(&mut self, buffer: &mut EventBuffer, key: u64, reading: bool) {
        if let Some(t) = self.open.iter_mut().find(|t| t.key == key) {
            t.read(reading, &mut buffer.bound, &mut self.effects);
        } else if let Some(over) = self.over.get_mut(&key) {
            over.reading = reading;
            if !reading && over.stream.is_counted() {
                let (frames, bytes) = over.stream.uncount();
                buffer.bound.release(frames, bytes);
            }
        }
    }

    /// The host stopped turn `key` (its signal aborted, its task was
    /// cancelled): see [`Turn::stop`]. Returns true when its grace is to
    /// start ([`Turns::give_up`] once it passed).
    pub fn stop(&mut self, key: u64, stop: &Why) -> bool {
        let Some(t) = self.open.iter_mut().find(|t| t.key == key) else { return false };
        let error = stop.error(t.what, Stopped::Turn);
        t.stop(error, &mut self.effects)
    }

    /// Turn `key`'s deadline (`after`) passed: stopped with `timeout`, as [`Turns::stop`].
    pub fn expire(&mut self, key: u64, after: Duration) -> bool {
        let wording = self.wording;
        let Some(t) = self.open.iter_mut().find(|t| t.key == key) else { return false };
        t.stop(deadline_error(t.what, Stopped::Turn, after, &wording), &mut self.effects)
    }

    /// Turn `key`'s stop grace passed: if it is not over, it settles now
    /// (see [`Turn::give_up`]); its requests still in flight are abandoned,
    /// the events held for its id go on to their consumers, and its later
    /// events go to `events()` as those of no open turn.
    pub fn give_up(&mut self, buffer: &mut EventBuffer, key: u64) {
        let given_up = given_up(&self.wording);
        let Some(t) = self.open.iter_mut().find(|t| t.key == key) else { return };
        t.give_up(&given_up, &mut self.effects);
        let mine: Vec<u64> = self.requests.iter().filter(|(_, (k, _))| *k == key).map(|(token, _)| *token).collect();
        for token in mine {
            self.requests.remove(&token);
            self.effects.abandon.push(token);
        }
        self.flush_unrouted(buffer);
        self.sweep(buffer);
    }

    /// The host's interrupt of turn `key` as call `token`: true when done now.
    pub fn interrupt(&mut self, key: u64, token: u64) -> bool {
        match self.open.iter_mut().find(|t| t.key == key) {
            Some(t) => t.interrupt_for(token, &mut self.effects),
            None => true,
        }
    }

    /// What the host's function came to for an approval of turn `key`.
    pub fn answer(&mut self, key: u64, approval: &str, answer: Answer) {
        let wording = self.wording;
        if let Some(t) = self.open.iter_mut().find(|t| t.key == key) {
            t.answer(approval, answer, &wording, &mut self.effects);
        }
    }

    /// The application wrote `approve` with these params: the turn it
    /// answered records how.
    pub fn approved_by_application(&mut self, params_json: &str) {
        #[derive(Deserialize)]
        struct Params {
            approval: String,
            decision: String,
        }
        let Ok(p) = serde_json::from_str::<Params>(params_json) else { return };
        let Some(decision) = Decision::parse(&p.decision) else { return };
        for t in &mut self.open {
            if t.answered_by_application(&p.approval, decision) {
                return;
            }
        }
    }

    /// The host let go of turn `key`: nothing of it is kept for a loop.
    pub fn release(&mut self, buffer: &mut EventBuffer, key: u64) {
        if let Some(t) = self.open.iter_mut().find(|t| t.key == key) {
            t.release(&mut buffer.bound);
        } else if let Some(mut over) = self.over.remove(&key) {
            if over.stream.is_counted() {
                let (frames, bytes) = over.stream.uncount();
                buffer.bound.release(frames, bytes);
            }
        }
    }

    /// On the host's thread, before it handles what woke it: approvals for
    /// the application to answer are left to it where a loop reads the turn,
    /// and denied elsewhere (nobody would see them). Deciding here, not as
    /// the event arrives, makes "a loop reads the turn" mean what the
    /// application's code did before it last yielded to the event loop.
    pub fn decide_unread(&mut self) {
        if !std::mem::take(&mut self.undecided) {
            return;
        }
        for t in &mut self.open {
            t.decide_unread(&mut self.effects);
        }
    }

    /// The client failed or closed: every open turn ends (with `error`,
    /// unless it finished), and what waited for its consumer goes on to it.
    pub fn end_all(&mut self, buffer: &mut EventBuffer, error: &KomaError) {
        // What waited goes on first, to the turns that have an id (whose
        // results it is part of) or to `events()`; then the turns end.
        for t in &mut self.open {
            t.give_up_id();
        }
        self.flush_unrouted(buffer);
        for t in &mut self.open {
            t.fail(error.clone(), &mut self.effects);
        }
        self.sweep(buffer);
    }

    /// How each answered approval of open turn `key` was answered (for tests).
    pub fn approval_history(&self, key: u64) -> Vec<(String, Decision, AnsweredBy)> {
        self.open.iter().find(|t| t.key == key).map(|t| t.approval_history().to_vec()).unwrap_or_default()
    }
}
