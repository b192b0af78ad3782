//! Why a launch failed, and the message that says so. Both spawn paths
//! report through these variants, so a user reads the same words whichever
//! path ran.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::{ErrorCode, KomaError};

/// Why a launch failed; the message names what failed (the executable, the cwd).
#[derive(Debug)]
pub enum LaunchError {
    /// The executable could not be run (not found, not executable, not a program).
    Executable { executable: OsString, error: std::io::Error },
    /// The executable names a directory (`path`: where the search found it).
    Directory { executable: OsString, path: PathBuf },
    /// A batch file (`.cmd`, `.bat`) that only `cmd.exe`, a shell, could run
    /// (Windows): `why` says what it is and what to pass instead.
    Batch { executable: OsString, path: PathBuf, why: String },
    /// The working directory could not be entered.
    Cwd { cwd: PathBuf, error: std::io::Error },
    /// Anything else (pipes, the spawner thread, the system's limits).
    Other(String),
}

impl LaunchError {
    pub fn into_error(self) -> KomaError {
        KomaError::new(ErrorCode::SpawnFailed, self.message())
    }

    /// The message of the `spawn_failed` error.
    pub fn message(&self) -> String {
        match self {
            LaunchError::Executable { executable, error } => {
                let exe = executable.to_string_lossy();
                let (not_found, why) = why(&exe, error);
                let mut message = format!("could not start `{exe} sdk serve`: {why} ({error})");
                // `"koma --verbose"` is looked for as one file name: say why it was not found.
                if not_found && exe.contains([' ', '\t']) {
                    message.push_str(&format!(
                        "; `{exe}` is taken whole as the program's name: arguments are not split out of it, \
                         and the program is run as `<executable> sdk serve`, with no shell"
                    ));
                }
                message
            }
            LaunchError::Directory { executable, path } => format!(
                "could not start `{} sdk serve`: `{}` is a directory, not a program",
                executable.to_string_lossy(),
                path.display()
            ),
            LaunchError::Batch { executable, path, why } => format!(
                "could not start `{} sdk serve`: `{}` is a batch file, which only cmd.exe (a shell) can run, and \
                 koma is never started through a shell; {why}",
                executable.to_string_lossy(),
                path.display()
            ),
            LaunchError::Cwd { cwd, error } => {
                format!("could not start koma in the working directory `{}`: {error}", cwd.display())
            }
            LaunchError::Other(what) => format!("could not start koma: {what}"),
        }
    }
}

/// Whether `error` says the executable was not found, and why it could not run, in words.
#[cfg(unix)]
fn why(exe: &str, error: &std::io::Error) -> (bool, String) {
    let why = match error.raw_os_error() {
        Some(libc::ENOENT) if !exe.contains('/') => "not found on PATH".to_owned(),
        Some(libc::ENOENT) => "no such file".to_owned(),
        Some(libc::EACCES) => "permission denied (not executable?)".to_owned(),
        Some(libc::ENOEXEC) => "not a program this system can run (a script without `#!`? no shell is used)".to_owned(),
        _ => error.to_string(),
    };
    (error.raw_os_error() == Some(libc::ENOENT), why)
}

/// The same, for Windows' error codes.
#[cfg(windows)]
fn why(exe: &str, error: &std::io::Error) -> (bool, String) {
    use windows_sys::Win32::Foundation::{
        ERROR_ACCESS_DENIED, ERROR_BAD_EXE_FORMAT, ERROR_EXE_MACHINE_TYPE_MISMATCH, ERROR_FILE_NOT_FOUND,
        ERROR_PATH_NOT_FOUND,
    };
    let code = error.raw_os_error().map(|c| c as u32);
    let not_found = matches!(code, Some(ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND));
    let why = match code {
        Some(ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND) if !exe.contains(['/', '\\', ':']) => {
            "not found on PATH (with PATHEXT's .exe and .com, and npm's .cmd shims)".to_owned()
        }
        Some(ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND) => "no such file".to_owned(),
        Some(ERROR_ACCESS_DENIED) => "access denied".to_owned(),
        Some(ERROR_BAD_EXE_FORMAT | ERROR_EXE_MACHINE_TYPE_MISMATCH) => {
            "not a program Windows can run (a .exe or .com; no shell or interpreter is used)".to_owned()
        }
        _ => error.to_string(),
    };
    (not_found, why)
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Error;

    use super::*;

    fn executable(exe: &str, errno: i32) -> String {
        LaunchError::Executable { executable: exe.into(), error: Error::from_raw_os_error(errno) }.message()
    }

    #[test]
    fn a_missing_program_is_not_found_on_path_or_no_such_file() {
        let bare = executable("koma", libc::ENOENT);
        assert!(bare.starts_with("could not start `koma sdk serve`: not found on PATH ("), "{bare}");
        let path = executable("/opt/koma", libc::ENOENT);
        assert!(path.starts_with("could not start `/opt/koma sdk serve`: no such file ("), "{path}");
        assert!(!bare.contains("arguments") && !path.contains("arguments"), "no note without a space");
    }

    #[test]
    fn an_executable_with_arguments_in_it_says_they_are_not_split() {
        for exe in ["koma --verbose", "/usr/bin/koma\t-v"] {
            let m = executable(exe, libc::ENOENT);
            assert!(m.starts_with(&format!("could not start `{exe} sdk serve`: ")), "{m}");
            assert!(
                m.ends_with(&format!(
                    "; `{exe}` is taken whole as the program's name: arguments are not split out of it, \
                     and the program is run as `<executable> sdk serve`, with no shell"
                )),
                "{m}"
            );
        }
        // A name with a space that was found but could not run: not about arguments.
        assert!(!executable("my koma", libc::EACCES).contains("arguments"));
    }

    #[test]
    fn a_directory_says_it_is_a_directory() {
        let m = LaunchError::Directory { executable: "tools".into(), path: "/usr/bin/tools".into() }.message();
        assert_eq!(m, "could not start `tools sdk serve`: `/usr/bin/tools` is a directory, not a program");
        assert!(!m.contains("permission"), "{m}");
    }

    #[test]
    fn the_other_causes_keep_their_messages() {
        let denied = executable("/etc/hosts", libc::EACCES);
        assert!(denied.starts_with("could not start `/etc/hosts sdk serve`: permission denied (not executable?) ("));
        let script = executable("./run", libc::ENOEXEC);
        assert!(script.contains(": not a program this system can run (a script without `#!`? no shell is used) ("));
        let cwd = LaunchError::Cwd { cwd: "/nowhere".into(), error: Error::from_raw_os_error(libc::ENOENT) };
        assert!(cwd.message().starts_with("could not start koma in the working directory `/nowhere`: "));
        assert_eq!(LaunchError::Other("no pipes".into()).message(), "could not start koma: no pipes");
        let e = LaunchError::Other("x".into()).into_error();
        assert_eq!(e.code, ErrorCode::SpawnFailed);
    }
}
