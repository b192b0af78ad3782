//! koma's stdio on Windows: one named pipe per stream, this process's end
//! opened for overlapped I/O (so that the I/O runtime reads and writes it
//! without a thread of its own), koma's end a plain inheritable handle. The
//! size of a pipe is chosen when it is made: koma's stdout gets 1 MiB, as on
//! Linux, so that a streaming koma writes in large pieces.

use std::io;
use std::os::windows::io::{FromRawHandle, OwnedHandle, RawHandle};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::windows::named_pipe::NamedPipeServer;
use windows_sys::Win32::Foundation::{GENERIC_READ, GENERIC_WRITE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Security::SECURITY_ATTRIBUTES;
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FILE_FLAG_FIRST_PIPE_INSTANCE, FILE_FLAG_OVERLAPPED, FILE_WRITE_ATTRIBUTES, OPEN_EXISTING,
    PIPE_ACCESS_INBOUND, PIPE_ACCESS_OUTBOUND,
};
use windows_sys::Win32::System::Pipes::{
    CreateNamedPipeW, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE, PIPE_WAIT,
};

/// This process's end of koma's stdin.
pub type PipeWriter = NamedPipeServer;
/// This process's end of koma's stdout or stderr.
pub type PipeReader = NamedPipeServer;

/// koma's stdout pipe holds this much.
pub const STDOUT_PIPE_BYTES: u32 = 1 << 20;
const PIPE_BYTES: u32 = 64 * 1024;

/// A pipe: this process's end (overlapped) and koma's (inheritable).
pub(crate) struct Pipe {
    pub ours: OwnedHandle,
    pub theirs: OwnedHandle,
}

/// Which way a pipe carries bytes, from this process's side.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// koma reads what we write (stdin).
    ToChild,
    /// We read what koma writes (stdout, stderr), holding `bytes`.
    FromChild { bytes: u32 },
}

impl Way {
    pub fn stdout() -> Way {
        Way::FromChild { bytes: STDOUT_PIPE_BYTES }
    }
    pub fn stderr() -> Way {
        Way::FromChild { bytes: PIPE_BYTES }
    }
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

impl Pipe {
    pub fn new(way: Way) -> io::Result<Pipe> {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        // A name no other pipe has: FIRST_PIPE_INSTANCE fails if one did.
        let name = wide(&format!(
            "\\\\.\\pipe\\koma-sdk-{}-{}-{:x}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        ));
        let (access, out_bytes, in_bytes) = match way {
            Way::ToChild => (PIPE_ACCESS_OUTBOUND, PIPE_BYTES, 0),
            Way::FromChild { bytes } => (PIPE_ACCESS_INBOUND, 0, bytes),
        };
        // SAFETY: a NUL-terminated name that lives across the call; no
        // security attributes (our end is not inheritable).
        let ours = unsafe {
            CreateNamedPipeW(
                name.as_ptr(),
                access | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
                PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
                1,
                out_bytes,
                in_bytes,
                0,
                std::ptr::null(),
            )
        };
        if ours == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a valid handle just returned to us.
        let ours = unsafe { OwnedHandle::from_raw_handle(ours as RawHandle) };
        let inherit = SECURITY_ATTRIBUTES {
            nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: std::ptr::null_mut(),
            bInheritHandle: 1,
        };
        // koma's end: it reads stdin, or writes stdout and stderr (and may
        // set the handle's attributes, as a C runtime does for stdin).
        let access = match way {
            Way::ToChild => GENERIC_READ | FILE_WRITE_ATTRIBUTES,
            Way::FromChild { .. } => GENERIC_WRITE,
        };
        // SAFETY: the same live name; the security attributes live across the
        // call; synchronous I/O (no flags), as koma expects of its stdio.
        let theirs = unsafe { CreateFileW(name.as_ptr(), access, 0, &inherit, OPEN_EXISTING, 0, std::ptr::null_mut()) };
        if theirs == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a valid handle just returned to us.
        let theirs = unsafe { OwnedHandle::from_raw_handle(theirs as RawHandle) };
        Ok(Pipe { ours, theirs })
    }
}

/// Our end of a pipe, registered with the I/O runtime (must be called within it).
pub fn register(ours: OwnedHandle) -> io::Result<NamedPipeServer> {
    use std::os::windows::io::IntoRawHandle;
    // SAFETY: an open, overlapped named pipe handle that we own and hand over
    // whole: the NamedPipeServer owns it from now on.
    unsafe { NamedPipeServer::from_raw_handle(ours.into_raw_handle()) }
}
