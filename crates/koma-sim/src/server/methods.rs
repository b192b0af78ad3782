//! The methods' handlers: each request, once read, is checked (known
//! method, params, session) and carried out under the core lock, and its
//! answer is sent before the lock is let go.

use crate::agent::{self, Core, Plan};
use crate::capabilities::{BENCH_METHODS, METHODS};
use crate::server::answer::answer;
use crate::server::params::{check, fields, s, u};
use crate::server::process;
use crate::server::rpc::{err, invalid, ok, Req, Res, RpcError};
use crate::server::shared::Shared;
use crate::session::Session;
use crate::session_file::{self, Loaded, SessionFile};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// What `bench_garbage` writes in place of its answer (then the terminator).
pub const GARBAGE_LINE: &[u8] = b"this line is not JSON (bench_garbage)";

/// The handlers, with what they remember between requests.
pub struct Methods {
    sh: Arc<Shared>,
    /// The `event_flood` fault acted (on the first `submit`).
    flooded: bool,
}

impl Methods {
    pub fn new(sh: Arc<Shared>) -> Methods {
        Methods { sh, flooded: false }
    }

    fn answer(&self, g: &mut Core, req: &Req, res: Res) {
        answer(&self.sh, g, req, res)
    }

    /// Carries out `req` with params `p` (already an object).
    pub fn dispatch(&mut self, g: &mut Core, req: &Req, p: &Map<String, Value>) {
        let bench = self.sh.cfg.bench;
        let known = METHODS.contains(&req.method.as_str()) || (bench && BENCH_METHODS.contains(&req.method.as_str()));
        if !known {
            let e = err("unknown_method", format!("unknown method `{}`", req.method));
            return self.answer(g, req, Err(e));
        }
        if let Err(e) = check(p, fields(&req.method)) {
            return self.answer(g, req, Err(e));
        }
        let needs_session = matches!(
            req.method.as_str(),
            "submit" | "enqueue" | "interrupt" | "interrupt_and_submit" | "approve" | "configure"
        );
        if needs_session && g.session.is_none() {
            let e = err("no_session", format!("`{}` needs a session: call create or resume first", req.method));
            return self.answer(g, req, Err(e));
        }
        match req.method.as_str() {
            "create" => self.create(g, req, p),
            "resume" => self.resume(g, req, p),
            "state" => {
                let v = g.state_value();
                self.answer(g, req, ok(v))
            }
            "submit" => {
                if let Some(t) = g.active_id() {
                    let e = RpcError {
                        code: Cow::Borrowed("busy"),
                        message: format!("turn {t} is {}", g.status()),
                        data: Some(json!({"turn": t})),
                    };
                    return self.answer(g, req, Err(e));
                }
                let text = s(p, "text").unwrap_or_default();
                let plan = match g.plan(&text) {
                    Plan::Unscripted(message) => return self.answer(g, req, Err(unscripted(message, text))),
                    plan => plan,
                };
                let turn = g.start_turn(text, plan);
                if self.sh.cfg.faults.event_flood && !self.flooded {
                    self.flooded = true;
                    eprintln!("koma-sim: flooding 2000 output events (event_flood)");
                    for i in 1..=2000 {
                        g.emit("output", json!({"turn": turn, "text": format!("flood {i} ")}));
                    }
                }
                self.answer(g, req, ok(json!({"turn": turn})))
            }
            "enqueue" => {
                let text = s(p, "text").unwrap_or_default();
                let position = if g.active_id().is_some() {
                    let sess = g.session.as_mut().expect("a session");
                    sess.queue.push_back(text);
                    let n = sess.queue.len();
                    g.emit_state();
                    n
                } else {
                    let plan = match g.plan(&text) {
                        Plan::Unscripted(message) => return self.answer(g, req, Err(unscripted(message, text))),
                        plan => plan,
                    };
                    g.start_turn(text, plan);
                    0
                };
                self.answer(g, req, ok(json!({"position": position})))
            }
            "interrupt" => {
                let stopped = g.finish_active("interrupted", None);
                if stopped.is_some() {
                    g.next_or_idle();
                    g.save();
                }
                self.answer(g, req, ok(json!({"turn": stopped})))
            }
            "interrupt_and_submit" => {
                // An unscripted text is refused before anything is stopped.
                let text = s(p, "text").unwrap_or_default();
                let plan = match g.plan(&text) {
                    Plan::Unscripted(message) => return self.answer(g, req, Err(unscripted(message, text))),
                    plan => plan,
                };
                let stopped = g.finish_active("interrupted", None);
                let turn = g.start_turn(text, plan);
                g.save();
                self.answer(g, req, ok(json!({"interrupted": stopped, "turn": turn})))
            }
            "approve" => self.approve(g, req, p),
            "configure" => {
                if let Some(m) = s(p, "model") {
                    eprintln!("koma-sim: model set to {m}");
                    g.session.as_mut().expect("a session").model = m;
                }
                g.emit_state();
                g.save();
                let v = g.state_value();
                self.answer(g, req, ok(v))
            }
            "detach" => self.detach(g, req),
            "bench_events" => {
                let (count, bytes) = (u(p, "count").unwrap_or(0), u(p, "bytes").unwrap_or(0));
                g.emit_bench(count, bytes, None);
                self.answer(g, req, ok(json!({"count": count})))
            }
            "bench_exit" => {
                let code = u(p, "code").unwrap_or(0);
                if code > 255 {
                    return self.answer(
                        g,
                        req,
                        Err(invalid("code", "field `code` must be an exit code, 0 to 255".into())),
                    );
                }
                // What was queued before goes out; the answer never does.
                self.sh.out.sync();
                eprintln!("koma-sim: exiting with code {code} in place of the answer to id {} (bench_exit)", req.id);
                std::process::exit(code as i32)
            }
            "bench_garbage" => {
                // In place of the answer, whatever the answer faults say.
                eprintln!("koma-sim: a line that is not JSON in place of the answer to id {} (bench_garbage)", req.id);
                let mut line = GARBAGE_LINE.to_vec();
                line.extend_from_slice(self.sh.out.term);
                self.sh.out.raw(line);
            }
            "bench_blob" => {
                let n = u(p, "bytes").unwrap_or(0) as usize;
                let mut r = Vec::with_capacity(n + 12);
                r.extend_from_slice(b"{\"blob\":\"");
                r.resize(r.len() + n, b'x');
                r.extend_from_slice(b"\"}");
                self.answer(g, req, Ok(String::from_utf8(r).expect("ascii")))
            }
            other => unreachable!("method {other} is known but not handled"),
        }
    }

    fn create(&mut self, g: &mut Core, req: &Req, p: &Map<String, Value>) {
        if let Some(sess) = &g.session {
            let e = err("lifecycle", format!("session {} is already open in this process", sess.id));
            return self.answer(g, req, Err(e));
        }
        let id = agent::new_session_id();
        let cwd = s(p, "cwd");
        g.session = Some(Session::new(id.clone(), s(p, "model"), cwd.clone()));
        let state = g.state_value();
        self.answer(g, req, ok(json!({"session": id, "state": state})));
        let model = g.session.as_ref().map(|s| s.model.clone()).unwrap_or_default();
        let msg = format!("koma-sim session {id} created (model {model}, cwd {})", cwd.as_deref().unwrap_or("-"));
        eprintln!("koma-sim: session {id} created");
        g.emit("diagnostic", json!({"level": "info", "message": msg}));
        g.save();
    }

    fn resume(&mut self, g: &mut Core, req: &Req, p: &Map<String, Value>) {
        if let Some(sess) = &g.session {
            let e = err("lifecycle", format!("session {} is already open in this process", sess.id));
            return self.answer(g, req, Err(e));
        }
        let id = s(p, "session").unwrap_or_default();
        let after = u(p, "after").unwrap_or(0);
        let loaded = match session_file::load(&g.home, &id) {
            Ok(l) => l,
            Err((code, msg)) => return self.answer(g, req, Err(err(code, msg))),
        };
        if g.saves {
            // A file that cannot be written to is read all the same (the
            // session goes on unsaved, as a save that fails does).
            match SessionFile::reopen(&loaded) {
                Ok(f) => g.file = Some(f),
                Err(e) => eprintln!("koma-sim: cannot save session {id} to {}: {e}", loaded.path().display()),
            }
        }
        let Loaded { session, log, seq, unfinished, .. } = loaded;
        let saved = log.len();
        g.seq = seq;
        g.session = Some(session);
        let state = g.state_value();
        self.answer(g, req, ok(json!({"session": id, "state": state})));
        let replayed = g.replay(&log, after);
        drop(log);
        if let Some(t) = unfinished {
            g.emit(
                "turn_finished",
                json!({"turn": t, "status": "failed", "error": "the koma-sim process that ran this turn ended before it finished"}),
            );
            g.emit_state();
        }
        eprintln!("koma-sim: session {id} resumed ({replayed} events replayed after seq {after})");
        let msg =
            format!("koma-sim session {id} resumed: {saved} log entries, {replayed} events replayed after seq {after}");
        g.emit("diagnostic", json!({"level": "info", "message": msg}));
        g.save();
    }

    fn approve(&mut self, g: &mut Core, req: &Req, p: &Map<String, Value>) {
        let approval = s(p, "approval").unwrap_or_default();
        let decision = s(p, "decision").unwrap_or_default();
        let allow = match decision.as_str() {
            "allow" => true,
            "deny" => false,
            _ => {
                return self.answer(
                    g,
                    req,
                    Err(invalid("decision", "field `decision` must be \"allow\" or \"deny\"".into())),
                )
            }
        };
        let sess = g.session.as_mut().expect("a session");
        let pending = match sess.active.as_mut() {
            Some(t) if t.wait.as_ref().is_some_and(|w| w.approval == approval) => t.wait.take().expect("checked"),
            _ => {
                let e = err("unknown_approval", format!("no approval `{approval}` is pending"));
                return self.answer(g, req, Err(e));
            }
        };
        let turn = g.active_id().unwrap_or_default();
        eprintln!("koma-sim: approval {approval} {decision}");
        let decided = if allow { pending.allow } else { pending.deny };
        g.emit(
            "tool_result",
            json!({"turn": turn, "call": pending.call, "output": decided.output, "error": decided.error}),
        );
        g.play_next(decided.then);
        g.emit_state();
        self.answer(g, req, ok(json!({})));
    }

    fn detach(&mut self, g: &mut Core, req: &Req) {
        if self.sh.cfg.faults.ignore_detach {
            eprintln!("koma-sim: ignoring detach (ignore_detach)");
            return;
        }
        g.close_session();
        self.answer(g, req, ok(json!({})));
        self.sh.out.sync();
        eprintln!("koma-sim: detach");
        process::exit_clean(&self.sh);
    }
}

/// The remote error for a text that no turn of the scenario matches.
fn unscripted(message: String, text: String) -> RpcError {
    eprintln!("koma-sim: refusing a turn: {message}");
    RpcError { code: Cow::Borrowed("unscripted"), message, data: Some(json!({"text": text})) }
}
