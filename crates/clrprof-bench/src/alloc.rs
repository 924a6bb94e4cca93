//! `clrprof-bench alloc`: the overhead of `record --alloc` at the default interval on two
//! allocation-heavy workloads (Scenarios alloc-sites: 1 KiB objects in a loop and nothing
//! else, the worst case; alloc-live: 8 KiB objects, a fifth of them kept, so the GC has
//! work) and on the Demo app, against no profiler and against dotnet-trace collecting the same runtime
//! events (AllocationSampled on .NET 10) with stacks; two more rows split the cost: the
//! agent without `--alloc`, and `--alloc` thinned to one sample in ten (the runtime's
//! feed stays the same, the agent's work per sample drops). Runs alternate configuration by
//! configuration; prints median wall and CPU time (the process and its children, from
//! this process's `cutime`/`cstime`) with the spread (min–max) of each.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Wall and CPU seconds of one run.
#[derive(Clone, Copy)]
struct Run {
    wall: f64,
    cpu: f64,
}

/// CPU seconds of this process's waited-for children (`/proc/self/stat` fields 16–17,
/// in clock ticks of 1/100 s on Linux).
fn children_cpu() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let after = stat.rsplit_once(')').context("stat")?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    // After the name: field 3 is index 0, so cutime (16) is index 13, cstime (17) 14.
    let t: u64 = f[13].parse::<u64>()? + f[14].parse::<u64>()?;
    Ok(t as f64 / 100.0)
}

fn run(mut cmd: Command) -> Result<Run> {
    let cpu0 = children_cpu()?;
    let t = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output()?;
    let wall = t.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(Run {
        wall,
        cpu: children_cpu()? - cpu0,
    })
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn compare(title: &str, runs: usize, configs: &[(&str, &dyn Fn() -> Command)]) -> Result<()> {
    let mut all: Vec<Vec<Run>> = vec![Vec::new(); configs.len()];
    for (_, make) in configs {
        run(make())?; // warm-up
    }
    for _ in 0..runs {
        for (i, (_, make)) in configs.iter().enumerate() {
            all[i].push(run(make())?);
        }
    }
    println!("\n{title}, {runs} runs each, interleaved");
    println!(
        "{:<36} {:>10} {:>15} {:>8} {:>10} {:>15} {:>8}",
        "configuration", "wall ms", "(min–max)", "ratio", "CPU ms", "(min–max)", "ratio"
    );
    let base = (
        stats(all[0].iter().map(|r| r.wall).collect()).0,
        stats(all[0].iter().map(|r| r.cpu).collect()).0,
    );
    for ((name, _), runs) in configs.iter().zip(&all) {
        let w = stats(runs.iter().map(|r| r.wall).collect());
        let c = stats(runs.iter().map(|r| r.cpu).collect());
        println!(
            "{name:<36} {:>10.0} {:>15} {:>8.3} {:>10.0} {:>15} {:>8.3}",
            w.0 * 1e3,
            format!("{:.0}–{:.0}", w.1 * 1e3, w.2 * 1e3),
            w.0 / base.0,
            c.0 * 1e3,
            format!("{:.0}–{:.0}", c.1 * 1e3, c.2 * 1e3),
            c.0 / base.1,
        );
    }
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
