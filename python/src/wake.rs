//! Waking the event loop without the GIL: the core's `Waker` (called from
//! the I/O threads) writes to a descriptor that the loop watches (an eventfd
//! on Linux, a pipe on other Unixes, a socket on Windows: see
//! `wake_windows.rs`). The loop thread then drains every completion and
//! event of the wake in one native call.

use std::io;
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};

use koma_transport::Waker;

#[cfg(windows)]
#[path = "wake_windows.rs"]
mod windows;
#[cfg(windows)]
use windows::Fds;

/// What the loop watches: a descriptor (Unix) or a socket (Windows).
#[cfg(unix)]
pub type Watched = RawFd;
#[cfg(windows)]
pub type Watched = std::os::windows::io::RawSocket;

/// The descriptors of one client's wake-up; `None` once released (after
/// close), so that a late wake never writes to a number reused since.
#[derive(Default)]
pub struct WakeFd {
    fds: Mutex<Option<Fds>>,
}

#[cfg(unix)]
struct Fds {
    /// What the loop watches.
    read: OwnedFd,
    /// What a wake writes to (the same eventfd on Linux; a pipe's other end elsewhere).
    write: Option<OwnedFd>,
}

impl WakeFd {
    pub fn new() -> io::Result<Arc<WakeFd>> {
        Ok(Arc::new(WakeFd { fds: Mutex::new(Some(Fds::open()?)) }))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Fds>> {
        self.fds.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The descriptor to watch, while it is open (on Windows, a socket of
    /// its own for each loop that watches it).
    pub fn fileno(&self) -> Option<Watched> {
        self.lock().as_mut().map(Fds::watched)
    }

    /// A loop stopped watching `watched` (it watches another now): what only
    /// it used can go.
    pub fn retire(&self, watched: Watched) {
        if let Some(f) = self.lock().as_mut() {
            f.retire(watched);
        }
    }

    /// Make the descriptor readable.
    pub fn signal(&self) {
        if let Some(f) = self.lock().as_ref() {
            f.signal();
        }
    }

    /// Take the readiness (the loop is about to drain everything there is).
    pub fn reset(&self) {
        if let Some(f) = self.lock().as_ref() {
            f.reset();
        }
    }

    /// Close the descriptors; later wakes do nothing.
    pub fn release(&self) {
        let fds = self.lock().take();
        drop(fds);
    }
}

#[cfg(unix)]
impl Fds {
    #[cfg(target_os = "linux")]
    fn open() -> io::Result<Fds> {
        // SAFETY: eventfd takes no pointers; the result is checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Fds { read: unsafe { OwnedFd::from_raw_fd(fd) }, write: None })
    }

    #[cfg(all(unix, not(target_os = "linux")))]
    fn open() -> io::Result<Fds> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened and are owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        for fd in [&read, &write] {
            // SAFETY: fcntl on a descriptor we own, with integer arguments.
            unsafe {
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
                let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
        }
        Ok(Fds { read, write: Some(write) })
    }

    /// The descriptor stays the same whichever loop watches it.
    fn watched(&mut self) -> RawFd {
        self.read.as_raw_fd()
    }

    fn retire(&mut self, _: RawFd) {}

    fn signal(&self) {
        let fd = self.write.as_ref().unwrap_or(&self.read).as_raw_fd();
        let one: u64 = 1;
        // Either write counts (an eventfd) or leaves a byte (a pipe); a full
        // pipe (EAGAIN) is already readable, so a failure changes nothing.
        let len = if self.write.is_some() { 1 } else { 8 };
        // SAFETY: `one` lives across the call and holds at least `len` bytes.
        let _ = unsafe { libc::write(fd, (&one as *const u64).cast(), len) };
    }

    fn reset(&self) {
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `buf` is writable for its whole length.
            let n = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            // An eventfd is emptied by one read; a pipe until it would block.
            if n <= 0 || self.write.is_none() {
                break;
            }
        }
    }
}

/// The core's waker for one client.
pub struct FdWaker(pub Arc<WakeFd>);

impl Waker for FdWaker {
    fn wake(&self) {
        self.0.signal();
    }
}
