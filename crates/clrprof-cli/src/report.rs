//! `clrprof report FILE`: a summary as text, or JSON with `--json`.

use anyhow::{Context, Result};

use clrprof_analysis::{Options, Trace, build_with, text};

use crate::cli::ReportArgs;

pub fn run(args: ReportArgs) -> Result<i32> {
    let bytes = crate::input::open(&args.file)?;
    let trace = Trace::load(&bytes)
        .with_context(|| format!("{} is not a readable clrprof trace", args.file.display()))?;
    for w in &trace.warnings {
        eprintln!("clrprof: warning: {}: {w}", args.file.display());
    }
    let report = build_with(
        &trace,
        Options {
            depth: args.depth.unwrap_or(if args.json { 40 } else { 12 }),
        },
    );
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        text::render(&report, args.top)
    };
    write_stdout(text.as_bytes())
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
