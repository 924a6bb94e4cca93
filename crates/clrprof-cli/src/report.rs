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
    let heap = if crate::heap::has_snapshots(&bytes) {
        Some(crate::heap::report_of(
            &args.file, &bytes, &args.heap, args.top,
        )?)
    } else {
        None
    };
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let (Some(h), Some(map)) = (&heap, v.as_object_mut()) {
            map.insert("heap".into(), serde_json::to_value(h)?);
        }
        let s = serde_json::to_string_pretty(&v)?;
        println!("{s}");
    } else {
        print!("{}", text::render(&report, args.top));
        if let Some(h) = &heap {
            print!("\n{}", clrprof_analysis::heap::text::render(h));
        }
    }
    Ok(0)
}
