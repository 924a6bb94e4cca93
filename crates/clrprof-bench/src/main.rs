//! `clrprof-bench <what>`: runs a workload with and without the profiler in one run,
//! alternating, and prints the figure the docs quote. Never a timed test: the numbers
//! are printed, a person reads them.
//!
//!   cargo run --release -p clrprof-bench -- events      # events-mode overhead on the demo
//!   cargo run --release -p clrprof-bench -- sample      # sampling overhead at 99 and 999 Hz (+ dotnet-trace)
//!   cargo run --release -p clrprof-bench -- trace       # ns per traced call (enter+leave)
//!   cargo run --release -p clrprof-bench -- args        # ns per call with arguments recorded
//!   cargo run --release -p clrprof-bench -- attach      # attach and detach latency
//!   cargo run --release -p clrprof-bench -- soak        # stress cases + 50 attach/detach cycles
//!   cargo run --release -p clrprof-bench -- heap        # heap snapshot of 10 M objects
//!   cargo run --release -p clrprof-bench -- live        # `dump` wall time, `top`'s cost to the target

mod soak;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

mod heap;
mod live;

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    what: What,
    /// Runs per configuration (medians are reported)
    #[arg(long, global = true, default_value_t = 5)]
    runs: usize,
}

#[derive(Subcommand)]
enum What {
    /// Events mode on the Demo app
    Events,
    /// Sampling at 99 and 999 Hz on a two-thread CPU-bound app, and dotnet-trace if available
    Sample,
    /// ELT tracing on a call-dense workload (recursive Fib)
    Trace,
    /// `--args` (ELT slow path): ns per call with arguments and return value recorded,
    /// for `int Fib(int)` and for a method taking a string and a struct
    Args,
    /// Attach and detach latency on a running app
    Attach,
    /// Stress and soak: the stress cases of issue #16 under the profiler, then attach/detach
    /// cycles on a loaded target; prints crashes, hangs, memory growth per cycle and the
    /// events lost with their reasons
    Soak {
        /// Attach/detach cycles
        #[arg(long, default_value_t = 50)]
        cycles: usize,
    },
    /// One heap snapshot of a large heap: pause, objects/s, bytes/object, report time and memory
    Heap {
        /// Objects in the heap
        #[arg(long, default_value_t = 10_000_000)]
        objects: u64,
    },
    /// `clrprof dump` wall time; `clrprof top`'s cost to a running app (its throughput
    /// with and without top attached, alternating)
    Live {
        /// Seconds per throughput window
        #[arg(long, default_value_t = 3.0)]
        window: f64,
    },
}

fn main() -> Result<()> {
    let args = Args::parse();
    match args.what {
        What::Events => events(args.runs),
        What::Sample => sample(args.runs),
        What::Trace => trace(args.runs),
        What::Args => args_bench(args.runs),
        What::Attach => attach(args.runs),
        What::Soak { cycles } => soak::run(&clrprof()?, cycles),
        What::Heap { objects } => heap::run(objects),
        What::Live { window } => live::run(&clrprof()?, args.runs, window),
    }
}

fn clrprof() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let p = exe.parent().context("exe dir")?.join("clrprof");
    if !p.is_file() {
        bail!(
            "{} not found: build it first (cargo build --release -p clrprof-cli -p clrprof-agent)",
            p.display()
        );
    }
    Ok(p)
}

fn scratch() -> PathBuf {
    let d = clrprof_testkit::target_dir().join("bench");
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Runs `cmd` to completion and returns its wall time.
fn time(mut cmd: Command) -> Result<Duration> {
    let t = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output()?;
    let d = t.elapsed();
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    Ok(d)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Alternates the configurations run by run so drift hits them all alike.
fn compare(runs: usize, configs: &[(&str, &dyn Fn() -> Command)]) -> Result<Vec<Duration>> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    // One warm-up round (disk cache, JIT of the SDK host).
    for (_, make) in configs {
        time(make())?;
    }
    for _ in 0..runs {
        for (i, (_, make)) in configs.iter().enumerate() {
            times[i].push(time(make())?);
        }
    }
    let medians: Vec<Duration> = times.into_iter().map(median).collect();
    let base = medians[0];
    println!(
        "{:<32} {:>12} {:>10}",
        "configuration", "median ms", "ratio"
    );
    for ((name, _), m) in configs.iter().zip(&medians) {
        println!(
            "{name:<32} {:>12.1} {:>10.3}",
            ms(*m),
            m.as_secs_f64() / base.as_secs_f64()
        );
    }
    Ok(medians)
}

fn dotnet_app(app: &clrprof_testkit::BuiltApp, args: &[&str]) -> Command {
    let mut c = Command::new(clrprof_testkit::dotnet());
    c.arg(&app.dll).args(args);
    c
}

fn recorded(
    clrprof: &Path,
    flags: &[&str],
    out: &Path,
    app: &clrprof_testkit::BuiltApp,
    args: &[&str],
) -> Command {
    let mut c = Command::new(clrprof);
    c.arg("record")
        .arg("-q")
        .arg("--force") // runs reuse the file; clrprof never overwrites unasked
        .arg("-o")
        .arg(out)
        .args(flags)
        .arg("--");
    c.arg(clrprof_testkit::dotnet()).arg(&app.dll).args(args);
    c
}

fn events(runs: usize) -> Result<()> {
    let clrprof = clrprof()?;
    let demo = clrprof_testkit::app("Demo");
    let out = scratch().join("events.clrprof");
    println!("events mode, Demo app, {runs} runs each (median wall time of the whole process)");
    let m = compare(
        runs,
        &[
            ("no profiler", &|| dotnet_app(&demo, &[])),
            ("clrprof --mode events", &|| {
                recorded(&clrprof, &["--mode", "events"], &out, &demo, &[])
            }),
        ],
    )?;
    println!(
        "events-mode overhead: {:+.1} %",
        100.0 * (m[1].as_secs_f64() / m[0].as_secs_f64() - 1.0)
    );
    Ok(())
}

fn sample(runs: usize) -> Result<()> {
    let clrprof = clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    let out = scratch().join("sample.clrprof");
    // ~4.5 s of work: long enough that the profiler's fixed start-up and exit cost
    // (measured separately by the 1 Hz row) does not dominate the per-second cost.
    let args = ["crunch", "60000"];
    let dotnet_trace = find_dotnet_trace();
    let nettrace = scratch().join("bench.nettrace");
    println!("sampling, Scenarios crunch (fixed CPU work on 2 threads), {runs} runs each");
    let base = || dotnet_app(&app, &args);
    let s99 = || {
        recorded(
            &clrprof,
            &["--mode", "sample", "--rate", "99", "--sampler", "signal"],
            &out,
            &app,
            &args,
        )
    };
    let s999 = || {
        recorded(
            &clrprof,
            &["--mode", "sample", "--rate", "999", "--sampler", "signal"],
            &out,
            &app,
            &args,
        )
    };
    let s1 = || {
        recorded(
            &clrprof,
            &["--mode", "sample", "--rate", "1", "--sampler", "signal"],
            &out,
            &app,
            &args,
        )
    };
    let suspend99 = || {
        recorded(
            &clrprof,
            &["--mode", "sample", "--rate", "99", "--sampler", "suspend"],
            &out,
            &app,
            &args,
        )
    };
    let dt = |rate_hz: u32| {
        let trace = dotnet_trace.clone();
        let nt = nettrace.clone();
        let dll = app.dll.clone();
        move || {
            let mut c = Command::new(trace.as_ref().expect("dotnet-trace"));
            // The EventPipe thread sampler (~100 Hz, fixed by the runtime); dotnet-trace 10's
            // `cpu-sampling` profile is kernel sampling through `collect-linux` instead.
            c.arg("collect")
                .arg("--profile")
                .arg("dotnet-sampled-thread-time")
                .arg("-o")
                .arg(&nt);
            let _ = rate_hz;
            c.arg("--")
                .arg(clrprof_testkit::dotnet())
                .arg(&dll)
                .args(args);
            c
        }
    };
    let dt99 = dt(99);
    let mut configs: Vec<(&str, &dyn Fn() -> Command)> = vec![
        ("no profiler", &base),
        ("clrprof sample 1 Hz (start-up/exit cost)", &s1),
        ("clrprof sample 99 Hz (signal)", &s99),
        ("clrprof sample 999 Hz (signal)", &s999),
        ("clrprof sample 99 Hz (suspend)", &suspend99),
    ];
    if dotnet_trace.is_some() {
        configs.push(("dotnet-trace sampled-thread-time", &dt99));
    } else {
        println!(
            "(dotnet-trace not found: `dotnet tool install --tool-path target/tools dotnet-trace` adds it)"
        );
    }
    let m = compare(runs, &configs)?;
    for (i, (name, _)) in configs.iter().enumerate().skip(1) {
        println!(
            "{name}: overhead {:+.1} %",
            100.0 * (m[i].as_secs_f64() / m[0].as_secs_f64() - 1.0)
        );
    }
    Ok(())
}

fn find_dotnet_trace() -> Option<PathBuf> {
    let local = clrprof_testkit::target_dir()
        .join("tools")
        .join("dotnet-trace");
    if local.is_file() {
        return Some(local);
    }
    let st = Command::new(clrprof_testkit::dotnet())
        .args(["tool", "install", "--tool-path"])
        .arg(clrprof_testkit::target_dir().join("tools"))
        .arg("dotnet-trace")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    (st.success() && local.is_file()).then_some(local)
}

fn trace(runs: usize) -> Result<()> {
    const ONE: &[&str] = &["fib", "32"];
    const TWO: &[&str] = &["fib", "32", "threads=2"];
    let clrprof = clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    let out = scratch().join("trace.clrprof");
    // Calls made by Fib(32): 2·F(33) − 1.
    let calls: f64 = 7_049_155.0;
    println!(
        "tracing, Scenarios fib 32 ({calls} calls of Fib), {runs} runs each; \
         Fib ms = the app's own stopwatch around Fib(32)"
    );
    let plain = |args: &'static [&'static str]| {
        let app = app.clone();
        move || dotnet_app(&app, args)
    };
    let no_inlining = |args: &'static [&'static str]| {
        let (clrprof, app, out) = (clrprof.clone(), app.clone(), out.clone());
        move || {
            let mut c = recorded(
                &clrprof,
                &["--mode", "events", "--events", "none"],
                &out,
                &app,
                args,
            );
            c.env("DOTNET_JitNoInline", "1");
            c
        }
    };
    let traced = |args: &'static [&'static str], probe: Option<&'static str>| {
        let (clrprof, app, out) = (clrprof.clone(), app.clone(), out.clone());
        move || {
            let mut c = recorded(
                &clrprof,
                &["--mode", "trace", "--include", "Scenarios.*"],
                &out,
                &app,
                args,
            );
            if let Some(p) = probe {
                c.env("CLRPROF_TRACE_PROBE", p);
            }
            c
        }
    };
    let (none1, events1, noop1, clock1, full1) = (
        plain(ONE),
        no_inlining(ONE),
        traced(ONE, Some("noop")),
        traced(ONE, Some("clock")),
        traced(ONE, None),
    );
    let configs: [(&str, &dyn Fn() -> Command); 5] = [
        ("no profiler", &none1),
        ("events mode, inlining off", &events1),
        ("trace, hooks only return", &noop1),
        ("trace, hooks only read the TSC", &clock1),
        ("clrprof --mode trace", &full1),
    ];
    let (wall, fib) = run_fib_configs(runs, &configs)?;
    // The last run of the round was the full trace: check it recorded what it cost.
    verify_trace(&clrprof, &out, "Scenarios.FibScenario.Fib", calls as u64)?;
    let per_call = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) / calls * 1e9;
    println!(
        "ns added per traced call (enter+leave, recorded to disk): {:.1} ns inside Fib; \
         {:.1} ns over the whole process (wall, includes writing the rest at exit)",
        per_call(fib[4], fib[1]),
        per_call(wall[4], wall[1])
    );
    println!(
        "of which the JIT's hook calls: {:.1} ns, two TSC reads: {:.1} ns, the record: {:.1} ns; \
         slowdown vs no profiler {:.2}× (whole process), {:.2}× (Fib)",
        per_call(fib[2], fib[1]),
        per_call(fib[3], fib[2]),
        per_call(fib[4], fib[3]),
        wall[4].as_secs_f64() / wall[0].as_secs_f64(),
        fib[4].as_secs_f64() / fib[0].as_secs_f64()
    );

    // Two traced threads on a 2-core machine: the writer no longer has a core to itself,
    // so its copying shows.
    let (none2, events2, full2) = (plain(TWO), no_inlining(TWO), traced(TWO, None));
    let configs2: [(&str, &dyn Fn() -> Command); 3] = [
        ("no profiler, 2 threads", &none2),
        ("events, inlining off, 2 threads", &events2),
        ("clrprof --mode trace, 2 threads", &full2),
    ];
    println!("\ntwo threads each making the same {calls} calls at once (both cores busy):");
    let (wall2, fib2) = run_fib_configs(runs, &configs2)?;
    println!(
        "ns added per traced call with both cores busy: {:.1} ns inside Fib (per thread; \
         the writer competes with the app for a core); slowdown {:.2}× (whole process)",
        per_call(fib2[2], fib2[1]),
        wall2[2].as_secs_f64() / wall2[0].as_secs_f64()
    );
    Ok(())
}

/// Reports `trace` and checks that `function` was recorded `calls` times with nothing
/// lost: a figure for a tracer that dropped events would be meaningless.
fn verify_trace(clrprof: &Path, trace: &Path, function: &str, calls: u64) -> Result<()> {
    let out = Command::new(clrprof)
        .args(["report", "--json"])
        .arg(trace)
        .output()?;
    if !out.status.success() {
        bail!(
            "clrprof report failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let got = r["functions"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == function))
        .and_then(|f| f["calls"].as_u64())
        .unwrap_or(0);
    let lost = r["lost_events"].as_u64().unwrap_or(u64::MAX);
    let bytes = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
    if got != calls || lost != 0 {
        bail!(
            "the traced run recorded {got} calls of {function} (want {calls}), {lost} events lost"
        );
    }
    println!(
        "verified: the last traced run recorded all {calls} calls of {function}, 0 events lost \
         ({:.0} MB of trace)",
        bytes as f64 / 1e6
    );
    Ok(())
}

/// Runs each configuration `runs` times (after a warm-up round), alternating them, and
/// prints a table; returns the median wall times and the median `fib_us` of each.
fn run_fib_configs(
    runs: usize,
    configs: &[(&str, &dyn Fn() -> Command)],
) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let calls = 7_049_155.0;
    let mut wall: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    let mut fib: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    for round in 0..=runs {
        for (i, (_, make)) in configs.iter().enumerate() {
            let (w, f) = time_fib(make())?;
            // Round 0 warms up (disk cache, the SDK host's JIT).
            if round > 0 {
                wall[i].push(w);
                fib[i].push(f);
            }
        }
    }
    let wall: Vec<Duration> = wall.into_iter().map(median).collect();
    let fib: Vec<Duration> = fib.into_iter().map(median).collect();
    println!(
        "{:<32} {:>10} {:>8} {:>9} {:>14}",
        "configuration", "wall ms", "ratio", "Fib ms", "Fib ns/call"
    );
    for (i, (name, _)) in configs.iter().enumerate() {
        println!(
            "{name:<32} {:>10.1} {:>8.3} {:>9.1} {:>14.1}",
            ms(wall[i]),
            wall[i].as_secs_f64() / wall[0].as_secs_f64(),
            ms(fib[i]),
            fib[i].as_secs_f64() / calls * 1e9
        );
    }
    Ok((wall, fib))
}

/// Runs the Scenarios app; returns the process's wall time and the `fib_us` it printed.
fn time_fib(cmd: Command) -> Result<(Duration, Duration)> {
    time_key(cmd, "fib_us")
}

/// Runs the Scenarios app; returns the process's wall time and the µs it printed as `key`.
fn time_key(mut cmd: Command, key: &str) -> Result<(Duration, Duration)> {
    let t = Instant::now();
    let out = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).output()?;
    let wall = t.elapsed();
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let us: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {key} in the app's output: {stdout}"))?;
    Ok((wall, Duration::from_micros(us)))
}

fn attach(runs: usize) -> Result<()> {
    const DURATION_S: f64 = 0.3;
    let clrprof = clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    let mut attaches = Vec::new();
    let mut detaches = Vec::new();
    let mut overruns = Vec::new();
    for i in 0..runs {
        let mut child = dotnet_app(&app, &["serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().context("stdout")?),
            &mut line,
        )?;
        let pid: u32 = line
            .trim()
            .strip_prefix("READY ")
            .context("READY")?
            .parse()?;
        let out = scratch().join(format!("attach-{i}.clrprof"));
        let started = Instant::now();
        let o = Command::new(&clrprof)
            .args(["record", "--pid", &pid.to_string(), "--duration"])
            .arg(DURATION_S.to_string())
            .args(["--force", "-o"])
            .arg(&out)
            .output()?;
        let wall = started.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() {
            bail!("clrprof record --pid failed: {err}");
        }
        let attach = ms_after(&err, "attached to pid", " in ")
            .with_context(|| format!("no attach latency in: {err}"))?;
        let detach = ms_after(&err, "detached from pid", " in ")
            .with_context(|| format!("no detach latency in: {err}"))?;
        attaches.push(attach);
        detaches.push(detach);
        overruns.push(ms(wall) - DURATION_S * 1e3);
        drop(child.stdin.take());
        let _ = child.wait();
    }
    let summary = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        format!(
            "median {:.1} ms, min {:.1}, max {:.1}",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        )
    };
    println!(
        "attach latency (clrprof start → profiler confirmed recording), {runs} runs: {}",
        summary(&mut attaches)
    );
    println!(
        "detach latency (end of the recording window → library unloaded), {runs} runs: {}",
        summary(&mut detaches)
    );
    println!(
        "`record --pid --duration {DURATION_S}` wall time beyond the window, {runs} runs: {}",
        summary(&mut overruns)
    );
    Ok(())
}

/// The number of milliseconds after `sep` on the first stderr line containing `marker`.
fn ms_after(stderr: &str, marker: &str, sep: &str) -> Option<f64> {
    stderr
        .lines()
        .filter(|l| l.contains(marker))
        .find_map(|l| l.split(sep).nth(1)?.split(" ms").next()?.parse().ok())
}

/// `args`: the ELT slow path's cost. Four configurations, alternated run by run, on two
/// workloads: `fib 27` (635,621 calls of `int Fib(int)`) and `args bench=N` (N calls of
/// `int Describe(string, ID)`); the figure is the app's own stopwatch around the calls.
fn args_bench(runs: usize) -> Result<()> {
    let clrprof = clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    let out = scratch().join("args.clrprof");
    let workloads: [(&str, &'static [&'static str], &str, &str, f64); 2] = [
        (
            "Fib(int) -> int",
            &["fib", "27"],
            "fib_us",
            "Scenarios.FibScenario.Fib",
            635_621.0,
        ),
        (
            "Describe(string, ID) -> int",
            &["args", "bench=300000"],
            "describe_us",
            "Scenarios.ArgTargets.Describe",
            300_000.0,
        ),
    ];
    for (label, app_args, key, function, calls) in workloads {
        let make = |flags: Vec<&'static str>| {
            let (clrprof, app, out) = (clrprof.clone(), app.clone(), out.clone());
            move || recorded(&clrprof, &flags, &out, &app, app_args)
        };
        let base = make(vec!["--mode", "events", "--events", "none"]);
        let base = move || {
            let mut c = base();
            c.env("DOTNET_JitNoInline", "1");
            c
        };
        let fast = make(vec!["--mode", "trace", "--include", "Scenarios.*"]);
        let slow = make(vec![
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--args",
            "Scenarios.NoSuchMethod",
        ]);
        let with_args = make(vec![
            "--mode",
            "trace",
            "--include",
            "Scenarios.*",
            "--args",
            function,
        ]);
        let configs: [(&str, &dyn Fn() -> Command); 4] = [
            ("events, inlining off", &base),
            ("trace (fast path)", &fast),
            ("trace --args (none match)", &slow),
            ("trace --args (this one)", &with_args),
        ];
        println!("\n{label}: {calls} calls, {runs} runs each (app's stopwatch around the calls)");
        let mut t: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
        for round in 0..=runs {
            for (i, (_, make)) in configs.iter().enumerate() {
                let (_, us) = time_key(make(), key)?;
                if round > 0 {
                    t[i].push(us.as_secs_f64() * 1e9 / calls);
                }
            }
        }
        println!(
            "{:<30} {:>12} {:>10} {:>14}",
            "configuration", "ns/call", "spread", "added ns/call"
        );
        let med = |v: &Vec<f64>| {
            let mut v = v.clone();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let base_ns = med(&t[0]);
        for (i, (name, _)) in configs.iter().enumerate() {
            let m = med(&t[i]);
            let (lo, hi) = t[i]
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
            println!(
                "{name:<30} {m:>12.1} {:>10} {:>14.1}",
                format!("{lo:.0}–{hi:.0}"),
                m - base_ns
            );
        }
        // The last run recorded `function`'s values: check every call is there.
        let rep = Command::new(&clrprof)
            .args([
                "report",
                "--calls",
                function,
                "--json",
                "--limit",
                "100000000",
            ])
            .arg(&out)
            .output()?;
        let inv: Vec<serde_json::Value> = serde_json::from_slice(&rep.stdout).unwrap_or_default();
        let with_ret = inv.iter().filter(|i| !i["return"].is_null()).count();
        println!(
            "verified: the last run recorded {} invocations of {function} with {with_ret} return values (want {calls})",
            inv.len()
        );
    }
    Ok(())
}
