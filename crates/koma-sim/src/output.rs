//! The one writer of stdout: a thread that owns fd 1 (behind the stdout
//! lock, so nothing else can print to it) and a large BufWriter, fed by a
//! bounded channel. It flushes whenever no more output is queued, so bursts
//! go out in few syscalls and single frames go out at once.

use std::fs::File;
use std::io::{BufWriter, Write};
#[cfg(unix)]
use std::mem::ManuallyDrop;
use std::sync::mpsc::{self, Receiver, SyncSender};

pub enum Out {
    /// A compact JSON object, without terminator. The writer appends
    /// `,"extra":true` (fault `unknown_event`) and the line terminator.
    Frame(String),
    /// Bytes written exactly as given (terminators included).
    Raw(Vec<u8>),
    /// Flush, then signal the sender.
    Sync(mpsc::Sender<()>),
}

#[derive(Clone)]
pub struct Output {
    tx: SyncSender<Out>,
    /// `\n`, or `\r\n` with the `crlf` fault.
    pub term: &'static [u8],
    /// Add `"extra":true` to every frame (fault `unknown_event`).
    pub extra: bool,
}

pub const EXTRA: &str = ",\"extra\":true";

impl Output {
    pub fn start(crlf: bool, extra: bool, split_writes: bool) -> Output {
        // Bounded, so a client that stops reading stdout pushes back on the
        // producers instead of letting memory grow without limit.
        let (tx, rx) = mpsc::sync_channel::<Out>(256);
        let term: &'static [u8] = if crlf { b"\r\n" } else { b"\n" };
        std::thread::Builder::new()
            .name("stdout".into())
            .spawn(move || writer(rx, term, extra, split_writes))
            .expect("spawn stdout writer");
        Output { tx, term, extra }
    }

    pub fn frame(&self, s: String) {
        let _ = self.tx.send(Out::Frame(s));
    }

    pub fn raw(&self, b: Vec<u8>) {
        let _ = self.tx.send(Out::Raw(b));
    }

    /// Returns once everything sent so far has been written and flushed.
    pub fn sync(&self) {
        let (t, r) = mpsc::channel();
        if self.tx.send(Out::Sync(t)).is_ok() {
            let _ = r.recv();
        }
    }

    /// The bytes the writer would produce for `Out::Frame(s)`.
    pub fn encode(&self, s: &str) -> Vec<u8> {
        let mut v = Vec::with_capacity(s.len() + EXTRA.len() + 2);
        push_frame(&mut v, s, self.extra, self.term);
        v
    }
}

fn push_frame(v: &mut Vec<u8>, s: &str, extra: bool, term: &[u8]) {
    if extra && s.ends_with('}') {
        v.extend_from_slice(&s.as_bytes()[..s.len() - 1]);
        v.extend_from_slice(EXTRA.as_bytes());
        v.push(b'}');
    } else {
        v.extend_from_slice(s.as_bytes());
    }
    v.extend_from_slice(term);
}

struct Sink<'a> {
    w: BufWriter<&'a File>,
    split: bool,
    broken: bool,
}

impl Sink<'_> {
    fn put(&mut self, b: &[u8]) {
        if self.broken {
            return;
        }
        let r = if self.split {
            // Fault `split_writes`: one byte per write(2).
            b.iter().try_for_each(|byte| {
                self.w.write_all(std::slice::from_ref(byte))?;
                self.w.flush()
            })
        } else {
            self.w.write_all(b)
        };
        if let Err(e) = r {
            self.fail(e);
        }
    }

    fn flush(&mut self) {
        if !self.broken {
            if let Err(e) = self.w.flush() {
                self.fail(e);
            }
        }
    }

    fn fail(&mut self, e: std::io::Error) {
        self.broken = true;
        eprintln!("koma-sim: stdout write failed ({e}); discarding further output");
    }
}

fn writer(rx: Receiver<Out>, term: &'static [u8], extra: bool, split: bool) {
    // Hold the std lock so that a stray print! cannot interleave, and write
    // to fd 1 directly (std's stdout is line buffered, which would cost a
    // syscall per frame).
    let _guard = std::io::stdout().lock();
    #[cfg(unix)]
    // SAFETY: fd 1 is open for the whole life of the process, and nothing
    // else writes to it: std's stdout is locked above for good. The File is
    // never dropped (ManuallyDrop), so it never closes fd 1.
    let file = ManuallyDrop::new(unsafe { <File as std::os::unix::io::FromRawFd>::from_raw_fd(1) });
    #[cfg(windows)]
    let file = crate::windows::stdout_file();
    let mut sink = Sink { w: BufWriter::with_capacity(1 << 20, &*file), split, broken: false };
    let mut scratch = Vec::with_capacity(4096);
    let mut handle = |sink: &mut Sink, m: Out| match m {
        Out::Frame(s) => {
            if extra {
                scratch.clear();
                push_frame(&mut scratch, &s, extra, term);
                sink.put(&scratch);
                if scratch.capacity() > 1 << 20 {
                    scratch = Vec::with_capacity(4096);
                }
            } else {
                sink.put(s.as_bytes());
                sink.put(term);
            }
        }
        Out::Raw(b) => sink.put(&b),
        Out::Sync(ack) => {
            sink.flush();
            let _ = ack.send(());
        }
    };
    while let Ok(m) = rx.recv() {
        handle(&mut sink, m);
        while let Ok(m) = rx.try_recv() {
            handle(&mut sink, m);
        }
        sink.flush();
    }
    sink.flush();
}
