//! npm's `.cmd` shims (the format of npm's `cmd-shim`), read so that what a
//! shim runs can be run without `cmd.exe`. `npm install -g` writes one for
//! each command of a package: for a native program, a line that runs it;
//! for a script with a `#!` line (a Node script), lines that run it with the
//! interpreter beside the shim (`node.exe`) if there is one, else the one on
//! `PATH`. Any other batch file is not a shim: only `cmd.exe` could run it.
//!
//! The reading is strict: every line must be one of the shim's, and a path
//! or argument that `cmd.exe` would expand (`%`) or split (`&`, `|`, ...)
//! makes it not a shim.

/// What a shim runs, its paths relative to the shim's folder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shim {
    /// `"%dp0%\<target>" %*`: the target itself.
    Native { target: String },
    /// `"%_prog%" <args> "%dp0%\<script>" %*`, the program being
    /// `%dp0%\<interpreter>.exe` if it exists, else `<interpreter>` on `PATH`
    /// (`PATHEXT` without `.JS`).
    Script { interpreter: String, args: Vec<String>, script: String },
}

/// The lines every form of the shim may hold around its command (compared
/// without case): the `%dp0%` subroutine, `SETLOCAL` and its end.
const BOILERPLATE: &[&str] = &[
    "@echo off",
    "goto start",
    ":find_dp0",
    "set dp0=%~dp0",
    "exit /b",
    ":start",
    "setlocal",
    "call :find_dp0",
    "endlocal",
    "exit /b %errorlevel%",
];

/// What makes `cmd-shim`'s last line end `setlocal` without a "Terminate batch job?" prompt.
const PROMPTLESS: &str = "endlocal & goto #_undefined_# 2>nul || title %comspec% & ";

/// Read a batch file's text as an npm shim; `None` if it is not one.
pub(crate) fn parse(text: &[u8]) -> Option<Shim> {
    let text = std::str::from_utf8(text).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !BOILERPLATE.contains(&l.to_ascii_lowercase().as_str()))
        .collect();
    match lines.as_slice() {
        [run] => {
            let (target, rest) = quoted_dp0(run)?;
            (rest.trim() == "%*").then_some(Shim::Native { target })
        }
        [if_exist, set_local, else_, set_path, set_pathext, close, run] => {
            let interpreter = strip_ci(if_exist, "if exist \"%dp0%\\")?.strip_suffix(".exe\" (").map(str::to_owned)?;
            if !simple(&interpreter) || interpreter.contains(['/', '\\', ':']) {
                return None;
            }
            let expect = [
                (*set_local, format!("set \"_prog=%dp0%\\{interpreter}.exe\"")),
                (*else_, ") else (".to_owned()),
                (*set_path, format!("set \"_prog={interpreter}\"")),
                (*set_pathext, "set pathext=%pathext:;.js;=;%".to_owned()),
                (*close, ")".to_owned()),
            ];
            if expect.iter().any(|(line, want)| !line.eq_ignore_ascii_case(want)) {
                return None;
            }
            let run = strip_ci(run, PROMPTLESS).unwrap_or(run);
            let rest = strip_ci(run, "\"%_prog%\"")?.trim().strip_suffix("%*")?.trim_end();
            let at = rest.rfind("\"%dp0%\\")?;
            let (script, after) = quoted_dp0(&rest[at..])?;
            if !after.trim().is_empty() {
                return None;
            }
            let args: Vec<String> = rest[..at].split_whitespace().map(str::to_owned).collect();
            args.iter().all(|a| simple(a)).then_some(Shim::Script { interpreter, args, script })
        }
        _ => None,
    }
}

/// `"%dp0%\<path>"` at the start of `s`: the path, and what follows the quote.
fn quoted_dp0(s: &str) -> Option<(String, &str)> {
    let inner = strip_ci(s, "\"%dp0%\\")?;
    let end = inner.find('"')?;
    let path = &inner[..end];
    // cmd.exe would expand a `%` in it; the rest are not in file names.
    if path.is_empty() || path.contains(['%', '"', '<', '>', '|']) {
        return None;
    }
    Some((path.to_owned(), &inner[end + 1..]))
}

fn strip_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

/// An argument or name that `cmd.exe` passes on unchanged.
fn simple(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+@".contains(c))
}

#[cfg(test)]
pub(crate) mod samples {
    /// A Node script's shim, as npm 10's cmd-shim writes it.
    pub const NODE_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\fake-koma\\cli.js\" %*\r\n";
    /// A native program's shim.
    pub const NATIVE_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\"%dp0%\\node_modules\\koma\\bin\\koma.exe\"   %*\r\n";
}

#[cfg(test)]
mod tests {
    use super::samples::*;
    use super::*;

    #[test]
    fn a_node_scripts_shim() {
        assert_eq!(
            parse(NODE_SHIM.as_bytes()),
            Some(Shim::Script {
                interpreter: "node".into(),
                args: vec![],
                script: "node_modules\\fake-koma\\cli.js".into()
            })
        );
        // With the interpreter's arguments from the `#!` line, and the older form (npm 7: no prompt guard).
        let older = NODE_SHIM
            .replace("endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & ", "")
            .replace("\"%_prog%\"  ", "\"%_prog%\" --max-old-space-size=4096 ")
            + "ENDLOCAL\r\nEXIT /b %errorlevel%\r\n";
        assert_eq!(
            parse(older.as_bytes()),
            Some(Shim::Script {
                interpreter: "node".into(),
                args: vec!["--max-old-space-size=4096".into()],
                script: "node_modules\\fake-koma\\cli.js".into()
            })
        );
    }

    #[test]
    fn a_native_programs_shim() {
        assert_eq!(
            parse(NATIVE_SHIM.as_bytes()),
            Some(Shim::Native { target: "node_modules\\koma\\bin\\koma.exe".into() })
        );
    }

    #[test]
    fn anything_else_is_not_a_shim() {
        for text in [
            "@echo off\r\nkoma.exe %*\r\n",
            "@ECHO off\r\n\"%dp0%\\koma.exe\" %* & del C:\\x\r\n",
            &NATIVE_SHIM.replace("koma.exe\"", "%OTHER%.exe\""),
            &NATIVE_SHIM.replace("CALL :find_dp0\r\n", "CALL :find_dp0\r\nSET X=1\r\n"),
            &NODE_SHIM.replace("\"%_prog%\"  ", "\"%_prog%\" a&b "),
            &NODE_SHIM.replace("SET \"_prog=node\"", "SET \"_prog=other\""),
            &NODE_SHIM.replace("cli.js\" %*", "cli.js\" %* extra"),
            "",
        ] {
            assert_eq!(parse(text.as_bytes()), None, "{text}");
        }
        assert_eq!(parse(b"\xff\xfe"), None);
    }
}
