//! Routing: each line of stdout classified as a frame of docs/protocol.md (Requests and responses, Events) (with its
//! long strings lifted out), then applied: hello checked, responses matched
//! to pending requests by id, events sequence-checked and handed to the turn
//! layer, which routes each to its consumer's stream.

use std::ops::Range;
use std::sync::Arc;

use super::completion::{Outcome, RawJson};
use super::link::Link;
use super::phase::Phase;
use super::state::Shared;
use super::trace_record::Traced;
use crate::error::{ErrorCode, KomaError, RemoteError};
use crate::frame::{classify, Frame, Line, ResponseBody, Violation};
use crate::hello;
use crate::lift::{lift, LiftedString, Source, Step, LIFT_MIN_BYTES};
use crate::turns::Event;

/// Entries per event in a batch: the core's batch format, which any host
/// reads. A batch (`Take::Batch::json`) is one flat JSON array of
/// `BATCH_STRIDE` entries per event, in the order the events arrived. For
/// the event at index `i` of the batch:
///
/// - entry `4i` is its `seq` (a positive integer);
/// - entry `4i + 1` its `name` (a string of the event catalog);
/// - entry `4i + 2` its `data`, as the frame had it, except that each string
///   lifted out of it (see [`crate::lift`]) is `""`: `Take::Batch::lifts`
///   holds those strings as `(i, string)`, each with its path from `data`;
/// - entry `4i + 3` the size in bytes of its frame (its JSON text, without
///   the line terminator): what the host adds to the `TAKEN_BYTES` counter
///   when the application takes the event (see `EventCounters`).
///
/// So a host parses a batch of `n` events as one array of `4n` values,
/// with no object per event.
pub const BATCH_STRIDE: u32 = 4;

/// Where event `i` of a batch keeps its `data` in the batch's flat array.
pub fn batch_data_index(i: u32) -> u32 {
    BATCH_STRIDE * i + 2
}

/// A catalog event: its name, its line (borrowed from the read buffer when
/// it lies within one read), the range of its `data`, and the frame's size.
pub(super) struct RoutedEvent<'c> {
    name: &'static str,
    line: Line<'c>,
    data: Range<usize>,
    /// The frame with its long strings lifted out (empty when nothing was
    /// lifted); `data` is then a range of it, else of `line`.
    skeleton: Vec<u8>,
    lifts: Vec<LiftedString>,
}

impl RoutedEvent<'_> {
    /// `N,"name",data`: the event's first three entries in its batch (see
    /// [`BATCH_STRIDE`]; the event buffer adds the fourth).
    fn write(&self, seq: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        out.extend_from_slice(b",\"");
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(b"\",");
        out.extend_from_slice(self.data_json());
    }

    fn data_json(&self) -> &[u8] {
        if self.skeleton.is_empty() {
            &self.line.bytes()[self.data.clone()]
        } else {
            &self.skeleton[self.data.clone()]
        }
    }

    fn frame_bytes(&self) -> usize {
        self.line.bytes().len()
    }
}

pub(super) enum RoutedBody {
    Result(RawJson),
    Error(RemoteError),
}

/// One line of a read, classified. Lives until the read is applied, so an
/// event that lies within the read buffer is never copied on its own.
pub(super) enum Routed<'c> {
    Hello(Vec<u8>),
    Response {
        id: String,
        body: RoutedBody,
    },
    /// `event` is `None` for a name outside the catalog (sequence-checked, then ignored).
    Event {
        seq: u64,
        event: Option<RoutedEvent<'c>>,
    },
    Violation(Violation),
}

impl Routed<'_> {
    /// An event of the catalog (one that goes into the buffer).
    pub fn is_catalog_event(&self) -> bool {
        matches!(self, Routed::Event { event: Some(_), .. })
    }

    fn line_for_quote(&self) -> &[u8] {
        match self {
            Routed::Hello(l) => l,
            Routed::Response { body: RoutedBody::Result(r), .. } => r.text(),
            Routed::Event { event: Some(e), .. } => e.line.bytes(),
            _ => b"",
        }
    }
}

pub(super) fn route(line: Line<'_>) -> Routed<'_> {
    let line = if line.bytes().len() >= LIFT_MIN_BYTES {
        match route_lifted(line) {
            Ok(routed) => return routed,
            Err(line) => line,
        }
    } else {
        line
    };
    match classify(line.bytes()) {
        Err(v) => Routed::Violation(v),
        Ok(Frame::Hello) => Routed::Hello(line.into_owned()),
        Ok(Frame::Response { id, body }) => {
            let body = match body {
                ResponseBody::Error(e) => RoutedBody::Error(e),
                // An answer outlives the read: own it (the assembled line is moved, not copied).
                ResponseBody::Result(range) => RoutedBody::Result(match line {
                    Line::Owned(v) => RawJson { bytes: v, range, lifts: Vec::new() },
                    Line::Borrowed(b) => RawJson { range: 0..range.len(), bytes: b[range].to_vec(), lifts: Vec::new() },
                }),
            };
            Routed::Response { id, body }
        }
        Ok(Frame::Event { seq, name, data }) => Routed::Event {
            seq,
            event: name.map(|name| RoutedEvent { name, line, data, skeleton: Vec::new(), lifts: Vec::new() }),
        },
    }
}

/// A long line with long strings in an event's `data` or a response's
/// `result`: cut them out (see [`crate::lift`]) and classify the rest.
/// Gives the line back when that does not apply (the plain path then
/// classifies it, and reports any violation precisely).
fn route_lifted(line: Line<'_>) -> Result<Routed<'_>, Line<'_>> {
    // The line's UTF-8 is checked in two parts: the cut strings by `lift`,
    // the rest by `classify` (of the skeleton).
    let bytes = line.bytes();
    let Some(lifted) = lift(bytes, LIFT_MIN_BYTES) else { return Err(line) };
    let under = |key: &str| lifted.lifts.iter().all(|l| matches!(l.path.first(), Some(Step::Key(k)) if k == key));
    match classify(&lifted.skeleton) {
        Ok(Frame::Event { seq, name, data }) if under("data") => {
            let Some(name) = name else { return Ok(Routed::Event { seq, event: None }) };
            // Paths from `data` (the batch holds it as an entry of its own).
            let (skeleton, lifts) = lifted.into_strings(Source::Copy(bytes), 1);
            let event = Some(RoutedEvent { name, line, data, skeleton, lifts });
            Ok(Routed::Event { seq, event })
        }
        Ok(Frame::Response { id, body: ResponseBody::Result(range) }) if under("result") => {
            let (skeleton, lifts) = match line {
                Line::Borrowed(b) => lifted.into_strings(Source::Copy(b), 1),
                // A long line is shared by its strings, not copied.
                Line::Owned(v) => lifted.into_strings(Source::Share { line: Arc::new(v), offset: 0 }, 1),
            };
            let body = RoutedBody::Result(RawJson { bytes: skeleton, range, lifts });
            Ok(Routed::Response { id, body })
        }
        _ => Err(line),
    }
}

/// Apply the frames of one read, in order, under one lock. A violation
/// fails the client (and is returned).
pub(super) fn apply(link: &Link, frames: Vec<Routed<'_>>) -> Result<(), KomaError> {
    let mut s = link.lock();
    let mut result = Ok(());
    for f in frames {
        s.stream.frames_seen += 1;
        let first = s.stream.frames_seen == 1;
        match f {
            Routed::Violation(v) => {
                result = Err(v);
                break;
            }
            Routed::Hello(line) => {
                if !first {
                    result = Err(Violation::new("a second hello frame", &line));
                    break;
                }
                match hello::check(&line) {
                    Ok(h) => hello_arrived(link, &mut s, Arc::new(h)),
                    Err(e) => {
                        drop(s);
                        link.fail_with_stderr(e);
                        return Err(KomaError::new(ErrorCode::ProtocolError, "bad hello"));
                    }
                }
            }
            _ if first => {
                result = Err(Violation::new("the first frame is not hello", f.line_for_quote()));
                break;
            }
            Routed::Response { id, body } => {
                let Some((token, request)) = s.calls.pending.take_by_id(&id) else {
                    continue; // not pending: unknown, answered or abandoned
                };
                s.session.lifecycle.answered(&request.method, matches!(body, RoutedBody::Result(_)));
                if let RoutedBody::Result(raw) = &body {
                    s.turns.answered_session(&request.method, raw.text()); // telemetry: the session of create/resume
                }
                let outcome = match body {
                    RoutedBody::Result(raw) => Outcome::Result(raw),
                    RoutedBody::Error(e) => Outcome::Error(KomaError::remote(e)),
                };
                if s.session.detach_token == Some(token) {
                    // Handed over after the child's exit.
                    s.session.detach_answer = Some(outcome);
                } else {
                    s.complete(token, outcome);
                }
            }
            Routed::Event { seq, event } => {
                if let Some(last) = s.stream.last_seq {
                    if seq != last + 1 {
                        let what = if seq == last {
                            format!("event seq {seq} repeated")
                        } else if seq < last {
                            format!("event seq {seq} after {last} (a step back)")
                        } else {
                            format!("event seq {seq} after {last} (a gap)")
                        };
                        result = Err(Violation { what, quote: String::new() });
                        break;
                    }
                }
                s.stream.last_seq = Some(seq);
                if let Some(mut e) = event {
                    let counters = &link.counters;
                    let (count, bytes) = counters.taken();
                    s.stream.events.settle(count, bytes);
                    let epoch = s.stream.events.epoch();
                    let lifts = std::mem::take(&mut e.lifts);
                    let Shared { turns, stream, .. } = &mut *s;
                    if turns.routes_nothing() {
                        let len = e.data_json().len() + e.name.len() + 24;
                        turns.push_main(&mut stream.events, e.frame_bytes(), len, lifts, |out| e.write(seq, out));
                    } else {
                        turns.deliver(
                            &mut stream.events,
                            Event::new(seq, e.name, e.frame_bytes(), e.data_json(), lifts),
                        );
                    }
                    if stream.events.epoch() != epoch {
                        counters.set_epoch(stream.events.epoch());
                    }
                }
            }
        }
    }
    match result {
        Ok(()) => {
            link.wake_if_needed(s);
            Ok(())
        }
        Err(v) => {
            drop(s);
            let e = KomaError::new(ErrorCode::ProtocolError, format!("protocol error: {}", v.message()));
            link.fail_with_stderr(e.clone());
            Err(e)
        }
    }
}

/// A checked hello: the client is ready, `probe()`s resolve, and the
/// calls made before it are checked and written, in call order.
fn hello_arrived(link: &Link, s: &mut Shared, h: Arc<hello::Hello>) {
    s.session.hello = Some(h.clone());
    link.note(s, || Traced::Hello { version: h.binary_version.clone() });
    if s.phase == Phase::Starting {
        s.phase = Phase::Ready;
    }
    for t in std::mem::take(&mut s.calls.hello_waiters) {
        s.complete(t, Outcome::Hello(h.clone()));
    }
    if s.phase == Phase::Ready {
        for q in std::mem::take(&mut s.calls.before_hello) {
            if let Err(e) = link.admit(s, q.token, &q.method, q.line) {
                s.complete(q.token, Outcome::Error(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_builds_the_application_event() {
        let line = br#"{"type":"event","seq":3,"name":"output","data":{"turn":"t","text":"hi"},"extra":1}"#;
        let Routed::Event { seq: 3, event: Some(e) } = route(Line::Borrowed(line)) else { panic!() };
        let mut json = b"[".to_vec();
        e.write(3, &mut json);
        json.push(b']');
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            v,
            serde_json::json!([3, "output", {"turn":"t","text":"hi"}]),
            "seq, name, data; extra fields dropped"
        );
        assert_eq!(e.frame_bytes(), line.len());
    }

    #[test]
    fn long_strings_of_an_event_are_lifted_with_paths_from_its_data() {
        let text = "x".repeat(LIFT_MIN_BYTES);
        let line = format!(r#"{{"type":"event","seq":7,"name":"output","data":{{"turn":"t","text":"{text}"}}}}"#);
        let Routed::Event { seq: 7, event: Some(e) } = route(Line::Borrowed(line.as_bytes())) else { panic!() };
        assert_eq!(e.data_json(), br#"{"turn":"t","text":""}"#);
        assert_eq!(e.lifts.len(), 1);
        assert_eq!(e.lifts[0].path, vec![Step::Key("text".into())]);
        assert_eq!(e.lifts[0].chars.byte_len(), text.len());
    }

    #[test]
    fn a_long_result_shares_an_assembled_line_and_drops_the_result_step() {
        let blob = "y".repeat(LIFT_MIN_BYTES * 2);
        let line = format!(r#"{{"id":"4","result":{{"blob":"{blob}"}}}}"#).into_bytes();
        let Routed::Response { id, body: RoutedBody::Result(raw) } = route(Line::Owned(line)) else { panic!() };
        assert_eq!(id, "4");
        assert_eq!(raw.text(), br#"{"blob":""}"#);
        assert_eq!(raw.lifts[0].path, vec![Step::Key("blob".into())]);
        let crate::lift::Chars::Latin1 { bytes, range } = &raw.lifts[0].chars else { panic!() };
        assert!(bytes.len() > blob.len(), "the string points into the whole line: no copy");
        assert_eq!(&bytes[range.clone()], blob.as_bytes());
    }

    #[test]
    fn a_long_frame_that_breaks_a_rule_is_reported_as_without_lifting() {
        let text = "z".repeat(LIFT_MIN_BYTES);
        let mut bad_utf8 =
            format!(r#"{{"type":"event","seq":1,"name":"output","data":{{"text":"{text}"}}}}"#).into_bytes();
        bad_utf8[60] = 0xFF; // inside the long string
        let mut bad_utf8_outside =
            format!(r#"{{"type":"event","seq":1,"name":"output","x":"é","data":{{"text":"{text}"}}}}"#).into_bytes();
        bad_utf8_outside[46] = 0xFF; // the second byte of é
        let with_bom = [
            &[0xEF, 0xBB, 0xBF][..],
            format!(r#"{{"type":"event","seq":1,"name":"output","data":{{"text":"{text}"}}}}"#).as_bytes(),
        ]
        .concat();
        for line in [bad_utf8, bad_utf8_outside, with_bom] {
            let (Routed::Violation(a), Err(b)) = (route(Line::Borrowed(&line)), classify(&line)) else { panic!() };
            assert_eq!(a, b);
        }
        for line in [
            format!(r#"{{"type":"event","seq":1,"name":"output","data":{{"text":"{text}"}}"#), // unclosed
            format!("{{\"type\":\"event\",\"seq\":1,\"name\":\"output\",\"data\":{{\"text\":\"{text}\u{7}\"}}}}"), // a control character
            format!(r#"{{"type":"event","name":"output","data":{{"text":"{text}"}}}}"#), // no seq
        ] {
            let lifted = route(Line::Borrowed(line.as_bytes()));
            let plain = classify(line.as_bytes());
            let (Routed::Violation(a), Err(b)) = (lifted, plain) else { panic!("{line:.80}") };
            assert_eq!(a, b);
        }
    }
}
