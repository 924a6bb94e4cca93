//! `clrprof report FILE`: a summary as text, or JSON with `--json`.

use anyhow::{Context, Result};

use clrprof_analysis::samples::{Filter, View};
use clrprof_analysis::{Options, Trace, build_with, invocations, text};

use crate::cli::ReportArgs;
use crate::stdout::{write_stdout, write_text};

pub fn run(args: ReportArgs) -> Result<i32> {
    let bar = crate::progress::Progress::start(format!("reading {}", args.file.display()));
    let bytes = crate::input::open(&args.file)?;
    bar.step("decoding");
    let trace = Trace::load(&bytes)
        .with_context(|| format!("{} is not a readable clrprof trace", args.file.display()))?;
    // The pages of the pass: a heap snapshot's analysis comes next, and later passes fault
    // in what they read again.
    bytes.release();
    for line in crate::input::warning_lines(&args.file, &trace.warnings)
        .into_iter()
        .chain(crate::input::warning_lines(
            &args.file,
            &crate::output::lost_note_warnings(&args.file, &trace.header),
        ))
    {
        bar.println(&line);
    }
    bar.step("building the report");
    if let Some(pattern) = &args.calls {
        bar.done();
        return print_calls(&trace, pattern, args.limit, args.json);
    }
    if let (Some(from), Some(to)) = (args.from, args.to)
        && from > to
    {
        anyhow::bail!("--from is after --to: the window would hold nothing");
    }
    let report = build_with(
        &trace,
        Options {
            depth: args.depth.unwrap_or(if args.json { 40 } else { 12 }),
            view: if args.wall { View::Wall } else { View::Cpu },
            filter: Filter {
                thread: args.thread.clone(),
                from_ns: args.from,
                to_ns: args.to,
            },
            function: args.function.clone(),
            pdb_dirs: (!args.no_lines).then(|| args.pdb_dirs.clone()),
        },
    );
    bar.done();
    if let Some(pattern) = &args.source {
        return print_source(&trace, &report, pattern, &args);
    }
    if let Some(pattern) = &args.function
        && !args.json
    {
        if report.butterfly.is_none() {
            anyhow::bail!(
                "{} has no samples or calls to look for `{pattern}` in (record with --mode sample or --mode trace)",
                args.file.display()
            );
        }
        return write_text(&text::render_butterfly(&report, args.top));
    }
    // A snapshot ends with a `HeapEnd`, which the loaded timeline holds: no pass of its own.
    let has_snapshots = trace
        .events
        .iter()
        .any(|e| matches!(e.event, clrprof_format::Event::HeapEnd { .. }));
    let heap = if has_snapshots {
        Some(crate::heap::report_of(
            &args.file, &bytes, &args.heap, args.top, false,
        )?)
    } else {
        None
    };
    let text = if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let (Some(h), Some(map)) = (&heap, v.as_object_mut()) {
            map.insert("heap".into(), serde_json::to_value(h)?);
        }
        let (invocations, _) = invocations::collect(&trace);
        if !invocations.is_empty()
            && let Some(o) = v.as_object_mut()
        {
            o.insert(
                "invocations".into(),
                invocations
                    .iter()
                    .take(args.limit)
                    .map(invocations::invocation_json)
                    .collect(),
            );
        }
        let mut s = serde_json::to_string_pretty(&v)?;
        s.push('\n');
        s
    } else {
        // A snapshot's heap is what the recording measured: it leads.
        let heap_text = heap.as_ref().map(clrprof_analysis::text::render_heap);
        let mut s = text::render_with(
            &report,
            args.top,
            text::Layout {
                all: args.all,
                heap: heap_text.as_deref(),
            },
        );
        let (invocations, _) = invocations::collect(&trace);
        if !invocations.is_empty() {
            s.push_str(&format!(
                "\n{} calls recorded with their arguments (--args): see them with `clrprof report {} --calls 'PATTERN'`\n",
                invocations.len(),
                args.file.display()
            ));
        }
        s
    };
    write_text(&text)
}

/// `--source PATTERN`: the matching sampled methods' source with per-line figures.
fn print_source(
    trace: &Trace<'_>,
    report: &clrprof_analysis::Report,
    pattern: &str,
    args: &ReportArgs,
) -> Result<i32> {
    let Some(rows) = &report.lines else {
        anyhow::bail!(
            "{} has no source positions (record it in sample mode with this version of clrprof)",
            args.file.display()
        );
    };
    let names = clrprof_analysis::names::Names::collect(&trace.events);
    let mut lines = clrprof_analysis::lines::Lines::new(args.pdb_dirs.clone());
    let listings = clrprof_analysis::lines::listings(rows, pattern, &names, &mut lines);
    if listings.is_empty() {
        anyhow::bail!(
            "no sampled method with source lines matches `{pattern}`{}",
            if report.missing_pdbs.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} module(s) without a readable PDB: see `clrprof report {}`)",
                    report.missing_pdbs.len(),
                    args.file.display()
                )
            }
        );
    }
    if args.json {
        let mut s = serde_json::to_string_pretty(&listings)?;
        s.push('\n');
        return write_stdout(s.as_bytes());
    }
    write_text(&text::render_listings(&listings))
}

/// `--calls PATTERN`: the recorded invocations of matching functions, as a log.
fn print_calls(trace: &Trace<'_>, pattern: &str, limit: usize, json: bool) -> Result<i32> {
    let (all, problems) = invocations::collect(trace);
    if all.is_empty() {
        anyhow::bail!(
            "the trace holds no recorded arguments: record with `clrprof record --mode trace --args PATTERN -- <command>`"
        );
    }
    let matching: Vec<_> = all
        .iter()
        .filter(|i| clrprof_settings::pattern::matches(pattern, &i.function))
        .collect();
    let mut out = String::new();
    if json {
        let v: Vec<_> = matching
            .iter()
            .take(limit)
            .map(|i| invocations::invocation_json(i))
            .collect();
        out = serde_json::to_string_pretty(&v)?;
        out.push('\n');
    } else {
        use std::fmt::Write;
        for i in matching.iter().take(limit) {
            let _ = writeln!(out, "{}", invocations::log_line(i));
        }
        if matching.len() > limit {
            let _ = writeln!(out, "… {} more (--limit)", matching.len() - limit);
        }
        if matching.is_empty() {
            eprintln!("clrprof: no recorded call matches `{pattern}`");
        }
    }
    if problems > 0 {
        eprintln!("clrprof: warning: {problems} value list(s) could not be decoded");
    }
    if json {
        write_stdout(out.as_bytes())
    } else {
        write_text(&out)
    }
}
