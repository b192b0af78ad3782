//! The hello frame (docs/protocol.md, Hello) and its check.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{ErrorCode, KomaError};
use crate::quote::quote_line;

/// A checked hello.
#[derive(Clone, Debug, PartialEq)]
pub struct Hello {
    pub binary_path: String,
    pub binary_version: String,
    /// The `diagnostics` array, as JSON text.
    pub diagnostics: String,
    pub capabilities: Vec<String>,
}

impl Hello {
    pub fn supports(&self, method: &str) -> bool {
        self.capabilities.iter().any(|c| c == method)
    }

    /// The hello as handed to the application: the frame's specified fields only, as JSON.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"type\":\"hello\",\"protocol\":1,\"binary\":{{\"path\":{},\"version\":{}}},\"diagnostics\":{},\"capabilities\":{}}}",
            serde_json::to_string(&self.binary_path).unwrap(),
            serde_json::to_string(&self.binary_version).unwrap(),
            self.diagnostics,
            serde_json::to_string(&self.capabilities).unwrap()
        )
    }
}

#[derive(Deserialize)]
struct WireHello<'a> {
    #[serde(borrow, default)]
    protocol: Option<&'a RawValue>,
    #[serde(borrow, default)]
    binary: Option<&'a RawValue>,
    #[serde(borrow, default)]
    diagnostics: Option<&'a RawValue>,
    #[serde(borrow, default)]
    capabilities: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireBinary {
    path: String,
    version: String,
}

/// Check the first stdout frame. `line` has already been classified as `Frame::Hello`.
/// A protocol other than the integer 1 is `protocol_mismatch`; anything else
/// wrong with it is `protocol_error`.
pub fn check(line: &[u8]) -> Result<Hello, KomaError> {
    let text = std::str::from_utf8(line).map_err(|_| bad(line, "not UTF-8"))?;
    let wire: WireHello<'_> = serde_json::from_str(text).map_err(|e| bad(line, &e.to_string()))?;
    match wire.protocol.map(|p| p.get()) {
        Some("1") => {}
        Some(other) => {
            return Err(KomaError::new(
                ErrorCode::ProtocolMismatch,
                format!("koma's hello says protocol {}; this SDK speaks protocol 1 only", quote_line(other.as_bytes())),
            ))
        }
        None => {
            return Err(KomaError::new(
                ErrorCode::ProtocolMismatch,
                "koma's hello has no protocol field; this SDK speaks protocol 1 only",
            ))
        }
    }
    let binary: WireBinary = wire
        .binary
        .and_then(|b| serde_json::from_str(b.get()).ok())
        .ok_or_else(|| bad(line, "binary must be an object with string path and version"))?;
    let diagnostics = match wire.diagnostics {
        Some(d) if d.get().starts_with('[') => d.get().to_owned(),
        _ => return Err(bad(line, "diagnostics must be an array")),
    };
    let capabilities: Vec<String> = wire
        .capabilities
        .and_then(|c| serde_json::from_str(c.get()).ok())
        .ok_or_else(|| bad(line, "capabilities must be an array of strings"))?;
    Ok(Hello { binary_path: binary.path, binary_version: binary.version, diagnostics, capabilities })
}

fn bad(line: &[u8], why: &str) -> KomaError {
    KomaError::new(ErrorCode::ProtocolError, format!("bad hello ({}): `{}`", why, quote_line(line)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"type":"hello","protocol":1,"binary":{"path":"/usr/local/bin/koma","version":"0.4.6"},"diagnostics":[],"capabilities":["create","state"],"extra":1}"#;

    #[test]
    fn accepts_protocol_1() {
        let h = check(GOOD.as_bytes()).unwrap();
        assert_eq!(h.binary_version, "0.4.6");
        assert!(h.supports("state"));
        assert!(!h.supports("submit"));
        let back: serde_json::Value = serde_json::from_str(&h.to_json()).unwrap();
        assert_eq!(back["protocol"], 1);
        assert!(back.get("extra").is_none());
    }

    #[test]
    fn rejects_other_protocols() {
        for p in ["2", "\"1\"", "1.0", "null", "0"] {
            let line = GOOD.replace("\"protocol\":1", &format!("\"protocol\":{p}"));
            assert_eq!(check(line.as_bytes()).unwrap_err().code, ErrorCode::ProtocolMismatch, "{p}");
        }
        let line = GOOD.replace("\"protocol\":1,", "");
        assert_eq!(check(line.as_bytes()).unwrap_err().code, ErrorCode::ProtocolMismatch);
    }

    #[test]
    fn rejects_bad_shapes() {
        for (from, to) in [
            ("\"capabilities\":[\"create\",\"state\"]", "\"capabilities\":[1]"),
            ("\"diagnostics\":[]", "\"diagnostics\":{}"),
            ("\"version\":\"0.4.6\"", "\"version\":4"),
        ] {
            let line = GOOD.replace(from, to);
            assert_eq!(check(line.as_bytes()).unwrap_err().code, ErrorCode::ProtocolError, "{to}");
        }
    }
}
