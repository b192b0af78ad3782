//! The client's JavaScript-side context, and the delivery of completions.
//!
//! Requests return promises made here; their answers arrive from the core as
//! completions, and one wake of the JavaScript thread settles a whole batch:
//! results are joined and parsed by one `JSON.parse`. Each completion is
//! settled on its own: a failure to convert one rejects that one, and every
//! other still settles.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};

use koma_transport::connection::RawJson;
use koma_transport::{Completion, Connection, ErrorCode, KomaError, Outcome};

use crate::call::AbortListener;
use crate::env::EnvData;
use crate::handles::{Deferred, OwnedRef};
use crate::js::{Js, Value};
use crate::stream::StreamRefs;

/// One call waiting for its completion.
pub struct Call {
    pub deferred: Deferred,
    /// The call's name, for its `aborted` message.
    pub what: String,
    pub abort: Option<AbortListener>,
}

pub struct JsState {
    pub calls: HashMap<u64, Call>,
    /// The event iterator (one per client), once made.
    pub stream: Option<StreamRefs>,
    /// The iterator waits for events: the next wake calls its `settle`.
    pub events_waiting: bool,
    /// The Client's own object: held strongly while anything is outstanding,
    /// so a client with work in flight is never collected.
    pub client: Option<OwnedRef>,
    pub held: bool,
}

pub struct Ctx {
    pub conn: Connection,
    pub env: Rc<EnvData>,
    /// Its id among the environment's clients (see `wake.rs`).
    pub id: u64,
    pub state: RefCell<JsState>,
}

/// The results waiting to be parsed in one wake (of one client or many): one
/// `JSON.parse` of a joined array settles them all.
pub type Results = Vec<(Deferred, RawJson)>;

/// Deliver what one wake brought for `ctxs`: each client's completions are
/// settled (results gathered for one joined `JSON.parse` across all of
/// them), then each client's events are pumped and its hold updated. A panic
/// fails the clients of this wake rather than leave their calls hanging.
pub fn deliver(js: Js, env: &EnvData, ctxs: &[Rc<Ctx>]) {
    let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut results = Results::new();
        for ctx in ctxs {
            // Draining first re-arms the client's wake-up, whatever happens while delivering.
            let completions = ctx.conn.drain();
            if test_hook("wake") {
                panic!("KOMA_SDK_TEST_PANIC=wake");
            }
            ctx.settle(js, completions, &mut results);
        }
        resolve_results(js, env, results);
        for ctx in ctxs {
            ctx.pump_events(js);
            ctx.update_hold(js);
        }
    }));
    if delivered.is_err() {
        // Calls removed from a table but not settled were rejected when their
        // `Deferred` dropped; settle the rest rather than leave them hanging.
        let _ = js.take_exception();
        for ctx in ctxs {
            ctx.fail_all(js, "an internal error (a panic) in @koma/sdk while delivering results");
        }
    }
}

/// The error of an answer that could not be converted (a Node-API call failed).
fn conversion_error(e: &napi::Error) -> KomaError {
    KomaError::new(
        ErrorCode::TransportFailure,
        format!("an internal error in @koma/sdk: the answer could not be converted ({})", e.reason),
    )
}

impl Ctx {
    /// Settle each completion of this client; results are left in `results`
    /// for the wake's one `JSON.parse`.
    fn settle(&self, js: Js, completions: Vec<Completion>, results: &mut Results) {
        for c in completions {
            let Some(call) = self.state.borrow_mut().calls.remove(&c.token) else { continue };
            if let Some(a) = call.abort {
                a.remove(js);
            }
            let deferred = call.deferred;
            match c.outcome {
                Outcome::Result(raw) => results.push((deferred, raw)),
                Outcome::Hello(h) => match self.parse_json(js, h.to_json().as_bytes()) {
                    Ok(v) => deferred.resolve(v),
                    Err(e) => deferred.reject_with(js, &conversion_error(&e), None),
                },
                Outcome::Closed => match js.undefined() {
                    Ok(v) => deferred.resolve(v),
                    Err(e) => deferred.reject_with(js, &conversion_error(&e), None),
                },
                Outcome::Error(e) => {
                    let parse = self.env.json_parse(js).ok();
                    deferred.reject_with(js, &e, parse);
                }
            }
        }
    }

    pub fn parse_json(&self, js: Js, bytes: &[u8]) -> napi::Result<Value> {
        parse_json(js, &self.env, bytes)
    }
}

/// Parse many results with one `JSON.parse` of a joined array; large ones
/// alone. A group that cannot be converted is rejected, call by call.
fn resolve_results(js: Js, env: &EnvData, results: Results) {
    const JOIN_LIMIT: usize = 1 << 20;
    let mut group: Results = Vec::new();
    let mut group_bytes = 0;
    for (d, raw) in results {
        let n = raw.range.len();
        if n > JOIN_LIMIT {
            resolve_group(js, env, vec![(d, raw)]);
            continue;
        }
        if group_bytes + n > JOIN_LIMIT {
            resolve_group(js, env, std::mem::take(&mut group));
            group_bytes = 0;
        }
        group_bytes += n;
        group.push((d, raw));
    }
    resolve_group(js, env, group);
}

fn resolve_group(js: Js, env: &EnvData, mut group: Results) {
    let values: napi::Result<Vec<Value>> = (|| match group.len() {
        0 => Ok(Vec::new()),
        1 => {
            let RawJson { bytes, range, lifts } =
                std::mem::replace(&mut group[0].1, RawJson { bytes: Vec::new(), range: 0..0, lifts: Vec::new() });
            let text = js.string(&bytes[range])?;
            drop(bytes); // a large result is not held twice while it is parsed
            let value = parse_string(js, env, text)?;
            Ok(vec![js.put_lifted(value, lifts)?])
        }
        _ => {
            let mut joined = Vec::with_capacity(group.iter().map(|(_, r)| r.range.len() + 1).sum::<usize>() + 2);
            joined.push(b'[');
            for (i, (_, r)) in group.iter().enumerate() {
                if i > 0 {
                    joined.push(b',');
                }
                joined.extend_from_slice(r.text());
            }
            joined.push(b']');
            let array = parse_json(js, env, &joined)?;
            let mut values = Vec::with_capacity(group.len());
            for (i, (_, raw)) in group.iter_mut().enumerate() {
                let value = js.element(array, i as u32)?;
                values.push(js.put_lifted(value, std::mem::take(&mut raw.lifts))?);
            }
            Ok(values)
        }
    })();
    match values {
        Ok(values) => {
            for ((d, _), v) in group.into_iter().zip(values) {
                d.resolve(v);
            }
        }
        Err(e) => {
            let _ = js.take_exception();
            let err = conversion_error(&e);
            for (d, _) in group {
                d.reject_with(js, &err, None);
            }
        }
    }
}

fn parse_json(js: Js, env: &EnvData, bytes: &[u8]) -> napi::Result<Value> {
    parse_string(js, env, js.string(bytes)?)
}

/// `JSON.parse` of a JavaScript string.
fn parse_string(js: Js, env: &EnvData, text: Value) -> napi::Result<Value> {
    if test_hook("parse") {
        return Err(napi::Error::from_reason("KOMA_SDK_TEST_NAPI_FAIL=parse"));
    }
    let parse = env.json_parse(js)?;
    let undefined = js.undefined()?;
    js.call(parse, undefined, &[text])
}

impl Ctx {
    /// Reference the wake-up and the client object while anything is outstanding.
    pub fn update_hold(&self, js: Js) {
        let mut st = self.state.borrow_mut();
        let busy = !st.calls.is_empty() || st.events_waiting;
        if busy == st.held {
            return;
        }
        st.held = busy;
        self.env.wakes.hold(js, busy);
        if let Some(client) = &st.client {
            client.set_strong(js, busy);
        }
    }

    /// Reject everything outstanding (after an internal error), and stop the child.
    pub fn fail_all(&self, js: Js, why: &str) {
        self.conn.kill_now();
        let e = KomaError::new(ErrorCode::TransportFailure, why);
        let calls: Vec<Call> = self.state.borrow_mut().calls.drain().map(|(_, c)| c).collect();
        for c in calls {
            if let Some(a) = c.abort {
                a.remove(js);
            }
            c.deferred.reject_with(js, &e, None);
        }
        self.update_hold(js);
        self.pump_events(js);
    }
}

/// Test hooks, off unless their variable is set:
/// - `KOMA_SDK_TEST_PANIC=wake`: the first wake of the JavaScript thread panics;
/// - `KOMA_SDK_TEST_NAPI_FAIL=parse:N`: the Nth `JSON.parse` of the process
///   fails as a failed Node-API call would.
fn test_hook(place: &str) -> bool {
    static PANIC_FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    static PARSE_COUNT: AtomicI64 = AtomicI64::new(0);
    match place {
        "wake" => {
            std::env::var("KOMA_SDK_TEST_PANIC").is_ok_and(|v| v == "wake")
                && !PANIC_FIRED.swap(true, Ordering::Relaxed)
        }
        "parse" => match std::env::var("KOMA_SDK_TEST_NAPI_FAIL") {
            Ok(v) => match v.strip_prefix("parse:").and_then(|n| n.parse::<i64>().ok()) {
                Some(n) => PARSE_COUNT.fetch_add(1, Ordering::Relaxed) + 1 == n,
                None => false,
            },
            Err(_) => false,
        },
        _ => false,
    }
}
