//! `clrprof convert FILE -f FORMAT [-o OUT]`: a trace to a flamegraph or another
//! profiler's file format. Shows progress on a terminal.

use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::{Context, Result};

use clrprof_analysis::Trace;
use clrprof_analysis::profile::CallsWanted;
use clrprof_export::{Format, Options, Weight};

use crate::cli::{self, ConvertArgs, ConvertFormat};

fn format(f: ConvertFormat) -> Format {
    match f {
        ConvertFormat::Svg => Format::Svg,
        ConvertFormat::Folded => Format::Folded,
        ConvertFormat::Speedscope => Format::Speedscope,
        ConvertFormat::Firefox => Format::Firefox,
        ConvertFormat::Chrome => Format::Chrome,
        ConvertFormat::Pprof => Format::Pprof,
    }
}

/// `trace.clrprof` → `trace.svg` (and so on).
fn default_output(input: &std::path::Path, f: Format) -> PathBuf {
    let stem = input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "profile".into());
    input.with_file_name(format!("{stem}{}", f.extension()))
}

pub fn run(args: ConvertArgs) -> Result<i32> {
    let fmt = format(args.format);
    let out_path = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.file, fmt));
    let bar = crate::progress::Progress::start(format!("reading {}", args.file.display()));
    let bytes = crate::input::open(&args.file)?;
    bar.step("decoding");
    let trace = Trace::load(&bytes)
        .with_context(|| format!("{} is not a readable clrprof trace", args.file.display()))?;
    for line in crate::input::warning_lines(&args.file, &trace.warnings)
        .into_iter()
        .chain(crate::input::warning_lines(
            &args.file,
            &crate::output::lost_note_warnings(&args.file, &trace.header),
        ))
    {
        bar.println(&line);
    }
    bar.step("building the profile");
    let built = clrprof_analysis::profile::build_with_lines(
        &trace,
        CallsWanted {
            timeline: fmt.is_timeline(),
            max_calls: args.max_calls,
        },
        args.lines.then_some(args.pdb_dirs.as_slice()),
    );
    if let Some(until) = built.calls_until_ns {
        let kept = (trace.call_records / 2).saturating_sub(built.calls_dropped);
        bar.println(&format!(
            "clrprof: {} the timeline holds the calls of the first {:.3} s of {:.3} s \
                 ({kept} calls; {} later ones left out, --max-calls {}); \
                 folded, svg and pprof count every call",
            crate::style::warning("warning:"),
            until as f64 / 1e9,
            trace.duration_ns as f64 / 1e9,
            built.calls_dropped,
            args.max_calls,
        ));
    }
    let profile = built.profile;
    let alloc_weight = matches!(
        args.weight,
        Some(cli::Weight::AllocBytes | cli::Weight::AllocObjects | cli::Weight::LiveBytes)
    );
    if alloc_weight && matches!(fmt, Format::Firefox | Format::Chrome) {
        bar.done();
        anyhow::bail!(
            "-f {} does not weigh stacks by allocations: use -f svg, folded, speedscope or pprof with --weight {} (-f firefox, without --weight, shows the allocation samples as native allocations)",
            fmt.extension().trim_start_matches('.'),
            args.weight
                .and_then(|w| clap::ValueEnum::to_possible_value(&w))
                .map_or(String::new(), |v| v.get_name().to_owned())
        );
    }
    if alloc_weight && profile.threads.iter().all(|t| t.allocations.is_empty()) {
        bar.done();
        anyhow::bail!(
            "{} has no allocation samples for --weight {}: record with `clrprof record --alloc`",
            args.file.display(),
            args.weight
                .and_then(|w| clap::ValueEnum::to_possible_value(&w))
                .map_or(String::new(), |v| v.get_name().to_owned())
        );
    }
    let wait_weight = matches!(args.weight, Some(cli::Weight::Wait | cli::Weight::Lock));
    if wait_weight && matches!(fmt, Format::Firefox | Format::Chrome) {
        bar.done();
        anyhow::bail!(
            "-f {} does not weigh stacks by waits: use -f svg, folded, speedscope or pprof with --weight wait or lock",
            fmt.extension().trim_start_matches('.'),
        );
    }
    if wait_weight && profile.threads.iter().all(|t| t.waits.is_empty()) {
        bar.done();
        anyhow::bail!(
            "{} has no waits for --weight {}: record with `clrprof record --waits`",
            args.file.display(),
            args.weight
                .and_then(|w| clap::ValueEnum::to_possible_value(&w))
                .map_or(String::new(), |v| v.get_name().to_owned())
        );
    }
    if profile.threads.is_empty() {
        bar.done();
        anyhow::bail!(
            "{} has no samples or calls to convert (it was recorded in `{}` mode; use --mode sample or --mode trace)",
            args.file.display(),
            trace.header.meta.settings.mode.as_str()
        );
    }
    bar.step(format!("writing {}", out_path.display()));
    let file = std::fs::File::create(&out_path)
        .with_context(|| format!("cannot create {}", out_path.display()))?;
    let mut w = BufWriter::new(file);
    let opts = Options {
        weight: match args.weight {
            Some(cli::Weight::Cpu) => Weight::Cpu,
            Some(cli::Weight::Wall) => Weight::Wall,
            Some(cli::Weight::AllocBytes) => Weight::AllocBytes,
            Some(cli::Weight::AllocObjects) => Weight::AllocObjects,
            Some(cli::Weight::LiveBytes) => Weight::LiveBytes,
            Some(cli::Weight::Wait) => Weight::Wait,
            Some(cli::Weight::Lock) => Weight::Lock,
            // A traced run has no CPU times: its flamegraphs count calls, as they did.
            None if trace.call_records > 0 => Weight::Samples,
            None => Weight::Cpu,
        },
        merge_threads: args.merge_threads,
        per_thread: args.per_thread,
        reverse: args.reverse,
    };
    // A call's recorded values (`--args`) are in the profile, with the call.
    clrprof_export::export(&profile, fmt, &opts, &mut w)
        .with_context(|| format!("writing {}", out_path.display()))?;
    std::io::Write::flush(&mut w)?;
    bar.done();
    eprintln!("clrprof: wrote {}", out_path.display());
    Ok(0)
}
