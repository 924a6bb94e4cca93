//! Colour on terminals only: `NO_COLOR` (any value) turns it off, as does a stream that
//! is not a terminal (a pipe, a file). `CLICOLOR_FORCE` turns it on anywhere
//! (anstream's rules).

use anstyle::{AnsiColor, Style};

fn paint(style: Style, text: &str) -> String {
    let choice = anstream::AutoStream::choice(&std::io::stderr());
    if choice == anstream::ColorChoice::Never {
        text.to_string()
    } else {
        format!("{style}{text}{style:#}")
    }
}

/// `error:` in bold red on a terminal's stderr.
pub fn error(text: &str) -> String {
    paint(AnsiColor::Red.on_default().bold(), text)
}

/// `warning:` in bold yellow on a terminal's stderr.
pub fn warning(text: &str) -> String {
    paint(AnsiColor::Yellow.on_default().bold(), text)
}
