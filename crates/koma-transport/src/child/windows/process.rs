//! A launched Windows child: its exit, seen through its process handle; its
//! tree, ended through its Job Object.
//!
//! The exit is watched by the system's thread pool (`RegisterWaitForSingleObject`),
//! not by a thread per child. The process handle is held until the reap, so
//! its pid is koma's until then; and nothing is ever signalled by pid: the
//! job names koma's tree and nothing else.

use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::Mutex;

use tokio::sync::watch;
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, RegisterWaitForSingleObject, UnregisterWaitEx, WaitForSingleObject, INFINITE,
    WT_EXECUTEONLYONCE,
};

use super::super::exit::ExitInfo;
use super::job::Job;
use super::spawn::RawSpawn;

pub struct Process {
    pid: u32,
    handle: OwnedHandle,
    job: Job,
    exit: watch::Receiver<bool>,
    /// The thread pool's wait, and the sender it owns (boxed: the callback holds its address).
    wait: Mutex<Option<Wait>>,
    reaped: Mutex<Option<ExitInfo>>,
}

struct Wait {
    handle: HANDLE,
    sender: *mut watch::Sender<bool>,
}

// SAFETY: the wait handle is an opaque value that any thread may unregister,
// and the sender is only touched by the pool's callback until the
// unregistration (which waits for it) and then freed once, under the lock.
unsafe impl Send for Wait {}

/// Runs on a pool thread once koma's process handle is signalled (it has exited).
unsafe extern "system" fn exited_callback(context: *mut std::ffi::c_void, _timed_out: bool) {
    // SAFETY: `context` is the boxed sender, freed only after UnregisterWaitEx
    // has waited for this callback to return.
    let sender = unsafe { &*(context as *const watch::Sender<bool>) };
    sender.send_replace(true);
}

impl Process {
    pub(crate) fn new(raw: RawSpawn) -> io::Result<(Self, RawSpawnPipes)> {
        let RawSpawn { pid, process, job, stdin, stdout, stderr } = raw;
        let (tx, exit) = watch::channel(false);
        let sender = Box::into_raw(Box::new(tx));
        let mut wait: HANDLE = std::ptr::null_mut();
        // SAFETY: our process handle, open until the wait is unregistered (at
        // the reap or the drop); the callback and its context (the sender)
        // outlive the registration.
        let ok = unsafe {
            RegisterWaitForSingleObject(
                &mut wait,
                process.as_raw_handle(),
                Some(exited_callback),
                sender.cast(),
                INFINITE,
                WT_EXECUTEONLYONCE,
            )
        };
        if ok == 0 {
            let e = io::Error::last_os_error();
            // SAFETY: never registered: ours alone to free.
            drop(unsafe { Box::from_raw(sender) });
            job.terminate();
            return Err(e);
        }
        let process = Process {
            pid,
            handle: process,
            job,
            exit,
            wait: Mutex::new(Some(Wait { handle: wait, sender })),
            reaped: Mutex::new(None),
        };
        Ok((process, RawSpawnPipes { stdin, stdout, stderr }))
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Windows has no pidfd: its exit is watched through the process handle.
    pub fn has_pidfd(&self) -> bool {
        false
    }

    pub fn is_reaped(&self) -> bool {
        self.reaped.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// End koma and every process of its tree now (`TerminateJobObject`).
    pub fn kill_now(&self) {
        self.job.terminate();
    }

    /// After koma's exit: end what is left of its tree (the tools it started).
    pub fn end_tree(&self) {
        self.job.terminate();
    }

    /// Wait until koma has exited.
    pub async fn exited(&self) -> ExitInfo {
        let mut exit = self.exit.clone();
        if exit.wait_for(|e| *e).await.is_err() {
            self.wait_blocking();
        }
        self.exit_info()
    }

    fn wait_blocking(&self) {
        // SAFETY: our open process handle.
        unsafe {
            WaitForSingleObject(self.handle.as_raw_handle(), INFINITE);
        }
    }

    fn exit_info(&self) -> ExitInfo {
        let mut code = 0u32;
        // SAFETY: our open process handle, and a live u32.
        let ok = unsafe { GetExitCodeProcess(self.handle.as_raw_handle(), &mut code) };
        ExitInfo { code: (ok != 0).then_some(code as i32), signal: None }
    }

    /// The exit (after [`Process::exited`]), and the thread pool's wait let go.
    pub fn reap(&self) -> ExitInfo {
        let mut reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(info) = *reaped {
            return info;
        }
        self.wait_blocking();
        let info = self.exit_info();
        self.unregister();
        *reaped = Some(info);
        info
    }

    fn unregister(&self) {
        if let Some(wait) = self.wait.lock().unwrap_or_else(|p| p.into_inner()).take() {
            // SAFETY: a registered wait, unregistered once; INVALID_HANDLE_VALUE
            // makes the call wait for a running callback, after which nothing
            // uses the sender, which is then freed once.
            unsafe {
                UnregisterWaitEx(wait.handle, INVALID_HANDLE_VALUE);
                drop(Box::from_raw(wait.sender));
            }
        }
    }

    /// After koma was reaped: wait (at most `limit`) until no process of its
    /// job is left.
    pub async fn group_gone(&self, limit: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let mut step = std::time::Duration::from_micros(200);
        loop {
            match self.job.active() {
                Ok(0) | Err(_) => return true,
                Ok(_) if tokio::time::Instant::now() >= deadline => return false,
                Ok(_) => {}
            }
            tokio::time::sleep(step).await;
            step = (step * 2).min(std::time::Duration::from_millis(20));
        }
    }
}

/// The parent's ends of koma's pipes, as the spawn handed them over.
pub(crate) struct RawSpawnPipes {
    pub stdin: OwnedHandle,
    pub stdout: OwnedHandle,
    pub stderr: OwnedHandle,
}

impl Drop for Process {
    fn drop(&mut self) {
        // Never leave a process of the tree behind, whatever the path.
        if !self.is_reaped() {
            self.kill_now();
            self.reap();
        }
        self.unregister();
        // The job's handle closes after this: KILL_ON_JOB_CLOSE ends anything left.
    }
}
