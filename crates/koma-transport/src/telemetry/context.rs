//! The trace context koma is started with: when the application traces,
//! koma's environment carries the client's span context as `TRACEPARENT`
//! and `TRACESTATE` (the W3C forms OpenTelemetry specifies for environment
//! variables), so a koma that traces joins the client's trace. A client whose
//! `env` gives either variable keeps what it gave: the application chose
//! koma's context, and the two are never mixed.
//!
//! The environment is read once, when koma starts: it is the context of the
//! client's life, not of any one request. The protocol has no per-request
//! trace field, and the packages write only the fields it specifies, so a
//! request's context never reaches koma; a request's spans reach the
//! client's through the link each call and turn carries (see `super::table`).

use std::ffi::{OsStr, OsString};

use crate::child::LaunchOptions;

pub const TRACEPARENT: &str = "TRACEPARENT";
pub const TRACESTATE: &str = "TRACESTATE";

/// A W3C trace context, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: String,
}

impl TraceContext {
    /// From a span context: its trace id (32 lowercase hex digits), span id
    /// (16), trace flags and trace state (its header form, possibly empty).
    /// `None` for an invalid context (all zeros, wrong length or digits),
    /// which is not propagated.
    pub fn new(trace_id: &str, span_id: &str, flags: u8, tracestate: &str) -> Option<TraceContext> {
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && s.bytes().any(|b| b != b'0')
        };
        if !hex(trace_id, 32) || !hex(span_id, 16) || tracestate.bytes().any(|b| b == 0 || b == b'\n') {
            return None;
        }
        Some(TraceContext {
            traceparent: format!("00-{trace_id}-{span_id}-{flags:02x}"),
            tracestate: tracestate.into(),
        })
    }

    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    pub fn tracestate(&self) -> &str {
        &self.tracestate
    }

    /// Add it to what `launch` starts, unless its `env` gives either variable.
    /// `TRACESTATE` is always set (empty for no state), so that one this
    /// process inherited is not paired with another trace's parent.
    pub(crate) fn apply(&self, launch: &mut LaunchOptions) {
        let given = |name: &str| launch.env.iter().any(|(k, _)| k == OsStr::new(name));
        if given(TRACEPARENT) || given(TRACESTATE) {
            return;
        }
        launch.env.push((OsString::from(TRACEPARENT), OsString::from(&self.traceparent)));
        launch.env.push((OsString::from(TRACESTATE), OsString::from(&self.tracestate)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const SPAN: &str = "00f067aa0ba902b7";

    #[test]
    fn a_context_is_checked_and_written_as_w3c_says() {
        let c = TraceContext::new(TRACE, SPAN, 1, "rojo=00f067aa0ba902b7").unwrap();
        assert_eq!(c.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(c.tracestate(), "rojo=00f067aa0ba902b7");
        assert!(TraceContext::new(&"0".repeat(32), SPAN, 1, "").is_none(), "the invalid trace id");
        assert!(TraceContext::new(TRACE, "0000000000000000", 1, "").is_none(), "the invalid span id");
        assert!(TraceContext::new(&TRACE.to_uppercase(), SPAN, 1, "").is_none());
        assert!(TraceContext::new(TRACE, &SPAN[1..], 1, "").is_none());
        assert!(TraceContext::new(TRACE, SPAN, 1, "a=\0").is_none());
    }

    #[test]
    fn env_that_gives_either_variable_wins() {
        let c = TraceContext::new(TRACE, SPAN, 0, "").unwrap();
        let mut launch = LaunchOptions::default();
        c.apply(&mut launch);
        assert_eq!(
            launch.env,
            vec![
                (TRACEPARENT.into(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00".into()),
                (TRACESTATE.into(), "".into())
            ]
        );
        let mut mine = LaunchOptions { env: vec![(TRACESTATE.into(), "k=v".into())], ..Default::default() };
        c.apply(&mut mine);
        assert_eq!(mine.env, vec![(TRACESTATE.into(), "k=v".into())]);
    }
}
