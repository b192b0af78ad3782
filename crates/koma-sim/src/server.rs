//! `koma-sim sdk serve`: hello, the request loop, the methods, the faults.

use crate::agent::{self, json_str, Core, Session, Wake};
use crate::config::{Config, BENCH_METHODS, METHODS};
use crate::faults::FrameFault;
use crate::output::Output;
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Bytes read from stdin so far (read by the SIGTERM reporter too).
static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// A frame of exactly 40 MiB of JSON text.
pub const MAX_FRAME: usize = 41_943_040;

/// What `bench_garbage` writes in place of its answer (then the terminator).
pub const GARBAGE_LINE: &[u8] = b"this line is not JSON (bench_garbage)";

pub struct Shared {
    pub core: Mutex<Core>,
    pub cv: Condvar,
    pub cfg: Config,
    pub out: Output,
    /// Answers held by the `hold` fault, in arrival order.
    pub held: Mutex<Vec<Vec<u8>>>,
    pub hello: String,
    pub unknown_ids: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct RpcError {
    pub code: &'static str,
    pub message: String,
    pub data: Option<Value>,
}

fn err(code: &'static str, message: impl Into<String>) -> RpcError {
    RpcError { code, message: message.into(), data: None }
}

fn invalid(field: &str, message: String) -> RpcError {
    RpcError { code: "invalid_params", message, data: Some(json!({"field": field})) }
}

/// A result is serialized JSON (so that big results are built only once).
type Res = Result<String, RpcError>;

fn ok(v: Value) -> Res {
    Ok(v.to_string())
}

struct Req {
    id: String,
    method: String,
    first: bool,
}

#[derive(Clone, Copy)]
enum Kind {
    Str,
    UInt,
}

/// Rejects unknown fields, missing required fields and wrong types. An
/// optional field may be `null`, which means absent.
fn check(p: &Map<String, Value>, fields: &[(&str, Kind, bool)]) -> Result<(), RpcError> {
    if let Some(k) = p.keys().find(|k| !fields.iter().any(|f| f.0 == k.as_str())) {
        return Err(invalid(k, format!("unknown field `{k}`")));
    }
    for &(name, kind, required) in fields {
        match p.get(name) {
            None if required => return Err(invalid(name, format!("missing field `{name}`"))),
            None => {}
            Some(Value::Null) if !required => {}
            Some(v) => {
                let good = match kind {
                    Kind::Str => v.is_string(),
                    Kind::UInt => v.as_u64().is_some(),
                };
                if !good {
                    let want = match kind {
                        Kind::Str => "a string",
                        Kind::UInt => "a non-negative integer",
                    };
                    return Err(invalid(name, format!("field `{name}` must be {want}")));
                }
            }
        }
    }
    Ok(())
}

fn s(p: &Map<String, Value>, k: &str) -> Option<String> {
    p.get(k).and_then(Value::as_str).map(str::to_string)
}

fn u(p: &Map<String, Value>, k: &str) -> Option<u64> {
    p.get(k).and_then(Value::as_u64)
}

fn response_frame(id: &str, res: &Res) -> String {
    match res {
        Ok(r) => {
            let idj = json_str(id);
            let mut f = String::with_capacity(r.len() + idj.len() + 16);
            f.push_str("{\"id\":");
            f.push_str(&idj);
            f.push_str(",\"result\":");
            f.push_str(r);
            f.push('}');
            f
        }
        Err(e) => {
            let mut eo = json!({"code": e.code, "message": e.message});
            if let Some(d) = &e.data {
                eo["data"] = d.clone();
            }
            format!("{{\"id\":{},\"error\":{eo}}}", json_str(id))
        }
    }
}

pub struct Server {
    sh: Arc<Shared>,
    nreq: u64,
    flooded: bool,
    tool: Option<Child>,
}

impl Server {
    /// Sends the answer to `req`, subject to the answer faults. Called with
    /// the core lock held, so events the handler emits after it keep order.
    fn answer(&self, g: &mut Core, req: &Req, res: Res) {
        let f = &self.sh.cfg.faults;
        let out = &self.sh.out;
        let detach = req.method == "detach";
        if req.first && !f.frame.is_empty() {
            for ff in &f.frame {
                eprintln!("koma-sim: fault {ff:?} in place of the answer to id {}", req.id);
                self.frame_fault(g, req, &res, *ff);
            }
            return;
        }
        if f.never_answer && !detach {
            eprintln!("koma-sim: not answering id {} (never_answer)", req.id);
            return;
        }
        if f.unknown_event {
            g.emit("mystery", json!({"note": "an event name outside the catalog"}));
        }
        if f.unknown_ids {
            let n = self.sh.unknown_ids.fetch_add(1, Ordering::Relaxed) + 1;
            out.frame(format!("{{\"id\":\"zz-{n}\",\"result\":{{}}}}"));
        }
        let frame = response_frame(&req.id, &res);
        if f.hold && !detach {
            let mut held = lock(&self.sh.held);
            held.push(out.encode(&frame));
            eprintln!("koma-sim: holding answer to id {} ({} held)", req.id, held.len());
            return;
        }
        out.frame(frame);
    }

    fn frame_fault(&self, g: &mut Core, req: &Req, res: &Res, ff: FrameFault) {
        let out = &self.sh.out;
        let line = |b: &[u8]| {
            let mut v = b.to_vec();
            v.extend_from_slice(out.term);
            out.raw(v);
        };
        match ff {
            FrameFault::BlankLine => line(b""),
            FrameFault::Pretty => {
                let v: Value = serde_json::from_str(&response_frame(&req.id, res)).expect("own frame parses");
                line(serde_json::to_string_pretty(&v).expect("serializes").as_bytes());
            }
            FrameFault::LogLine => line(b"INFO starting worker"),
            FrameFault::InvalidUtf8 => {
                let mut b = format!("{{\"id\":{},\"result\":\"bad ", json_str(&req.id)).into_bytes();
                b.extend_from_slice(b"\xFF\xFE bytes\"}");
                line(&b);
            }
            FrameFault::JsonArray => line(b"[1,2,3]"),
            FrameFault::JsonScalar => line(b"42"),
            FrameFault::UnknownType => out.frame("{\"type\":\"bogus\"}".into()),
            FrameFault::SecondHello => out.frame(self.sh.hello.clone()),
            FrameFault::BothResultError => out.frame(format!(
                "{{\"id\":{},\"result\":{{}},\"error\":{{\"code\":\"both\",\"message\":\"this response has both result and error\"}}}}",
                json_str(&req.id)
            )),
            FrameFault::Neither => out.frame("{\"foo\":1}".into()),
            FrameFault::SeqGap | FrameFault::SeqRepeat => {
                // Not logged and not counted: the session's own numbering
                // stays clean for a later resume.
                let n = g.seq + 1;
                let second = if ff == FrameFault::SeqGap { n + 2 } else { n };
                for (i, seq) in [n, second].into_iter().enumerate() {
                    let msg = format!("fault {ff:?}: event {} of 2", i + 1);
                    out.frame(agent::event_frame(seq, "diagnostic", &json!({"level": "warning", "message": msg})));
                }
            }
            FrameFault::Frame40Mib | FrameFault::FrameOver40Mib => {
                let target = MAX_FRAME + usize::from(ff == FrameFault::FrameOver40Mib);
                let head = format!("{{\"id\":{},\"result\":\"", json_str(&req.id));
                let tail = if out.extra { "\",\"extra\":true}" } else { "\"}" };
                let mut b = Vec::with_capacity(target + 2);
                b.extend_from_slice(head.as_bytes());
                b.resize(target - tail.len(), b'x');
                b.extend_from_slice(tail.as_bytes());
                debug_assert_eq!(b.len(), target);
                b.extend_from_slice(out.term);
                out.raw(b);
            }
        }
    }

    fn handle_line(&mut self, line: &[u8]) {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("koma-sim: ignoring a stdin line that is not JSON ({e})");
                return;
            }
        };
        let Some(obj) = v.as_object() else {
            eprintln!("koma-sim: ignoring a stdin line that is not a JSON object");
            return;
        };
        let id = match obj.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => {
                eprintln!("koma-sim: ignoring a request without a non-empty string id");
                return;
            }
        };
        self.nreq += 1;
        let first = self.nreq == 1;
        if first {
            self.first_request_faults();
        }
        let method = obj.get("method").and_then(Value::as_str).unwrap_or("").to_string();
        let req = Req { id, method, first };
        let sh = Arc::clone(&self.sh);
        let mut g = lock(&sh.core);
        if req.method.is_empty() {
            self.answer(&mut g, &req, Err(err("invalid_request", "`method` must be a non-empty string")));
            return;
        }
        let empty = Map::new();
        let params = match obj.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => {
                self.answer(&mut g, &req, Err(invalid("params", "`params` must be an object".into())));
                return;
            }
        };
        self.dispatch(&mut g, &req, params);
        drop(g);
        sh.cv.notify_all();
    }

    /// The faults that act on the first request before it is handled.
    fn first_request_faults(&self) {
        let f = &self.sh.cfg.faults;
        if f.exit_mid_request {
            self.sh.out.sync();
            eprintln!("koma-sim: exiting on purpose (exit_mid_request)");
            std::process::exit(3);
        }
        if f.kill_mid_request {
            self.sh.out.sync();
            eprintln!("koma-sim: killing myself on purpose (kill_mid_request)");
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        if f.orphan_tool {
            self.sh.out.sync();
            match Command::new("sleep").arg("3600").stdin(Stdio::null()).spawn() {
                Ok(c) => eprintln!("koma-sim: tool pid {}", c.id()),
                Err(e) => eprintln!("koma-sim: cannot spawn the orphan tool: {e}"),
            }
            eprintln!("koma-sim: exiting on purpose, leaving the tool behind (orphan_tool)");
            std::process::exit(1);
        }
    }

    fn dispatch(&mut self, g: &mut Core, req: &Req, p: &Map<String, Value>) {
        use Kind::*;
        let bench = self.sh.cfg.bench;
        let known = METHODS.contains(&req.method.as_str()) || (bench && BENCH_METHODS.contains(&req.method.as_str()));
        if !known {
            let e = err("unknown_method", format!("unknown method `{}`", req.method));
            return self.answer(g, req, Err(e));
        }
        let spec: &[(&str, Kind, bool)] = match req.method.as_str() {
            "create" => &[("cwd", Str, false), ("model", Str, false)],
            "resume" => &[("session", Str, true), ("after", UInt, false)],
            "submit" | "enqueue" | "interrupt_and_submit" => &[("text", Str, true)],
            "approve" => &[("approval", Str, true), ("decision", Str, true)],
            "configure" => &[("model", Str, false)],
            "bench_events" => &[("count", UInt, true), ("bytes", UInt, true)],
            "bench_blob" => &[("bytes", UInt, true)],
            "bench_exit" => &[("code", UInt, true)],
            _ => &[],
        };
        if let Err(e) = check(p, spec) {
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
                        code: "busy",
                        message: format!("turn {t} is {}", g.status()),
                        data: Some(json!({"turn": t})),
                    };
                    return self.answer(g, req, Err(e));
                }
                let turn = g.start_turn(s(p, "text").unwrap_or_default());
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
                    g.start_turn(text);
                    0
                };
                self.answer(g, req, ok(json!({"position": position})))
            }
            "interrupt" => {
                let stopped = g.finish_active("interrupted");
                if stopped.is_some() {
                    g.next_or_idle();
                    g.save();
                }
                self.answer(g, req, ok(json!({"turn": stopped})))
            }
            "interrupt_and_submit" => {
                let stopped = g.finish_active("interrupted");
                let turn = g.start_turn(s(p, "text").unwrap_or_default());
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
        let loaded = match agent::load(&g.home, &id) {
            Ok(l) => l,
            Err((code, msg)) => return self.answer(g, req, Err(err(code, msg))),
        };
        let saved = loaded.session.log.len();
        g.seq = loaded.seq;
        g.session = Some(loaded.session);
        let state = g.state_value();
        self.answer(g, req, ok(json!({"session": id, "state": state})));
        let replayed = g.replay(after);
        if let Some(t) = loaded.unfinished {
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
        let (output, error) = if allow {
            (format!("wrote {} bytes to {}", pending.content_len, pending.path), false)
        } else {
            (format!("the user denied writing {}", pending.path), true)
        };
        g.emit("tool_result", json!({"turn": turn, "call": pending.call, "output": output, "error": error}));
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
        self.exit_clean();
    }

    fn exit_clean(&mut self) -> ! {
        if let Some(mut c) = self.tool.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        std::process::exit(0)
    }

    fn end_of_input(&mut self) -> ! {
        if self.sh.cfg.faults.ignore_eof {
            eprintln!("koma-sim: stdin closed; staying alive (ignore_eof)");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        eprintln!("koma-sim: stdin closed without detach; saving and exiting");
        let sh = Arc::clone(&self.sh);
        let mut g = lock(&sh.core);
        g.close_session();
        sh.out.sync();
        drop(g);
        self.exit_clean()
    }
}

fn stdin_pending() -> usize {
    let mut n: libc::c_int = 0;
    let r = unsafe { libc::ioctl(0, libc::FIONREAD, &mut n) };
    if r == 0 && n > 0 {
        n as usize
    } else {
        0
    }
}

fn stderr_flood() {
    const TOTAL: usize = 1 << 20;
    const END: &[u8] = b"koma-sim: flood end\n";
    let mut buf = Vec::with_capacity(TOTAL);
    let mut n = 0u64;
    while buf.len() + 64 + END.len() <= TOTAL {
        n += 1;
        let mut l = format!("koma-sim: flood line {n:07} ");
        while l.len() < 63 {
            l.push('.');
        }
        l.push('\n');
        buf.extend_from_slice(l.as_bytes());
    }
    let rest = TOTAL - END.len() - buf.len();
    if rest > 0 {
        n += 1;
        let mut l = format!("koma-sim: flood line {n:07} ");
        if l.len() + 1 > rest {
            l.clear();
        }
        while l.len() + 1 < rest {
            l.push('.');
        }
        l.push('\n');
        buf.extend_from_slice(l.as_bytes());
    }
    buf.extend_from_slice(END);
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(&buf);
    let _ = e.flush();
}

fn hello_frame(cfg: &Config, tool_pid: Option<u32>) -> String {
    let f = &cfg.faults;
    let path = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| "koma-sim".into());
    let mut diagnostics = vec![json!({"pid": std::process::id()})];
    if let Some(p) = tool_pid {
        diagnostics.push(json!({"tool_pid": p}));
    }
    let mut caps: Vec<&str> = METHODS.to_vec();
    if cfg.bench {
        caps.extend(BENCH_METHODS);
    }
    let protocol = if f.protocol_2 {
        Some("2")
    } else if f.protocol_string {
        Some("\"1\"")
    } else if f.protocol_float {
        Some("1.0")
    } else if f.protocol_true {
        Some("true")
    } else if f.protocol_missing {
        None
    } else {
        Some("1")
    };
    format!(
        "{{\"type\":\"hello\",{}\"binary\":{{\"path\":{},\"version\":{}}},\"diagnostics\":{},\"capabilities\":{}}}",
        protocol.map(|p| format!("\"protocol\":{p},")).unwrap_or_default(),
        json_str(&path),
        json_str(env!("CARGO_PKG_VERSION")),
        Value::Array(diagnostics),
        json!(caps),
    )
}

fn block_signals(sigs: &[libc::c_int]) -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// `KOMA_SIM_HELLO_DELAY_MS`: wait before hello, but no longer than stdin
/// stays open. Nothing is read: poll(2) with no requested events reports only
/// the end of stdin (POLLHUP, once every writer has closed it) or an error,
/// so bytes the client writes early neither end the wait nor get consumed.
fn hello_delay(delay: Duration) {
    let deadline = std::time::Instant::now() + delay;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        let mut pfd = libc::pollfd { fd: 0, events: 0, revents: 0 };
        let ms = left.as_millis().clamp(1, libc::c_int::MAX as u128) as libc::c_int;
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r > 0 {
            if pfd.revents & libc::POLLHUP != 0 {
                eprintln!("koma-sim: stdin closed during the hello delay; sending hello now");
                return;
            }
            if pfd.revents & libc::POLLNVAL != 0 {
                // No stdin at all: just wait.
                std::thread::sleep(left);
                return;
            }
            // POLLERR: keep waiting, with a pause so it cannot spin.
            std::thread::sleep(left.min(Duration::from_millis(1)));
        } else if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            std::thread::sleep(left);
            return;
        }
    }
}

/// For the hello faults after which the client must write nothing: what
/// the sim saw, told on stderr.
fn report_bytes(n: u64) {
    if n > 0 {
        eprintln!("koma-sim: client wrote {n} bytes before hello");
    }
    eprintln!("koma-sim: bytes read: {n}");
}

fn signal_thread(sh: Option<Arc<Shared>>, set: libc::sigset_t) {
    loop {
        let mut sig: libc::c_int = 0;
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if sig == libc::SIGUSR1 {
            if let Some(sh) = &sh {
                let mut held = std::mem::take(&mut *lock(&sh.held));
                eprintln!("koma-sim: SIGUSR1: releasing {} held answers in reverse order", held.len());
                held.reverse();
                for b in held {
                    sh.out.raw(b);
                }
            }
        } else if sig == libc::SIGTERM {
            report_bytes(BYTES_READ.load(Ordering::SeqCst));
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, libc::SIGTERM);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::raise(libc::SIGTERM);
            }
            std::process::exit(143);
        }
    }
}

pub fn run(cfg: Config) -> ! {
    let f = &cfg.faults;
    // The tool first, so it starts with default signal dispositions.
    let tool = if f.spawn_tool {
        match Command::new("sleep").arg("3600").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()
        {
            Ok(c) => {
                eprintln!("koma-sim: tool pid {} (spawn_tool)", c.id());
                Some(c)
            }
            Err(e) => {
                eprintln!("koma-sim: cannot spawn the tool: {e}");
                None
            }
        }
    } else {
        None
    };
    if f.ignore_sigterm {
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    let counting_only = f.no_hello || f.bad_protocol();
    // Signals are taken by a sigwait thread; block them before any thread
    // exists so that every thread inherits the mask.
    let mut sigs = Vec::new();
    if f.hold {
        sigs.push(libc::SIGUSR1);
    }
    if counting_only && !f.ignore_sigterm {
        sigs.push(libc::SIGTERM);
    }
    let sigset = (!sigs.is_empty()).then(|| block_signals(&sigs));

    let out = Output::start(f.crlf, f.unknown_event, f.split_writes);
    let hello = hello_frame(&cfg, tool.as_ref().map(Child::id));
    let core = Core {
        seq: 0,
        session: None,
        shutdown: false,
        out: out.clone(),
        delay_ms: cfg.delay_ms,
        home: cfg.home.clone(),
        saves: cfg.saves,
        bench: cfg.bench,
        odd_status: f.odd_status,
    };
    let sh = Arc::new(Shared {
        core: Mutex::new(core),
        cv: Condvar::new(),
        out,
        held: Mutex::new(Vec::new()),
        hello,
        unknown_ids: AtomicU64::new(0),
        cfg,
    });
    if let Some(set) = sigset {
        let s2 = Arc::clone(&sh);
        std::thread::Builder::new().name("signals".into()).spawn(move || signal_thread(Some(s2), set)).expect("spawn");
    }
    let f = &sh.cfg.faults;
    if f.stderr_flood {
        stderr_flood();
    }
    if f.late_hello {
        std::thread::sleep(Duration::from_millis(300));
    }
    if sh.cfg.hello_delay_ms > 0 {
        hello_delay(Duration::from_millis(sh.cfg.hello_delay_ms));
    }
    if !f.no_hello {
        // (The bad-protocol hellos report everything read, at the end.)
        let early = stdin_pending();
        if early > 0 && !counting_only {
            eprintln!("koma-sim: client wrote {early} bytes before hello");
        }
        let mut b = Vec::new();
        if f.bom {
            b.extend_from_slice(b"\xEF\xBB\xBF");
        }
        b.extend_from_slice(&sh.out.encode(&sh.hello));
        sh.out.raw(b);
        sh.out.sync();
    }
    if counting_only {
        count_stdin_and_exit(&sh);
    }
    {
        let s2 = Arc::clone(&sh);
        std::thread::Builder::new().name("agent".into()).spawn(move || worker(s2)).expect("spawn");
    }
    let mut server = Server { sh, nreq: 0, flooded: false, tool };
    let stdin = std::io::stdin();
    let mut r = BufReader::with_capacity(1 << 16, stdin.lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(n) => {
                BYTES_READ.fetch_add(n as u64, Ordering::SeqCst);
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if !line.is_empty() {
                    server.handle_line(&line);
                }
                if line.capacity() > 1 << 20 {
                    line = Vec::with_capacity(4096);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("koma-sim: reading stdin failed: {e}");
                break;
            }
        }
    }
    server.end_of_input()
}

/// `no_hello` and the bad-protocol hellos: read (and count) stdin until it
/// ends, tell what was read, exit 0.
fn count_stdin_and_exit(sh: &Shared) -> ! {
    let mut buf = vec![0u8; 1 << 16];
    let mut stdin = std::io::stdin().lock();
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                BYTES_READ.fetch_add(n as u64, Ordering::SeqCst);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    report_bytes(BYTES_READ.load(Ordering::SeqCst));
    if sh.cfg.faults.ignore_eof {
        eprintln!("koma-sim: stdin closed; staying alive (ignore_eof)");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    sh.out.sync();
    std::process::exit(0)
}

fn worker(sh: Arc<Shared>) {
    let mut g = lock(&sh.core);
    loop {
        if g.shutdown {
            return;
        }
        match g.advance() {
            Wake::Again => {
                drop(g);
                g = lock(&sh.core);
            }
            Wake::Idle => g = sh.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            Wake::After(d) => g = sh.cv.wait_timeout(g, d).unwrap_or_else(|e| e.into_inner()).0,
        }
    }
}
