//! A function the running Node exports, looked up by name: `dlsym` in the
//! process's symbols on Unix, `GetProcAddress` on the executable on Windows
//! (node.exe exports Node-API).

use std::ffi::{c_void, CStr};

/// The address of `name` in the running Node, or null.
#[cfg(unix)]
pub(super) fn node_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym on the process's own symbols with a NUL-terminated name;
    // it only reads the name.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

#[cfg(windows)]
pub(super) fn node_symbol(name: &CStr) -> *mut c_void {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    // SAFETY: a null name gives the executable's module (node.exe), which is
    // never unloaded; GetProcAddress only reads the NUL-terminated name.
    unsafe {
        let node = GetModuleHandleW(std::ptr::null());
        if node.is_null() {
            return std::ptr::null_mut();
        }
        GetProcAddress(node, name.as_ptr().cast()).map_or(std::ptr::null_mut(), |f| f as *mut c_void)
    }
}
