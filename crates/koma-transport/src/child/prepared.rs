//! What the clone path's child needs, prepared (and allocated) before the
//! clone: the child may not allocate.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

use super::launch_error::LaunchError;
use super::options::LaunchOptions;
use super::search::Search;

pub(crate) struct Prepared {
    /// The paths to try, in order (see `search.rs`).
    pub search: Search,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub cwd: Option<CString>,
}

impl Prepared {
    pub fn new(options: &LaunchOptions) -> Result<Self, LaunchError> {
        let nul = |what: &str| LaunchError::Other(format!("{what} holds a NUL character"));
        let executable = CString::new(options.executable.as_bytes()).map_err(|_| nul("the executable"))?;
        // The child's environment: the parent's, with `env` added or replacing
        // (the last value of a name given twice wins).
        let mut vars: Vec<(OsString, OsString)> =
            std::env::vars_os().filter(|(k, _)| !options.env.iter().any(|(o, _)| o == k)).collect();
        for (i, (k, v)) in options.env.iter().enumerate() {
            if !options.env[i + 1..].iter().any(|(later, _)| later == k) {
                vars.push((k.clone(), v.clone()));
            }
        }
        let mut envp = Vec::with_capacity(vars.len());
        for (k, v) in &vars {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(CString::new(kv).map_err(|_| nul("an environment variable"))?);
        }
        let search = Search::new(&options.executable, options.child_path().as_deref()).ok_or_else(|| nul("PATH"))?;
        let argv = vec![executable, c"sdk".to_owned(), c"serve".to_owned()];
        let cwd = match &options.cwd {
            Some(c) => Some(CString::new(c.as_os_str().as_bytes()).map_err(|_| nul("the cwd"))?),
            None => None,
        };
        Ok(Prepared { search, argv, envp, cwd })
    }
}
