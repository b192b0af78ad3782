//! The wake on Windows: a connected pair of loopback TCP sockets, as
//! CPython's `socket.socketpair()` makes there (and asyncio's own wake of
//! its loop). Windows has no eventfd, and its pipes cannot be watched by a
//! loop: asyncio's selector loop and trio watch sockets only, and the
//! proactor loop (asyncio's default) reads one with an overlapped receive.
//!
//! A proactor ties the socket to its I/O completion port for good, so each
//! loop that watches the wake gets a pair of its own ([`Fds::watched`]); the
//! pair before it is closed once its loop has stopped watching it
//! ([`Fds::retire`]), never while a loop may still wait on it, so a client
//! used by one loop after another holds one pair (two while a loop in
//! another thread lets go of it).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::windows::io::{AsRawSocket, RawSocket};

pub struct Fds {
    /// The pair that wakes write to.
    pair: Pair,
    /// Whether `pair` was handed to a loop.
    handed_out: bool,
    /// Pairs handed to a loop before, kept until it stops watching them.
    retired: Vec<Pair>,
}

struct Pair {
    /// What the loop watches.
    read: TcpStream,
    /// What a wake writes to.
    write: TcpStream,
}

impl Fds {
    pub fn open() -> io::Result<Fds> {
        Ok(Fds { pair: Pair::open()?, handed_out: false, retired: Vec::new() })
    }

    /// The socket for a loop to watch: the pair's, or a new pair's when the
    /// pair was handed out before (a wake that went to the old one is not
    /// lost: the new one starts readable).
    pub fn watched(&mut self) -> RawSocket {
        if self.handed_out {
            // Without a new pair the old one serves on (a selector loop and
            // trio can share it; only a proactor would refuse it).
            if let Ok(fresh) = Pair::open() {
                let old = std::mem::replace(&mut self.pair, fresh);
                self.retired.push(old);
                self.pair.signal();
            }
        }
        self.handed_out = true;
        self.pair.read.as_raw_socket()
    }

    /// Close the pair that `watched` names: its loop let it go. A retired
    /// pair goes; the current one, let go before another loop asked (its
    /// loop ended first, as between two `asyncio.run`), is replaced by a
    /// fresh pair now, which the next loop takes.
    pub fn retire(&mut self, watched: RawSocket) {
        if self.pair.read.as_raw_socket() != watched {
            self.retired.retain(|p| p.read.as_raw_socket() != watched);
        } else if let Ok(fresh) = Pair::open() {
            self.pair = fresh;
            self.pair.signal();
            self.handed_out = false;
        }
    }

    pub fn signal(&self) {
        self.pair.signal();
    }

    pub fn reset(&self) {
        self.pair.reset();
    }
}

impl Pair {
    fn open() -> io::Result<Pair> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let write = TcpStream::connect(listener.local_addr()?)?;
        let (read, peer) = listener.accept()?;
        // Another local process may connect between bind and accept: the
        // pair is only ours if the accepted end is our own connection.
        if peer != write.local_addr()? {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "another process connected to the wake socket",
            ));
        }
        write.set_nodelay(true)?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        Ok(Pair { read, write })
    }

    fn signal(&self) {
        // A full buffer (WouldBlock) is readable already: a failure changes nothing.
        let _ = (&self.write).write(&[1]);
    }

    fn reset(&self) {
        let mut buf = [0u8; 256];
        // Until it would block (or the other end is gone).
        while matches!((&self.read).read(&mut buf), Ok(n) if n > 0) {}
    }
}
