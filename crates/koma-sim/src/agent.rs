//! The deterministic agent: one session (`session`), its turns, its queue,
//! its event log, and its file (`session_file`). Everything here runs under
//! one mutex (`Core`); the worker thread advances the active turn step by step, request handlers
//! change it synchronously. Every event is numbered, logged and sent to the
//! writer while the mutex is held, so `seq` order is stdout order. A turn's
//! steps come from the keyword agent (`keyword`) or from a scenario.

use crate::crash::crash;
use crate::keyword;
use crate::output::{Output, EXTRA};
use crate::scenario::script::{Turns, Unscripted};
use crate::session::{Entry, Pending, Session, Turn};
use crate::session_file::SessionFile;
use crate::step::{Ask, Step};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where the steps of a turn about to start come from.
pub enum Plan {
    /// The keyword agent.
    Keyword,
    /// `bench_turn N B`: N outputs of B bytes.
    Bench(u64, u64),
    /// The scenario's turn of this index.
    Scripted(usize, Vec<Step>),
    /// No turn of the scenario matches, and unscripted turns are errors:
    /// this message says so.
    Unscripted(String),
}

pub enum Wake {
    /// Did something; call again.
    Again,
    /// Nothing to do until notified.
    Idle,
    /// Nothing to do for this long (or until notified).
    After(Duration),
}

pub struct Core {
    /// The last seq sent (0: none yet).
    pub seq: u64,
    pub session: Option<Session>,
    pub shutdown: bool,
    pub out: Output,
    pub delay_ms: u64,
    pub home: PathBuf,
    /// Sessions are written to `home` (see `Config::saves`).
    pub saves: bool,
    /// The session's file, once it was first saved.
    pub file: Option<SessionFile>,
    /// Bench mode: a turn text `bench_turn N B` streams N outputs of B bytes.
    pub bench: bool,
    /// The `odd_status` switch: every `turn_finished` says `escalated`.
    pub odd_status: bool,
    /// The scenario's turns (`KOMA_SIM_SCENARIO`), if any.
    pub script: Option<Turns>,
    /// A scenario's `stop_answering` played: no more events (nor answers).
    pub silent: bool,
}

pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("string serializes")
}

pub fn event_frame(seq: u64, name: &str, data: &Value) -> String {
    format!("{{\"type\":\"event\",\"seq\":{seq},\"name\":{},\"data\":{data}}}", json_str(name))
}

impl Core {
    pub fn emit(&mut self, name: &str, data: Value) {
        if self.silent {
            return;
        }
        self.seq += 1;
        let text = event_frame(self.seq, name, &data);
        if let Some(s) = self.session.as_mut().filter(|_| self.saves) {
            s.unsaved.push(Entry::Frame { seq: self.seq, text: text.clone() });
        }
        self.out.frame(text);
    }

    pub fn status(&self) -> &'static str {
        match self.session.as_ref().and_then(|s| s.active.as_ref()) {
            None => "idle",
            Some(t) if t.wait.is_some() => "waiting",
            Some(_) => "running",
        }
    }

    pub fn state_value(&self) -> Value {
        match &self.session {
            None => json!({"session": null, "status": "idle", "turn": null, "queued": 0, "model": null}),
            Some(s) => json!({
                "session": s.id,
                "status": self.status(),
                "turn": s.active.as_ref().map(|t| t.id.clone()),
                "queued": s.queue.len(),
                "model": s.model,
            }),
        }
    }

    pub fn emit_state(&mut self) {
        let v = self.state_value();
        self.emit("state", v);
    }

    pub fn active_id(&self) -> Option<String> {
        self.session.as_ref().and_then(|s| s.active.as_ref()).map(|t| t.id.clone())
    }

    /// Where the steps of a turn for `text` would come from, were it to
    /// start now. A scenario's entry that is chosen is counted when
    /// `start_turn` starts the turn.
    pub fn plan(&mut self, text: &str) -> Plan {
        if let Some((count, bytes)) = bench_turn(self.bench, text) {
            return Plan::Bench(count, bytes);
        }
        let Some(script) = self.script.as_mut() else { return Plan::Keyword };
        match script.choose(text) {
            Ok((index, steps)) => Plan::Scripted(index, steps),
            Err(why) => match script.unscripted {
                Unscripted::Agent => Plan::Keyword,
                Unscripted::Error => {
                    let mut message = format!("no turn of the scenario matches the text {}", json_str(text));
                    if let Some(why) = why {
                        message = format!("{message}: {why}");
                    }
                    Plan::Unscripted(message)
                }
            },
        }
    }

    /// Starts a turn now, as `plan` says (the caller checked that none is
    /// active).
    pub fn start_turn(&mut self, text: String, plan: Plan) -> String {
        let delay = self.delay_ms;
        if let Some(script) = self.script.as_mut() {
            script.start(match &plan {
                Plan::Scripted(index, _) => Some(*index),
                _ => None,
            });
        }
        let s = self.session.as_mut().expect("a session");
        s.next_turn += 1;
        let id = format!("t-{}", s.next_turn);
        let steps = match plan {
            Plan::Bench(count, bytes) => VecDeque::from([Step::BenchOutputs { left: count, bytes }, Step::completed()]),
            Plan::Keyword => keyword::plan(&mut s.next_call, &mut s.next_approval, &s.model, &id, &text, delay),
            Plan::Scripted(index, steps) => {
                eprintln!("koma-sim: turn {id} plays turns[{index}] of the scenario");
                steps.into()
            }
            Plan::Unscripted(message) => {
                eprintln!("koma-sim: turn {id} fails: {message}");
                VecDeque::from([Step::Finish { status: "failed".into(), error: Some(message) }])
            }
        };
        s.active = Some(Turn { id: id.clone(), steps, wait: None, not_before: None, hung: false });
        eprintln!("koma-sim: turn {id} started");
        self.emit("turn_started", json!({"turn": id, "text": text}));
        self.emit_state();
        self.save();
        id
    }

    /// Ends the active turn with `status` (and `error`); emits
    /// `turn_finished` only. With `odd_status`, the event says `escalated`,
    /// a status outside the catalog, whatever the turn's real end.
    pub fn finish_active(&mut self, status: &str, error: Option<&str>) -> Option<String> {
        let t = self.session.as_mut()?.active.take()?;
        let said = if self.odd_status {
            eprintln!("koma-sim: turn {} {status} (odd_status: turn_finished says escalated)", t.id);
            "escalated"
        } else {
            eprintln!("koma-sim: turn {} {status}", t.id);
            status
        };
        let mut data = json!({"turn": t.id, "status": said});
        if let Some(e) = error {
            data["error"] = json!(e);
        }
        self.emit("turn_finished", data);
        Some(t.id)
    }

    /// After a turn ended: start the next queued text, or report idle.
    pub fn next_or_idle(&mut self) {
        match self.session.as_mut().and_then(|s| s.queue.pop_front()) {
            Some(text) => {
                let plan = self.plan(&text);
                self.start_turn(text, plan);
            }
            None => self.emit_state(),
        }
    }

    /// Detach or end of stdin: the active turn is interrupted and the queue
    /// dropped, then the session is saved. Stops the worker.
    pub fn close_session(&mut self) {
        self.shutdown = true;
        if self.session.is_none() {
            return;
        }
        let had_turn = self.finish_active("interrupted", None).is_some();
        let s = self.session.as_mut().expect("a session");
        let had_queue = !s.queue.is_empty();
        s.queue.clear();
        if had_turn || had_queue {
            self.emit_state();
        }
        self.save();
    }

    /// The active turn, if any.
    fn active_mut(&mut self) -> Option<&mut Turn> {
        self.session.as_mut().and_then(|s| s.active.as_mut())
    }

    /// Plays `steps` next in the active turn, before the rest of it.
    pub fn play_next(&mut self, steps: Vec<Step>) {
        if let Some(t) = self.active_mut() {
            for st in steps.into_iter().rev() {
                t.steps.push_front(st);
            }
        }
    }

    /// One step of the active turn (worker thread).
    pub fn advance(&mut self) -> Wake {
        if self.silent {
            return Wake::Idle;
        }
        let now = Instant::now();
        let step = {
            let Some(t) = self.active_mut() else {
                return Wake::Idle;
            };
            if t.wait.is_some() || t.hung {
                return Wake::Idle;
            }
            if let Some(nb) = t.not_before {
                if nb > now {
                    return Wake::After(nb - now);
                }
                t.not_before = None;
            }
            t.steps.pop_front().unwrap_or_else(Step::completed)
        };
        let turn = self.active_id().unwrap_or_default();
        match step {
            Step::Sleep(ms) => {
                if let Some(t) = self.active_mut() {
                    t.not_before = Some(now + Duration::from_millis(ms));
                }
            }
            Step::Hang => {
                eprintln!("koma-sim: turn {turn} pauses until interrupted");
                if let Some(t) = self.active_mut() {
                    t.hung = true;
                }
            }
            Step::Event(name, data) => self.emit(&name, data),
            Step::Output(text) => self.emit("output", json!({"turn": turn, "text": text})),
            Step::Tool { tool, input, output, error } => {
                let call = self.new_call();
                self.emit("tool_call", json!({"turn": turn, "call": call, "tool": tool, "input": input}));
                self.emit("tool_result", json!({"turn": turn, "call": call, "output": output, "error": error}));
            }
            Step::Approval(ask) => self.ask(&turn, *ask),
            Step::BenchOutputs { left, bytes } => {
                let n = left.min(bench_chunk(bytes));
                self.emit_bench(n, bytes, Some(turn));
                if n < left {
                    if let Some(t) = self.active_mut() {
                        t.steps.push_front(Step::BenchOutputs { left: left - n, bytes });
                    }
                }
            }
            Step::Finish { status, error } => {
                self.finish_active(&status, error.as_deref());
                self.next_or_idle();
                self.save();
            }
            Step::Exit(code) => {
                self.out.sync();
                eprintln!("koma-sim: turn {turn}: exiting with code {code} (scenario)");
                std::process::exit(code);
            }
            Step::Crash { signal, name } => {
                self.out.sync();
                eprintln!("koma-sim: turn {turn}: crashing by {name} (scenario)");
                crash(signal);
            }
            Step::StopAnswering => {
                eprintln!("koma-sim: turn {turn}: no more answers or events (scenario stop_answering)");
                self.silent = true;
                if let Some(t) = self.active_mut() {
                    t.hung = true;
                }
            }
            Step::BrokenFrame(line) => {
                eprintln!("koma-sim: turn {turn}: a line that is not JSON (scenario broken_frame)");
                let mut b = line.into_bytes();
                b.extend_from_slice(self.out.term);
                self.out.raw(b);
            }
        }
        Wake::Again
    }

    /// A fresh call id from the session's counter.
    fn new_call(&mut self) -> String {
        let s = self.session.as_mut().expect("a session");
        s.next_call += 1;
        format!("c-{}", s.next_call)
    }

    /// Asks to approve a call (after sending it, if the plan did not), then
    /// waits.
    fn ask(&mut self, turn: &str, ask: Ask) {
        let Ask { ids, tool, input, allow, deny } = ask;
        let (approval, call) = match ids {
            Some(ids) => ids,
            None => {
                let call = self.new_call();
                let s = self.session.as_mut().expect("a session");
                s.next_approval += 1;
                let approval = format!("a-{}", s.next_approval);
                self.emit("tool_call", json!({"turn": turn, "call": call, "tool": tool, "input": input}));
                (approval, call)
            }
        };
        eprintln!("koma-sim: turn {turn} waits for approval {approval}");
        self.emit("approval_requested", json!({"turn": turn, "approval": approval, "tool": tool, "input": input}));
        if let Some(t) = self.active_mut() {
            t.wait = Some(Pending { approval, call, allow, deny });
        }
        self.emit_state();
        self.save();
    }

    /// Saves the session: what was logged since the last save, and the
    /// session's numbers, appended to its file (made at the first save).
    pub fn save(&mut self) {
        let Some(s) = self.session.as_mut().filter(|_| self.saves) else { return };
        if self.file.is_none() {
            match SessionFile::create(&self.home, &s.id) {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    eprintln!("koma-sim: cannot save session {} in {}: {e}", s.id, self.home.display());
                    return;
                }
            }
        }
        let file = self.file.as_mut().expect("made above");
        let entries = std::mem::take(&mut s.unsaved);
        if let Err(e) = file.append(&entries, s, self.seq) {
            eprintln!("koma-sim: cannot save session {} to {}: {e}", s.id, file.path().display());
        }
    }

    /// Numbers, logs and sends `count` bench `output` events of `bytes`
    /// each for `turn` (None: `bench_events`, turn id "bench").
    pub fn emit_bench(&mut self, count: u64, bytes: u64, turn: Option<String>) {
        if count == 0 {
            return;
        }
        let first = self.seq + 1;
        self.send_bench(first, count, bytes, 0, turn.as_deref());
        self.seq += count;
        if let Some(sess) = self.session.as_mut().filter(|_| self.saves) {
            // A turn's chunks that follow each other are one range in the log.
            if let Some(Entry::Bench { first: f, count: c, bytes: b, turn: t @ Some(_) }) = sess.unsaved.last_mut() {
                if *f + *c == first && *b == bytes && *t == turn {
                    *c += count;
                    return;
                }
            }
            sess.unsaved.push(Entry::Bench { first, count, bytes, turn });
        }
    }

    /// Sends `count` bench `output` events starting at `first` (only those
    /// with seq > `after`), in large raw chunks. Does not touch `self.seq`.
    pub fn send_bench(&self, first: u64, count: u64, bytes: u64, after: u64, turn: Option<&str>) {
        let mut tail = Vec::with_capacity(bytes as usize + 100);
        tail.extend_from_slice(b",\"name\":\"output\",\"data\":{\"turn\":");
        tail.extend_from_slice(json_str(turn.unwrap_or("bench")).as_bytes());
        tail.extend_from_slice(b",\"text\":\"");
        tail.resize(tail.len() + bytes as usize, b'x');
        tail.extend_from_slice(b"\"}");
        if self.out.extra {
            tail.extend_from_slice(EXTRA.as_bytes());
        }
        tail.push(b'}');
        tail.extend_from_slice(self.out.term);
        const HEAD: &[u8] = b"{\"type\":\"event\",\"seq\":";
        const CHUNK: usize = 1 << 20;
        let frame_len = HEAD.len() + 20 + tail.len();
        let cap = CHUNK.max(frame_len);
        let mut buf = Vec::with_capacity(cap);
        let mut digits = [0u8; 20];
        for seq in first.max(after + 1)..first + count {
            buf.extend_from_slice(HEAD);
            buf.extend_from_slice(itoa(seq, &mut digits));
            buf.extend_from_slice(&tail);
            if buf.len() + frame_len > cap {
                self.out.raw(std::mem::replace(&mut buf, Vec::with_capacity(cap)));
            }
        }
        if !buf.is_empty() {
            self.out.raw(buf);
        }
    }

    /// Re-sends the events of a session's `log` with seq > `after`;
    /// returns how many.
    pub fn replay(&self, log: &[Entry], after: u64) -> u64 {
        let mut n = 0;
        for e in log {
            match e {
                Entry::Frame { seq, text } if *seq > after => {
                    self.out.frame(text.clone());
                    n += 1;
                }
                Entry::Frame { .. } => {}
                Entry::Bench { first, count, bytes, turn } => {
                    if first + count - 1 > after {
                        self.send_bench(*first, *count, *bytes, after, turn.as_deref());
                        n += first + count - (*first).max(after + 1);
                    }
                }
            }
        }
        n
    }
}

/// `bench_turn N B` (bench mode only): a turn of N outputs of B bytes each.
fn bench_turn(bench: bool, text: &str) -> Option<(u64, u64)> {
    if !bench {
        return None;
    }
    let mut w = text.split_whitespace();
    if w.next() != Some("bench_turn") {
        return None;
    }
    let count = w.next()?.parse().ok()?;
    let bytes = w.next()?.parse().ok()?;
    w.next().is_none().then_some((count, bytes))
}

/// How many bench outputs of `bytes` fill about one 1 MiB chunk of output.
fn bench_chunk(bytes: u64) -> u64 {
    ((1u64 << 20) / (bytes + 80)).max(1)
}

fn itoa(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

pub fn new_session_id() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    format!("s-{nanos:x}-{:x}", std::process::id())
}
