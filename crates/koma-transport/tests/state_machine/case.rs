//! One case: a fresh connection brought to its plan's phase, given its
//! operations with fillers between them, closed, and checked.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use koma_transport::child::LaunchOptions;
use koma_transport::events::{End, Take};
use koma_transport::testing::Rng;
use koma_transport::{Closing, Connection, ConnectionOptions, ErrorCode, Probe};

use crate::child::{Capture, ChildIds};
use crate::common::{pidfd_signal, sim_path, TestWaker};
use crate::ledger::{short, CallRec, Facts, Got, Kind, Status};
use crate::plan::{Op, Phase, Plan, Variant};

/// A call that has not completed after this long is a hang (never a pass/fail threshold otherwise).
const HANG: Duration = Duration::from_secs(60);
/// Calls per case at most (well under the 64 pending of docs/protocol.md's Bounds).
const MAX_CALLS: usize = 40;

/// What a case adds to the run's figures.
#[derive(Default)]
pub struct CaseStats {
    pub ops: Vec<(Op, bool)>,
    pub outcomes: BTreeMap<String, u64>,
    pub refusals: BTreeMap<String, u64>,
    pub internal: u64,
    pub coverage: &'static str,
    pub identified: bool,
    pub close_time: Option<Duration>,
    pub abandoned_delivered: u64,
    pub events_taken: u64,
    pub overflows: u64,
    /// The setup reached its phase.
    pub reached: bool,
}

pub struct Case {
    pub seed: u64,
    pub plan: Plan,
    rng: Rng,
    pub conn: Connection,
    bell: Arc<TestWaker>,
    seen_rings: u64,
    /// How many times `drain()` has been called.
    drains: u64,
    calls: BTreeMap<u64, CallRec>,
    facts: Facts,
    /// A call that starts the child was accepted.
    started: bool,
    child: Option<ChildIds>,
    capture_lost: bool,
    closed_checked: bool,
    close_called_at: Option<Instant>,
    pub created_session: bool,
    t0: Instant,
    log: Vec<String>,
    pub errors: Vec<String>,
    pub hung: bool,
    pub stats: CaseStats,
}

impl Case {
    pub fn new(seed: u64, home: &Path) -> Case {
        let mut rng = Rng::new(seed);
        let plan = Plan::new(&mut rng);
        Case::with_plan(seed, rng, plan, home)
    }

    pub fn with_plan(seed: u64, rng: Rng, plan: Plan, home: &Path) -> Case {
        let mut faults: Vec<&str> = plan.fault.split(',').filter(|s| !s.is_empty()).collect();
        if plan.spawn_tool {
            faults.push("spawn_tool");
        }
        let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
            ("KOMA_SIM_DELAY_MS", "0".to_owned()),
            ("KOMA_SIM_BENCH", "1".to_owned()),
            ("KOMA_SIM_HOME", home.display().to_string()),
            ("KOMA_SIM_FAULT", faults.join(",")),
            ("KOMA_SIM_HELLO_DELAY_MS", plan.hello_delay_ms.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let bell = Arc::new(TestWaker::default());
        let launch = LaunchOptions { executable: sim_path().into(), cwd: None, env, ..Default::default() };
        let conn = Connection::new(ConnectionOptions { launch, ..Default::default() }, bell.waker());
        Case {
            seed,
            plan,
            rng,
            conn,
            bell,
            seen_rings: 0,
            drains: 0,
            calls: BTreeMap::new(),
            facts: Facts::default(),
            started: false,
            child: None,
            capture_lost: false,
            closed_checked: false,
            close_called_at: None,
            created_session: false,
            t0: Instant::now(),
            log: Vec::new(),
            errors: Vec::new(),
            hung: false,
            stats: CaseStats::default(),
        }
    }

    fn note(&mut self, what: String) {
        let us = self.t0.elapsed().as_micros();
        self.log.push(format!("{us:>8}µs {what}"));
    }

    fn error(&mut self, what: String) {
        self.note(format!("ERROR: {what}"));
        self.errors.push(what);
    }

    // --------------------------------------------------- driving, as a host does

    /// Take what is ready (a host's drain after a wake), check each completion.
    fn pump(&mut self) {
        let batch = self.conn.drain();
        self.drains += 1;
        let mut closed = false;
        for c in batch {
            let got = Got::from(c.outcome);
            closed |= matches!(got, Got::Closed);
            self.record(c.token, got);
        }
        if closed && !self.closed_checked {
            self.closed_checked = true;
            if let Some(at) = self.close_called_at {
                self.stats.close_time = Some(at.elapsed());
            }
            self.check_closed("when close's completion was drained", true);
        }
    }

    /// Wait (at most `limit`) for a wake; then drain.
    fn wait_wake(&mut self, limit: Duration) {
        self.seen_rings = self.bell.wait_past(self.seen_rings, limit);
        self.pump();
    }

    fn record(&mut self, token: u64, got: Got) {
        let label = got.label();
        let Some(call) = self.calls.get(&token) else {
            // Not a token of this test: close's own detach. A host ignores it.
            self.stats.internal += 1;
            self.note(format!("completion for token {token} (not the test's: close's own detach): {got:?}"));
            let fits = matches!(got, Got::Result(_) | Got::Err(ErrorCode::DeliveryUnknown | ErrorCode::Closed, _));
            if !fits || self.stats.internal > 1 {
                self.error(format!("unexpected completion for token {token}, which the test never used: {got:?}"));
            }
            return;
        };
        let mut problems = Vec::new();
        if !call.got.is_empty() {
            problems
                .push(format!("token {token} ({:?}) completed twice: first {:?}, now {got:?}", call.kind, call.got[0]));
        }
        if let Status::AtOnce(how) = &call.status {
            problems.push(format!(
                "token {token} ({:?}) completed ({got:?}) though it was answered at once ({how})",
                call.kind
            ));
        }
        if let Some(at) = call.abandoned {
            // Queued before the abandon, it is taken by the first drain after it; later, never.
            if self.drains > at + 1 {
                problems.push(format!(
                    "token {token} ({:?}) completed ({got:?}) after it was abandoned (abandoned after drain {at}, drained by drain {})",
                    call.kind, self.drains
                ));
            } else {
                self.stats.abandoned_delivered += 1;
            }
        }
        if let Err(why) = self.facts.fits(call, &got, self.plan.fault) {
            problems.push(format!(
                "token {token} ({:?}{}) got {got:?}, which does not fit: {why} (facts {:?})",
                call.kind,
                if call.timeout { ", with a timeout" } else { "" },
                self.facts
            ));
        }
        self.note(format!("drain {}: token {token} -> {}", self.drains, short(&got)));
        *self.stats.outcomes.entry(label).or_default() += 1;
        self.calls.get_mut(&token).unwrap().got.push(got);
        for p in problems {
            self.error(p);
        }
    }

    fn new_call(&mut self, kind: Kind, timeout: bool) -> Option<u64> {
        if self.calls.len() >= MAX_CALLS && kind != Kind::Close {
            return None;
        }
        let t = self.conn.token();
        if self.calls.contains_key(&t) {
            self.error(format!("token {t} handed out twice"));
        }
        self.calls.insert(t, CallRec { kind, timeout, status: Status::Accepted, abandoned: None, got: Vec::new() });
        Some(t)
    }

    fn at_once(&mut self, t: u64, how: String) {
        self.calls.get_mut(&t).unwrap().status = Status::AtOnce(how);
    }

    /// A request; `Some(token)` if the core took it.
    fn request(&mut self, method: &'static str, params: Option<String>, timeout: Option<Duration>) -> Option<u64> {
        let t = self.new_call(Kind::Request(method), timeout.is_some())?;
        match self.conn.request(t, method, params.as_deref(), timeout) {
            Ok(()) => {
                self.started = true;
                self.note(format!(
                    "request {t} {method} {} timeout {timeout:?}: accepted",
                    params.as_deref().unwrap_or("")
                ));
                Some(t)
            }
            Err(e) => {
                self.note(format!("request {t} {method} timeout {timeout:?}: refused at once: {}", e.code));
                *self.stats.refusals.entry(e.code.as_str().into()).or_default() += 1;
                if !self.facts.refusal_fits(Kind::Request(method), e.code) {
                    self.error(format!(
                        "request {t} `{method}` refused with {} ({}), which nothing explains (facts {:?})",
                        e.code, e.message, self.facts
                    ));
                }
                self.at_once(t, format!("refused: {}", e.code));
                None
            }
        }
    }

    fn probe(&mut self, timeout: Option<Duration>) -> Option<u64> {
        let t = self.new_call(Kind::Probe, timeout.is_some())?;
        match self.conn.probe(t, timeout) {
            Ok(Probe::Wait) => {
                self.started = true;
                self.note(format!("probe {t} timeout {timeout:?}: wait"));
                Some(t)
            }
            Ok(Probe::Ready(_)) => {
                self.note(format!("probe {t}: ready"));
                self.at_once(t, "ready".into());
                None
            }
            Err(e) => {
                self.note(format!("probe {t}: refused at once: {}", e.code));
                *self.stats.refusals.entry(format!("probe {}", e.code)).or_default() += 1;
                if !self.facts.refusal_fits(Kind::Probe, e.code) {
                    self.error(format!(
                        "probe {t} refused with {} ({}), which nothing explains (facts {:?})",
                        e.code, e.message, self.facts
                    ));
                }
                self.at_once(t, format!("refused: {}", e.code));
                None
            }
        }
    }

    fn close(&mut self) -> Option<u64> {
        let t = self.new_call(Kind::Close, false)?;
        self.facts.close = true;
        self.close_called_at.get_or_insert_with(Instant::now);
        match self.conn.close(t) {
            Closing::Wait => {
                self.note(format!("close {t}: wait"));
                Some(t)
            }
            Closing::Done => {
                self.note(format!("close {t}: done at once"));
                self.at_once(t, "done".into());
                // Whatever finished the close queued its completions first: take them, then check.
                self.pump();
                if !self.closed_checked {
                    self.closed_checked = true;
                    self.stats.close_time = self.close_called_at.map(|a| a.elapsed());
                    self.check_closed("when close returned Done", true);
                }
                None
            }
            Closing::Refused(e) => panic!("close refused in the process that made the connection: {e}"),
        }
    }

    /// Wait until `token` has completed (a hang after [`HANG`]).
    fn wait_for(&mut self, token: u64, what: &str) -> bool {
        let deadline = Instant::now() + HANG;
        loop {
            self.pump();
            if !self.calls[&token].got.is_empty() {
                return true;
            }
            if Instant::now() > deadline {
                self.hung = true;
                self.error(format!("hang: {what} (token {token}) has not completed after {HANG:?}"));
                return false;
            }
            // While the child has not been seen, look often.
            let step = if self.child.is_none() && !self.capture_lost {
                Duration::from_micros(500)
            } else {
                Duration::from_millis(50)
            };
            self.wait_wake(step);
            self.try_capture();
        }
    }

    /// Take events until the stream ends; true if it ended with a failure.
    fn await_failure(&mut self) -> bool {
        let deadline = Instant::now() + HANG;
        let counters = self.conn.event_counters();
        loop {
            match self.conn.take_events(true) {
                Take::Batch { count, bytes, .. } => {
                    counters.add_taken(count as u32, bytes as u32);
                    self.stats.events_taken += count as u64;
                }
                Take::Overflow { .. } => self.stats.overflows += 1,
                Take::Empty => {
                    if Instant::now() > deadline {
                        self.hung = true;
                        self.error(format!("hang: the events did not end after the failure within {HANG:?}"));
                        return false;
                    }
                    self.wait_wake(Duration::from_millis(50));
                }
                Take::Ended(End::Failed(e)) => {
                    self.note(format!("events ended with {}", e.code));
                    self.conn.unwant_events();
                    return true;
                }
                Take::Ended(End::Finished) => {
                    self.error("the events finished (no failure) after a failure was provoked".into());
                    return false;
                }
            }
        }
    }

    fn take_some_events(&mut self, wait: bool) {
        let counters = self.conn.event_counters();
        match self.conn.take_events(wait) {
            Take::Batch { count, bytes, .. } => {
                counters.add_taken(count as u32, bytes as u32);
                self.stats.events_taken += count as u64;
                self.note(format!("took {count} events"));
            }
            Take::Overflow { dropped } => {
                self.stats.overflows += 1;
                self.note(format!("took the overflow report ({dropped} dropped)"));
            }
            Take::Empty => {}
            Take::Ended(e) => self.note(format!("events ended: {e:?}")),
        }
    }

    // ------------------------------------------------ the child

    /// Name the child while it runs (see `ChildIds::capture`).
    fn try_capture(&mut self) {
        if self.child.is_some() || self.capture_lost || !self.started {
            return;
        }
        match ChildIds::capture(&self.conn, self.seed) {
            Capture::NotYet => {}
            Capture::Lost(note) => {
                self.capture_lost = true;
                if let Some(note) = note {
                    self.note(note);
                }
            }
            Capture::Named(ids, note) => {
                self.note(note);
                self.child = Some(ids);
            }
        }
    }
    /// Wait until the child has been seen (it must exist: the connection was
    /// started and nothing has ended it). False if it cannot be.
    fn await_child(&mut self) -> bool {
        if !self.started || self.facts.disrupted() {
            self.try_capture();
            return self.child.is_some();
        }
        let deadline = Instant::now() + HANG;
        loop {
            self.try_capture();
            if self.child.is_some() {
                return true;
            }
            if self.capture_lost || self.conn.is_closed() {
                return false;
            }
            if Instant::now() > deadline {
                self.hung = true;
                self.error(format!("hang: the child did not appear within {HANG:?}"));
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
            self.pump();
        }
    }

    fn kill(&mut self) -> bool {
        self.await_child();
        let Some(c) = &self.child else {
            self.note("kill: no child to kill".into());
            return false;
        };
        let pid = c.pid;
        self.facts.kill = true;
        pidfd_signal(&c.pidfd, libc::SIGKILL);
        self.note(format!("SIGKILL to {pid}"));
        true
    }

    // ------------------------------------------------ the checks after close

    /// `full`: also look at the child's group and for the connection's
    /// descriptors (right after close; at the end of the case the rest is
    /// checked again, where /proc scans would only cost).
    fn check_closed(&mut self, when: &str, full: bool) {
        let mut problems = Vec::new();
        if !self.conn.is_closed() {
            problems.push("is_closed() is false".to_owned());
        }
        for (t, c) in &self.calls {
            if matches!(c.status, Status::Accepted) && c.abandoned.is_none() && c.got.is_empty() {
                problems.push(format!("token {t} ({:?}) has not completed", c.kind));
            }
        }
        if let Some(c) = &self.child {
            problems.extend(c.problems_after_close(full));
        }
        // The events end, with no wait.
        let counters = self.conn.event_counters();
        let mut ended = false;
        for _ in 0..10_000 {
            match self.conn.take_events(false) {
                Take::Batch { count, bytes, .. } => counters.add_taken(count as u32, bytes as u32),
                Take::Overflow { .. } => {}
                Take::Empty => break,
                Take::Ended(_) => {
                    ended = true;
                    break;
                }
            }
        }
        if !ended {
            problems.push("the events have not ended".to_owned());
        }
        self.note(format!("checked after close ({when}): {} problem(s)", problems.len()));
        for p in problems {
            self.error(format!("{when}: {p}"));
        }
    }

    // ------------------------------------------------ the phases and operations

    fn probe_and_wait(&mut self) -> bool {
        let Some(t) = self.probe(None) else { return false };
        self.wait_for(t, "the first probe") && matches!(self.calls[&t].got[0], Got::Hello)
    }

    fn call_and_wait(&mut self, method: &'static str, params: &str) -> bool {
        let Some(t) = self.request(method, Some(params.to_owned()), None) else { return false };
        self.wait_for(t, method) && matches!(self.calls[&t].got[0], Got::Result(_))
    }

    fn short_timeout(&mut self) -> Duration {
        Duration::from_micros(*self.rng.pick(&[0, 0, 100, 300, 1000, 2000, 3000]))
    }

    fn setup(&mut self) -> bool {
        let p = self.plan.clone();
        self.note(format!("seed {:#x}: {p:?}", self.seed));
        match (p.phase, p.variant) {
            (Phase::NotStarted, _) => {}
            (Phase::Spawning, _) => {
                if self.rng.chance(70) {
                    self.request("state", None, None);
                } else {
                    self.probe(None);
                }
            }
            (Phase::BeforeHello, _) => {
                if self.rng.chance(70) {
                    self.request("state", None, None);
                } else {
                    self.probe(None);
                }
                if !self.await_child() {
                    return false;
                }
            }
            (Phase::Idle, _) => return self.probe_and_wait(),
            (Phase::InFlight, Variant::Approval) => {
                if !(self.probe_and_wait() && self.call_and_wait("create", "{}")) {
                    return false;
                }
                self.created_session = true;
                if !self.call_and_wait("submit", r#"{"text":"fix notes.txt"}"#) {
                    return false;
                }
                for _ in 0..self.rng.range(0, 3) {
                    self.request("state", None, None);
                }
            }
            (Phase::InFlight, _) => {
                if !self.probe_and_wait() {
                    return false;
                }
                for _ in 0..self.rng.range(1, 6) {
                    let timeout = self.rng.chance(30).then(|| Duration::from_millis(self.rng.range(1, 20)));
                    self.request("state", None, timeout);
                }
            }
            (Phase::EventsUnread, _) => {
                if !self.probe_and_wait() {
                    return false;
                }
                let params = format!(r#"{{"count":{},"bytes":{}}}"#, self.rng.range(1, 400), self.rng.range(1, 2000));
                if !self.call_and_wait("bench_events", &params) {
                    return false;
                }
            }
            (Phase::DuringDetach, _) => {
                if !self.probe_and_wait() {
                    return false;
                }
                if self.rng.chance(30) {
                    self.request("state", None, None);
                }
                let timeout = self.rng.chance(30).then(|| self.short_timeout());
                self.facts.detach = true;
                self.request("detach", None, timeout);
            }
            (Phase::AfterFailure, v) => {
                if !self.probe_and_wait() {
                    return false;
                }
                match v {
                    Variant::ExitFirst => {
                        self.facts.exit = true;
                        self.request("bench_exit", Some(r#"{"code":3}"#.into()), None);
                    }
                    Variant::KillFirst => {
                        if !self.kill() {
                            return false;
                        }
                    }
                    _ => {
                        self.facts.garbage = true;
                        self.request("bench_garbage", None, None);
                    }
                }
                return self.await_failure();
            }
        }
        true
    }

    fn apply(&mut self, op: Op) {
        self.try_capture();
        let applied = match op {
            Op::Close => {
                self.close();
                true
            }
            Op::Abort => self.abort(),
            Op::Timeout => {
                let d = self.short_timeout();
                if self.rng.chance(20) {
                    self.probe(Some(d)).is_some()
                } else {
                    self.request("state", None, Some(d)).is_some()
                }
            }
            Op::Exit => {
                let code = *self.rng.pick(&[0, 1, 3, 255]);
                // Set first: the exit may be seen before `request` returns.
                let before = std::mem::replace(&mut self.facts.exit, true);
                let taken = self.request("bench_exit", Some(format!(r#"{{"code":{code}}}"#)), None).is_some();
                self.facts.exit = before || taken;
                taken
            }
            Op::Kill => self.kill(),
            Op::Fatal => {
                let before = std::mem::replace(&mut self.facts.garbage, true);
                let taken = self.request("bench_garbage", None, None).is_some();
                self.facts.garbage = before || taken;
                taken
            }
        };
        self.stats.ops.push((op, applied));
        self.try_capture();
    }

    /// Abandon a call still pending (as far as the application knows), or a new one.
    fn abort(&mut self) -> bool {
        let pending: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| {
                matches!(c.status, Status::Accepted)
                    && c.kind != Kind::Close
                    && c.abandoned.is_none()
                    && c.got.is_empty()
            })
            .map(|(t, _)| *t)
            .collect();
        let detach = pending.iter().copied().find(|t| self.calls[t].kind == Kind::Request("detach"));
        let token = match (detach, pending.is_empty()) {
            (Some(d), _) if self.rng.chance(50) => Some(d),
            (_, false) if self.rng.chance(75) => Some(pending[self.rng.below(pending.len() as u64) as usize]),
            _ => {
                let t = self.request("state", None, None);
                if t.is_some() && self.rng.chance(50) {
                    std::thread::yield_now();
                }
                t
            }
        };
        let Some(t) = token else { return false };
        self.conn.abandon(t);
        self.calls.get_mut(&t).unwrap().abandoned = Some(self.drains);
        self.note(format!("abandoned {t} after drain {}", self.drains));
        true
    }

    /// Between operations: nothing, a yield, a pause, more calls, a drain, events taken.
    fn filler(&mut self) {
        match self.rng.below(100) {
            0..=19 => {}
            20..=29 => std::thread::yield_now(),
            30..=51 => std::thread::sleep(pause(&mut self.rng)),
            52..=61 => {
                self.request("state", None, None);
            }
            62..=66 => {
                let d = self.short_timeout();
                self.request("state", None, Some(d));
            }
            67..=69 => {
                let params = format!(r#"{{"count":{},"bytes":{}}}"#, self.rng.range(1, 40), self.rng.range(1, 200));
                self.request("bench_events", Some(params), None);
            }
            70..=74 => {
                self.probe(None);
            }
            75..=84 => self.pump(),
            85..=91 => {
                let wait = self.rng.chance(50);
                self.take_some_events(wait);
            }
            _ => {
                let d = pause(&mut self.rng);
                self.wait_wake(d);
            }
        }
        self.try_capture();
    }

    pub fn run(&mut self) {
        self.stats.reached = self.setup();
        if self.stats.reached {
            let ops = self.plan.ops.clone();
            for op in ops {
                for _ in 0..self.rng.range(0, 2) {
                    self.filler();
                }
                self.apply(op);
            }
            for _ in 0..self.rng.range(0, 2) {
                self.filler();
            }
        } else if !self.hung {
            self.note("setup did not reach its phase".into());
        }
        if self.hung {
            self.conn.kill_now();
        }
        // The final close (again, if an operation closed already), and its completion awaited.
        if let Some(t) = self.close() {
            if self.wait_for(t, "the final close") && !self.closed_checked {
                self.error("close completed, but the check did not run".into());
            }
        }
        // Once more, at the end: the checks still hold, and nothing more came.
        if !self.hung {
            self.pump();
            self.check_closed("at the end of the case", false);
        }
        self.stats.coverage = match &self.child {
            Some(c) if !c.pipes.is_empty() => "pidfd and pipes",
            Some(_) => "pidfd only",
            None if self.started => "child not seen",
            None => "never started",
        };
        self.stats.identified =
            self.child.as_ref().is_some_and(|c| (c.pidfd_seen || !c.conn_pidfd) && c.pipes_seen > 0);
    }

    pub fn report(&self) -> String {
        let mut s = format!(
            "case seed {:#x} (replay: KOMA_SM_SEED={:#x}), phase {:?}, variant {:?}, fault {:?}, spawn_tool {}, hello delay {} ms, ops {:?}\n",
            self.seed, self.seed, self.plan.phase, self.plan.variant, self.plan.fault, self.plan.spawn_tool, self.plan.hello_delay_ms, self.plan.ops
        );
        for e in &self.errors {
            s.push_str(&format!("  error: {e}\n"));
        }
        s.push_str("  log:\n");
        for l in &self.log {
            s.push_str(&format!("    {l}\n"));
        }
        s
    }
}

/// A pause from 20 µs to 3 ms, log-uniform.
fn pause(rng: &mut Rng) -> Duration {
    let u = rng.below(1000) as f64 / 1000.0;
    Duration::from_micros((20.0 * 150f64.powf(u)) as u64)
}
