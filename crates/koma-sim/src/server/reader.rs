//! The stdin reader: requests are read as lines, in order, recorded
//! (`KOMA_SIM_RECORD`), and each one is handed to the methods under the
//! core lock, unless the scenario scripts its answer. Also the reader of
//! the hello faults after which the sim only counts what the client writes.

use crate::record::Record;
use crate::scenario::script::{self, Reply};
use crate::server::answer::answer;
use crate::server::methods::Methods;
use crate::server::process;
use crate::server::rpc::{err, invalid, ok, Req, RpcError};
use crate::server::shared::{lock, Shared};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes read from stdin so far (read by the SIGTERM reporter too).
pub static BYTES_READ: AtomicU64 = AtomicU64::new(0);

struct Reader {
    sh: Arc<Shared>,
    /// Requests read so far.
    nreq: u64,
    methods: Methods,
    /// The scenario's answers to requests, if any.
    scripted: Option<script::Methods>,
    record: Option<Record>,
}

/// Reads and handles requests until the end of stdin, then ends the session
/// and exits.
pub fn serve(sh: Arc<Shared>, scripted: Option<script::Methods>, record: Option<Record>) -> ! {
    let mut reader = Reader { methods: Methods::new(Arc::clone(&sh)), sh, nreq: 0, scripted, record };
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
                    reader.handle_line(&line);
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
    reader.end_of_input()
}

impl Reader {
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
        if let Some(r) = &mut self.record {
            let params = obj.get("params").filter(|p| !p.is_null());
            r.request(&id, obj.get("method"), params);
        }
        self.nreq += 1;
        let first = self.nreq == 1;
        if first {
            process::first_request_faults(&self.sh);
        }
        let method = obj.get("method").and_then(Value::as_str).unwrap_or("").to_string();
        let mut req = Req { id, method, first, delay_ms: 0 };
        let sh = Arc::clone(&self.sh);
        let mut g = lock(&sh.core);
        if g.silent {
            eprintln!("koma-sim: not answering id {} (scenario stop_answering)", req.id);
            return;
        }
        if req.method.is_empty() {
            answer(&sh, &mut g, &req, Err(err("invalid_request", "`method` must be a non-empty string")));
            return;
        }
        if let Some(entry) = self.scripted.as_mut().and_then(|m| m.take(&req.method)) {
            req.delay_ms = entry.delay_ms;
            let res = match &entry.reply {
                Reply::Real => None,
                Reply::Result(v) => Some(ok(v.clone())),
                Reply::Error { code, message, data } => {
                    Some(Err(RpcError { code: Cow::Owned(code.clone()), message: message.clone(), data: data.clone() }))
                }
            };
            if let Some(res) = res {
                eprintln!("koma-sim: the scenario answers id {} ({})", req.id, req.method);
                return answer(&sh, &mut g, &req, res);
            }
            if req.method == "detach" && req.delay_ms > 0 {
                // The process ends with this answer: nothing can go on meanwhile.
                drop(g);
                std::thread::sleep(std::time::Duration::from_millis(req.delay_ms));
                req.delay_ms = 0;
                g = lock(&sh.core);
            }
        }
        let empty = Map::new();
        let params = match obj.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => {
                answer(&sh, &mut g, &req, Err(invalid("params", "`params` must be an object".into())));
                return;
            }
        };
        self.methods.dispatch(&mut g, &req, params);
        drop(g);
        sh.cv.notify_all();
    }

    /// The end of stdin without detach: the session ends as at a detach,
    /// without an answer (unless `ignore_eof`).
    fn end_of_input(&mut self) -> ! {
        if self.sh.cfg.faults.ignore_eof {
            process::stay_alive();
        }
        eprintln!("koma-sim: stdin closed without detach; saving and exiting");
        let sh = Arc::clone(&self.sh);
        let mut g = lock(&sh.core);
        g.close_session();
        sh.out.sync();
        drop(g);
        process::exit_clean(&sh)
    }
}

/// For the hello faults after which the client must write nothing: what
/// the sim saw, told on stderr.
pub fn report_bytes(n: u64) {
    if n > 0 {
        eprintln!("koma-sim: client wrote {n} bytes before hello");
    }
    eprintln!("koma-sim: bytes read: {n}");
}

/// `no_hello` and the bad-protocol hellos: read (and count) stdin until it
/// ends, tell what was read, exit 0.
pub fn count_stdin_and_exit(sh: &Shared) -> ! {
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
        process::stay_alive();
    }
    sh.out.sync();
    std::process::exit(0)
}
