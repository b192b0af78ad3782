//! What this process's environment says, read once: `KOMA_SDK_SPAWN`
//! (`portable`, `no-pidfd`: how children are started) and `KOMA_SDK_TRACE`.

use std::sync::OnceLock;

use koma_transport::child::SpawnMode;
use koma_transport::{ErrorCode, KomaError};

#[derive(Clone, Debug)]
pub struct Settings {
    pub spawn: SpawnMode,
    pub trace: bool,
}

/// The settings of this process, or why `KOMA_SDK_SPAWN` cannot be used.
pub fn process_settings() -> &'static Result<Settings, KomaError> {
    static SETTINGS: OnceLock<Result<Settings, KomaError>> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let spawn = match std::env::var("KOMA_SDK_SPAWN").as_deref() {
            Err(_) | Ok("") => SpawnMode::Auto,
            Ok("portable") => SpawnMode::Portable,
            Ok("no-pidfd") => SpawnMode::NoPidfd,
            Ok(other) => {
                return Err(KomaError::new(
                    ErrorCode::InvalidParams,
                    format!("KOMA_SDK_SPAWN is `{other}`; it must be `portable`, `no-pidfd` or unset"),
                ))
            }
        };
        let trace = matches!(std::env::var("KOMA_SDK_TRACE").as_deref(), Ok("1" | "true" | "yes"));
        Ok(Settings { spawn, trace })
    })
}
