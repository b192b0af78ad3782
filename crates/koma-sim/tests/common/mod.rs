//! A tiny raw-JSON-lines driver for the built koma-sim binary.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_koma-sim");
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A fresh, empty directory for KOMA_SIM_HOME.
pub fn temp_home(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let d = std::env::temp_dir().join(format!(
        "koma-sim-test-{tag}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub struct Sim {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    events: VecDeque<Value>,
    responses: HashMap<String, Value>,
    next_id: u64,
    last_seq: Option<u64>,
    /// Every event read so far, in order.
    pub seen: Vec<Value>,
    /// Check seq contiguity of events (off for the seq faults).
    pub check_seq: bool,
}

impl Sim {
    pub fn spawn(home: &Path, env: &[(&str, &str)]) -> Sim {
        Sim::spawn_with(Some(home), env)
    }

    /// `home`: KOMA_SIM_HOME, or None to leave it unset (the sim's default).
    pub fn spawn_with(home: Option<&Path>, env: &[(&str, &str)]) -> Sim {
        let mut cmd = Command::new(BIN);
        cmd.args(["sdk", "serve"])
            .env_remove("KOMA_SIM_FAULT")
            .env_remove("KOMA_SIM_BENCH")
            .env_remove("KOMA_SIM_HELLO_DELAY_MS")
            .env_remove("KOMA_SIM_HOME")
            .env_remove("KOMA_SIM_SAVE")
            .env_remove("KOMA_SIM_SCENARIO")
            .env_remove("KOMA_SIM_RECORD")
            .env_remove("KOMA_SIM_PROGRESS")
            .env("KOMA_SIM_DELAY_MS", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(h) = home {
            cmd.env("KOMA_SIM_HOME", h);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn koma-sim");
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut l = Vec::new();
            match out.read_until(b'\n', &mut l) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.send(l).is_err() {
                        return;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let e2 = Arc::clone(&stderr);
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match err.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => e2.lock().unwrap().extend_from_slice(&buf[..n]),
                }
            }
        });
        Sim {
            child,
            stdin,
            lines,
            stderr,
            events: VecDeque::new(),
            responses: HashMap::new(),
            next_id: 0,
            last_seq: None,
            seen: Vec::new(),
            check_seq: true,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn wait_stderr(&self, needle: &str) {
        let start = Instant::now();
        while !self.stderr().contains(needle) {
            assert!(start.elapsed() < TIMEOUT, "stderr never said {needle:?}; it said:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The next raw stdout line, terminator included; None at end of stdout.
    pub fn raw_line(&self) -> Option<Vec<u8>> {
        match self.lines.recv_timeout(TIMEOUT) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("no stdout line within {TIMEOUT:?}; stderr:\n{}", self.stderr()),
        }
    }

    /// True if no stdout line arrives within `d`.
    pub fn quiet_for(&self, d: Duration) -> bool {
        matches!(self.lines.recv_timeout(d), Err(RecvTimeoutError::Timeout))
    }

    /// The next frame, strictly checked: one compact JSON object + `\n`.
    pub fn frame(&mut self) -> Value {
        let l = self.raw_line().unwrap_or_else(|| panic!("stdout ended; stderr:\n{}", self.stderr()));
        assert_eq!(l.last(), Some(&b'\n'), "unterminated line");
        let body = &l[..l.len() - 1];
        assert!(!body.ends_with(b"\r"), "CRLF frame");
        let text = std::str::from_utf8(body).expect("utf-8 frame");
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("bad frame {text:?}: {e}"));
        assert!(v.is_object(), "frame is not an object: {text}");
        assert_eq!(v.to_string().len(), text.len(), "frame is not compact: {text}");
        v
    }

    pub fn hello(&mut self) -> Value {
        let h = self.frame();
        assert_eq!(h["type"], "hello", "first frame is not hello: {h}");
        h
    }

    fn take_frame(&mut self) {
        let f = self.frame();
        if f.get("type").and_then(Value::as_str) == Some("event") {
            let seq = f["seq"].as_u64().expect("event seq");
            if self.check_seq {
                if let Some(last) = self.last_seq {
                    assert_eq!(seq, last + 1, "seq not contiguous at {f}");
                }
            }
            self.last_seq = Some(seq);
            self.seen.push(f.clone());
            self.events.push_back(f);
        } else if let Some(id) = f.get("id").and_then(Value::as_str) {
            let prev = self.responses.insert(id.to_string(), f.clone());
            assert!(prev.is_none(), "second response for id {id}");
        } else {
            panic!("unexpected frame {f}");
        }
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    pub fn send(&mut self, method: &str, params: Value) -> String {
        self.next_id += 1;
        let id = self.next_id.to_string();
        let line = json!({"id": id, "method": method, "params": params}).to_string() + "\n";
        self.write_raw(line.as_bytes());
        id
    }

    pub fn response(&mut self, id: &str) -> Value {
        loop {
            if let Some(r) = self.responses.remove(id) {
                return r;
            }
            self.take_frame();
        }
    }

    /// Sends and waits for the response frame (events are kept).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.response(&id)
    }

    /// Sends and returns `result`, panicking on an error response.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// Sends and returns the error code, panicking on success.
    pub fn err(&mut self, method: &str, params: Value) -> String {
        let r = self.call(method, params);
        assert!(r.get("result").is_none(), "{method} should fail: {r}");
        r["error"]["code"].as_str().expect("error code").to_string()
    }

    pub fn next_event(&mut self) -> Value {
        loop {
            if let Some(e) = self.events.pop_front() {
                return e;
            }
            self.take_frame();
        }
    }

    /// Events up to and including the first one that matches.
    pub fn events_until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut v = Vec::new();
        loop {
            let e = self.next_event();
            let stop = pred(&e);
            v.push(e);
            if stop {
                return v;
            }
        }
    }

    /// Events of one whole turn (from where we are to its turn_finished),
    /// plus the `state` event that follows it.
    pub fn turn_events(&mut self, turn: &str) -> Vec<Value> {
        let t = turn.to_string();
        let mut v = self.events_until(|e| e["name"] == "turn_finished" && e["data"]["turn"] == t.as_str());
        v.push(self.next_event());
        v
    }

    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(start.elapsed() < TIMEOUT, "koma-sim did not exit; stderr:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// detach, check the answer, the end of stdout and exit 0.
    pub fn detach(&mut self) {
        assert_eq!(self.ok("detach", json!({})), json!({}));
        if let Some(l) = self.raw_line() {
            panic!("output after the detach answer: {}", String::from_utf8_lossy(&l));
        }
        assert_eq!(self.wait_exit().code(), Some(0), "stderr:\n{}", self.stderr());
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn names(evs: &[Value]) -> Vec<String> {
    evs.iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
}

pub fn output_text(evs: &[Value]) -> String {
    evs.iter().filter(|e| e["name"] == "output").map(|e| e["data"]["text"].as_str().unwrap()).collect()
}
