//! Sending an answer, as the answer faults and the frame faults have it:
//! in place of the first answer, held back, never sent, or preceded by an
//! unknown id or an unknown event; and as a scenario has it: later, or
//! never once it stopped answering.

use crate::agent::{self, json_str, Core};
use crate::faults::FrameFault;
use crate::server::rpc::{response_frame, Req, Res};
use crate::server::shared::{lock, Shared};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A frame of exactly 40 MiB of JSON text.
pub const MAX_FRAME: usize = 41_943_040;

/// Sends the answer to `req`, subject to the answer faults. Called with
/// the core lock held, so events the handler emits after it keep order.
/// A scenario's delay sends it from a thread of its own, that much later
/// (the reader goes on meanwhile).
pub fn answer(sh: &Arc<Shared>, g: &mut Core, req: &Req, res: Res) {
    if g.silent {
        eprintln!("koma-sim: not answering id {} (scenario stop_answering)", req.id);
        return;
    }
    if req.delay_ms > 0 {
        let delay = Duration::from_millis(req.delay_ms);
        eprintln!("koma-sim: answering id {} in {} ms (scenario)", req.id, req.delay_ms);
        let (sh, req) = (Arc::clone(sh), Req { delay_ms: 0, ..req.clone() });
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            let mut g = lock(&sh.core);
            answer(&sh, &mut g, &req, res);
        });
        return;
    }
    let f = &sh.cfg.faults;
    let out = &sh.out;
    let detach = req.method == "detach";
    if req.first && !f.frame.is_empty() {
        for ff in &f.frame {
            eprintln!("koma-sim: fault {ff:?} in place of the answer to id {}", req.id);
            frame_fault(sh, g, req, &res, *ff);
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
        let n = sh.unknown_ids.fetch_add(1, Ordering::Relaxed) + 1;
        out.frame(format!("{{\"id\":\"zz-{n}\",\"result\":{{}}}}"));
    }
    let frame = response_frame(&req.id, &res);
    if f.hold && !detach {
        let mut held = lock(&sh.held);
        held.push(out.encode(&frame));
        eprintln!("koma-sim: holding answer to id {} ({} held)", req.id, held.len());
        return;
    }
    out.frame(frame);
}

fn frame_fault(sh: &Shared, g: &mut Core, req: &Req, res: &Res, ff: FrameFault) {
    let out = &sh.out;
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
        FrameFault::SecondHello => out.frame(sh.hello.clone()),
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
