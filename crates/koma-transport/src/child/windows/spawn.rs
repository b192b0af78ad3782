//! The Windows spawn: `CreateProcessW` with no shell, the program found by
//! `plan.rs`, created suspended, put in a Job Object of its own (see
//! `job.rs`), then resumed, so that nothing it starts escapes the job.
//! `CREATE_NO_WINDOW` gives it a console without a window, which the
//! console programs it starts share: no window ever opens. Only its three
//! stdio handles are inherited (`PROC_THREAD_ATTRIBUTE_HANDLE_LIST`).

use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Threading::{
    CreateProcessW, DeleteProcThreadAttributeList, InitializeProcThreadAttributeList, ResumeThread, TerminateProcess,
    UpdateProcThreadAttribute, CREATE_NO_WINDOW, CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT,
    EXTENDED_STARTUPINFO_PRESENT, LPPROC_THREAD_ATTRIBUTE_LIST, PROCESS_INFORMATION, PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
    STARTF_USESTDHANDLES, STARTUPINFOEXW,
};

use super::super::launch_error::LaunchError;
use super::super::options::LaunchOptions;
use super::command_line::command_line;
use super::env_block::{block, lookup, merge};
use super::job::Job;
use super::lookup::Files;
use super::pipes::{Pipe, Way};
use super::plan::{plan, Refused};

/// A child just started, in its job, running.
pub(crate) struct RawSpawn {
    pub pid: u32,
    pub process: OwnedHandle,
    pub job: Job,
    pub stdin: OwnedHandle,
    pub stdout: OwnedHandle,
    pub stderr: OwnedHandle,
}

/// The file system, for `plan.rs`.
struct OsFiles;

impl Files for OsFiles {
    fn is_file(&self, path: &str) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.is_file())
    }
    fn is_dir(&self, path: &str) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.is_dir())
    }
    fn read(&self, path: &str, limit: usize) -> Option<Vec<u8>> {
        use std::io::Read;
        let mut data = Vec::new();
        std::fs::File::open(path).ok()?.take(limit as u64).read_to_end(&mut data).ok()?;
        Some(data)
    }
}

fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
    s.encode_wide().chain(std::iter::once(0)).collect()
}

pub(crate) fn spawn(options: &LaunchOptions) -> Result<RawSpawn, LaunchError> {
    let executable = options.executable.clone();
    let cwd = match &options.cwd {
        Some(cwd) => Some(enterable(cwd).map_err(|error| LaunchError::Cwd { cwd: cwd.clone(), error })?),
        None => None,
    };
    let base = match &cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir().map_err(|e| LaunchError::Other(format!("no current folder: {e}")))?,
    };
    let unicode = |what: &str| LaunchError::Other(format!("{what} is not valid Unicode"));
    let name = executable.to_str().ok_or_else(|| unicode("the executable"))?;
    let base = base.to_str().ok_or_else(|| unicode("the working folder"))?;
    let vars = merge(std::env::vars_os().collect(), &options.env);
    let path = lookup(&vars, "PATH").map(|p| p.to_string_lossy().into_owned());
    let pathext = lookup(&vars, "PATHEXT").map(|p| p.to_string_lossy().into_owned());
    let plan = plan(name, base, path.as_deref(), pathext.as_deref(), &OsFiles).map_err(|refused| match refused {
        Refused::NotFound => LaunchError::Executable { executable: executable.clone(), error: not_found() },
        Refused::Directory(path) => LaunchError::Directory { executable: executable.clone(), path: path.into() },
        Refused::Batch { path, why } => LaunchError::Batch { executable: executable.clone(), path: path.into(), why },
    })?;
    let mut line = wide(
        command_line(&plan.argv).ok_or_else(|| LaunchError::Other("the program's path holds a `\"`".into()))?.as_ref(),
    );
    let application = wide(plan.application.as_ref());
    let env = block(&vars);
    let dir = cwd.as_ref().map(|c| wide(c.as_os_str()));
    let other = |what: &str, e: io::Error| LaunchError::Other(format!("{what}: {e}"));
    let stdin = Pipe::new(Way::ToChild).map_err(|e| other("could not make the stdin pipe", e))?;
    let stdout = Pipe::new(Way::stdout()).map_err(|e| other("could not make the stdout pipe", e))?;
    let stderr = Pipe::new(Way::stderr()).map_err(|e| other("could not make the stderr pipe", e))?;
    let job = Job::new().map_err(|e| other("could not make a Job Object", e))?;
    let inherited = [stdin.theirs.as_raw_handle(), stdout.theirs.as_raw_handle(), stderr.theirs.as_raw_handle()];
    let mut list = AttributeList::new(&inherited).map_err(|e| other("could not list the inherited handles", e))?;

    // SAFETY: zeroed STARTUPINFOEXW and PROCESS_INFORMATION are plain data
    // ("nothing set"); the fields set below are the size, the flag and the
    // three stdio handles.
    let mut info: STARTUPINFOEXW = unsafe { std::mem::zeroed() };
    info.StartupInfo.cb = std::mem::size_of::<STARTUPINFOEXW>() as u32;
    info.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    info.StartupInfo.hStdInput = inherited[0];
    info.StartupInfo.hStdOutput = inherited[1];
    info.StartupInfo.hStdError = inherited[2];
    info.lpAttributeList = list.ptr();
    // SAFETY: as above.
    let mut created: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
    let flags = CREATE_SUSPENDED | CREATE_NO_WINDOW | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT;
    // SAFETY: every string is NUL-terminated and lives across the call (the
    // command line is writable, as CreateProcessW requires); the environment
    // block is double-NUL-terminated UTF-16; the startup info and its
    // attribute list (of the three handles, open until after the call) and
    // the process information are live.
    let ok = unsafe {
        CreateProcessW(
            application.as_ptr(),
            line.as_mut_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            1,
            flags,
            env.as_ptr().cast(),
            dir.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()),
            &info.StartupInfo,
            &mut created,
        )
    };
    if ok == 0 {
        let error = io::Error::last_os_error();
        return Err(LaunchError::Executable { executable, error });
    }
    drop(list);
    // SAFETY: both handles were just returned to us by CreateProcessW, open.
    let (process, thread) =
        unsafe { (OwnedHandle::from_raw_handle(created.hProcess), OwnedHandle::from_raw_handle(created.hThread)) };
    if let Err(e) = job.assign(&process) {
        // It has not run an instruction: end it rather than run it outside the job.
        // SAFETY: our own handle to the suspended process.
        unsafe {
            TerminateProcess(process.as_raw_handle(), 1);
        }
        return Err(other("could not put koma in its Job Object", e));
    }
    // SAFETY: our handle to the process's first thread, which is suspended once.
    if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
        let e = io::Error::last_os_error();
        job.terminate();
        return Err(other("could not start koma's first thread", e));
    }
    drop(thread);
    // koma's ends close here: it holds the only others, so its exit ends the pipes.
    let Pipe { ours: stdin, .. } = stdin;
    let Pipe { ours: stdout, .. } = stdout;
    let Pipe { ours: stderr, .. } = stderr;
    Ok(RawSpawn { pid: created.dwProcessId, process, job, stdin, stdout, stderr })
}

fn not_found() -> io::Error {
    io::Error::from_raw_os_error(windows_sys::Win32::Foundation::ERROR_FILE_NOT_FOUND as i32)
}

/// `cwd`, absolute, if it is a folder.
fn enterable(cwd: &Path) -> io::Result<PathBuf> {
    if !std::fs::metadata(cwd)?.is_dir() {
        return Err(io::Error::from_raw_os_error(windows_sys::Win32::Foundation::ERROR_DIRECTORY as i32));
    }
    std::path::absolute(cwd)
}

/// A process-and-thread attribute list that names the handles to inherit.
struct AttributeList {
    /// usize-aligned storage of the list.
    buf: Vec<usize>,
    /// The handles it points to, kept alive with it.
    _handles: Box<[HANDLE; 3]>,
}

impl AttributeList {
    fn new(handles: &[HANDLE; 3]) -> io::Result<AttributeList> {
        let mut size = 0usize;
        // SAFETY: with a null list, the call only writes the size needed.
        unsafe {
            InitializeProcThreadAttributeList(std::ptr::null_mut(), 1, 0, &mut size);
        }
        let mut list = AttributeList {
            buf: vec![0usize; size.div_ceil(std::mem::size_of::<usize>())],
            _handles: Box::new(*handles),
        };
        // SAFETY: storage of at least `size` bytes, aligned for the list.
        if unsafe { InitializeProcThreadAttributeList(list.ptr(), 1, 0, &mut size) } == 0 {
            list.buf.clear();
            return Err(io::Error::last_os_error());
        }
        // SAFETY: an initialized list of one attribute; the handles' array is
        // boxed and lives as long as the list.
        let ok = unsafe {
            UpdateProcThreadAttribute(
                list.ptr(),
                0,
                PROC_THREAD_ATTRIBUTE_HANDLE_LIST as usize,
                list._handles.as_ptr().cast(),
                std::mem::size_of::<[HANDLE; 3]>(),
                std::ptr::null_mut(),
                std::ptr::null(),
            )
        };
        if ok == 0 {
            let e = io::Error::last_os_error();
            // SAFETY: the list was initialized above.
            unsafe { DeleteProcThreadAttributeList(list.ptr()) };
            list.buf.clear();
            return Err(e);
        }
        Ok(list)
    }

    fn ptr(&mut self) -> LPPROC_THREAD_ATTRIBUTE_LIST {
        self.buf.as_mut_ptr().cast()
    }
}

impl Drop for AttributeList {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            // SAFETY: initialized in `new` and not deleted yet.
            unsafe { DeleteProcThreadAttributeList(self.ptr()) };
        }
    }
}
