//! `clrprof-bench waits`: what `record --waits` costs the Demo app (whose pipeline
//! contends on its aggregator lock), against the same recording without `--waits` and
//! against dotnet-trace collecting the runtime's Contention and ThreadPool keywords
//! (0x14000, informational) beside it. Runs alternate configuration by configuration;
//! prints the median CPU time (the process and its children) and wall time (the Demo does
//! a fixed amount of work, so its throughput is the inverse), and both ratios paired round
//! by round, with their p25–p75 spread.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use super::rounds::{Run, paired, pinned, spread};

const NONE: &str = "no profiler";
const SAMPLE: &str = "clrprof record (sample mode), no --waits";
const WAITS: &str = "clrprof record --waits (sample mode)";
const DOTNET_TRACE: &str = "dotnet-trace Contention+ThreadPool (0x14000:4)";

pub fn run(clrprof: &Path, runs: usize, cpus: Option<&str>) -> Result<()> {
    let demo = clrprof_testkit::app("Demo");
    let out = super::scratch().join("waits.clrprof");
    let nettrace = super::scratch().join("waits.nettrace");
    let dotnet_trace = super::find_dotnet_trace();
    let base = || super::dotnet_app(&demo, &[]);
    let sample = || super::recorded(clrprof, &[], &out, &demo, &[]);
    let waits = || super::recorded(clrprof, &["--waits"], &out, &demo, &[]);
    let dt = || {
        let mut c = Command::new(dotnet_trace.as_ref().expect("dotnet-trace"));
        c.args(["collect", "--providers"])
            .arg("Microsoft-Windows-DotNETRuntime:0x14000:4")
            .arg("-o")
            .arg(&nettrace)
            .arg("--")
            .arg(clrprof_testkit::dotnet())
            .arg(&demo.dll);
        c
    };
    let mut configs: Vec<(&str, &dyn Fn() -> Command)> =
        vec![(NONE, &base), (SAMPLE, &sample), (WAITS, &waits)];
    if dotnet_trace.is_some() {
        configs.push((DOTNET_TRACE, &dt));
    } else {
        println!(
            "(dotnet-trace not found: `dotnet tool install --tool-path target/tools dotnet-trace` adds it)"
        );
    }
    let pin: Vec<Box<dyn Fn() -> Command + '_>> = configs
        .iter()
        .map(|&(_, make)| -> Box<dyn Fn() -> Command + '_> {
            match cpus {
                Some(c) => Box::new(move || pinned(&make(), c)),
                None => Box::new(make),
            }
        })
        .collect();
    let configs: Vec<(&str, &dyn Fn() -> Command)> = configs
        .iter()
        .zip(&pin)
        .map(|(&(name, _), make)| (name, make.as_ref()))
        .collect();
    let measured: Vec<Vec<Run>> = super::rounds::interleaved(runs, &configs, None)?;
    println!("\nDemo app, {runs} interleaved rounds; CPU time = user+sys of the process tree");
    super::rounds::print_cpu_table(&configs, &measured);
    let cpu = |i: usize| -> Vec<f64> { measured[i].iter().map(|r| r.cpu.as_secs_f64()).collect() };
    // The Demo does a fixed amount of work: its wall time is its throughput's inverse.
    let wall =
        |i: usize| -> Vec<f64> { measured[i].iter().map(|r| r.wall.as_secs_f64()).collect() };
    let (r, r25, r75) = spread(&paired(&cpu(2), &cpu(1)));
    let (w, w25, w75) = spread(&paired(&wall(2), &wall(1)));
    println!(
        "  --waits over the same recording without it: CPU {r:.3} ({r25:.3}–{r75:.3}), wall {w:.3} ({w25:.3}–{w75:.3})"
    );
    if configs.len() > 3 {
        let (r, r25, r75) = spread(&paired(&cpu(2), &cpu(3)));
        let (w, w25, w75) = spread(&paired(&wall(2), &wall(3)));
        println!(
            "  --waits over dotnet-trace: CPU {r:.3} ({r25:.3}–{r75:.3}), wall {w:.3} ({w25:.3}–{w75:.3})"
        );
    }
    Ok(())
}
