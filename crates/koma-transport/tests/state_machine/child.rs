//! The case's child, named while it ran (by a pidfd, its pipes by inode),
//! and what must hold of it once the connection is closed.

use std::os::fd::{AsRawFd, OwnedFd};

use koma_transport::Connection;

use crate::common::{
    descriptors_matching, fd_inode, group_running, pidfd_open, pidfd_state, pipe_inodes_of, ChildState,
};

/// The child as seen while it ran.
pub struct ChildIds {
    pub pid: i32,
    pub pidfd: OwnedFd,
    pidfd_ino: u64,
    pub pipes: Vec<u64>,
    /// The connection's own descriptors were found in this process when the child was captured.
    pub pidfd_seen: bool,
    pub pipes_seen: usize,
    /// The connection watches the child through a pidfd (else a thread: a spawn mode without pidfds).
    pub conn_pidfd: bool,
}

/// What an attempt to name the child gave.
pub enum Capture {
    /// No child to name (yet).
    NotYet,
    /// It cannot be named any more, with a note for the log if there is one.
    Lost(Option<String>),
    /// Named, with a note for the log.
    Named(ChildIds, String),
}

impl ChildIds {
    /// Name the child by a pidfd, and its pipes by inode, while it runs.
    pub fn capture(conn: &Connection, seed: u64) -> Capture {
        let Some(pid) = conn.pid() else { return Capture::NotYet };
        let pid = pid as i32;
        let Some(pidfd) = pidfd_open(pid) else {
            return Capture::Lost(None);
        };
        let pipes = pipe_inodes_of(pid);
        let pidfd_ino = fd_inode(pidfd.as_raw_fd());
        // In one case of 8: the connection's descriptors are where the check
        // after close looks for them (this process, these inodes).
        let mine = if seed.is_multiple_of(8) {
            descriptors_matching(&pipes, Some(pidfd_ino), pidfd.as_raw_fd())
        } else {
            Vec::new()
        };
        // Still unreaped after the pidfd was opened: the pidfd (and the pipes) are its.
        if conn.pid() != Some(pid as u32) {
            return Capture::Lost(Some(format!("child {pid} was reaped while it was being captured")));
        }
        let pidfd_seen = mine.iter().any(|l| l.ends_with("anon_inode:[pidfd]"));
        let pipes_seen = mine.len() - usize::from(pidfd_seen);
        let conn_pidfd = conn.has_pidfd() == Some(true);
        let note = format!(
            "child {pid}: pipes {pipes:?}, pidfd inode {pidfd_ino}; the connection's descriptors here: {mine:?}"
        );
        Capture::Named(ChildIds { pid, pidfd, pidfd_ino, pipes, pidfd_seen, pipes_seen, conn_pidfd }, note)
    }

    /// What is wrong with the child once the connection is closed. `full`:
    /// also look at its group and for the connection's descriptors.
    pub fn problems_after_close(&self, full: bool) -> Vec<String> {
        let mut problems = Vec::new();
        match pidfd_state(&self.pidfd) {
            ChildState::Reaped => {}
            s => problems.push(format!("the child {} is not reaped: {s:?}", self.pid)),
        }
        if full {
            if group_running(self.pid) {
                problems.push(format!("a process of the child's group {} still runs", self.pid));
            }
            let left = descriptors_matching(&self.pipes, Some(self.pidfd_ino), self.pidfd.as_raw_fd());
            if !left.is_empty() {
                problems.push(format!("descriptors of the connection still open: {left:?}"));
            }
        }
        problems
    }
}
