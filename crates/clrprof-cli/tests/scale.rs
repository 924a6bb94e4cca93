//! Analysis memory at scale (#27 item 7): what `clrprof report` holds grows with what the
//! report shows, not with the number of events. The figures come from the child's own
//! peak RSS (`wait4`), which a busy machine does not change.

use crate::common;

use std::path::Path;

use common::*;

/// Records the Scenarios app throwing and catching `n` exceptions (each with its own
/// message, "boom #i") in events mode; returns the trace's size in bytes.
fn record_exceptions(trace: &Path, n: u64) -> u64 {
    let n = n.to_string();
    let out = record(trace, &["--mode", "events"], &["exceptions", &n]);
    assert_eq!(results(&out)["exceptions"], n);
    std::fs::metadata(trace).unwrap().len()
}

/// `clrprof report` of `n` thrown exceptions: what it shows, and its peak memory beside
/// that of a trace of one exception (the CLI's own start-up, the names, the modules).
/// Returns (trace bytes, peak RSS MiB, RSS above the one-exception report MiB, seconds).
fn report_of_exceptions(name: &str, n: u64) -> (u64, f64, f64, f64) {
    let dir = scratch(name);
    let (one, many) = (dir.join("one.clrprof"), dir.join("many.clrprof"));
    record_exceptions(&one, 1);
    let size = record_exceptions(&many, n);
    let base = measure(&["report", one.to_str().unwrap()], &dir);
    assert_eq!(base.status, 0, "{}", base.stderr);
    let run = measure(&["report", many.to_str().unwrap()], &dir);
    assert_eq!(run.status, 0, "{}", run.stderr);
    // Every throw counted, each message distinct: the first 1,000 are counted one by one,
    // the others together.
    let ty = "System.InvalidOperationException";
    assert!(
        run.stdout.contains(&format!("{n:>8}  {ty}")),
        "{}",
        run.stdout
    );
    let other = n.saturating_sub(1000);
    if other > 0 {
        assert!(
            run.stdout.contains(&format!(
                "{other:>6} × (messages past the first 1000 distinct"
            )),
            "{}",
            run.stdout
        );
    }
    let json = measure(&["report", "--json", many.to_str().unwrap()], &dir);
    let r: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(r["events"]["exceptions_thrown"], n);
    assert_eq!(r["events"]["exception_catches"], n);
    assert_eq!(r["exceptions"][ty], n);
    assert_eq!(r["exception_messages"][ty]["boom #0"], 1);
    if other > 0 {
        assert_eq!(r["exception_messages_other"][ty], other);
    }
    let stacks = r["exception_stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 1, "one place throws: {stacks:?}");
    assert_eq!(stacks[0]["count"], n);
    let grown = run.max_rss_mib - base.max_rss_mib;
    (size, run.max_rss_mib, grown, run.wall.as_secs_f64())
}

#[test]
fn report_of_many_exceptions_holds_at_most_four_times_the_trace() {
    let n = 50_000;
    let (size, peak, grown, _) = report_of_exceptions("many-exceptions", n);
    let size_mib = size as f64 / (1024.0 * 1024.0);
    eprintln!("{n} exceptions: trace {size_mib:.1} MiB, report peak {peak:.1} MiB (+{grown:.1})");
    // Before the exception records left the timeline: ~2 KB per exception, 8-9 times the
    // trace.
    assert!(
        grown <= 4.0 * size_mib,
        "report of a {size_mib:.1} MiB trace grew {grown:.1} MiB over one exception's (peak {peak:.1} MiB)"
    );
}

/// The bench of #27 item 7: a million exceptions. Prints trace size, peak RSS and time.
/// `cargo test --release -p clrprof-cli --test cli -- --ignored --nocapture scale::`
#[test]
#[ignore = "a bench: about a minute of recording"]
fn bench_report_of_a_million_exceptions() {
    let n = std::env::var("CLRPROF_BENCH_EXCEPTIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let (size, peak, grown, secs) = report_of_exceptions("million-exceptions", n);
    let size_mib = size as f64 / (1024.0 * 1024.0);
    println!(
        "{n} exceptions: trace {size_mib:.1} MiB; report peak RSS {peak:.1} MiB \
         ({:.2}x the trace; +{grown:.1} MiB over one exception's), {secs:.2} s",
        peak / size_mib
    );
    assert!(grown <= 4.0 * size_mib);
}

/// The traces the timeline exports are measured on: a traced `fib 2` (the CLI's own
/// start-up, names, modules) and a traced `fib 27`, recorded once for both tests.
fn fib_traces() -> &'static (std::path::PathBuf, std::path::PathBuf) {
    static TRACES: std::sync::OnceLock<(std::path::PathBuf, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    TRACES.get_or_init(|| {
        let dir = scratch("timeline-export-memory");
        let (one, many) = (dir.join("one.clrprof"), dir.join("many.clrprof"));
        record(&one, &["--mode", "trace"], &["fib", "2"]);
        let out = record(&many, &["--mode", "trace"], &["fib", "27"]);
        assert_eq!(results(&out)["fib"], "196418", "{out:?}");
        (one, many)
    })
}

/// `convert -f FORMAT --max-calls 200000` of both traces: the peak RSS of each run and
/// the file written; checks the bound (what the export adds over the tiny trace's ≤ 4×
/// the trace's size).
fn timeline_export_memory(format: &str) -> (Run, std::path::PathBuf) {
    let (one, many) = fib_traces();
    let dir = scratch(&format!("{format}-memory"));
    let size = std::fs::metadata(many).unwrap().len();
    let convert = |trace: &Path, name: &str| {
        let json = dir.join(name);
        let run = measure(
            &[
                "convert",
                "-f",
                format,
                "--max-calls",
                "200000",
                "-o",
                json.to_str().unwrap(),
                trace.to_str().unwrap(),
            ],
            &dir,
        );
        assert_eq!(run.status, 0, "{}", run.stderr);
        (run, json)
    };
    let (base, _) = convert(one, &format!("one.{format}.json"));
    let (run, json) = convert(many, &format!("many.{format}.json"));
    let size_mib = size as f64 / (1024.0 * 1024.0);
    let grown = run.max_rss_mib - base.max_rss_mib;
    eprintln!(
        "convert -f {format}: trace {size_mib:.1} MiB, peak {:.1} MiB (+{grown:.1} over a \
         trace of fib 2: {:.2}x the trace)",
        run.max_rss_mib,
        grown / size_mib
    );
    assert!(
        grown <= 4.0 * size_mib,
        "convert -f {format} of a {size_mib:.1} MiB trace grew {grown:.1} MiB over a tiny trace's (peak {:.1} MiB)",
        run.max_rss_mib
    );
    (run, json)
}

/// `convert -f firefox` of a traced run (#27 item 7): the writer streams the document
/// thread by thread, holding each thread's stack, frame and string tables, not the
/// document. The trace's calls outnumber the timeline's bound, as a large trace's do (the
/// default bound, 2 M calls, is reached by a trace of about 35 MB): the bound is scaled
/// down with the trace, so the memory the export adds is for the calls it shows and the
/// file. Before, `fxprof-processed-profile` built the whole document first: 6.7 times the
/// trace here (now 2.6).
#[test]
fn firefox_export_holds_at_most_four_times_the_trace() {
    let (_, json) = timeline_export_memory("firefox");
    // The document is whole: every kept call a marker, its samples rebuilt.
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("valid JSON");
    let threads = doc["threads"].as_array().unwrap();
    let markers: u64 = threads
        .iter()
        .map(|t| t["markers"]["length"].as_u64().unwrap())
        .sum();
    assert_eq!(markers, 200_000, "the calls the timeline keeps");
    assert!(
        threads
            .iter()
            .any(|t| t["samples"]["length"].as_u64().unwrap() > 200_000)
    );
}

/// `convert -f speedscope` of the same traced run (#27 item 7): the writer streams the
/// document profile by profile, holding one thread's spans, not its events. Before, it
/// built the whole document first: 4.05 times a 113 MB trace.
#[test]
fn speedscope_export_holds_at_most_four_times_the_trace() {
    let (_, json) = timeline_export_memory("speedscope");
    // The document is whole: every kept call opened and closed.
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("valid JSON");
    let events: usize = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "evented")
        .map(|p| p["events"].as_array().unwrap().len())
        .sum();
    assert_eq!(
        events,
        2 * 200_000,
        "the calls the timeline keeps, opened and closed"
    );
}
