//! The state machine of the turn layer: a connection driven as a host drives
//! its turns (`open_turn`, its stream taken batch by batch and counted in the
//! shared counters, approvals answered, `stop_turn`, `interrupt_turn`, a loop
//! left, a turn let go of), beside the client's own stream and plain
//! requests, against a koma-sim that plays a scenario of six kinds of turn:
//! plain outputs, an approval with its two branches, a pause until the
//! interrupt, a flood of outputs (an overflow when nobody reads), a hung koma
//! (the stop's grace gives the turn up) and a crash mid-turn (the child's
//! death). Turns have deadlines or none, every approval option, and start by
//! `submit` or `interrupt`; the child may be SIGKILLed. A case's operations
//! and pauses come from its seed; the child's and the runtime's timing make
//! each run its own interleaving. The case ends with the turns' loops read
//! to their end and `close()`.
//!
//! Checked in every case:
//! - every turn settles exactly once: one `Ended`, and after it nothing
//!   but a `Ready` for a loop that waited; its id at most once, before it; approvals asked of the host only for a turn
//!   whose option is a function (and answered or not, it still settles);
//! - every call (a request, an interrupt, close) completes exactly once;
//! - every event goes to exactly one consumer: no seq is taken twice across
//!   the client's stream and every turn's, each consumer's seqs increase, and
//!   an event of a turn taken from a turn's stream is that turn's;
//! - nothing is lost: in a case with no overflow, no turn given up or left
//!   and no child killed, every seq up to the last one taken was taken.
//!
//! `KOMA_SM_TURN_CASES` (default 1,000; `npm run soak` runs 20,000),
//! `KOMA_SM_THREADS`, `KOMA_SM_BASE_SEED`, and `KOMA_SM_TURN_SEED` to replay
//! one case with its log.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use koma_transport::child::LaunchOptions;
use koma_transport::events::{Counting, Take};
use koma_transport::stop::Why;
use koma_transport::testing::rng::mix;
use koma_transport::testing::Rng;
use koma_transport::turns::{Answer, ApprovalOption, Entry, TurnSpec, TurnUpdate};
use koma_transport::{Closing, Connection, ConnectionOptions, EventCounters, Outcome};

use crate::common::{pidfd_open, pidfd_signal, sim_path, TestWaker};
use crate::env::env_num;
use crate::homes::{clear_dir, thread_home};

/// A wait that has not ended after this long is a hang (never a pass/fail threshold otherwise).
const HANG: Duration = Duration::from_secs(60);

/// koma-sim's turns, one per kind, chosen by the text of the submit (a
/// flood is 300 outputs: more than the bound of 256 when nobody reads).
fn scenario() -> String {
    let flood: Vec<serde_json::Value> = (0..300).map(|_| serde_json::json!({"do": "output", "text": "f"})).collect();
    serde_json::json!({"turns": [
        {"match": {"contains": "plain"}, "times": "always", "steps": [
            {"do": "output", "text": "a"}, {"do": "output", "text": "b"}, {"do": "output", "text": "c"}]},
        {"match": {"contains": "approval"}, "times": "always", "steps": [
            {"do": "output", "text": "before"},
            {"do": "approval", "tool": "write_file", "input": {"path": "x"},
             "allow": {"output": "written", "steps": [{"do": "output", "text": "after"}]},
             "deny": {"steps": [{"do": "finish", "status": "failed", "error": "denied"}]}}]},
        {"match": {"contains": "pause"}, "times": "always", "steps": [{"do": "output", "text": "a"}, {"do": "pause"}]},
        {"match": {"contains": "flood"}, "times": "always", "steps": flood},
        {"match": {"contains": "hung"}, "times": "always", "steps": [{"do": "output", "text": "a"}, {"do": "stop_answering"}]},
        {"match": {"contains": "crash"}, "times": "always", "steps": [{"do": "output", "text": "a"}, {"do": "exit", "code": 3}]}
    ]})
    .to_string()
}

/// What the case knows of one turn.
#[derive(Default, Debug)]
struct TurnRec {
    kind: &'static str,
    entry: Option<Entry>,
    handler: bool,
    /// Stopped by the case at its end (a loop that stops waiting).
    stopped: bool,
    id: Option<String>,
    ids: usize,
    ended: usize,
    after_end: Vec<String>,
    /// The loop was left, or the turn let go of: its later events are not all taken.
    left: bool,
    released: bool,
    given_up: bool,
    /// Its stream gave `Ended`.
    stream_done: bool,
    approvals: Vec<String>,
}

/// A consumer's stream: the client's own (`None`) or a turn's.
type Consumer = Option<u64>;

/// What a take gave.
#[derive(PartialEq)]
enum Took {
    Some,
    Empty,
    Ended,
}

struct Case {
    seed: u64,
    rng: Rng,
    conn: Connection,
    bell: Arc<TestWaker>,
    rings: u64,
    slots: Arc<EventCounters>,
    turns: BTreeMap<u64, TurnRec>,
    /// Calls (requests, interrupts, close): completions seen.
    calls: BTreeMap<u64, usize>,
    /// Every seq taken, and by whom.
    taken: BTreeMap<u64, Consumer>,
    last_seq: BTreeMap<Consumer, u64>,
    overflowed: bool,
    killed: bool,
    log: Vec<String>,
    errors: Vec<String>,
    t0: Instant,
}

impl Case {
    fn new(seed: u64, home: &Path) -> Case {
        let file = home.join("scenario.json");
        if !file.exists() {
            std::fs::write(&file, scenario()).unwrap();
        }
        let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
            ("KOMA_SIM_DELAY_MS", "0".to_owned()),
            ("KOMA_SIM_HOME", home.display().to_string()),
            ("KOMA_SIM_SCENARIO", file.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let bell = Arc::new(TestWaker::default());
        let launch = LaunchOptions { executable: sim_path().into(), cwd: None, env, ..Default::default() };
        let conn = Connection::new(ConnectionOptions { launch, ..Default::default() }, bell.waker());
        let slots = conn.event_counters();
        Case {
            seed,
            rng: Rng::new(seed),
            conn,
            bell,
            rings: 0,
            slots,
            turns: BTreeMap::new(),
            calls: BTreeMap::new(),
            taken: BTreeMap::new(),
            last_seq: BTreeMap::new(),
            overflowed: false,
            killed: false,
            log: Vec::new(),
            errors: Vec::new(),
            t0: Instant::now(),
        }
    }

    fn note(&mut self, what: String) {
        self.log.push(format!("{:>8}µs {what}", self.t0.elapsed().as_micros()));
    }

    fn error(&mut self, what: String) {
        self.note(format!("ERROR: {what}"));
        self.errors.push(what);
    }

    fn epoch(&self) -> u32 {
        // SAFETY: slot 0.. of the counters (aligned 32-bit slots that live as
        // long as the Arc held here), read atomically as the core writes them.
        unsafe { AtomicU32::from_ptr(self.slots.as_ptr().add(EventCounters::EPOCH)) }.load(Ordering::Acquire)
    }

    // ------------------------------------------------ completions

    fn pump(&mut self) {
        for c in self.conn.drain() {
            match c.outcome {
                Outcome::Turn(update) => self.update(c.token, update),
                other => {
                    let n = self.calls.entry(c.token).or_default();
                    *n += 1;
                    if *n > 1 {
                        self.error(format!("call {} completed twice (now {other:?})", c.token));
                    }
                }
            }
        }
    }

    fn update(&mut self, key: u64, update: TurnUpdate) {
        let Some(t) = self.turns.get_mut(&key) else {
            self.error(format!("an update for {key}, which is no turn of the case: {update:?}"));
            return;
        };
        let what = match &update {
            TurnUpdate::Id(id) => format!("id {id}"),
            TurnUpdate::Approval(a) => format!("approval {}", a.approval),
            TurnUpdate::Ready => "ready".into(),
            TurnUpdate::Ended(end) => {
                format!("ended: {}", end.error.as_ref().map(|e| e.error.message.clone()).unwrap_or("ok".into()))
            }
        };
        // A `Ready` may follow the end: it wakes a loop that waited, whose
        // stream now gives its end. Nothing else may.
        if t.ended > 0 && !matches!(update, TurnUpdate::Ready) {
            t.after_end.push(what.clone());
        }
        match update {
            TurnUpdate::Id(id) => {
                t.ids += 1;
                t.id = Some(id);
            }
            TurnUpdate::Approval(a) => t.approvals.push(a.approval),
            TurnUpdate::Ready => {}
            TurnUpdate::Ended(end) => {
                t.ended += 1;
                t.given_up |= end.error.as_ref().is_some_and(|e| e.error.message.contains("given up"));
            }
        }
        self.note(format!("turn {key}: {what}"));
    }

    fn wait(&mut self, limit: Duration) {
        self.rings = self.bell.wait_past(self.rings, limit);
        self.pump();
    }

    // ------------------------------------------------ events, as a host takes them

    /// Take one batch from a consumer's stream, counting as the rule says
    /// (`wait`: a wake comes when something is ready, if nothing is now).
    fn take(&mut self, consumer: Consumer, wait: bool) -> Took {
        let t = match consumer {
            None => self.conn.take_events(wait),
            Some(k) => self.conn.take_turn_events(k, wait),
        };
        match t {
            Take::Batch { json, epoch, counting, .. } => {
                let v: serde_json::Value = serde_json::from_slice(&json).expect("a batch is JSON");
                let mut seqs = Vec::new();
                for e in v.as_array().expect("a batch is an array").chunks(4) {
                    if counting != Counting::Uncounted {
                        if self.epoch() == epoch {
                            self.slots.add_taken(1, e[3].as_u64().unwrap() as u32);
                        } else if counting == Counting::Revocable {
                            break; // revoked by an overflow
                        }
                    }
                    let seq = e[0].as_u64().unwrap();
                    seqs.push(seq);
                    if let Some(k) = consumer {
                        let turn_of = e[2].get("turn").and_then(|t| t.as_str());
                        let id = self.turns[&k].id.clone();
                        if let (Some(of), Some(id)) = (turn_of, id) {
                            if of != id {
                                self.error(format!("event {seq} of turn {of} taken from turn {k}'s stream ({id})"));
                            }
                        }
                    }
                    if let Some(other) = self.taken.insert(seq, consumer) {
                        self.error(format!("event {seq} taken twice: by {other:?}, then by {consumer:?}"));
                    }
                    let last = self.last_seq.entry(consumer).or_default();
                    if seq <= *last {
                        let last = *last;
                        self.error(format!("{consumer:?} took event {seq} after {last}"));
                    }
                    self.last_seq.insert(consumer, seq);
                }
                self.note(format!("{consumer:?} took {seqs:?}"));
                Took::Some
            }
            Take::Overflow { dropped } => {
                self.overflowed = true;
                self.note(format!("{consumer:?}: overflow report ({dropped} dropped)"));
                Took::Some
            }
            Take::Empty => Took::Empty,
            Take::Ended(e) => {
                if let Some(k) = consumer {
                    self.turns.get_mut(&k).unwrap().stream_done = true;
                }
                self.note(format!("{consumer:?} ended: {e:?}"));
                Took::Ended
            }
        }
    }

    // ------------------------------------------------ operations

    fn open(&mut self) {
        let key = self.conn.token();
        let kind = match self.rng.below(100) {
            0..=29 => "plain",
            30..=54 => "approval",
            55..=74 => "pause",
            75..=86 => "flood",
            87..=92 => "crash",
            _ => "hung",
        };
        let entry = if self.rng.chance(60) { Entry::Turn } else { Entry::Run };
        let approvals = match (self.rng.below(4), entry) {
            (0, _) => ApprovalOption::Text("allow".into()),
            (1, _) => ApprovalOption::Text("deny".into()),
            (2, _) | (_, Entry::Run) => ApprovalOption::Handler,
            _ => ApprovalOption::None,
        };
        let handler = approvals == ApprovalOption::Handler;
        let timeout = self.rng.chance(25).then(|| Duration::from_millis(self.rng.range(20, 400)));
        let mode = self.rng.chance(15).then(|| "interrupt".to_owned());
        let spec = TurnSpec {
            entry,
            params: Some(format!(r#"{{"text":"{kind} please"}}"#)),
            mode: mode.clone(),
            approvals,
            timeout,
            stopped: None,
            refused: None,
        };
        self.note(format!("open turn {key}: {kind}, {entry:?}, handler {handler}, timeout {timeout:?}, mode {mode:?}"));
        self.turns.insert(key, TurnRec { kind, handler, entry: Some(entry), ..Default::default() });
        if let Err(end) = self.conn.open_turn(key, spec) {
            // Refused at once: it has ended, and nothing more may come for it.
            let t = self.turns.get_mut(&key).unwrap();
            t.ended += 1;
            t.stream_done = true;
            self.note(format!("turn {key} refused at once: {:?}", end.error.map(|e| e.error.code)));
        }
    }

    fn open_keys(&self) -> Vec<u64> {
        self.turns.iter().filter(|(_, t)| t.ended == 0).map(|(k, _)| *k).collect()
    }

    fn pick_open(&mut self) -> Option<u64> {
        let keys = self.open_keys();
        (!keys.is_empty()).then(|| keys[self.rng.below(keys.len() as u64) as usize])
    }

    fn answer_approvals(&mut self) {
        let asked: Vec<(u64, String)> = self
            .turns
            .iter_mut()
            .flat_map(|(k, t)| std::mem::take(&mut t.approvals).into_iter().map(move |a| (*k, a)))
            .collect();
        for (key, approval) in asked {
            let answer = match self.rng.below(5) {
                0 => Answer::Failed("the handler threw".into()),
                1 => Answer::Returned { text: None, shown: "undefined".into() },
                2 => Answer::text("deny", "\"deny\""),
                _ => Answer::text("allow", "\"allow\""),
            };
            self.note(format!("answer {approval} of turn {key}: {answer:?}"));
            self.conn.answer_approval(key, &approval, answer);
        }
    }

    fn step(&mut self) {
        match self.rng.below(100) {
            0..=17 => {
                if self.open_keys().len() < 3 {
                    self.open();
                }
            }
            18..=39 => {
                let keys: Vec<u64> = self.turns.iter().filter(|(_, t)| !t.released).map(|(k, _)| *k).collect();
                if !keys.is_empty() {
                    let k = keys[self.rng.below(keys.len() as u64) as usize];
                    self.take(Some(k), false);
                }
            }
            40..=47 => {
                self.take(None, false);
            }
            48..=55 => self.answer_approvals(),
            56..=60 => {
                if let Some(k) = self.pick_open() {
                    let why = if self.rng.chance(50) {
                        Why::Cancelled
                    } else {
                        Why::Signal { reason: Some("TimeoutError".into()) }
                    };
                    self.note(format!("stop turn {k}: {why:?}"));
                    self.conn.stop_turn(k, &why);
                }
            }
            61..=65 => {
                if let Some(k) = self.pick_open() {
                    let token = self.conn.token();
                    if self.conn.interrupt_turn(k, token) {
                        self.note(format!("interrupt turn {k} ({token}): nothing to do"));
                    } else {
                        self.calls.insert(token, 0);
                        self.note(format!("interrupt turn {k} ({token}): written"));
                    }
                }
            }
            66..=68 => {
                if let Some(k) = self.pick_open() {
                    self.note(format!("the loop of turn {k} left"));
                    self.turns.get_mut(&k).unwrap().left = true;
                    self.conn.read_turn(k, false);
                }
            }
            69..=70 => {
                let keys: Vec<u64> = self.turns.keys().copied().collect();
                if !keys.is_empty() {
                    let k = keys[self.rng.below(keys.len() as u64) as usize];
                    self.note(format!("turn {k} let go of"));
                    let t = self.turns.get_mut(&k).unwrap();
                    t.released = true;
                    t.left = true;
                    self.conn.release_turn(k);
                }
            }
            71 => {
                if let Some(pid) = self.conn.pid() {
                    if let Some(fd) = pidfd_open(pid as i32) {
                        if self.conn.pid() == Some(pid) {
                            self.killed = true;
                            self.note(format!("SIGKILL to {pid}"));
                            pidfd_signal(&fd, libc::SIGKILL);
                        }
                    }
                }
            }
            72..=79 => {
                let t = self.conn.token();
                if self.conn.request(t, "state", None, None).is_ok() {
                    self.calls.insert(t, 0);
                }
            }
            80..=91 => self.pump(),
            _ => {
                let d = Duration::from_micros(self.rng.range(20, 3000));
                self.wait(d);
            }
        }
    }

    /// Read every turn's loop (not let go of) to its end, answering what is
    /// asked; a turn that would wait for ever (a pause, any turn of a hung
    /// koma, an approval the application would answer) is stopped, as a
    /// loop that stops waiting stops it.
    fn finish_turns(&mut self) {
        let deadline = Instant::now() + HANG;
        // Once koma was asked for a hung turn, it may answer nothing more:
        // every turn then waits for ever (a submit never answered, too).
        let hung = self.turns.values().any(|t| t.kind == "hung");
        for (k, t) in self.turns.iter_mut() {
            let waits = hung || matches!(t.kind, "pause") || (t.kind == "approval" && !t.handler);
            if t.ended == 0 && waits {
                t.stopped = true;
                self.conn.stop_turn(*k, &Why::Cancelled);
            }
        }
        loop {
            self.pump();
            self.answer_approvals();
            let mut pending = false;
            for k in self.turns.keys().copied().collect::<Vec<_>>() {
                let t = &self.turns[&k];
                if t.released || t.stream_done {
                    continue;
                }
                pending = true;
                while self.take(Some(k), true) == Took::Some {}
            }
            if !pending {
                return;
            }
            if Instant::now() > deadline {
                self.error(format!("hang: the turns' loops did not end within {HANG:?}"));
                return;
            }
            self.wait(Duration::from_millis(20));
        }
    }

    fn close(&mut self) {
        let t = self.conn.token();
        self.calls.insert(t, 0);
        match self.conn.close(t) {
            Closing::Wait => {
                let deadline = Instant::now() + HANG;
                while self.calls[&t] == 0 {
                    if Instant::now() > deadline {
                        self.error(format!("hang: close did not complete within {HANG:?}"));
                        return;
                    }
                    self.wait(Duration::from_millis(20));
                }
            }
            Closing::Done => {
                self.calls.insert(t, 1);
                self.pump();
            }
            Closing::Refused(e) => panic!("close refused: {e}"),
        }
        // What is left in the client's own stream.
        for _ in 0..10_000 {
            if self.take(None, false) != Took::Some {
                break;
            }
        }
    }

    fn run(&mut self) {
        let create = self.conn.token();
        if self.conn.request(create, "create", Some("{}"), None).is_ok() {
            self.calls.insert(create, 0);
        }
        for _ in 0..self.rng.range(4, 30) {
            self.step();
        }
        self.finish_turns();
        self.close();
        self.pump();
        self.check();
    }

    fn check(&mut self) {
        let mut problems = Vec::new();
        for (k, t) in &self.turns {
            if t.ended != 1 {
                problems.push(format!("turn {k} ({}) settled {} times", t.kind, t.ended));
            }
            if t.ids > 1 {
                problems.push(format!("turn {k} got its id {} times", t.ids));
            }
            if !t.after_end.is_empty() {
                problems.push(format!("turn {k}: updates after its end: {:?}", t.after_end));
            }
            if !t.handler && !t.approvals.is_empty() {
                problems.push(format!("turn {k}: approvals asked of the host without a function: {:?}", t.approvals));
            }
        }
        for (t, n) in &self.calls {
            if *n != 1 {
                problems.push(format!("call {t} completed {n} times"));
            }
        }
        // A run()'s events are its result's, taken by no loop: only cases of turn()s are checked.
        let disrupted = self.overflowed
            || self.killed
            || self.turns.values().any(|t| t.left || t.given_up || t.kind == "crash" || t.entry == Some(Entry::Run));
        if !disrupted {
            if let Some(&max) = self.taken.keys().next_back() {
                let missing: Vec<u64> = (1..=max).filter(|s| !self.taken.contains_key(s)).collect();
                if !missing.is_empty() {
                    problems.push(format!("events lost (never taken by any consumer): {missing:?}"));
                }
            }
        }
        for p in problems {
            self.error(p);
        }
    }

    fn report(&self) -> String {
        let mut s = format!("turn case seed {:#x} (replay: KOMA_SM_TURN_SEED={:#x})\n", self.seed, self.seed);
        for e in &self.errors {
            s.push_str(&format!("  error: {e}\n"));
        }
        for l in &self.log {
            s.push_str(&format!("    {l}\n"));
        }
        s
    }
}

/// The run's figures.
#[derive(Default)]
struct Totals {
    cases: u64,
    failed: Vec<String>,
    turns: BTreeMap<&'static str, u64>,
    given_up: u64,
    overflows: u64,
    kills: u64,
    events: u64,
    calls: u64,
    clean: u64,
}

#[test]
fn turn_state_machine() {
    let _serial = crate::common::serial();
    let replay = env_num("KOMA_SM_TURN_SEED");
    let threads = env_num("KOMA_SM_THREADS").unwrap_or(8).max(1) as usize;
    let cases = if replay.is_some() { threads as u64 } else { env_num("KOMA_SM_TURN_CASES").unwrap_or(1_000) };
    let base = env_num("KOMA_SM_BASE_SEED").unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        mix(t ^ u64::from(std::process::id()))
    });
    eprintln!("turn_state_machine: {cases} cases on {threads} threads, base seed {base:#x}");
    let next = Arc::new(AtomicU64::new(0));
    let totals = Arc::new(Mutex::new(Totals::default()));
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|w| {
            let (next, totals) = (next.clone(), totals.clone());
            std::thread::spawn(move || {
                let home = thread_home(1000 + w);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= cases {
                        break;
                    }
                    let seed = replay.unwrap_or_else(|| mix(base.wrapping_add(i) ^ 0x7475_726e));
                    let mut case = Case::new(seed, &home);
                    case.run();
                    if replay.is_some() {
                        eprintln!("{}", case.report());
                    }
                    let mut t = totals.lock().unwrap();
                    t.cases += 1;
                    for r in case.turns.values() {
                        *t.turns.entry(r.kind).or_default() += 1;
                        t.given_up += u64::from(r.given_up);
                    }
                    t.overflows += u64::from(case.overflowed);
                    t.kills += u64::from(case.killed);
                    t.events += case.taken.len() as u64;
                    t.calls += case.calls.len() as u64;
                    t.clean += u64::from(
                        !(case.overflowed
                            || case.killed
                            || case
                                .turns
                                .values()
                                .any(|r| r.left || r.given_up || r.kind == "crash" || r.entry == Some(Entry::Run))),
                    );
                    if !case.errors.is_empty() && t.failed.len() < 10 {
                        t.failed.push(case.report());
                    }
                    drop(t);
                    clear_dir(&home);
                }
                let _ = std::fs::remove_dir_all(&home);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker panicked");
    }
    let t = totals.lock().unwrap();
    eprintln!(
        "turn_state_machine: {} cases in {:.1} s; turns {:?}; given up {}, cases with an overflow {}, with a SIGKILL {}; \
         {} events taken, {} calls; {} cases checked for lost events",
        t.cases,
        start.elapsed().as_secs_f64(),
        t.turns,
        t.given_up,
        t.overflows,
        t.kills,
        t.events,
        t.calls,
        t.clean
    );
    for f in &t.failed {
        eprintln!("\n{f}");
    }
    assert!(t.failed.is_empty(), "{} turn cases failed (base seed {base:#x}); see above", t.failed.len());
    assert_eq!(t.cases, cases);
}
