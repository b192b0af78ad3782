//! The command line of a Windows child: one string, which the child splits
//! into its arguments itself (the C runtime's rules, which Node, Python and
//! Rust programs all follow). Each argument is quoted so that it comes out
//! exactly as given; no shell ever reads this line, so `&`, `|`, `%` and `^`
//! need nothing.

/// `argv` as one command line: the program first, in quotes (the C runtime
/// takes the first argument up to its closing quote, with no escapes: a
/// path cannot hold `"`), then each argument quoted where it must be.
/// `None` if the program's path holds a `"`.
pub(crate) fn command_line(argv: &[String]) -> Option<String> {
    let (program, args) = argv.split_first()?;
    if program.contains('"') {
        return None;
    }
    let mut line = format!("\"{program}\"");
    for arg in args {
        line.push(' ');
        quote_into(arg, &mut line);
    }
    Some(line)
}

/// One argument, as the C runtime will split it back out: as is when it
/// holds no space, tab, newline or quote; else in quotes, with the
/// backslashes before a quote (and before the closing quote) doubled.
fn quote_into(arg: &str, line: &mut String) {
    if !arg.is_empty() && !arg.contains([' ', '\t', '\n', '\x0b', '"']) {
        line.push_str(arg);
        return;
    }
    line.push('"');
    let mut backslashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                line.extend(std::iter::repeat_n('\\', backslashes * 2 + 1));
                line.push('"');
                backslashes = 0;
            }
            _ => {
                line.extend(std::iter::repeat_n('\\', backslashes));
                line.push(c);
                backslashes = 0;
            }
        }
    }
    line.extend(std::iter::repeat_n('\\', backslashes * 2));
    line.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C runtime's split of a command line's arguments after the first
    /// (what `CommandLineToArgvW` and the MSVC runtime do), to check each
    /// quoted argument comes back as given.
    fn split(args: &str) -> Vec<String> {
        let mut out = Vec::new();
        let chars: Vec<char> = args.chars().collect();
        let mut i = 0;
        loop {
            while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
                i += 1;
            }
            if i >= chars.len() {
                return out;
            }
            let mut arg = String::new();
            let mut quoted = false;
            while i < chars.len() && (quoted || (chars[i] != ' ' && chars[i] != '\t')) {
                let mut n = 0;
                while i < chars.len() && chars[i] == '\\' {
                    n += 1;
                    i += 1;
                }
                if i < chars.len() && chars[i] == '"' {
                    arg.extend(std::iter::repeat_n('\\', n / 2));
                    if n % 2 == 1 {
                        arg.push('"');
                    } else if quoted && i + 1 < chars.len() && chars[i + 1] == '"' {
                        arg.push('"');
                        i += 1;
                    } else {
                        quoted = !quoted;
                    }
                    i += 1;
                } else {
                    arg.extend(std::iter::repeat_n('\\', n));
                    if i < chars.len() && (quoted || (chars[i] != ' ' && chars[i] != '\t')) {
                        arg.push(chars[i]);
                        i += 1;
                    }
                }
            }
            out.push(arg);
        }
    }

    #[test]
    fn every_argument_comes_back_exactly() {
        let args = [
            "sdk",
            "serve",
            "",
            "a b",
            "a&b|c",
            "%PATH%",
            "say \"hi\"",
            "C:\\dir with space\\",
            "trailing\\\\",
            "back\\\"slash",
            "^caret",
            "tab\there",
        ];
        let argv: Vec<String> =
            std::iter::once("C:\\Program Files\\koma\\koma.exe").chain(args).map(String::from).collect();
        let line = command_line(&argv).unwrap();
        assert!(line.starts_with("\"C:\\Program Files\\koma\\koma.exe\" "), "{line}");
        let rest = &line["\"C:\\Program Files\\koma\\koma.exe\" ".len()..];
        assert_eq!(split(rest), args, "{line}");
    }

    #[test]
    fn plain_arguments_are_not_quoted() {
        let argv = ["C:\\k\\koma.exe", "sdk", "serve"].map(String::from);
        assert_eq!(command_line(&argv).unwrap(), "\"C:\\k\\koma.exe\" sdk serve");
    }

    #[test]
    fn a_program_with_a_quote_is_refused() {
        assert!(command_line(&["C:\\a\"b.exe".to_owned()]).is_none());
        assert!(command_line(&[]).is_none());
    }
}
