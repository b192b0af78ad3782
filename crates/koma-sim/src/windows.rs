//! What koma-sim does differently on Windows, where there are no signals,
//! no process groups and no `sleep`: its stdio through the console's
//! handles, how much waits on stdin (`PeekNamedPipe`), the progress file's
//! lock (`LockFileEx`), its own end (`TerminateProcess`), and the tool it
//! starts (a copy of itself that sleeps). The fault switches' Windows
//! meanings are listed in `faults.rs`.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::windows::io::{AsRawHandle, FromRawHandle};
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Storage::FileSystem::{LockFileEx, LOCKFILE_EXCLUSIVE_LOCK};
use windows_sys::Win32::System::Console::{GetStdHandle, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE};
use windows_sys::Win32::System::Pipes::PeekNamedPipe;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};

/// The exit code of a process ended from outside (as `TerminateProcess` by
/// Node's `kill()`, or koma's Job Object, ends it): what `kill_mid_request`
/// and a `crash` step by a signal with no exception of its own end with.
pub const KILLED: u32 = 1;

/// stdout as a File that is never closed.
pub fn stdout_file() -> ManuallyDrop<File> {
    // SAFETY: GetStdHandle has no preconditions; the handle it gives is
    // stdout's, open for the whole life of the process, and the File is
    // never dropped (ManuallyDrop), so it never closes it.
    ManuallyDrop::new(unsafe { File::from_raw_handle(GetStdHandle(STD_OUTPUT_HANDLE)) })
}

/// How many bytes wait unread on stdin (0 if it is not a pipe); `None` once
/// its writer has closed it.
pub fn stdin_pending() -> Option<usize> {
    let mut available = 0u32;
    // SAFETY: stdin's handle; no buffer is read into (null, size 0), and the
    // count goes to a live local.
    let ok = unsafe {
        PeekNamedPipe(
            GetStdHandle(STD_INPUT_HANDLE),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            &mut available,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        let closed = std::io::Error::last_os_error().raw_os_error()
            == Some(windows_sys::Win32::Foundation::ERROR_BROKEN_PIPE as i32);
        return if closed { None } else { Some(0) };
    }
    Some(available as usize)
}

/// `KOMA_SIM_HELLO_DELAY_MS`: wait, but no longer than stdin stays open,
/// reading nothing (a pipe is peeked at, every few milliseconds).
pub fn hello_delay(delay: Duration) {
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if stdin_pending().is_none() {
            eprintln!("koma-sim: stdin closed during the hello delay; sending hello now");
            return;
        }
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(5)));
    }
}

/// Lock `file` for this process alone (released when it is closed, or the process ends).
pub fn lock(file: &File) -> std::io::Result<()> {
    // SAFETY: a zeroed OVERLAPPED is plain data (offset 0); the handle is the
    // open file's, borrowed for the call.
    let ok = unsafe {
        let mut at: windows_sys::Win32::System::IO::OVERLAPPED = std::mem::zeroed();
        LockFileEx(file.as_raw_handle() as HANDLE, LOCKFILE_EXCLUSIVE_LOCK, 0, u32::MAX, u32::MAX, &mut at)
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// End this process now with `code`, as `TerminateProcess` from outside would.
pub fn terminate(code: u32) -> ! {
    // SAFETY: the pseudo-handle of this process; ending it is the point.
    unsafe {
        TerminateProcess(GetCurrentProcess(), code);
    }
    std::process::exit(code as i32)
}

/// The exit code a `crash` step by `signal` ends with: the NTSTATUS of the
/// exception that signal stands for where there is one (SIGSEGV: an access
/// violation), Ctrl+C's for SIGINT, abort()'s 3 for SIGABRT, else [`KILLED`].
pub fn crash_code(signal: &str) -> u32 {
    match signal {
        "SIGSEGV" | "SIGBUS" => 0xC000_0005,
        "SIGILL" => 0xC000_001D,
        "SIGFPE" => 0xC000_0094,
        "SIGINT" => 0xC000_013A,
        "SIGABRT" => 3,
        _ => KILLED,
    }
}

/// A tool: a copy of this program that sleeps (`koma-sim sleep SECONDS`), in
/// koma-sim's Job Object as everything it starts.
pub fn tool() -> std::process::Command {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap_or_else(|_| "koma-sim.exe".into()));
    cmd.args(["sleep", "3600"]);
    cmd
}
