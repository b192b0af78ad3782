//! What the notes of a client's life do to its OpenTelemetry span and its
//! metrics (see `crate::telemetry`), for a traced client's host. The
//! host starts the client's span at the call that starts koma (so that
//! koma can be given its context) and hands each note here: koma's pid and
//! the start count (spawned), its version (hello), how it exited (exit), the
//! failure and its count (failed), and the span's end (closed: `close()` is
//! done, so every note of the client's life came before). Each moment of
//! the life is an event of the span too, named as the trace names its note
//! (`spawned`, `hello`, `detach`, `exit`, `failed`).

use serde_json::json;

use super::trace_record::{TraceRecord, Traced};
use crate::telemetry::names as n;

/// The record of a note for the client's span (`{event?, attributes?,
/// error?, message?, end?, metrics?}` as JSON text), or `None` for a record
/// that does nothing to it (a frame, a stderr line, a report of records dropped).
pub fn client_note(record: &TraceRecord) -> Option<String> {
    let mut value = match &record.what {
        Traced::Spawned => json!({
            "attributes": {n::PID: record.pid},
            "metrics": [n::point(n::CLIENT_STARTS, json!(1), json!({}))],
        }),
        Traced::Hello { version } => json!({"attributes": {n::VERSION: version}}),
        Traced::Exit(info) => match (info.code, info.signal) {
            (Some(code), _) => json!({"attributes": {n::EXIT_CODE: code}}),
            (None, Some(signal)) => json!({"attributes": {n::EXIT_SIGNAL: signal}}),
            _ => json!({}),
        },
        Traced::Detach { .. } => json!({}),
        Traced::Failed(e) => {
            let code = e.code.as_str();
            // The first line: what failed, without koma's stderr after it.
            let message = e.message.lines().next().unwrap_or_default();
            json!({
                "error": code,
                "message": message,
                "metrics": [n::point(n::CLIENT_FAILURES, json!(1), json!({n::ERROR_TYPE: code}))],
            })
        }
        Traced::Closed => return Some(json!({"end": true}).to_string()),
        Traced::Frame { .. } | Traced::Stderr(_) | Traced::Dropped(_) => return None,
    };
    value["event"] = json!(record.kind());
    Some(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::child::ExitInfo;
    use crate::error::{ErrorCode, KomaError};

    fn note(pid: Option<u32>, what: Traced) -> Option<serde_json::Value> {
        client_note(&TraceRecord { label: "x".into(), pid, what }).map(|t| serde_json::from_str(&t).unwrap())
    }

    #[test]
    fn each_note_of_a_life_says_what_it_does_to_the_span() {
        let spawned = note(Some(42), Traced::Spawned).unwrap();
        assert_eq!(spawned["attributes"]["process.pid"], 42);
        assert_eq!(spawned["metrics"][0]["instrument"], "koma.client.starts");
        assert_eq!(
            note(Some(42), Traced::Hello { version: "0.4.6".into() }).unwrap()["attributes"]["koma.version"],
            "0.4.6"
        );
        let exit = note(Some(42), Traced::Exit(ExitInfo { code: Some(3), signal: None })).unwrap();
        assert_eq!(exit["attributes"]["process.exit.code"], 3);
        let killed = note(Some(42), Traced::Exit(ExitInfo { code: None, signal: Some(9) })).unwrap();
        assert_eq!(killed["attributes"]["koma.exit.signal"], 9);
        let e = KomaError::new(ErrorCode::TransportFailure, "koma exited with code 3; last lines of stderr:\nboom");
        let failed = note(Some(42), Traced::Failed(e)).unwrap();
        assert_eq!(failed["error"], "transport_failure");
        assert_eq!(failed["message"], "koma exited with code 3; last lines of stderr:");
        assert_eq!(failed["metrics"][0]["attributes"]["error.type"], "transport_failure");
        assert_eq!(note(None, Traced::Closed).unwrap()["end"], true);
        assert_eq!(note(Some(42), Traced::Detach { by_close: true }).unwrap(), serde_json::json!({"event": "detach"}));
        assert_eq!(exit["event"], "exit");
        assert_eq!(failed["event"], "failed");
        assert!(note(None, Traced::Stderr("x".into())).is_none());
    }
}
