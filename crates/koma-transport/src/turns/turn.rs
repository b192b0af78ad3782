//! One turn: what it knows of itself (its id, whether it started and
//! finished), who reads it, how its approvals are answered, whether it was
//! stopped or must be interrupted, and what it collected. Its steps record
//! what they ask of the connection in [`Effects`].

use super::approvals::{AnsweredBy, Approvals, Pending, Waits};
use super::effects::{Effects, RequestKind, TurnRequest};
use super::event::Event;
use super::fields::{self, Fields};
use super::result::{Collected, Value};
use super::spec::{quoted, Answer, Checked, Decision, Entry, Policy};
use super::telemetry::Timeline;
use super::unrouted::Note;
use super::update::{ApprovalAsked, Cause, TurnEnd, TurnError, TurnUpdate};
use crate::error::{ErrorCode, KomaError};
use crate::events::{Bound, Stream};
use crate::raw_json::RawJson;
use crate::wording::Wording;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Id {
    /// The submit has not answered: nothing is routed until it has.
    Waiting,
    Known(String),
    /// The submit failed (or was never written): there is no turn.
    Never,
}

/// Who reads the turn's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reader {
    /// No loop has started.
    NotYet,
    /// A loop reads it.
    Reading,
    /// A loop left it early.
    Left,
}

#[derive(Debug, PartialEq, Eq)]
enum Interrupt {
    No,
    /// As soon as the id is known.
    Wanted,
    /// Written, not answered.
    Sent,
    Answered,
}

pub(super) struct Turn {
    pub key: u64,
    pub id: Id,
    pub started: bool,
    /// Its `turn_finished` came: no event is routed to it any more.
    pub finished: bool,
    /// Its result is settled (`TurnUpdate::Ended` was sent).
    pub ended: bool,
    pub reader: Reader,
    /// Its events for a loop; none for a turn nobody can read (`run()`).
    pub stream: Option<Stream>,
    /// `turn` or `run`, as messages name it.
    pub what: &'static str,
    policy: Policy,
    /// Why it was stopped (the first stop), if it had not finished then.
    stop: Option<KomaError>,
    /// Its stop's grace has started (see [`Turn::stop`]).
    grace: bool,
    /// The first failure of the host's approval function, and its approval.
    refusal: Option<(KomaError, String)>,
    /// Why it cannot go on (the submit failed, the client failed or closed).
    failure: Option<KomaError>,
    interrupt: Interrupt,
    /// Host calls waiting for this turn's interrupt to be answered.
    interrupt_waiters: Vec<u64>,
    approvals: Approvals,
    collected: Collected,
    /// A traced client's turn: its timeline (`super::telemetry`).
    pub(super) timeline: Option<Box<Timeline>>,
}

impl Turn {
    pub fn new(key: u64, spec: &Checked) -> Self {
        Turn {
            key,
            id: Id::Waiting,
            started: false,
            finished: false,
            ended: false,
            reader: Reader::NotYet,
            stream: (spec.entry == Entry::Turn).then(|| Stream::counted(false)),
            what: spec.entry.name(),
            policy: spec.policy,
            stop: None,
            grace: false,
            refusal: None,
            failure: None,
            interrupt: Interrupt::No,
            interrupt_waiters: Vec::new(),
            approvals: Approvals::default(),
            collected: Collected::default(),
            timeline: None,
        }
    }

    /// A turn that ends as it starts: its options were refused, or it was
    /// stopped before anything was written.
    pub fn refused(key: u64, failure: Option<KomaError>, stop: Option<KomaError>, effects: &mut Effects) {
        let spec =
            Checked { entry: Entry::Run, method: "submit", params: None, policy: Policy::Application, stopped: None };
        let mut t = Turn::new(key, &spec);
        t.id = Id::Never;
        t.failure = failure;
        t.stop = stop;
        t.settle(effects);
    }

    /// The turn named `id` is this one.
    pub fn is(&self, id: &str) -> bool {
        matches!(&self.id, Id::Known(mine) if mine == id)
    }

    /// Events may still be routed to it.
    pub fn routable(&self) -> bool {
        !self.finished && !self.ended
    }

    pub fn awaits_id(&self) -> bool {
        self.id == Id::Waiting && !self.ended
    }

    // ---- its events

    /// One of its events (before it goes into the stream, if it does).
    /// Returns the approval it asked for, when the application is to answer
    /// it: the caller says where its event went ([`Turn::placed`] or
    /// [`Turn::lost`]).
    pub fn accept(&mut self, e: &Event<'_>, f: Option<&Fields<'_>>, effects: &mut Effects) -> Option<String> {
        self.collected.events += 1;
        let f = f?; // `state`, `diagnostic`: counted only
        if let Some(t) = self.timeline.as_deref_mut() {
            t.saw(e, f, &self.collected); // telemetry
        }
        match e.name {
            "turn_started" => self.started = true,
            "output" => self.collected.output(f.text.as_deref(), fields::lifted_field(&e.lifts, "text")),
            "tool_call" => {
                let input = value(f.input, e, "input");
                self.collected.tool_call(owned(&f.call), owned(&f.tool), input);
            }
            "tool_result" => {
                let output = value(f.output, e, "output");
                self.collected.tool_result(f.call.as_deref(), output, f.error);
            }
            "approval_requested" => return self.approval(f, e, effects),
            "turn_finished" => {
                self.collected.finished(owned(&f.status));
                self.finished = true;
                self.try_settle(effects);
            }
            _ => {}
        }
        None
    }

    /// An event of this turn that an overflow dropped before it was routed.
    pub fn accept_note(&mut self, n: Note, effects: &mut Effects) {
        self.collected.events += 1;
        self.collected.overflowed = true;
        match n.name {
            "turn_started" => self.started = true,
            "approval_requested" => {
                if let Some(approval) = n.approval {
                    // Nobody saw it; a function could not be given its data: deny.
                    self.decide(approval, None, Decision::Deny, AnsweredBy::Overflow, effects);
                }
            }
            "turn_finished" => {
                self.collected.finished(n.status);
                self.finished = true;
                self.try_settle(effects);
            }
            _ => {}
        }
    }

    fn approval(&mut self, f: &Fields<'_>, e: &Event<'_>, effects: &mut Effects) -> Option<String> {
        let approval = f.approval.as_deref()?.to_owned(); // without an id it cannot be answered
        let call = self.collected.call_for_approval(f.tool.as_deref());
        match self.policy {
            Policy::Always(d) => self.decide(approval, call, d, AnsweredBy::Policy, effects),
            Policy::Handler => {
                let data = RawJson::whole(e.data_json().to_vec(), e.lifts.clone());
                self.approvals.wait(Pending { approval: approval.clone(), call, batch: None, waits: Waits::Handler });
                effects.updates.push((self.key, TurnUpdate::Approval(ApprovalAsked { approval, data })));
            }
            Policy::Application if self.reader == Reader::Left || self.stream.is_none() => {
                self.decide(approval, call, Decision::Deny, AnsweredBy::NoReader, effects);
            }
            Policy::Application => {
                self.approvals.wait(Pending { approval: approval.clone(), call, batch: None, waits: Waits::Undecided });
                return Some(approval);
            }
        }
        None
    }

    /// The event of `approval` went into batch `batch` of the stream.
    pub fn placed(&mut self, approval: &str, batch: u64) {
        self.approvals.placed(approval, batch);
    }

    /// The event of `approval` never reached the stream (paused, or lost to
    /// an overflow as it came): nobody can see it, so deny it.
    pub fn lost(&mut self, approval: &str, effects: &mut Effects) {
        for p in self.approvals.take_for_application(|p| p.approval == approval) {
            self.decide(p.approval, p.call, Decision::Deny, AnsweredBy::Overflow, effects);
        }
    }

    fn decide(
        &mut self,
        approval: String,
        call: Option<usize>,
        decision: Decision,
        how: AnsweredBy,
        effects: &mut Effects,
    ) {
        if let Some(t) = self.timeline.as_deref_mut() {
            t.answered(&approval, decision, how); // telemetry
        }
        self.collected.approved(call, decision);
        let params = format!("{{\"approval\":{},\"decision\":\"{}\"}}", quoted(&approval), decision.as_str());
        effects.requests.push(TurnRequest {
            key: self.key,
            kind: RequestKind::Approve,
            method: "approve",
            params: Some(params),
        });
        self.approvals.answered(approval, decision, how);
    }

    /// On the host's thread: an approval the application was to answer is
    /// left to it if a loop reads the turn, else denied (nobody would answer).
    pub fn decide_unread(&mut self, effects: &mut Effects) {
        if self.reader == Reader::Reading {
            self.approvals.leave_to_application();
            return;
        }
        for p in self.approvals.take_for_application(|_| true) {
            self.decide(p.approval, p.call, Decision::Deny, AnsweredBy::NoReader, effects);
        }
    }

    /// The application answered `approval` with `approve`. Whether it was one of this turn's.
    pub fn answered_by_application(&mut self, approval: &str, decision: Decision) -> bool {
        let Some(p) = self.approvals.take(approval, &[Waits::Undecided, Waits::Application]) else { return false };
        if let Some(t) = self.timeline.as_deref_mut() {
            t.answered(approval, decision, AnsweredBy::Application); // telemetry
        }
        self.collected.approved(p.call, decision);
        self.approvals.answered(p.approval, decision, AnsweredBy::Application);
        true
    }

    /// What the host's function came to for `approval`. Ignored once the
    /// turn is over or the request was answered.
    pub fn answer(&mut self, approval: &str, answer: Answer, wording: &Wording, effects: &mut Effects) {
        if self.ended {
            return;
        }
        let Some(p) = self.approvals.take(approval, &[Waits::Handler]) else { return };
        let name = wording.option("on_approval");
        let refused = |why: String| KomaError::new(ErrorCode::InvalidParams, why);
        let decided = match &answer {
            Answer::Returned { text: Some(text), .. } => Decision::parse(text),
            _ => None,
        };
        let (decision, how) = match (decided, answer) {
            (Some(d), _) => (d, AnsweredBy::Handler),
            (None, Answer::Returned { shown: what, .. }) => {
                let e = refused(format!(
                    "`{name}` returned {what}; it must return \"allow\" or \"deny\" (the approval was denied)"
                ));
                self.refusal.get_or_insert((e, p.approval.clone()));
                (Decision::Deny, AnsweredBy::HandlerFailed)
            }
            (None, Answer::Failed(what)) => {
                let e = refused(format!("`{name}` failed, so the approval was denied: {what}"));
                self.refusal.get_or_insert((e, p.approval.clone()));
                (Decision::Deny, AnsweredBy::HandlerFailed)
            }
        };
        self.decide(p.approval, p.call, decision, how, effects);
    }

    /// How each answered approval was answered (for tests and diagnostics).
    pub fn approval_history(&self) -> &[(String, Decision, AnsweredBy)] {
        self.approvals.history()
    }

    // ---- the submit, stops and interrupts

    /// The submit's answer: the turn's id (`{turn}`), or why there is no turn.
    pub fn submitted(&mut self, answer: Result<&[u8], KomaError>, effects: &mut Effects) {
        let id = answer.and_then(|json| {
            fields::turn_of(json).map(|t| t.into_owned()).ok_or_else(|| {
                KomaError::new(ErrorCode::ProtocolError, "the turn's submit was answered without a turn id")
            })
        });
        match id {
            Ok(id) => {
                self.id = Id::Known(id.clone());
                effects.updates.push((self.key, TurnUpdate::Id(id)));
                if self.interrupt == Interrupt::Wanted {
                    self.interrupt = Interrupt::No;
                    self.want_interrupt(effects);
                }
            }
            Err(e) => {
                self.id = Id::Never;
                self.failure = Some(e);
                self.settle(effects);
            }
        }
    }

    /// Stop the turn (aborted, cancelled, or past its deadline): the agent
    /// is interrupted, and the result fails with `error` once the turn
    /// finished and the interrupt is answered (a turn that had finished
    /// keeps its result). Returns true when the stop's grace is to start
    /// (the first stop of a turn not over): past it, [`Turn::give_up`].
    pub fn stop(&mut self, error: KomaError, effects: &mut Effects) -> bool {
        if self.ended {
            return false;
        }
        if !self.finished {
            self.stop.get_or_insert(error);
            self.want_interrupt(effects);
        }
        !std::mem::replace(&mut self.grace, true)
    }

    /// The stop's grace passed and the turn is not over (koma has not
    /// finished it, or not answered its interrupt): it settles now, with
    /// what it collected and its stop's error, saying so (`given_up`).
    /// Whatever it still waits for is the caller's to abandon.
    pub fn give_up(&mut self, given_up: &str, effects: &mut Effects) {
        if self.ended {
            return;
        }
        if let Some(e) = self.stop.as_mut() {
            e.message.push_str(given_up);
        }
        if self.id == Id::Waiting {
            self.id = Id::Never;
        }
        self.interrupt = Interrupt::Answered;
        self.settle(effects);
    }

    /// The host's `interrupt()`: interrupt the turn if it still runs; the
    /// call `token` is done when that is answered. Returns true when there
    /// is nothing to wait for.
    pub fn interrupt_for(&mut self, token: u64, effects: &mut Effects) -> bool {
        if !self.routable() || self.id == Id::Never || self.interrupt == Interrupt::Answered {
            return true;
        }
        self.interrupt_waiters.push(token);
        self.want_interrupt(effects);
        false
    }

    /// Interrupt the agent if this turn still runs: now if its id is known,
    /// else as soon as it is. The protocol's interrupt names no turn, so it
    /// is written only while this one runs.
    fn want_interrupt(&mut self, effects: &mut Effects) {
        if !self.routable() {
            return;
        }
        match (&self.id, &self.interrupt) {
            (Id::Waiting, Interrupt::No) => self.interrupt = Interrupt::Wanted,
            (Id::Known(_), Interrupt::No) => {
                self.interrupt = Interrupt::Sent;
                effects.requests.push(TurnRequest {
                    key: self.key,
                    kind: RequestKind::Interrupt,
                    method: "interrupt",
                    params: None,
                });
            }
            _ => {}
        }
    }

    /// Its interrupt was answered (or failed: the turn then ends as it ends).
    pub fn interrupted(&mut self, effects: &mut Effects) {
        self.interrupt = Interrupt::Answered;
        effects.done.append(&mut self.interrupt_waiters);
        self.try_settle(effects);
    }

    // ---- its reader

    /// A loop starts reading (`true`), or leaves early (`false`): what it
    /// left stops counting and stays for a later loop, and the turn is
    /// interrupted if it still runs.
    pub fn read(&mut self, reading: bool, bound: &mut Bound, effects: &mut Effects) {
        if reading {
            self.reader = Reader::Reading;
            return;
        }
        self.reader = Reader::Left;
        if let Some(s) = self.stream.as_mut().filter(|s| s.is_counted()) {
            let (frames, bytes) = s.uncount();
            bound.release(frames, bytes);
        }
        self.want_interrupt(effects);
    }

    /// The host let go of the turn (nobody can read it or await it): its
    /// events stop counting and are no longer kept.
    pub fn release(&mut self, bound: &mut Bound) {
        if let Some(mut s) = self.stream.take() {
            if s.is_counted() {
                let (frames, bytes) = s.uncount();
                bound.release(frames, bytes);
            }
        }
        self.reader = Reader::Left;
    }

    // ---- overflow, failure, the end

    /// An overflow hit the stream (it counts): what waited in it is dropped,
    /// and an approval request among that is denied, since nobody saw it.
    pub fn overflow(&mut self, dropped: u64, effects: &mut Effects) {
        let Some(stream) = self.stream.as_mut() else { return };
        if !stream.is_counted() || stream.is_paused() {
            return; // nothing of it is cleared
        }
        let s = &*stream;
        let gone = self.approvals.take_for_application(|p| p.batch.is_some_and(|b| s.holds(b)));
        stream.overflow(dropped);
        self.collected.overflowed = true;
        for p in gone {
            self.decide(p.approval, p.call, Decision::Deny, AnsweredBy::Overflow, effects);
        }
    }

    /// The client failed or closed before the submit answered: no id will come.
    pub fn give_up_id(&mut self) {
        if self.id == Id::Waiting {
            self.id = Id::Never;
        }
    }

    /// Events that may have been this turn's were dropped before its id was known.
    pub fn lost_unrouted(&mut self) {
        self.collected.overflowed = true;
    }

    /// The client failed or closed: a turn that finished keeps its result;
    /// any other ends with `error`.
    pub fn fail(&mut self, error: KomaError, effects: &mut Effects) {
        if self.ended {
            return;
        }
        if !self.finished {
            if self.id == Id::Waiting {
                self.id = Id::Never;
            }
            self.failure.get_or_insert(error);
        }
        self.interrupt = Interrupt::Answered;
        effects.done.append(&mut self.interrupt_waiters);
        self.settle(effects);
    }

    /// Settle once it finished and its own interrupt (if any) was answered.
    fn try_settle(&mut self, effects: &mut Effects) {
        if self.finished && self.interrupt != Interrupt::Sent {
            self.settle(effects);
        }
    }

    /// The result: what it collected, failing with its first reason if it
    /// has one (the client's or the submit's, then the approval function's,
    /// then the stop's).
    fn settle(&mut self, effects: &mut Effects) {
        if self.ended {
            return;
        }
        self.ended = true;
        let id = match &self.id {
            Id::Known(id) => Some(id.as_str()),
            _ => None,
        };
        // A turn whose `Id` never went out fails its id with its result.
        let fails_id = id.is_none();
        let error = if let Some(error) = self.failure.take() {
            Some(TurnError { error, cause: Cause::Client, fails_id })
        } else if let Some((error, approval)) = self.refusal.take() {
            Some(TurnError { error, cause: Cause::Handler(approval), fails_id })
        } else {
            self.stop.take().map(|error| TurnError { error, cause: Cause::Stop, fails_id })
        };
        let telemetry = self.timeline.take().map(|t| t.record(&self.collected, id, error.as_ref()));
        let result = std::mem::take(&mut self.collected).build(id);
        effects.updates.push((self.key, TurnUpdate::Ended(TurnEnd { result, error, telemetry })));
        effects.done.append(&mut self.interrupt_waiters);
    }
}

fn owned(s: &Option<std::borrow::Cow<'_, str>>) -> Option<String> {
    s.as_ref().map(|s| s.clone().into_owned())
}

/// A field of the event's data as a value of the result.
fn value(json: Option<&str>, e: &Event<'_>, key: &str) -> Option<Value> {
    json.map(|json| Value { json: json.to_owned(), lifts: fields::lifts_under(&e.lifts, key) })
}
