//! What to launch, and how: the options of a launch and their checks.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::{ErrorCode, KomaError};

/// What to launch.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    pub executable: OsString,
    pub cwd: Option<PathBuf>,
    /// Added to (or replacing in) the parent's environment.
    pub env: Vec<(OsString, OsString)>,
    /// How to start and watch the child.
    pub spawn: SpawnMode,
}

/// How a child is started and watched. The host chooses (from its own
/// settings); the core reads no environment variable for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpawnMode {
    /// The best this system has: on Linux, `clone` with a pidfd (without one
    /// where the kernel refuses it); elsewhere, [`SpawnMode::Portable`].
    #[default]
    Auto,
    /// Linux's `clone` without a pidfd, as on a kernel before 5.2: the exit is
    /// watched by a thread per child and signals go by pid. Elsewhere,
    /// [`SpawnMode::Portable`].
    NoPidfd,
    /// The path every Unix has (what macOS uses): `posix_spawn` through the
    /// standard library, a thread per child for its exit, signals by pid, and
    /// no parent-death signal.
    Portable,
}

impl LaunchOptions {
    /// Check what can be checked before anything starts: a NUL byte cannot be
    /// passed to `execve`, and a variable name cannot hold `=`.
    pub fn validate(&self) -> Result<(), KomaError> {
        let bad = |what: String| Err(KomaError::new(ErrorCode::InvalidParams, what));
        if self.executable.is_empty() {
            return bad("`executable` must be a non-empty string".into());
        }
        if self.executable.as_encoded_bytes().contains(&0) {
            return bad("`executable` holds a NUL character, which no program name can hold".into());
        }
        if let Some(cwd) = &self.cwd {
            if cwd.as_os_str().is_empty() {
                return bad("`cwd` must be a non-empty string".into());
            }
            if cwd.as_os_str().as_encoded_bytes().contains(&0) {
                return bad("`cwd` holds a NUL character, which no path can hold".into());
            }
        }
        for (k, v) in &self.env {
            let name = k.to_string_lossy();
            if k.is_empty() || k.as_encoded_bytes().contains(&b'=') || k.as_encoded_bytes().contains(&0) {
                return bad(format!(
                    "`env`: the name `{}` cannot be an environment variable's (empty, or holds `=` or NUL)",
                    crate::quote::escape_text(&name, false)
                ));
            }
            if v.as_encoded_bytes().contains(&0) {
                return bad(format!(
                    "`env.{}` holds a NUL character, which an environment variable cannot hold",
                    crate::quote::escape_text(&name, false)
                ));
            }
        }
        Ok(())
    }

    /// The child's `PATH`: `env`'s if it sets one, else the parent's.
    #[cfg(unix)]
    pub(crate) fn child_path(&self) -> Option<OsString> {
        match self.env.iter().rev().find(|(k, _)| k == std::ffi::OsStr::new("PATH")) {
            Some((_, v)) => Some(v.clone()),
            None => std::env::var_os("PATH"),
        }
    }
}
