//! Writing a command's output to standard output: text escaped so that nothing from the
//! target can drive the terminal, a closed pipe a quiet end. A leaf every command uses.

use anyhow::Result;

/// Writes a text rendering: every control character but its line breaks is escaped
/// ([`clrprof_analysis::text::escape_output`]), so no string from the target or the trace that a renderer
/// left as it was can drive the terminal. JSON goes through [`write_stdout`] unchanged.
pub fn write_text(rendered: &str) -> Result<i32> {
    write_stdout(clrprof_analysis::text::escape_output(rendered).as_bytes())
}

/// Writes the report: a reader that stops early (`report | head`) ends it quietly; any
/// other write error (`> /dev/full`) is an error with its reason, not a panic.
pub fn write_stdout(bytes: &[u8]) -> Result<i32> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(anyhow::anyhow!(
            "cannot write the report to standard output: {e}"
        )),
    }
}
