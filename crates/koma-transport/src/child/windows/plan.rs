//! What a Windows child runs: the program found for `executable` (see
//! `lookup.rs`) with `sdk serve`; or, for an npm shim (see `shim.rs`), what
//! the shim would run, started directly: the native program it names, or its
//! script with the interpreter the shim would use. Any other batch file is
//! refused: only `cmd.exe` can run one, and it is a shell.

use super::lookup::{extension, find, join, parent, Files, Found};
use super::shim::{parse, Shim};

/// What to start: the program's full path, and its arguments (`argv[0]` first).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub application: String,
    pub argv: Vec<String>,
}

/// Why nothing can be started.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    NotFound,
    Directory(String),
    /// A batch file that cannot be run without `cmd.exe`: `why` says what it
    /// is and what to pass instead.
    Batch {
        path: String,
        why: String,
    },
}

const SHIM_BYTES: usize = 64 * 1024;

/// The plan for `executable sdk serve`, for a child whose working folder is
/// `base` (absolute), with its `PATH` and `PATHEXT`.
pub(crate) fn plan(
    executable: &str,
    base: &str,
    path: Option<&str>,
    pathext: Option<&str>,
    files: &impl Files,
) -> Result<Plan, Refused> {
    let serve = |mut argv: Vec<String>| {
        argv.extend(["sdk".to_owned(), "serve".to_owned()]);
        argv
    };
    match find(executable, base, path, pathext, files) {
        Found::NotFound => Err(Refused::NotFound),
        Found::Directory(dir) => Err(Refused::Directory(dir)),
        Found::Program(application) => Ok(Plan { application, argv: serve(vec![executable.to_owned()]) }),
        Found::Batch(batch) => {
            let refuse = |why: String| Refused::Batch { path: batch.clone(), why };
            let shim = files.read(&batch, SHIM_BYTES).and_then(|text| parse(&text)).ok_or_else(|| {
                refuse(
                    "it is not one of npm's shims (the one kind of batch file run here without cmd.exe): set \
                     `executable` to the program it runs (a .exe)"
                        .to_owned(),
                )
            })?;
            let dir = parent(&batch);
            match shim {
                Shim::Native { target } => {
                    let target = join(dir, &target);
                    if !matches!(extension(&target).as_deref(), Some(".exe" | ".com")) {
                        return Err(refuse(format!(
                            "it is an npm shim of `{target}`, which is not a program (.exe or .com): set \
                             `executable` to the program that runs it"
                        )));
                    }
                    if !files.is_file(&target) {
                        return Err(refuse(format!("it is an npm shim of `{target}`, which does not exist")));
                    }
                    Ok(Plan { application: target.clone(), argv: serve(vec![target]) })
                }
                Shim::Script { interpreter, args, script } => {
                    let script = join(dir, &script);
                    if !files.is_file(&script) {
                        return Err(refuse(format!(
                            "it is an npm shim of the script `{script}`, which does not exist"
                        )));
                    }
                    // As the shim: the interpreter beside it, else the one on PATH
                    // (PATHEXT without .JS, as the shim sets it).
                    let beside = join(dir, &format!("{interpreter}.exe"));
                    let program = if files.is_file(&beside) {
                        beside
                    } else {
                        let exts: Vec<&str> = pathext
                            .unwrap_or(".COM;.EXE")
                            .split(';')
                            .filter(|e| !e.eq_ignore_ascii_case(".js"))
                            .collect();
                        match find(&interpreter, base, path, Some(&exts.join(";")), files) {
                            Found::Program(p) => p,
                            _ => {
                                return Err(refuse(format!(
                                    "it is an npm shim of the script `{script}`, run with `{interpreter}`, which \
                                     is found neither beside the shim nor on PATH as a program (.exe or .com)"
                                )))
                            }
                        }
                    };
                    let mut argv = vec![program.clone()];
                    argv.extend(args);
                    argv.push(script);
                    Ok(Plan { application: program, argv: serve(argv) })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::lookup::fake::FakeFiles;
    use super::super::shim::samples::{NATIVE_SHIM, NODE_SHIM};
    use super::*;

    fn argv(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_program_runs_as_found_with_argv0_as_given() {
        let f = FakeFiles::default().with("C:\\k\\koma.exe", "");
        let p = plan("koma", "C:\\", Some("C:\\k"), None, &f).unwrap();
        assert_eq!(p, Plan { application: "C:\\k\\koma.exe".into(), argv: argv(&["koma", "sdk", "serve"]) });
    }

    #[test]
    fn a_node_scripts_shim_runs_the_script_with_the_node_it_would_use() {
        let npm = "C:\\Users\\me\\AppData\\Roaming\\npm";
        let script = format!("{npm}\\node_modules\\fake-koma\\cli.js");
        let f = FakeFiles::default()
            .with(&format!("{npm}\\fake-koma.cmd"), NODE_SHIM)
            .with(&script, "#!/usr/bin/env node")
            .with("C:\\Program Files\\nodejs\\node.exe", "");
        let path = format!("{npm};C:\\Program Files\\nodejs");
        // Found on PATH as `fake-koma`: node from PATH.
        let p = plan("fake-koma", "C:\\", Some(&path), None, &f).unwrap();
        let node = "C:\\Program Files\\nodejs\\node.exe";
        assert_eq!(p, Plan { application: node.into(), argv: argv(&[node, &script, "sdk", "serve"]) });
        // A node.exe beside the shim comes first, as in the shim.
        let f = f.with(&format!("{npm}\\node.exe"), "");
        let p = plan(&format!("{npm}\\fake-koma.cmd"), "C:\\", Some(&path), None, &f).unwrap();
        assert_eq!(p.application, format!("{npm}\\node.exe"));
        // No node anywhere: refused, saying so.
        let f = FakeFiles::default().with(&format!("{npm}\\fake-koma.cmd"), NODE_SHIM).with(&script, "");
        let Err(Refused::Batch { why, .. }) = plan("fake-koma", "C:\\", Some(npm), None, &f) else { panic!() };
        assert!(why.contains("run with `node`, which is found neither beside the shim nor on PATH"), "{why}");
    }

    #[test]
    fn a_native_shim_runs_its_program_directly() {
        let f = FakeFiles::default()
            .with("C:\\npm\\koma.cmd", NATIVE_SHIM)
            .with("C:\\npm\\node_modules\\koma\\bin\\koma.exe", "");
        let p = plan("koma", "C:\\", Some("C:\\npm"), None, &f).unwrap();
        let exe = "C:\\npm\\node_modules\\koma\\bin\\koma.exe";
        assert_eq!(p, Plan { application: exe.into(), argv: argv(&[exe, "sdk", "serve"]) });
    }

    #[test]
    fn any_other_batch_file_is_refused_saying_what_to_pass() {
        let f = FakeFiles::default().with("C:\\x\\koma.bat", "@echo off\r\nkoma.exe %*\r\n");
        let Err(Refused::Batch { path, why }) = plan("koma", "C:\\", Some("C:\\x"), None, &f) else { panic!() };
        assert_eq!(path, "C:\\x\\koma.bat");
        assert!(
            why.contains("not one of npm's shims") && why.contains("set `executable` to the program it runs"),
            "{why}"
        );
        // A shim whose program is missing, or is not a program.
        let f = FakeFiles::default().with("C:\\npm\\koma.cmd", NATIVE_SHIM);
        let Err(Refused::Batch { why, .. }) = plan("koma", "C:\\", Some("C:\\npm"), None, &f) else { panic!() };
        assert!(why.ends_with("which does not exist"), "{why}");
        let f = FakeFiles::default().with("C:\\npm\\koma.cmd", &NATIVE_SHIM.replace("koma.exe", "koma.sh"));
        let Err(Refused::Batch { why, .. }) = plan("koma", "C:\\", Some("C:\\npm"), None, &f) else { panic!() };
        assert!(why.contains("which is not a program (.exe or .com)"), "{why}");
    }

    #[test]
    fn not_found_and_directories() {
        let f = FakeFiles::default().with("C:\\d\\sub\\x.txt", "");
        assert_eq!(plan("koma", "C:\\", Some("C:\\d"), None, &f), Err(Refused::NotFound));
        assert_eq!(plan("C:\\d\\sub", "C:\\", None, None, &f), Err(Refused::Directory("C:\\d\\sub".into())));
    }
}
