//! Driving a `Connection` from a test thread, the way a host does from its
//! own thread: a waker that counts wakes, and completions drained
//! and kept by token.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use koma_transport::child::{LaunchOptions, SpawnMode};
use koma_transport::events::Take;
use koma_transport::{Closing, Connection, ConnectionOptions, Outcome, Waker};

/// The koma-sim binary of this workspace, built with the same profile and
/// target as this test (by `cargo test -p koma-sim`, or here if missing).
pub fn sim_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("test exe");
        let dir = exe.parent().and_then(|d| d.parent()).expect("target dir").to_path_buf();
        let sim = dir.join("koma-sim");
        if !sim.exists() {
            // target/<triple>/<profile>/deps/this-test: build koma-sim beside it.
            let profile = dir.file_name().unwrap().to_string_lossy().into_owned();
            let mut cmd = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cmd.args(["build", "-p", "koma-sim"]);
            if profile == "release" {
                cmd.arg("--release");
            }
            let triple = dir.parent().and_then(|p| p.file_name()).map(|s| s.to_string_lossy().into_owned());
            if let Some(t) = triple.filter(|t| t.contains('-')) {
                cmd.args(["--target", &t]);
            }
            let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
            assert!(ok && sim.exists(), "could not build koma-sim at {}", sim.display());
        }
        sim
    })
    .clone()
}

/// koma-sim with `env` added (and no delay between the steps of a turn).
pub fn sim_launch(env: &[(&str, &str)]) -> LaunchOptions {
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![("KOMA_SIM_DELAY_MS".into(), "0".into())];
    vars.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    LaunchOptions { executable: sim_path().into(), cwd: None, env: vars, ..Default::default() }
}

/// Counts wakes; the test thread waits on it.
#[derive(Default)]
pub struct TestWaker {
    wakes: Mutex<u64>,
    cv: Condvar,
}

struct Wake(Arc<TestWaker>);

impl Waker for Wake {
    fn wake(&self) {
        *self.0.wakes.lock().unwrap() += 1;
        self.0.cv.notify_all();
    }
}

impl TestWaker {
    /// The waker to give a `Connection`.
    pub fn waker(self: &Arc<Self>) -> Box<dyn Waker> {
        Box::new(Wake(self.clone()))
    }

    /// Wait (at most `limit`) until there have been more than `seen` wakes;
    /// the count now (still `seen` if none came).
    pub fn wait_past(&self, seen: u64, limit: Duration) -> u64 {
        let deadline = Instant::now() + limit;
        let mut w = self.wakes.lock().unwrap();
        while *w == seen {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            w = self.cv.wait_timeout(w, left).unwrap().0;
        }
        *w
    }
}

pub struct Client {
    pub conn: Connection,
    waker: Arc<TestWaker>,
    seen_wakes: u64,
    /// Every completion drained, by token (a token completed twice shows as two).
    pub done: HashMap<u64, Vec<Outcome>>,
}

impl Client {
    pub fn sim(env: &[(&str, &str)]) -> Self {
        Self::sim_in(SpawnMode::Auto, env)
    }

    /// koma-sim, started by the spawn path `mode` selects.
    pub fn sim_in(mode: SpawnMode, env: &[(&str, &str)]) -> Self {
        Self::with(LaunchOptions { spawn: mode, ..sim_launch(env) })
    }

    pub fn with(launch: LaunchOptions) -> Self {
        Self::with_options(ConnectionOptions { launch, ..Default::default() })
    }

    pub fn with_options(options: ConnectionOptions) -> Self {
        let waker = Arc::new(TestWaker::default());
        let conn = Connection::new(options, waker.waker());
        Client { conn, waker, seen_wakes: 0, done: HashMap::new() }
    }

    /// Drain what is ready now.
    pub fn pump(&mut self) {
        for c in self.conn.drain() {
            self.done.entry(c.token).or_default().push(c.outcome);
        }
    }

    /// Wait (at most `limit`) for a wake, then drain. False if none came.
    pub fn wait_wake(&mut self, limit: Duration) -> bool {
        let now = self.waker.wait_past(self.seen_wakes, limit);
        if now == self.seen_wakes {
            return false;
        }
        self.seen_wakes = now;
        self.pump();
        true
    }

    /// Wait (at most `limit`) for a wake, and drain nothing: what is ready
    /// stays for a later drain (and no wake comes for more until then). False if none came.
    pub fn wait_wake_undrained(&mut self, limit: Duration) -> bool {
        let now = self.waker.wait_past(self.seen_wakes, limit);
        let woke = now != self.seen_wakes;
        self.seen_wakes = now;
        woke
    }

    /// The outcome of `token`, waiting for it (panics after 20 s: a hang).
    pub fn outcome(&mut self, token: u64) -> &Outcome {
        let deadline = Instant::now() + Duration::from_secs(20);
        self.pump();
        while !self.done.contains_key(&token) {
            assert!(Instant::now() < deadline, "token {token} never completed");
            self.wait_wake(Duration::from_millis(100));
        }
        &self.done[&token][0]
    }

    /// Send a request and wait for its outcome.
    pub fn call(&mut self, method: &str, params: Option<&str>) -> Result<serde_json::Value, String> {
        let t = self.conn.token();
        self.conn.request(t, method, params, None).map_err(|e| format!("{}: {}", e.code, e.message))?;
        match self.outcome(t) {
            Outcome::Result(raw) => Ok(serde_json::from_slice(raw.text()).expect("result json")),
            Outcome::Error(e) => Err(format!("{}: {}", e.code, e.message)),
            other => Err(format!("unexpected {other:?}")),
        }
    }

    /// Close and wait until done.
    pub fn close(&mut self) {
        let t = self.conn.token();
        if self.conn.close(t) == Closing::Wait {
            assert!(matches!(self.outcome(t), Outcome::Done));
        }
    }

    /// Take events (as JSON arrays of [seq, name, data, ...]) until `until` holds for one.
    pub fn events_until(
        &mut self,
        mut until: impl FnMut(&str, &serde_json::Value) -> bool,
    ) -> Vec<(u64, String, serde_json::Value)> {
        let counters = self.conn.event_counters();
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.conn.take_events(true) {
                Take::Batch { json, count, bytes, .. } => {
                    let v: Vec<serde_json::Value> = serde_json::from_slice(&json).unwrap();
                    counters.add_taken(count as u32, bytes as u32);
                    for e in v.chunks(koma_transport::connection::BATCH_STRIDE as usize) {
                        let item = (e[0].as_u64().unwrap(), e[1].as_str().unwrap().to_owned(), e[2].clone());
                        let hit = until(&item.1, &item.2);
                        seen.push(item);
                        if hit {
                            return seen;
                        }
                    }
                }
                Take::Overflow { .. } => {}
                Take::Empty => {
                    assert!(Instant::now() < deadline, "no matching event; saw {seen:?}");
                    self.wait_wake(Duration::from_millis(100));
                }
                Take::Ended(end) => panic!("events ended ({end:?}) before a match; saw {seen:?}"),
            }
        }
    }
}

/// For each function `name(mode: SpawnMode)` listed, a test per spawn mode:
/// `auto::name`, `no_pidfd::name` and `portable::name`. Those listed under
/// `linux_only` test what only Linux's clone path gives (the parent-death
/// signal), so `portable::` has none of them: they are skipped by name.
#[macro_export]
macro_rules! in_every_mode {
    (all: [$($all:ident),* $(,)?], linux_only: [$($linux:ident),* $(,)?] $(,)?) => {
        mod auto {
            $( #[test] fn $all() { super::$all(koma_transport::child::SpawnMode::Auto) } )*
            $( #[test] fn $linux() { super::$linux(koma_transport::child::SpawnMode::Auto) } )*
        }
        mod no_pidfd {
            $( #[test] fn $all() { super::$all(koma_transport::child::SpawnMode::NoPidfd) } )*
            $( #[test] fn $linux() { super::$linux(koma_transport::child::SpawnMode::NoPidfd) } )*
        }
        mod portable {
            $( #[test] fn $all() { super::$all(koma_transport::child::SpawnMode::Portable) } )*
        }
    };
}

/// Descriptors open in this process now, but for two that are not a
/// client's and come and go by themselves: the listing's own, and the one
/// glibc opens for a moment on a thread that is ending (it reads
/// `/proc/sys/vm/overcommit_memory` as it gives back the thread's heap),
/// such as the previous test's thread, which libtest lets end while the next
/// test starts. A descriptor closed while it is listed is not counted.
pub fn open_fds() -> Vec<String> {
    let listing = format!("/proc/{}/fd", std::process::id());
    let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let target = std::fs::read_link(e.path()).ok()?.display().to_string();
                    let passing = target == listing || target == "/proc/sys/vm/overcommit_memory";
                    (!passing).then(|| format!("{} -> {target}", e.file_name().to_string_lossy()))
                })
                .collect()
        })
        .unwrap_or_default();
    fds.sort();
    fds
}

/// Is this pid alive (not reaped)? And is any process left in group `pgid`?
pub fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Is a process of group `pgid` still running (a zombie counts as gone)?
pub fn group_alive(pgid: i32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { return false };
        let Some(rest) = stat.rfind(')').map(|i| stat[i + 1..].to_owned()) else { return false };
        let f: Vec<&str> = rest.split_ascii_whitespace().collect();
        f.len() > 2 && f[2].parse::<i32>() == Ok(pgid) && f[0] != "Z" && f[0] != "X"
    })
}

/// Tests that count this process's descriptors or processes take this, and
/// so does every other test of their file: they run one at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

// ---- Identifying one child and the descriptors of its connection, precisely,
// while other connections run in the same process (see tests/state_machine.rs).

/// A pidfd for `pid` (`pidfd_open(2)`), or `None` if there is no such process.
#[cfg(target_os = "linux")]
pub fn pidfd_open(pid: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open returns a new descriptor that we then own, or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a new descriptor, owned by no one else.
    (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Pidfds are Linux's: elsewhere there is none to open, for any process.
#[cfg(not(target_os = "linux"))]
pub fn pidfd_open(_pid: i32) -> Option<std::os::fd::OwnedFd> {
    None
}

/// Send `signal` through a pidfd (a no-op once that process has exited).
#[cfg(target_os = "linux")]
pub fn pidfd_signal(pidfd: &std::os::fd::OwnedFd, signal: i32) {
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal on a pidfd we own, without siginfo.
    unsafe {
        libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), signal, std::ptr::null::<libc::siginfo_t>(), 0);
    }
}

/// Outside Linux `pidfd_open` gives no pidfd, so there is none to signal through.
#[cfg(not(target_os = "linux"))]
pub fn pidfd_signal(_pidfd: &std::os::fd::OwnedFd, _signal: i32) {
    unreachable!("pidfd_open gives no pidfd outside Linux")
}

/// Wait (at most `limit`, a bound against a hang) until the process named by
/// `pidfd` has exited; any process, not only a child of this one. False if
/// it still runs.
pub fn pidfd_wait_exit(pidfd: &std::os::fd::OwnedFd, limit: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fd = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll on one pollfd of ours; a pidfd is readable once its process has exited.
        let rc = unsafe { libc::poll(&mut fd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if rc > 0 {
            return true;
        }
        if rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

/// Open `pid`'s stdin, stdout and stderr (pipes) here too, read and write,
/// through /proc. While these are held, the process sees no end of stdin and
/// no broken pipe when whoever started it dies: only a signal ends it.
pub fn hold_pipes_of(pid: i32) -> Vec<std::os::fd::OwnedFd> {
    (0..3)
        .map(|fd| {
            let path = format!("/proc/{pid}/fd/{fd}");
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap_or_else(|e| panic!("{path}: {e}"))
                .into()
        })
        .collect()
}

/// The names of this process's threads now (at most 15 bytes each, as the kernel keeps them).
pub fn thread_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim_end().to_owned())
        .collect();
    names.sort();
    names
}

/// The names of this process's threads that are the core's (`koma-io`,
/// `koma-spawner`, `koma-exit-watch`), sorted.
pub fn koma_threads() -> Vec<String> {
    thread_names().into_iter().filter(|n| n.starts_with("koma-")).collect()
}

/// Where a child of this process named by a pidfd is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildState {
    Running,
    /// Exited, not reaped.
    Zombie,
    /// Reaped (or not our child any more).
    Reaped,
}

/// `waitid(P_PIDFD, WEXITED | WNOHANG | WNOWAIT)`: looks, reaps nothing.
pub fn pidfd_state(pidfd: &std::os::fd::OwnedFd) -> ChildState {
    use std::os::fd::AsRawFd;
    const P_PIDFD: libc::idtype_t = 3;
    loop {
        // SAFETY: waitid with a zeroed siginfo (plain data) on a pidfd we own.
        let (rc, info) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            (rc, info)
        };
        if rc == 0 {
            // SAFETY: si_pid is valid for a siginfo filled by waitid.
            return if unsafe { info.si_pid() } == 0 { ChildState::Running } else { ChildState::Zombie };
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            _ => return ChildState::Reaped, // ECHILD
        }
    }
}

/// The inode of what descriptor `fd` of this process is (0 if it cannot be seen).
pub fn fd_inode(fd: i32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/fd/{fd}")).map(|m| m.ino()).unwrap_or(0)
}

fn pipe_inode(link: &str) -> Option<u64> {
    link.strip_prefix("pipe:[")?.strip_suffix(']')?.parse().ok()
}

/// The pipe inodes of `pid`'s descriptors 0, 1 and 2 (fewer if it has exited).
pub fn pipe_inodes_of(pid: i32) -> Vec<u64> {
    (0..3)
        .filter_map(|fd| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok())
        .filter_map(|l| pipe_inode(&l.to_string_lossy()))
        .collect()
}

/// This process's descriptors that are one of `pipes`, or a pidfd whose inode
/// is `pidfd_ino` (pidfs gives each process its own inode), except `except`:
/// as `"fd -> target"`.
pub fn descriptors_matching(pipes: &[u64], pidfd_ino: Option<u64>, except: i32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return Vec::new() };
    let mut found = Vec::new();
    for e in dir.flatten() {
        let Some(fd) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if fd == except {
            continue;
        }
        let Ok(link) = std::fs::read_link(e.path()) else { continue };
        let link = link.to_string_lossy().into_owned();
        let hit = match pipe_inode(&link) {
            Some(ino) => pipes.contains(&ino),
            None => link == "anon_inode:[pidfd]" && pidfd_ino.is_some_and(|i| fd_inode(fd) == i),
        };
        if hit {
            found.push(format!("{fd} -> {link}"));
        }
    }
    found
}

/// How many of this process's descriptors are pipes and pidfds.
pub fn pipe_and_pidfd_count() -> (usize, usize) {
    let mut n = (0, 0);
    for l in open_fds() {
        if l.contains("-> pipe:[") {
            n.0 += 1;
        } else if l.ends_with("-> anon_inode:[pidfd]") {
            n.1 += 1;
        }
    }
    n
}

/// Is a process of group `pgid` still running? Fast when the group is empty.
pub fn group_running(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks.
    let any =
        unsafe { libc::kill(-pgid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    any && group_alive(pgid)
}

/// The children of this process (any state, zombies included): `(pid, state)`.
pub fn children_of_self() -> Vec<(i32, String)> {
    let me = std::process::id().to_string();
    let mut kids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let Some(rest) = stat.rfind(')').map(|i| stat[i + 1..].to_owned()) else { continue };
        let f: Vec<&str> = rest.split_ascii_whitespace().collect();
        if f.len() > 1 && f[1] == me {
            kids.push((pid, f[0].to_owned()));
        }
    }
    kids
}
