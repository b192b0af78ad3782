//! How a child ended.

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            #[cfg(unix)]
            (Some(c), _) => format!("exited with code {c}"),
            // An NTSTATUS code gets its name (0xC000013A: STATUS_CONTROL_C_EXIT).
            #[cfg(windows)]
            (Some(c), _) => super::windows::ntstatus::describe_code(c),
            (None, Some(s)) => format!("was killed by signal {s}{}", signal_name(s)),
            _ => "ended".to_owned(),
        }
    }
}

#[cfg(windows)]
fn signal_name(_: i32) -> &'static str {
    ""
}

#[cfg(unix)]
fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGINT => " (SIGINT)",
        _ => "",
    }
}
