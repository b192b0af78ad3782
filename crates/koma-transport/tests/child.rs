//! The child's launch and supervision through a real koma-sim child, once per
//! spawn mode (`auto::`, `no_pidfd::`, `portable::`): what the child gets
//! (its arguments, the environment, a process group of its own), how the exit
//! is watched, the words of a failed launch (the same on both spawn paths),
//! and that koma dies with the process that started it.

mod common;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    children_of_self, hold_pipes_of, pidfd_open, pidfd_signal, pidfd_wait_exit, serial, sim_path, thread_names, Client,
};
use koma_transport::child::{LaunchOptions, SpawnMode};
use koma_transport::{ErrorCode, KomaError, Outcome, Probe};

in_every_mode! {
    all: [
        the_exit_is_watched_as_the_mode_says,
        the_child_gets_sdk_serve_the_parents_environment_plus_env_and_its_own_group,
        a_missing_program_is_not_found,
        a_missing_or_unusable_cwd_is_named,
        a_directory_says_it_is_a_directory,
        an_executable_with_arguments_in_it_says_they_are_not_split,
        a_file_that_cannot_run_is_refused_and_no_shell_runs_it,
        // The parent-death signal on Linux's clone path, the guard on every path.
        koma_dies_with_the_process_that_started_it,
    ],
    linux_only: [],
}

/// A directory of this test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str, mode: SpawnMode) -> Scratch {
        let dir = std::env::temp_dir().join(format!("koma-child-test-{}-{test}-{mode:?}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A file of `text` with permissions `mode`.
    fn file(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn os(s: impl AsRef<std::ffi::OsStr>) -> OsString {
    s.as_ref().to_owned()
}

/// Launch `executable` (in `cwd`, with `env`) the way `mode` says; it must
/// fail with `spawn_failed` and leave no process behind. Its error.
fn launch_error(mode: SpawnMode, executable: OsString, cwd: Option<PathBuf>, env: &[(&str, &Path)]) -> KomaError {
    let env = env.iter().map(|(k, v)| (os(k), os(v))).collect();
    let before = children_of_self();
    let mut c = Client::with(LaunchOptions { executable, cwd, env, spawn: mode });
    let t = c.conn.token();
    assert!(matches!(c.conn.probe(t, None).unwrap(), Probe::Wait));
    let e = match c.outcome(t) {
        Outcome::Error(e) => e.clone(),
        other => panic!("the launch did not fail: {other:?}"),
    };
    c.close();
    assert_eq!(e.code, ErrorCode::SpawnFailed, "{}", e.message);
    assert_eq!(children_of_self(), before, "a failed launch leaves no process");
    e
}

/// The text of a `std::io::Error` of this errno, as the messages quote it.
fn os_error(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

fn the_exit_is_watched_as_the_mode_says(mode: SpawnMode) {
    let _serial = serial();
    let watchers = || thread_names().iter().filter(|n| *n == "koma-exit-watch").count();
    let mut c = Client::sim_in(mode, &[]);
    assert_eq!(c.call("state", None).unwrap()["status"], "idle");
    // A kernel with pidfds gives `Auto` one from the clone and `Portable` one
    // from pidfd_open, both watched by the reactor; `NoPidfd` has none.
    let kernel_has_pidfds = pidfd_open(std::process::id() as i32).is_some();
    let pidfd = mode != SpawnMode::NoPidfd && kernel_has_pidfds;
    assert_eq!(c.conn.has_pidfd(), Some(pidfd));
    assert_eq!(watchers(), usize::from(!pidfd), "a thread watches the exit exactly when there is no pidfd");
    c.close();
    assert_eq!(watchers(), 0, "the watching thread is joined when koma is reaped, before close is done");
}

fn the_child_gets_sdk_serve_the_parents_environment_plus_env_and_its_own_group(mode: SpawnMode) {
    let _serial = serial();
    let parent: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let replaced = parent.iter().find(|(k, _)| k != "PATH").map(|(k, _)| k.clone()).expect("a variable to replace");
    let replaced_text = replaced.to_string_lossy().into_owned();
    let mut c = Client::sim_in(mode, &[("KOMA_TEST_ADDED", "added $(echo no-shell)"), (&replaced_text, "replaced")]);
    assert_eq!(c.call("state", None).unwrap()["status"], "idle");
    let pid = c.conn.pid().unwrap();
    let read = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap();
    let split = |bytes: Vec<u8>| -> Vec<OsString> {
        use std::os::unix::ffi::OsStrExt;
        bytes.split(|b| *b == 0).filter(|s| !s.is_empty()).map(|s| std::ffi::OsStr::from_bytes(s).to_owned()).collect()
    };
    assert_eq!(split(read("cmdline")), vec![os(sim_path()), os("sdk"), os("serve")]);
    let environ = split(read("environ"));
    let has = |k: &std::ffi::OsStr, v: &std::ffi::OsStr| {
        let mut kv = k.to_owned();
        kv.push("=");
        kv.push(v);
        environ.contains(&kv)
    };
    for (k, v) in &parent {
        if *k != replaced {
            assert!(has(k, v), "the parent's {k:?} is in the child's environment");
        }
    }
    assert!(has(&replaced, "replaced".as_ref()), "`env` replaces the parent's {replaced:?}");
    assert!(has("KOMA_TEST_ADDED".as_ref(), "added $(echo no-shell)".as_ref()), "`env` is added, as given");
    assert_eq!(
        environ.len(),
        parent.len() + 2,
        "nothing else: the parent's, plus KOMA_TEST_ADDED and KOMA_SIM_DELAY_MS"
    );
    // koma leads a process group of its own: "pid (comm) state ppid pgrp ...".
    let stat = String::from_utf8(read("stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_ascii_whitespace().collect();
    assert_eq!(fields[2], pid.to_string(), "koma's process group is its own");
    c.close();
}

fn a_missing_program_is_not_found(mode: SpawnMode) {
    let _serial = serial();
    let dir = Scratch::new("missing", mode);
    let e = launch_error(mode, os("koma-test-absent"), None, &[("PATH", dir.0.as_path())]);
    let enoent = os_error(libc::ENOENT);
    assert_eq!(e.message, format!("could not start `koma-test-absent sdk serve`: not found on PATH ({enoent})"));
    let absent = dir.path("absent");
    let e = launch_error(mode, os(&absent), None, &[]);
    assert_eq!(e.message, format!("could not start `{} sdk serve`: no such file ({enoent})", absent.display()));
    // A part of the path that is not a directory reads the same.
    let file = dir.file("file", "", 0o644);
    let e = launch_error(mode, os(file.join("koma")), None, &[]);
    assert_eq!(e.message, format!("could not start `{}/koma sdk serve`: no such file ({enoent})", file.display()));
}

fn a_missing_or_unusable_cwd_is_named(mode: SpawnMode) {
    let _serial = serial();
    let dir = Scratch::new("cwd", mode);
    let gone = dir.path("gone");
    let e = launch_error(mode, os(sim_path()), Some(gone.clone()), &[]);
    let expected =
        format!("could not start koma in the working directory `{}`: {}", gone.display(), os_error(libc::ENOENT));
    assert_eq!(e.message, expected);
    let file = dir.file("file", "", 0o644);
    let e = launch_error(mode, os(sim_path()), Some(file.clone()), &[]);
    let expected =
        format!("could not start koma in the working directory `{}`: {}", file.display(), os_error(libc::ENOTDIR));
    assert_eq!(e.message, expected);
}

fn a_directory_says_it_is_a_directory(mode: SpawnMode) {
    let _serial = serial();
    let dir = Scratch::new("directory", mode);
    let tools = dir.path("tools");
    std::fs::create_dir(&tools).unwrap();
    let e = launch_error(mode, os(&tools), None, &[]);
    let shown = tools.display();
    assert_eq!(e.message, format!("could not start `{shown} sdk serve`: `{shown}` is a directory, not a program"));
    // Found on PATH.
    let e = launch_error(mode, os("tools"), None, &[("PATH", dir.0.as_path())]);
    assert_eq!(e.message, format!("could not start `tools sdk serve`: `{shown}` is a directory, not a program"));
}

fn an_executable_with_arguments_in_it_says_they_are_not_split(mode: SpawnMode) {
    let _serial = serial();
    let note = |exe: &str| {
        format!(
            "; `{exe}` is taken whole as the program's name: arguments are not split out of it, \
             and the program is run as `<executable> sdk serve`, with no shell"
        )
    };
    let enoent = os_error(libc::ENOENT);
    let with_path = format!("{} --verbose", sim_path().display());
    let e = launch_error(mode, os(&with_path), None, &[]);
    assert_eq!(
        e.message,
        format!("could not start `{with_path} sdk serve`: no such file ({enoent}){}", note(&with_path))
    );
    let bin = sim_path().parent().unwrap().to_path_buf();
    let e = launch_error(mode, os("koma-sim --verbose"), None, &[("PATH", bin.as_path())]);
    let expected = format!("could not start `koma-sim --verbose sdk serve`: not found on PATH ({enoent})");
    assert_eq!(e.message, format!("{expected}{}", note("koma-sim --verbose")));
}

fn a_file_that_cannot_run_is_refused_and_no_shell_runs_it(mode: SpawnMode) {
    let _serial = serial();
    let dir = Scratch::new("cannot-run", mode);
    let plain = dir.file("plain", "not a program\n", 0o644);
    let e = launch_error(mode, os(&plain), None, &[]);
    let expected = format!(
        "could not start `{} sdk serve`: permission denied (not executable?) ({})",
        plain.display(),
        os_error(libc::EACCES)
    );
    assert_eq!(e.message, expected);
    // A script without `#!`: a shell would run it (and leave the marker).
    let marker = dir.path("ran");
    let script = dir.file("script", &format!("echo ran > '{}'\n", marker.display()), 0o755);
    let why = "not a program this system can run (a script without `#!`? no shell is used)";
    let enoexec = os_error(libc::ENOEXEC);
    let e = launch_error(mode, os(&script), None, &[]);
    assert_eq!(e.message, format!("could not start `{} sdk serve`: {why} ({enoexec})", script.display()));
    // Found on a PATH of `env`'s own (where std's `Command` alone would use execvp, which runs `sh`).
    let e = launch_error(mode, os("script"), None, &[("PATH", dir.0.as_path())]);
    assert_eq!(e.message, format!("could not start `script sdk serve`: {why} ({enoexec})"));
    assert!(!marker.exists(), "no shell ran the script");
}

/// The process that `koma_dies_with_the_process_that_started_it` starts: it
/// starts koma (which stays alive when its stdin ends), prints its pid, and
/// waits to be killed. Does nothing when run otherwise.
#[test]
#[ignore = "a helper process of koma_dies_with_the_process_that_started_it"]
fn helper_holding_a_child() {
    let Ok(mode) = std::env::var("KOMA_TEST_HOLDER_MODE") else { return };
    let mode = [SpawnMode::Auto, SpawnMode::NoPidfd, SpawnMode::Portable]
        .into_iter()
        .find(|m| format!("{m:?}") == mode)
        .expect("a spawn mode");
    let mut c = Client::sim_in(mode, &[("KOMA_SIM_FAULT", "ignore_eof")]);
    assert_eq!(c.call("state", None).unwrap()["status"], "idle");
    println!("koma pid {}", c.conn.pid().unwrap());
    // That is all the test reads: end the stream it reads, so that it never waits for more.
    std::io::stdout().flush().unwrap();
    let null = std::fs::File::open("/dev/null").unwrap();
    // SAFETY: dup2 of a descriptor we own onto stdout, whose buffer was just flushed.
    unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 1) };
    // Killed while waiting here; should the test go first, clean up.
    let _ = std::io::stdin().read(&mut [0]);
    c.close();
}

fn koma_dies_with_the_process_that_started_it(mode: SpawnMode) {
    let _serial = serial();
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_holding_a_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("KOMA_TEST_HOLDER_MODE", format!("{mode:?}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let pid = lines
        .map_while(Result::ok)
        // With one test thread, libtest's "test helper_holding_a_child ... " starts the line.
        .find_map(|l| l.split("koma pid ").nth(1)?.trim().parse::<i32>().ok())
        .expect("the holder printed koma's pid");
    // koma is the holder's child, unreaped while the holder lives: the pidfd is koma's.
    let koma = pidfd_open(pid).expect("koma runs");
    // So that the end of the holder ends nothing else of koma's: no end of
    // stdin, no broken pipe. Only the parent-death signal can stop it.
    let pipes = hold_pipes_of(pid);
    holder.kill().unwrap();
    holder.wait().unwrap();
    let died = pidfd_wait_exit(&koma, Duration::from_secs(20));
    if !died {
        pidfd_signal(&koma, libc::SIGKILL);
    }
    drop(pipes);
    assert!(died, "koma outlived the process that started it (no parent-death signal, no guard)");
}
