//! What a client shows an application's OpenTelemetry, decided once for
//! every host: the spans of a client's life, of its calls and of its turns
//! (with a span per tool call and per approval), a few metrics, and the
//! trace context koma is started with. A host makes the OpenTelemetry API
//! calls (it alone has the API, the caller's context and a clock the API
//! agrees with); everything it names, attributes or counts comes from here:
//!
//! - [`table`]: the spans a host makes itself (a client's life, a call, a
//!   turn) with their names, kinds and fixed attributes, and the
//!   instruments (name, kind, unit, description, bucket advice);
//! - `connection::client_note`: what each note of a client's life
//!   (`TraceRecord`) does to the client's span and metrics;
//! - a traced turn's record (`crate::turns`, handed over with
//!   `TurnNews::Ended`): the turn span's attributes and end, its child spans
//!   with their times, and its metric points;
//! - [`TraceContext`]: the `TRACEPARENT`/`TRACESTATE` koma is started with.
//!
//! The records are JSON text, read by a host's one interpreter of them:
//! `{attributes?, error?, message?, end?, spans?, metrics?}` (see
//! `docs/tracing.md`). Nothing is recorded for a client made without
//! telemetry ([`TelemetryOptions`]), and a traced turn records nothing per
//! `output` event but a count.

mod context;
pub(crate) mod names;

pub use context::TraceContext;

use std::sync::OnceLock;

/// A client's telemetry (`ConnectionOptions::telemetry`): its turns keep a
/// timeline and hand over their record, and the notes of its life are kept
/// for the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TelemetryOptions {
    /// Record content (the prompt, the output, tool input and output) in
    /// the turn's spans. Off unless the application asks.
    pub content: bool,
}

/// The table a host reads once (JSON text): `client`, `call` and `turn`,
/// each `{name, kind, attributes, parent, link}` (a call's name and
/// attributes hold `{method}`, the method's name; `call.remote` is the
/// attribute of a remote error's code). `parent` is where the host starts
/// the span: `"caller"`, under the caller's current span, or `"root"`, a
/// trace of its own (the caller's other context values kept). `link` is the
/// one link the span is started with: `"caller"`, the caller's current span
/// (none when it has no valid one), or `"client"`, the client's span (none
/// when the client has no span). Then `error` (the attribute that says a
/// record's `error`, as the span's status does), and `instruments`, each
/// `{name, kind ("histogram" or "counter"), unit, description, buckets?}`.
///
/// The client's span is a root because a client is a long-lived connection:
/// it may be made in one request and serve many others at once, as a pooled
/// database client does. Under the request that started it, it would outlive
/// its parent, and draw every later request's koma process into the first
/// request's trace (`TRACEPARENT`, see [`TraceContext`]).
pub fn table() -> &'static str {
    static TABLE: OnceLock<String> = OnceLock::new();
    TABLE.get_or_init(|| names::table().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_instrument_a_record_uses() {
        let t: serde_json::Value = serde_json::from_str(table()).unwrap();
        let names: Vec<&str> =
            t["instruments"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
        for used in [
            names::OPERATION_DURATION,
            names::TOOL_CALLS,
            names::APPROVAL_DURATION,
            names::CLIENT_STARTS,
            names::CLIENT_FAILURES,
        ] {
            assert!(names.contains(&used), "{used} is not in the table");
        }
        assert_eq!(t["turn"]["name"], "invoke_agent koma");
        assert_eq!(t["call"]["attributes"]["rpc.method"], "{method}");
    }

    #[test]
    fn a_clients_span_is_a_root_linked_to_its_caller_and_its_calls_link_to_it() {
        let t: serde_json::Value = serde_json::from_str(table()).unwrap();
        assert_eq!((t["client"]["parent"].as_str(), t["client"]["link"].as_str()), (Some("root"), Some("caller")));
        for span in ["call", "turn"] {
            assert_eq!(
                (t[span]["parent"].as_str(), t[span]["link"].as_str()),
                (Some("caller"), Some("client")),
                "{span}"
            );
        }
    }
}
