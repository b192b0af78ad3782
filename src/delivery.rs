//! Delivering completions on the JavaScript thread, in batches.
//!
//! Requests return promises (`call.rs`); their answers arrive from the core
//! as completions, and one wake of the JavaScript thread settles a whole
//! batch: results are joined and parsed by one `JSON.parse`. Each completion
//! is settled on its own: a failure to convert one rejects that one, and
//! every other still settles.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use koma_transport::connection::RawJson;
use koma_transport::{Completion, ErrorCode, KomaError, Outcome};
use napi::bindgen_prelude::{FromNapiValue, JsObjectValue, Object, Unknown};

use crate::context::{Call, Ctx};
use crate::env::EnvData;
use crate::handles::{put_lifted, text, Deferred, Js};
use crate::stream::pump;
use crate::trace;
use crate::turn::deliver as deliver_turn;

thread_local! {
    /// This thread's clients by id: what a wake's ids name.
    static CLIENTS: RefCell<HashMap<u64, Weak<Ctx>>> = RefCell::new(HashMap::new());
}

/// The client can be woken from now on.
pub fn register(ctx: &Rc<Ctx>) {
    CLIENTS.with(|c| c.borrow_mut().insert(ctx.id, Rc::downgrade(ctx)));
}

pub fn unregister(id: u64) {
    let _ = CLIENTS.try_with(|c| c.borrow_mut().remove(&id));
}

/// A wake of the JavaScript thread (see `wake.rs`): deliver what it brought
/// for the clients `ids`.
pub fn on_wake(js: Js, ids: Vec<u64>) {
    let ctxs: Vec<Rc<Ctx>> =
        CLIENTS.with(|c| ids.iter().filter_map(|id| c.borrow().get(id).and_then(Weak::upgrade)).collect());
    if let Some(first) = ctxs.first() {
        let env = first.env.clone();
        deliver(js, &env, &ctxs);
    }
}

/// The results waiting to be parsed in one wake (of one client or many): one
/// `JSON.parse` of a joined array settles them all.
type Results = Vec<(Deferred, RawJson)>;

/// Deliver what one wake brought for `ctxs`: each client's completions are
/// settled (results gathered for one joined `JSON.parse` across all of
/// them), then each client's events are pumped and its hold updated. A panic
/// fails the clients of this wake rather than leave their calls hanging.
fn deliver(js: Js, env: &EnvData, ctxs: &[Rc<Ctx>]) {
    let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut results = Results::new();
        trace::follow_subscribers(js, env, ctxs);
        for ctx in ctxs {
            // Draining first re-arms the client's wake-up, whatever happens while delivering.
            let completions = ctx.conn.drain();
            if ctx.traced.get() || ctx.telemetry {
                // Published before the answers they show are settled.
                trace::publish(ctx, js);
            }
            #[cfg(feature = "testing")]
            if crate::testing::panic_on_wake() {
                panic!("KOMA_SDK_TEST_PANIC=wake");
            }
            settle(ctx, js, completions, &mut results);
        }
        resolve_results(js, env, results);
        for ctx in ctxs {
            pump(ctx, js);
            ctx.update_hold(js);
        }
    }));
    if delivered.is_err() {
        // Calls removed from a table but not settled were rejected when their
        // `Deferred` dropped; settle the rest rather than leave them hanging.
        let _ = js.take_exception();
        for ctx in ctxs {
            fail_all(ctx, js, "an internal error (a panic) in @koma/sdk while delivering results");
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

/// Settle each completion of one client; results are left in `results` for
/// the wake's one `JSON.parse`.
fn settle(ctx: &Ctx, js: Js, completions: Vec<Completion>, results: &mut Results) {
    for c in completions {
        let c = match c.outcome {
            Outcome::Turn(update) => {
                deliver_turn(ctx, js, c.token, update);
                continue;
            }
            outcome => Completion { token: c.token, outcome },
        };
        let Some(call) = ctx.state.borrow_mut().calls.remove(&c.token) else { continue };
        let Call { deferred, abort, .. } = call;
        if let Some(a) = abort {
            a.remove(js, &ctx.env);
        }
        match c.outcome {
            Outcome::Result(raw) => results.push((deferred, raw)),
            Outcome::Hello(h) => match ctx.env.parse(js, h.to_json().as_bytes()) {
                Ok(v) => deferred.resolve(js, v),
                Err(e) => deferred.reject_with(js, &conversion_error(&e), None, None),
            },
            Outcome::Done => deferred.resolve(js, js.undefined()),
            Outcome::Turn(_) => unreachable!("handed to its Turn above"),
            Outcome::Error(e) => {
                let parse = ctx.env.json_parse(js).ok();
                deferred.reject_with(js, &e, parse.as_ref(), None);
            }
        }
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
    let values: napi::Result<Vec<Unknown>> = (|| match group.len() {
        0 => Ok(Vec::new()),
        1 => {
            let RawJson { bytes, range, lifts } =
                std::mem::replace(&mut group[0].1, RawJson { bytes: Vec::new(), range: 0..0, lifts: Vec::new() });
            let json = text(js, &bytes[range])?;
            drop(bytes); // a large result is not held twice while it is parsed
            let value = env.parse_string(js, json)?;
            Ok(vec![put_lifted(js, value, lifts)?])
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
            let array = Object::from_unknown(env.parse(js, &joined)?)?;
            let mut values = Vec::with_capacity(group.len());
            for (i, (_, raw)) in group.iter_mut().enumerate() {
                let value = array.get_element::<Unknown>(i as u32)?;
                values.push(put_lifted(js, value, std::mem::take(&mut raw.lifts))?);
            }
            Ok(values)
        }
    })();
    match values {
        Ok(values) => {
            for ((d, _), v) in group.into_iter().zip(values) {
                d.resolve(js, v);
            }
        }
        Err(e) => {
            let _ = js.take_exception();
            let err = conversion_error(&e);
            for (d, _) in group {
                d.reject_with(js, &err, None, None);
            }
        }
    }
}

/// Reject everything outstanding of a client (after an internal error), and stop its child.
fn fail_all(ctx: &Ctx, js: Js, why: &str) {
    ctx.conn.kill_now();
    let e = KomaError::new(ErrorCode::TransportFailure, why);
    let calls: Vec<Call> = ctx.state.borrow_mut().calls.drain().map(|(_, c)| c).collect();
    for c in calls {
        if let Some(a) = c.abort {
            a.remove(js, &ctx.env);
        }
        c.deferred.reject_with(js, &e, None, None);
    }
    ctx.update_hold(js);
    pump(ctx, js);
}
