//! The process faults, and how the process ends: the tool it starts, the
//! stderr flood, the exits and the kill on the first request, and the clean
//! exit that stops the tool.

use crate::server::shared::{lock, Shared};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A tool: `sleep 3600` (on Windows, a copy of koma-sim that sleeps: see `windows.rs`).
fn tool() -> Command {
    #[cfg(unix)]
    {
        let mut cmd = Command::new("sleep");
        cmd.arg("3600");
        cmd
    }
    #[cfg(windows)]
    crate::windows::tool()
}

/// `spawn_tool`: a `sleep 3600` in the sim's process group (on Windows, in
/// its Job Object), stdio on /dev/null.
pub fn spawn_tool() -> Option<Child> {
    match tool().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        Ok(c) => {
            eprintln!("koma-sim: tool pid {} (spawn_tool)", c.id());
            Some(c)
        }
        Err(e) => {
            eprintln!("koma-sim: cannot spawn the tool: {e}");
            None
        }
    }
}

/// The faults that act on the first request before it is handled.
pub fn first_request_faults(sh: &Shared) {
    let f = &sh.cfg.faults;
    if f.exit_mid_request {
        sh.out.sync();
        eprintln!("koma-sim: exiting on purpose (exit_mid_request)");
        std::process::exit(3);
    }
    if f.kill_mid_request {
        sh.out.sync();
        eprintln!("koma-sim: killing myself on purpose (kill_mid_request)");
        #[cfg(unix)]
        // SAFETY: getpid has no preconditions, and kill(2) takes plain
        // integers; SIGKILL ends the process here.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        #[cfg(windows)]
        crate::windows::terminate(crate::windows::KILLED);
    }
    if f.orphan_tool {
        sh.out.sync();
        match tool().stdin(Stdio::null()).spawn() {
            Ok(c) => eprintln!("koma-sim: tool pid {}", c.id()),
            Err(e) => eprintln!("koma-sim: cannot spawn the orphan tool: {e}"),
        }
        eprintln!("koma-sim: exiting on purpose, leaving the tool behind (orphan_tool)");
        std::process::exit(1);
    }
}

/// `stderr_flood`: exactly 1 MiB of numbered lines on stderr, the last one
/// `koma-sim: flood end`.
pub fn stderr_flood() {
    const TOTAL: usize = 1 << 20;
    const END: &[u8] = b"koma-sim: flood end\n";
    let mut buf = Vec::with_capacity(TOTAL);
    let mut n = 0u64;
    while buf.len() + 64 + END.len() <= TOTAL {
        n += 1;
        let mut l = format!("koma-sim: flood line {n:07} ");
        while l.len() < 63 {
            l.push('.');
        }
        l.push('\n');
        buf.extend_from_slice(l.as_bytes());
    }
    let rest = TOTAL - END.len() - buf.len();
    if rest > 0 {
        n += 1;
        let mut l = format!("koma-sim: flood line {n:07} ");
        if l.len() + 1 > rest {
            l.clear();
        }
        while l.len() + 1 < rest {
            l.push('.');
        }
        l.push('\n');
        buf.extend_from_slice(l.as_bytes());
    }
    buf.extend_from_slice(END);
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(&buf);
    let _ = e.flush();
}

/// `ignore_eof`: sleeps until killed, also once its client is gone (a
/// failed write to stderr, which `eprintln!` would turn into a panic, is
/// left unsaid).
pub fn stay_alive() -> ! {
    let _ = writeln!(std::io::stderr().lock(), "koma-sim: stdin closed; staying alive (ignore_eof)");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Detach or the end of stdin: stops the tool, if any, and exits 0.
pub fn exit_clean(sh: &Shared) -> ! {
    if let Some(mut c) = lock(&sh.tool).take() {
        let _ = c.kill();
        let _ = c.wait();
    }
    std::process::exit(0)
}
