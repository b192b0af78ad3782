//! How far a scenario has played: the turns started, the turns each entry
//! played, the requests of each method. Kept in memory, or, with
//! `KOMA_SIM_PROGRESS`, in a file that every koma-sim given the same path
//! reads and updates under a lock, so that the scenario goes on where the
//! last process left it (a second process that resumes the session, as a
//! fake Koma's second client starts).

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

#[derive(Default)]
pub struct Counts {
    /// Turns started (every turn counts, scripted or not).
    pub started: u64,
    /// Turns each entry of `turns` played (those not listed: none).
    pub used: Vec<u64>,
    /// Requests read, by method.
    pub methods: HashMap<String, u64>,
}

pub struct Progress {
    /// The shared file, if any.
    file: Option<PathBuf>,
    counts: Counts,
}

impl Counts {
    /// The turns entry `i` played.
    pub fn used(&self, i: usize) -> u64 {
        self.used.get(i).copied().unwrap_or(0)
    }

    /// One more turn started, played by entry `i` if scripted.
    pub fn start(&mut self, entry: Option<usize>) {
        self.started += 1;
        if let Some(i) = entry {
            if self.used.len() <= i {
                self.used.resize(i + 1, 0);
            }
            self.used[i] += 1;
        }
    }
}

impl Progress {
    pub fn new(file: Option<PathBuf>) -> Progress {
        Progress { file, counts: Counts::default() }
    }

    /// The counts as they are now (read from the file, if shared).
    pub fn read(&mut self) -> &Counts {
        if let Some(path) = &self.file {
            if let Some((_, counts)) = open_locked(path) {
                self.counts = counts;
            }
        }
        &self.counts
    }

    /// Changes the counts: in the file under its lock, if shared (a file
    /// that cannot be used leaves this process on its own counts, with a
    /// line on stderr).
    pub fn update<R>(&mut self, change: impl FnOnce(&mut Counts) -> R) -> R {
        let Some(path) = &self.file else { return change(&mut self.counts) };
        let Some((mut file, mut counts)) = open_locked(path) else {
            return change(&mut self.counts);
        };
        let r = change(&mut counts);
        let text = serialize(&counts);
        let written =
            file.seek(SeekFrom::Start(0)).and_then(|_| file.set_len(0)).and_then(|_| file.write_all(text.as_bytes()));
        if let Err(e) = written {
            eprintln!("koma-sim: cannot write the scenario's progress to {}: {e}", path.display());
        }
        self.counts = counts;
        r // the lock goes with the file
    }
}

/// The file, locked (flock: released when it is closed, or when the process
/// dies), and the counts it holds (none yet when it is empty).
fn open_locked(path: &PathBuf) -> Option<(File, Counts)> {
    let opened = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path);
    let mut file = match opened {
        Ok(f) => f,
        Err(e) => {
            eprintln!("koma-sim: cannot open the scenario's progress {}: {e}", path.display());
            return None;
        }
    };
    if let Err(e) = lock(&file) {
        eprintln!("koma-sim: cannot lock {}: {e}", path.display());
        return None;
    }
    let mut text = String::new();
    if let Err(e) = file.read_to_string(&mut text) {
        eprintln!("koma-sim: cannot read the scenario's progress {}: {e}", path.display());
        return None;
    }
    Some((file, parse(&text)))
}

/// An exclusive lock on `file`, released when it is closed or the process dies.
#[cfg(unix)]
fn lock(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor the caller owns, open for the whole call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(windows)]
fn lock(file: &File) -> std::io::Result<()> {
    crate::windows::lock(file)
}

fn serialize(c: &Counts) -> String {
    let methods: Map<String, Value> = c.methods.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    format!("{}\n", json!({"started": c.started, "used": c.used, "methods": methods}))
}

/// The counts in a file's text (an empty or unreadable text: none yet).
fn parse(text: &str) -> Counts {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let used = v["used"].as_array().map(|a| a.iter().map(|n| n.as_u64().unwrap_or(0)).collect()).unwrap_or_default();
    let methods = v["methods"]
        .as_object()
        .map(|m| m.iter().map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0))).collect())
        .unwrap_or_default();
    Counts { started: v["started"].as_u64().unwrap_or(0), used, methods }
}
