//! The error value. Its codes are the protocol's table (`docs/protocol.md`,
//! and `schema/protocol.schema.json`, from which `surface.rs` is generated).

use std::fmt;

pub use crate::surface::ErrorCode;

/// The server's `error` object of a failed response, as raw JSON where it is JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteError {
    pub code: String,
    pub message: String,
    /// The `data` member as JSON text, if present.
    pub data: Option<String>,
}

/// An error with a code from docs/protocol.md (Error codes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KomaError {
    pub code: ErrorCode,
    pub message: String,
    pub remote: Option<RemoteError>,
}

impl KomaError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        KomaError { code, message: message.into(), remote: None }
    }

    pub fn remote(remote: RemoteError) -> Self {
        KomaError {
            code: ErrorCode::Remote,
            message: format!("koma answered with error {}: {}", remote.code, remote.message),
            remote: Some(remote),
        }
    }
}

impl fmt::Display for KomaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for KomaError {}
