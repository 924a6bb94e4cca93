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
    if args.json {
        let s = serde_json::to_string_pretty(&report)?;
        println!("{s}");
    } else {
        print!("{}", text::render(&report, args.top));
    }
    Ok(0)
}
