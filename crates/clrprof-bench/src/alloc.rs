//! `clrprof-bench alloc`: the overhead of `record --alloc` at the default interval on
//! three allocation-heavy workloads and on the Demo app, against no profiler and against
//! dotnet-trace collecting the same runtime events (AllocationSampled on .NET 10) with
//! stacks. Workloads (Scenarios): alloc-sites, 1 KiB objects in a loop and nothing else
//! (~20 GB/s, the worst case); alloc-live, 8 KiB arrays, a fifth of them kept, so the GC
//! has work (~3 GB/s); alloc-small, ~10 small objects per record the way a serializer
//! makes them (~1.9 GB/s); and `startup`, a program that only starts and exits
//! (Scenarios sleeper seconds=0), whose rows are what `--alloc` costs once per process
//! (the runtime's `NativeRuntimeEventSource` building its events' metadata when the
//! session enables its provider; the agent's threads). Rows that split the cost: the agent without `--alloc` (events
//! mode); the runtime's feed alone (`CLRPROF_ALLOC_BENCH=floor`: the session is open and
//! every event is built and delivered, the agent returns at once: the floor no consumer
//! of this feed goes under); `--alloc` as it is (a stack seen before from the stack
//! cache, DoStackSnapshot of the allocating thread for the others); `--alloc` alone, without events mode's default event groups (`--events
//! none`: what a user who wants only allocations pays); the agent loaded with no events
//! at all, and the feed alone on top of it (both `--events none`), which split that
//! last row between the profiler's presence, the runtime's feed and the agent's work;
//! `--alloc` with every sample's stack walked by DoStackSnapshot, without the stack cache
//! (`CLRPROF_ALLOC_WALK=snapshot`); `--alloc` alone with names read through the runtime's
//! importer instead of the modules' images (`CLRPROF_NAMES=importer`, as before commit 51c82af),
//! and events mode the same way.
//! Runs alternate configuration by configuration; prints median wall and CPU time (the
//! process and its children) with the middle half of the runs, the CPU ratio to no
//! profiler paired round by round, and the increments of `--alloc` over events mode and
//! over the feed, and of the stack cache, paired the same way.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use super::rounds::{Run, paired, pinned, quantile, spread};

/// Which workloads and configurations to run, and where.
pub struct Filter {
    /// Workload keys (`alloc-sites`, `alloc-live`, `alloc-small`, `demo`, `startup`);
    /// empty: all.
    pub workloads: Vec<String>,
    /// Substrings of configuration names; empty: all. The baseline always runs.
    pub only: Vec<String>,
    /// `taskset -c` list every run is confined to.
    pub cpus: Option<String>,
}

const NONE: &str = "no profiler";
const EVENTS: &str = "clrprof events mode, no --alloc";
const FLOOR: &str = "the feed alone (CLRPROF_ALLOC_BENCH=floor)";
const ALLOC: &str = "clrprof --alloc (events mode)";
const ALLOC_ONLY: &str = "--alloc alone (--events none)";
const LOADED: &str = "the agent loaded, no events (--events none)";
const FLOOR_ONLY: &str = "the feed alone, no events (--events none, floor)";
const WALKED: &str = "--alloc, every stack walked (ALLOC_WALK=snapshot)";
const EVENTS_IMPORTER: &str =
    "events mode, no --alloc, names through the importer (CLRPROF_NAMES=importer)";
const IMPORTER: &str = "--events none --alloc, names through the importer (CLRPROF_NAMES=importer)";
const DOTNET_TRACE: &str = "dotnet-trace AllocationSampling";

/// Paired CPU ratio of configuration `a` to configuration `b`, as "median (p25–p75)",
/// and the ratio of their fastest tenths (10th-percentile CPU times).
fn ratio(runs: &[Vec<Run>], a: usize, b: usize) -> String {
    let cpu = |i: usize| -> Vec<f64> { runs[i].iter().map(|r| r.cpu.as_secs_f64()).collect() };
    let (r, r25, r75) = spread(&paired(&cpu(a), &cpu(b)));
    let p10 = quantile(&cpu(a), 0.1) / quantile(&cpu(b), 0.1);
    format!("{r:.3} ({r25:.3}–{r75:.3}), p10 {p10:.3}")
}

pub fn run_all(clrprof: &Path, runs: usize, filter: &Filter) -> Result<()> {
    let scenarios = clrprof_testkit::app("Scenarios");
    let demo = clrprof_testkit::app("Demo");
    let out = super::scratch().join("alloc.clrprof");
    let nettrace = super::scratch().join("alloc.nettrace");
    let dotnet_trace = super::find_dotnet_trace();
    if let Some(cpus) = &filter.cpus {
        println!("every run confined to CPUs {cpus} (taskset -c {cpus})");
    }
    for (key, title, app, args) in [
        (
            "alloc-sites",
            "allocation-heavy, the worst case: Scenarios alloc-sites mb=20000 (20 GiB of 1 KiB objects in a loop)",
            &scenarios,
            &["alloc-sites", "mb=20000"][..],
        ),
        (
            "alloc-live",
            "allocation-heavy with a live heap: Scenarios alloc-live mb=256 (8 KiB arrays, 256 MiB kept, 1 GiB dropped)",
            &scenarios,
            &["alloc-live", "mb=256"][..],
        ),
        (
            "alloc-small",
            "allocation-heavy, small objects: Scenarios alloc-small mb=2000 (2 GiB in ~10-object records)",
            &scenarios,
            &["alloc-small", "mb=2000"][..],
        ),
        ("demo", "Demo app (150 000 orders)", &demo, &[][..]),
        (
            "startup",
            "start-up and exit only, what --alloc costs once per process: Scenarios sleeper seconds=0",
            &scenarios,
            &["sleeper", "seconds=0"][..],
        ),
    ] {
        if !filter.workloads.is_empty() && !filter.workloads.iter().any(|w| w == key) {
            continue;
        }
        let base = || super::dotnet_app(app, args);
        let events = || super::recorded(clrprof, &["--mode", "events"], &out, app, args);
        let alloc_with = |env: Option<(&str, &str)>| {
            let mut c = super::recorded(clrprof, &["--mode", "events", "--alloc"], &out, app, args);
            if let Some((k, v)) = env {
                c.env(k, v);
            }
            c
        };
        let floor = || alloc_with(Some(("CLRPROF_ALLOC_BENCH", "floor")));
        let alloc = || alloc_with(None);
        let alloc_only = || {
            super::recorded(
                clrprof,
                &["--mode", "events", "--events", "none", "--alloc"],
                &out,
                app,
                args,
            )
        };
        let none_flags = ["--mode", "events", "--events", "none"];
        let loaded = || super::recorded(clrprof, &none_flags, &out, app, args);
        let floor_only = || {
            let mut c = super::recorded(
                clrprof,
                &["--mode", "events", "--events", "none", "--alloc"],
                &out,
                app,
                args,
            );
            c.env("CLRPROF_ALLOC_BENCH", "floor");
            c
        };
        let walked = || alloc_with(Some(("CLRPROF_ALLOC_WALK", "snapshot")));
        let events_importer = || {
            let mut c = events();
            c.env("CLRPROF_NAMES", "importer");
            c
        };
        let importer = || {
            let mut c = alloc_only();
            c.env("CLRPROF_NAMES", "importer");
            c
        };
        let dt = || {
            let mut c = Command::new(dotnet_trace.as_ref().expect("dotnet-trace"));
            // The same runtime feed: the AllocationSampling keyword (0x80000000000) at
            // informational level, with EventPipe's own stack per event.
            c.args(["collect", "--providers"])
                .arg("Microsoft-Windows-DotNETRuntime:0x80000000000:4")
                .arg("-o")
                .arg(&nettrace)
                .arg("--")
                .arg(clrprof_testkit::dotnet())
                .arg(&app.dll)
                .args(args);
            c
        };
        let mut configs: Vec<(&str, &dyn Fn() -> Command)> = vec![
            (NONE, &base),
            (EVENTS, &events),
            (FLOOR, &floor),
            (ALLOC, &alloc),
            (ALLOC_ONLY, &alloc_only),
            (LOADED, &loaded),
            (FLOOR_ONLY, &floor_only),
            (WALKED, &walked),
            (IMPORTER, &importer),
            (EVENTS_IMPORTER, &events_importer),
        ];
        if dotnet_trace.is_some() {
            configs.push((DOTNET_TRACE, &dt));
        } else {
            println!(
                "(dotnet-trace not found: `dotnet tool install --tool-path target/tools dotnet-trace` adds it)"
            );
        }
        if !filter.only.is_empty() {
            configs.retain(|(name, _)| {
                *name == NONE || filter.only.iter().any(|o| name.contains(o.as_str()))
            });
        }
        let pin: Vec<Box<dyn Fn() -> Command + '_>> = configs
            .iter()
            .map(|&(_, make)| -> Box<dyn Fn() -> Command + '_> {
                match &filter.cpus {
                    Some(cpus) => Box::new(move || pinned(&make(), cpus)),
                    None => Box::new(make),
                }
            })
            .collect();
        let configs: Vec<(&str, &dyn Fn() -> Command)> = configs
            .iter()
            .zip(&pin)
            .map(|(&(name, _), make)| (name, make.as_ref()))
            .collect();
        let measured = super::rounds::interleaved(runs, &configs, None)?;
        println!("\n{title}, {runs} interleaved rounds; CPU time = user+sys of the process tree");
        super::rounds::print_cpu_table(&configs, &measured);
        let at = |name: &str| configs.iter().position(|(n, _)| *n == name);
        let mut increments = Vec::new();
        for (what, a, b) in [
            ("--alloc over events mode", ALLOC, EVENTS),
            ("the feed over events mode", FLOOR, EVENTS),
            (
                "--alloc over the feed (the agent's own work per sample)",
                ALLOC,
                FLOOR,
            ),
            (
                "without events: the feed over the agent loaded",
                FLOOR_ONLY,
                LOADED,
            ),
            (
                "--alloc alone over the feed alone (the agent's own work)",
                ALLOC_ONLY,
                FLOOR_ONLY,
            ),
            (
                "--alloc over every stack walked (what the stack cache saves)",
                ALLOC,
                WALKED,
            ),
            (
                "--alloc alone over names through the importer (what names from the images save)",
                ALLOC_ONLY,
                IMPORTER,
            ),
            (
                "events mode over names through the importer",
                EVENTS,
                EVENTS_IMPORTER,
            ),
        ] {
            if let (Some(a), Some(b)) = (at(a), at(b)) {
                increments.push(format!("{what}: {}", ratio(&measured, a, b)));
            }
        }
        if !increments.is_empty() {
            println!("  {}", increments.join("; "));
        }
        if key == "demo" && filter.cpus.is_none() {
            println!(
                "  (the Demo's pipeline threads spin-wait for each other on more than one CPU, which moves its CPU time by ±10 %; `--workloads demo --cpus 0 --runs 30` measures it steadier)"
            );
        }
    }
    Ok(())
}
