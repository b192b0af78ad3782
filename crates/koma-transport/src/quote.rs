//! Quoting the child's bytes in messages: at most 200 bytes of quote, with
//! control characters escaped so no terminal escape sequence reaches a user.

/// The most bytes of a line quoted in a message.
pub const QUOTE_BYTES: usize = 200;

/// Quote at most [`QUOTE_BYTES`] bytes of `line`, escaped. The result itself
/// is never longer than [`QUOTE_BYTES`] bytes plus a trailing `…` marker when cut.
pub fn quote_line(line: &[u8]) -> String {
    let mut out = String::new();
    let mut cut = false;
    let text = String::from_utf8_lossy(&line[..line.len().min(QUOTE_BYTES * 4)]);
    for ch in text.chars() {
        let mut piece = String::new();
        push_escaped(&mut piece, ch);
        if out.len() + piece.len() > QUOTE_BYTES {
            cut = true;
            break;
        }
        out.push_str(&piece);
    }
    if cut || line.len() > QUOTE_BYTES * 4 {
        out.push('…');
    }
    out
}

/// Escape control characters of `text` (keeping newlines when `keep_newlines`).
pub fn escape_text(text: &str, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if keep_newlines && ch == '\n' {
            out.push('\n');
        } else {
            push_escaped(&mut out, ch);
        }
    }
    out
}

/// A path in a message: its control characters escaped, its backslashes
/// kept (a Windows path reads as the user wrote it: `C:\Tools\koma.exe`).
pub fn escape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for ch in path.chars() {
        if ch == '\\' {
            out.push(ch);
        } else {
            push_escaped(&mut out, ch);
        }
    }
    out
}

fn push_escaped(out: &mut String, ch: char) {
    match ch {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\\' => out.push_str("\\\\"),
        c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        // Bidirectional overrides can disguise text on a terminal.
        c @ ('\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_sequences() {
        let q = quote_line(b"\x1b[31mred\x07");
        assert!(!q.contains('\x1b'));
        assert!(q.contains("\\u{1b}[31mred\\u{7}"));
    }

    #[test]
    fn at_most_200_bytes_of_quote() {
        let line = vec![b'x'; 10_000];
        let q = quote_line(&line);
        assert_eq!(q.trim_end_matches('…').len(), 200);
        let esc = vec![0x1bu8; 10_000];
        let q = quote_line(&esc);
        assert!(q.trim_end_matches('…').len() <= 200);
    }

    #[test]
    fn a_path_keeps_its_backslashes() {
        assert_eq!(escape_path("C:\\Tools\\koma.exe"), "C:\\Tools\\koma.exe");
        assert_eq!(escape_path("/tmp/a\x1bb"), "/tmp/a\\u{1b}b");
    }

    #[test]
    fn short_lines_whole() {
        assert_eq!(quote_line(b"INFO starting"), "INFO starting");
        assert_eq!(quote_line(&[0xff, b'a']), "\u{fffd}a");
    }
}
