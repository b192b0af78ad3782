//! What this process's environment says to every client of every host, read
//! once per process: `KOMA_SDK_SPAWN` (how children are started) and
//! `KOMA_SDK_TRACE` (every client traces its frames). Both packages read
//! them here, so they take the same values and refuse a bad one with the
//! same message.

use std::sync::OnceLock;

use crate::child::SpawnMode;
use crate::error::{ErrorCode, KomaError};
use crate::quote::quote_line;

/// What the environment asks of every client of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessSettings {
    /// `KOMA_SDK_SPAWN`: unset, empty or `auto` (the best path the system
    /// has), `no-pidfd` or `portable`.
    pub spawn: SpawnMode,
    /// `KOMA_SDK_TRACE` is `1`, `true` or `yes`: every client traces its frames.
    pub trace: bool,
}

/// This process's settings, read from its environment the first time they
/// are asked for; `invalid_params` (the same error every time) when
/// `KOMA_SDK_SPAWN` names no spawn path.
pub fn process_settings() -> Result<ProcessSettings, KomaError> {
    static SETTINGS: OnceLock<Result<ProcessSettings, KomaError>> = OnceLock::new();
    SETTINGS
        .get_or_init(|| {
            let spawn = std::env::var_os("KOMA_SDK_SPAWN");
            let trace = std::env::var_os("KOMA_SDK_TRACE");
            settings(
                spawn.as_deref().map(|v| v.to_string_lossy()).as_deref(),
                trace.as_deref().and_then(|v| v.to_str()),
            )
        })
        .clone()
}

/// The settings the two variables' values give (`None`: unset).
pub fn settings(spawn: Option<&str>, trace: Option<&str>) -> Result<ProcessSettings, KomaError> {
    let spawn = match spawn {
        None | Some("" | "auto") => SpawnMode::Auto,
        Some("no-pidfd") => SpawnMode::NoPidfd,
        Some("portable") => SpawnMode::Portable,
        Some(other) => {
            return Err(KomaError::new(
                ErrorCode::InvalidParams,
                format!(
                    "KOMA_SDK_SPAWN=\"{}\" names no spawn path: it must be `auto`, `no-pidfd`, `portable`, or unset",
                    quote_line(other.as_bytes())
                ),
            ))
        }
    };
    Ok(ProcessSettings { spawn, trace: matches!(trace, Some("1" | "true" | "yes")) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spawn_path_is_named_and_anything_else_is_refused_with_one_message() {
        for (value, mode) in [
            (None, SpawnMode::Auto),
            (Some(""), SpawnMode::Auto),
            (Some("auto"), SpawnMode::Auto),
            (Some("no-pidfd"), SpawnMode::NoPidfd),
            (Some("portable"), SpawnMode::Portable),
        ] {
            assert_eq!(settings(value, None).unwrap().spawn, mode, "{value:?}");
        }
        let e = settings(Some("pidfd-please"), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert_eq!(
            e.message,
            "KOMA_SDK_SPAWN=\"pidfd-please\" names no spawn path: it must be `auto`, `no-pidfd`, `portable`, or unset"
        );
    }

    #[test]
    fn trace_is_on_for_1_true_and_yes_only() {
        for (value, on) in [
            (None, false),
            (Some(""), false),
            (Some("0"), false),
            (Some("1"), true),
            (Some("true"), true),
            (Some("yes"), true),
        ] {
            assert_eq!(settings(None, value).unwrap().trace, on, "{value:?}");
        }
    }
}
