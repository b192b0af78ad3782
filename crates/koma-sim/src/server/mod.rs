//! `koma-sim sdk serve`: the start-up, in order. Each actor and noun of the
//! server has its file: `hello` (its frame, the waits before it), `reader`
//! (stdin, request by request), `methods` (the handlers), `answer` (the
//! answer faults), `rpc` and `params` (a request's answer and params),
//! `worker` (the turn worker), `signals`, `process` (the process faults and
//! the exits), and `shared` (what the threads share).

mod answer;
mod hello;
mod methods;
mod params;
mod process;
mod reader;
mod rpc;
mod shared;
#[cfg(unix)]
mod signals;
mod worker;

use crate::agent::Core;
use crate::config::Config;
use crate::output::Output;
use shared::Shared;
use std::process::Child;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};

pub fn run(mut cfg: Config) -> ! {
    let (turns, scripted) = match cfg.scenario.take() {
        Some(s) => (Some(s.turns), Some(s.methods)),
        None => (None, None),
    };
    let record = cfg.record.take();
    let f = &cfg.faults;
    // The tool first, so it starts with default signal dispositions.
    let tool = if f.spawn_tool { process::spawn_tool() } else { None };
    // On Windows there is no SIGTERM to ignore (faults.rs, ON_WINDOWS).
    #[cfg(unix)]
    if f.ignore_sigterm {
        signals::ignore_sigterm();
    }
    let counting_only = f.no_hello || f.bad_protocol();
    // Signals are taken by a sigwait thread; block them before any thread
    // exists so that every thread inherits the mask.
    #[cfg(unix)]
    let sigset = {
        let mut sigs = Vec::new();
        if f.hold {
            sigs.push(libc::SIGUSR1);
        }
        if counting_only && !f.ignore_sigterm {
            sigs.push(libc::SIGTERM);
        }
        (!sigs.is_empty()).then(|| signals::block_signals(&sigs))
    };

    let out = Output::start(f.crlf, f.unknown_event, f.split_writes);
    let hello = hello::hello_frame(&cfg, tool.as_ref().map(Child::id));
    let core = Core {
        seq: 0,
        session: None,
        shutdown: false,
        out: out.clone(),
        delay_ms: cfg.delay_ms,
        home: cfg.home.clone(),
        saves: cfg.saves,
        file: None,
        bench: cfg.bench,
        odd_status: f.odd_status,
        script: turns,
        silent: false,
    };
    let sh = Arc::new(Shared {
        core: Mutex::new(core),
        cv: Condvar::new(),
        out,
        held: Mutex::new(Vec::new()),
        hello,
        unknown_ids: AtomicU64::new(0),
        tool: Mutex::new(tool),
        cfg,
    });
    #[cfg(unix)]
    if let Some(set) = sigset {
        let s2 = Arc::clone(&sh);
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || signals::signal_thread(Some(s2), set))
            .expect("spawn");
    }
    if sh.cfg.faults.stderr_flood {
        process::stderr_flood();
    }
    // (The bad-protocol hellos report everything read, at the end.)
    hello::send_hello(&sh, counting_only);
    if counting_only {
        reader::count_stdin_and_exit(&sh);
    }
    worker::start(Arc::clone(&sh));
    reader::serve(sh, scripted, record)
}
