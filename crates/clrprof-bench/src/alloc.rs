//! `clrprof-bench alloc`: the overhead of `record --alloc` at the default interval on two
//! allocation-heavy workloads (Scenarios alloc-sites: 1 KiB objects in a loop and nothing
//! else, the worst case; alloc-live: 8 KiB objects, a fifth of them kept, so the GC has
//! work) and on the Demo app, against no profiler and against dotnet-trace collecting the same runtime
//! events (AllocationSampled on .NET 10) with stacks; two more rows split the cost: the
//! agent without `--alloc`, and `--alloc` thinned to one sample in ten (the runtime's
//! feed stays the same, the agent's work per sample drops). Runs alternate configuration by
//! configuration; prints median wall and CPU time (the process and its children) with
//! the middle half of the runs, and the CPU ratio to no profiler paired round by round.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

/// Interleaved rounds, then median wall and CPU time with their middle half and the
/// paired CPU ratio to the first configuration (`rounds.rs`, as the sample bench).
fn compare(title: &str, runs: usize, configs: &[(&str, &dyn Fn() -> Command)]) -> Result<()> {
    let measured = super::rounds::interleaved(runs, configs, None)?;
    println!("\n{title}, {runs} interleaved rounds; CPU time = user+sys of the process tree");
    super::rounds::print_cpu_table(configs, &measured);
    Ok(())
}

pub fn run_all(clrprof: &Path, runs: usize) -> Result<()> {
    let scenarios = clrprof_testkit::app("Scenarios");
    let demo = clrprof_testkit::app("Demo");
    let out = super::scratch().join("alloc.clrprof");
    let nettrace = super::scratch().join("alloc.nettrace");
    let dotnet_trace = super::find_dotnet_trace();
    for (title, app, args) in [
        (
            "allocation-heavy: Scenarios alloc-sites mb=20000 (20 GiB of 1 KiB objects in a loop)",
            &scenarios,
            &["alloc-sites", "mb=20000"][..],
        ),
        (
            "allocation-heavy with a live heap: Scenarios alloc-live mb=256 (256 MiB kept, 1 GiB dropped)",
            &scenarios,
            &["alloc-live", "mb=256"][..],
        ),
        ("Demo app (150 000 orders)", &demo, &[][..]),
    ] {
        let base = || super::dotnet_app(app, args);
        let events = || super::recorded(clrprof, &["--mode", "events"], &out, app, args);
        let alloc = || super::recorded(clrprof, &["--mode", "events", "--alloc"], &out, app, args);
        // The runtime still samples every 100 KiB; the agent keeps one in ten: what is
        // left of the overhead is the runtime's feed, the rest the agent's work per sample.
        let thinned = || {
            super::recorded(
                clrprof,
                &["--mode", "events", "--alloc", "--alloc-interval", "1048576"],
                &out,
                app,
                args,
            )
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
            ("no profiler", &base),
            ("clrprof events mode, no --alloc", &events),
            ("clrprof --alloc (events mode)", &alloc),
            ("clrprof --alloc-interval 1048576", &thinned),
        ];
        if dotnet_trace.is_some() {
            configs.push(("dotnet-trace AllocationSampling", &dt));
        } else {
            println!(
                "(dotnet-trace not found: `dotnet tool install --tool-path target/tools dotnet-trace` adds it)"
            );
        }
        compare(title, runs, &configs)?;
    }
    Ok(())
}
