//! koma's Job Object: every process of koma's tree is in it (koma is put in
//! it before its first instruction runs, and what koma starts is in it too),
//! and it ends with its last handle, which only this process holds: the
//! handle is not inheritable, so when this process dies, however it dies,
//! Windows closes it and the tree goes with it (`KILL_ON_JOB_CLOSE`).

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};

/// The exit code of every process the job ends.
pub(crate) const ENDED_BY_JOB: u32 = 1;

pub(crate) struct Job(OwnedHandle);

impl Job {
    /// A new, unnamed job that kills its processes when its last handle closes.
    pub fn new() -> io::Result<Job> {
        // SAFETY: no security attributes (the handle is not inheritable) and
        // no name; a null result is an error, anything else a handle we own.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a valid handle just returned to us, owned by nothing else.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(raw) });
        // SAFETY: a zeroed JOBOBJECT_EXTENDED_LIMIT_INFORMATION (plain data)
        // is "no limit"; only the flag below is set.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the job's handle, and a pointer to a live struct of the size given.
        let ok = unsafe {
            SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    fn raw(&self) -> windows_sys::Win32::Foundation::HANDLE {
        self.0.as_raw_handle()
    }

    /// Put a (suspended) process in the job.
    pub fn assign(&self, process: &OwnedHandle) -> io::Result<()> {
        // SAFETY: two handles we own, both open.
        if unsafe { AssignProcessToJobObject(self.raw(), process.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// End every process in the job now (koma and its tools).
    pub fn terminate(&self) {
        // SAFETY: the job's handle, which we own; ending a job's processes has no other precondition.
        unsafe {
            TerminateJobObject(self.raw(), ENDED_BY_JOB);
        }
    }

    /// How many processes of the job are still running.
    pub fn active(&self) -> io::Result<u32> {
        // SAFETY: a zeroed accounting struct is plain data, filled by the call.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the job's handle, and a pointer to a live struct of the size given.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(info.ActiveProcesses)
    }
}
