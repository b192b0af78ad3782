//! A request as the line written to koma's stdin.

use crate::error::{ErrorCode, KomaError};
use crate::limits::MAX_FRAME_BYTES;
use crate::params;

/// `{"id":"N","method":M,"params":P}\n`, with `params` checked (`frame_too_large` over 40 MiB).
pub(super) fn request_line(token: u64, method: &str, params_json: Option<&str>) -> Result<Vec<u8>, KomaError> {
    let params = params::check(method, params_json)?;
    let method_json = serde_json::to_string(method).expect("string");
    let mut line = Vec::with_capacity(params.len() + method_json.len() + 40);
    line.extend_from_slice(b"{\"id\":\"");
    line.extend_from_slice(itoa::Buffer::new().format(token).as_bytes());
    line.extend_from_slice(b"\",\"method\":");
    line.extend_from_slice(method_json.as_bytes());
    line.extend_from_slice(b",\"params\":");
    line.extend_from_slice(params.as_bytes());
    line.push(b'}');
    if line.len() > MAX_FRAME_BYTES {
        return Err(KomaError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "the `{method}` request would be {} bytes, over the 40 MiB frame bound ({MAX_FRAME_BYTES}); nothing was written",
                line.len()
            ),
        ));
    }
    line.push(b'\n');
    Ok(line)
}
