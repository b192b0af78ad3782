//! Error codes of the protocol file's table (part C), and the error value.

use std::fmt;

/// The `code` of every error the SDK reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    Remote,
    DeliveryUnknown,
    TransportFailure,
    SpawnFailed,
    ProtocolError,
    ProtocolMismatch,
    FrameTooLarge,
    TooManyPending,
    Lifecycle,
    Unsupported,
    InvalidParams,
    Closed,
    Aborted,
    Timeout,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Remote => "remote",
            ErrorCode::DeliveryUnknown => "delivery_unknown",
            ErrorCode::TransportFailure => "transport_failure",
            ErrorCode::SpawnFailed => "spawn_failed",
            ErrorCode::ProtocolError => "protocol_error",
            ErrorCode::ProtocolMismatch => "protocol_mismatch",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::TooManyPending => "too_many_pending",
            ErrorCode::Lifecycle => "lifecycle",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::Closed => "closed",
            ErrorCode::Aborted => "aborted",
            ErrorCode::Timeout => "timeout",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The server's `error` object of a failed response, as raw JSON where it is JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteError {
    pub code: String,
    pub message: String,
    /// The `data` member as JSON text, if present.
    pub data: Option<String>,
}

/// An error with a code from the protocol file.
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
