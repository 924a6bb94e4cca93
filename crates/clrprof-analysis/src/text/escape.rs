//! Text taken from a process or a file (a command line, a thread or method name, an
//! exception message, a note another user could write) must not drive the terminal it is
//! printed on: an `ESC ]0;…BEL` retitles the window, other sequences move the cursor,
//! rewrite lines or, on some terminals, answer back into the input. Every text renderer
//! passes such strings through [`escape_controls`] once, and the CLI passes each whole
//! text output through [`escape_output`], so a string no renderer escaped still cannot
//! reach the terminal raw. JSON output is exact instead: serde escapes C0 and DEL there.

use std::borrow::Cow;
use std::fmt::Write;

/// C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F): the characters a terminal
/// may act on rather than print.
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `s` with every control character written out: `\n`, `\r`, `\t`, `\e` (ESC), `\xNN`
/// for the other C0 characters and DEL, `\u{NN}` for C1. Backslashes are left as they
/// are (Windows paths stay readable). Borrowed when there is nothing to escape.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// A whole rendered text (lines the renderers made): like [`escape_controls`], but its
/// line breaks are kept.
pub fn escape_output(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let needs = |c: char| is_control(c) && !(keep_newlines && c == '\n');
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !needs(c) {
            o.push(c);
            continue;
        }
        match c {
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{1b}' => o.push_str("\\e"),
            '\u{0}'..='\u{1f}' | '\u{7f}' => {
                let _ = write!(o, "\\x{:02x}", c as u32);
            }
            _ => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_c0_del_c1_and_esc_once() {
        assert!(matches!(
            escape_controls("dotnet app.dll"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_controls("a\u{1b}]0;PWNED\u{7}b"),
            "a\\e]0;PWNED\\x07b"
        );
        assert_eq!(
            escape_controls("x\u{7f}\u{9b}2J\u{85}"),
            "x\\x7f\\u{9b}2J\\u{85}"
        );
        assert_eq!(escape_controls("l1\nl2\r\tz\0"), "l1\\nl2\\r\\tz\\x00");
        // Printable text, backslashes and other non-ASCII characters are kept.
        assert_eq!(escape_controls("C:\\x é 名"), "C:\\x é 名");
        // Escaped text has nothing left to escape.
        let once = escape_controls("\u{1b}[2J\u{9b}");
        assert_eq!(escape_controls(&once), once);
    }

    #[test]
    fn a_whole_output_keeps_its_lines() {
        assert_eq!(escape_output("a\nb\u{1b}c\n"), "a\nb\\ec\n");
        assert!(matches!(escape_output("a\nb\n"), Cow::Borrowed(_)));
    }
}
