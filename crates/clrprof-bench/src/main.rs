//! `clrprof-bench <what>`: runs a workload with and without the profiler in one run,
//! alternating, and prints the figure the docs quote. Never a timed test: the numbers
//! are printed, a person reads them.
//!
//!   cargo run --release -p clrprof-bench -- events      # events-mode overhead on the demo
//!   cargo run --release -p clrprof-bench -- sample      # sampling overhead at 99 and 999 Hz (+ dotnet-trace)
//!   cargo run --release -p clrprof-bench -- sample --busy  # ticks kept on a busy server, and why not
//!   cargo run --release -p clrprof-bench -- trace       # ns per traced call (enter+leave)
//!   cargo run --release -p clrprof-bench -- args        # ns per call with arguments recorded
//!   cargo run --release -p clrprof-bench -- attach      # attach and detach latency
//!   cargo run --release -p clrprof-bench -- soak        # stress cases + 50 attach/detach cycles
//!   cargo run --release -p clrprof-bench -- soak --sampler-runs 2000   # short 99 Hz runs, target crashes counted
//!   cargo run --release -p clrprof-bench -- heap        # heap snapshots of 10 M objects (+ dotnet-gcdump)
//!   cargo run --release -p clrprof-bench -- alloc       # `record --alloc` overhead (+ dotnet-trace)
//!   cargo run --release -p clrprof-bench -- live        # `dump` wall time, `top`'s cost to the target
//!   cargo run --release -p clrprof-bench -- waits       # `record --waits` on the Demo (+ dotnet-trace)
//!   cargo run --release -p clrprof-bench -- push-soak   # `record --alloc --push` RSS per minute and its slope
//!   cargo run --release -p clrprof-bench -- coverage    # an xunit suite under clrprof coverage vs coverlet; ns per counted hit
//!   cargo run --release -p clrprof-bench -- probes      # ns per IL-probed call (attach) vs unprobed vs startup ELT
//!   cargo run --release -p clrprof-bench -- read        # `report`/`convert` events/s on one core and on two

mod alloc;
mod busy;
mod coverage;
mod push_soak;
mod soak;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

mod heap;
mod hostile;
mod live;
mod machine;
mod probes;
mod rounds;
mod waits;

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
    Sample {
        /// Only the configurations whose name contains one of these (comma-separated,
        /// e.g. `999,99 Hz (signal)`); the no-profiler baseline always runs
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Another build's `clrprof` (its agent next to it): adds its 99 and 999 Hz signal
        /// rows, for a before/after comparison under the same load
        #[arg(long)]
        compare_with: Option<PathBuf>,
        /// Instead: the ticks kept at 999 and 99 Hz on a busy server (more CPU-bound app
        /// threads than cores, beside a `yes` hog), by reason of the ticks and threads missed
        #[arg(long)]
        busy: bool,
    },
    /// ELT tracing on a call-dense workload (recursive Fib)
    Trace,
    /// `report` and `convert -f folded` of the two-thread trace of `trace` (or of FILE),
    /// pinned to one CPU (`taskset -c 0`: the reader reads on the caller's thread) and
    /// on two (each trace thread's calls on one of two workers), alternated: events per
    /// second and the ratio
    Read {
        /// A trace to read instead of recording `fib 32 threads=2`
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Another build's `clrprof`: adds its one- and two-CPU rows (as it reads by
        /// default), interleaved with these, and the paired ratios of CPU and wall time
        /// (this build's over it)
        #[arg(long)]
        compare_with: Option<PathBuf>,
    },
    /// `--args`: ns per call with arguments and return value recorded (in the agent's
    /// assembly hooks, the default, and through the runtime's ELT slow path of
    /// `CLRPROF_ARGS_FAST=0`),
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
        /// Instead: this many short sampled runs (99 Hz, nice'd) of `exceptions 2` and of
        /// a one-second thread churn, alternating, counting the targets that crash (the
        /// rare sampler-thread segfault inside libcoreclr, issue #26 item 3)
        #[arg(long, default_value_t = 0)]
        sampler_runs: usize,
        /// Instead: this many attach/detach cycles on an idle `sleeper` on .NET 8, 9 and 10
        /// (after 20 that settle), the target's resident growth per cycle outside the
        /// agent library and what malloc's thread arenas hold (issue #26 item 10)
        #[arg(long, default_value_t = 0)]
        idle_cycles: usize,
        /// With --idle-cycles: a busy loop (`yes > /dev/null`) beside the targets
        #[arg(long)]
        busy: bool,
        /// With --idle-cycles: another build's `clrprof` (its agent next to it), cycled on
        /// a second target of each runtime, interleaved cycle by cycle with this build's
        #[arg(long)]
        compare_with: Option<PathBuf>,
    },
    /// Issue #26's hostile campaign, rerun: N runs of each item (refused second attach with
    /// a planted PID.error then re-attach, hostile `--args` shapes, a FIFO at CLRPROF_LOG,
    /// control-socket floods then the owner killed, the CLI killed during attach, sampled
    /// `exceptions 2`, and LCG methods freed under a 999 Hz sampler: `dynamic-churn`) on
    /// .NET 8, 9, 10 in turn; one line per item: runs, crashes, hangs, leaks, the first failure
    Hostile {
        /// Rounds (each runs every item once)
        #[arg(long, default_value_t = 30)]
        n: usize,
        /// Start no round after this many minutes (0: no limit)
        #[arg(long, default_value_t = 0)]
        minutes: u64,
        /// Only the items whose name contains one of these (comma-separated, e.g. `churn`)
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// `record --alloc` at the default interval on an allocation-heavy workload and on
    /// the Demo app, against no profiler and dotnet-trace (wall and CPU time)
    Alloc {
        /// Only these workloads (comma-separated: alloc-sites, alloc-live, alloc-small, demo, startup)
        #[arg(long, value_delimiter = ',')]
        workloads: Vec<String>,
        /// Only the configurations whose name contains one of these (comma-separated);
        /// the no-profiler baseline always runs
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Run every configuration under `taskset -c CPUS` (e.g. `0`): on one CPU the
        /// Demo's three threads stop spin-waiting for each other, which otherwise makes
        /// its CPU time vary by ±10 % from run to run
        #[arg(long)]
        cpus: Option<String>,
    },
    /// `record --waits` on the Demo app, against the same recording without it and
    /// dotnet-trace with the same runtime keywords
    Waits {
        /// Run every configuration under `taskset -c CPUS`
        #[arg(long)]
        cpus: Option<String>,
    },
    /// `clrprof coverage` of an xunit suite against coverlet (interleaved rounds), and
    /// the ns per counted hit on a hot loop
    Coverage,
    /// IL probes after attach: ns per call of an empty probed method against the same
    /// call unprobed and under startup ELT tracing (three processes, interleaved rounds),
    /// an unprobed method beside the probes and the method after the revert; then the
    /// install into 1,000 methods; on .NET 8, 9 and 10
    Probes {
        /// Only these runtimes (comma-separated majors, e.g. `10` or `9,10`)
        #[arg(long, value_delimiter = ',')]
        runtimes: Vec<u32>,
        /// Worker threads of each `serve` (the old bench ran 2 in each of its 3 processes)
        #[arg(long, default_value_t = 0)]
        serve_workers: u32,
        /// Without the 1,000-method install rounds
        #[arg(long)]
        no_install: bool,
    },
    /// Snapshots of a large heap by clrprof and dotnet-gcdump, alternated: the app's stop,
    /// bytes/object, then the report's time and memory
    Heap {
        /// Objects in the heap
        #[arg(long, default_value_t = 10_000_000)]
        objects: u64,
    },
    /// `record --alloc --push` to a stand-in Pyroscope server on loopback for MINUTES on a
    /// steadily allocating app: the CLI's and the target's RSS every minute, and the slope
    PushSoak {
        /// Minutes to run
        #[arg(long, default_value_t = 10)]
        minutes: u64,
        /// --push-every
        #[arg(long, default_value_t = 5)]
        every: u64,
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
    println!("{}", machine::describe(clrprof().ok().as_deref()));
    match args.what {
        What::Events => events(args.runs),
        What::Sample {
            only,
            compare_with,
            busy,
        } => {
            if busy {
                busy::run(&clrprof()?, args.runs, compare_with.as_deref())
            } else {
                sample(args.runs, &only, compare_with.as_deref())
            }
        }
        What::Trace => trace(args.runs),
        What::Read {
            trace,
            compare_with,
        } => read_bench(args.runs, trace, compare_with),
        What::Args => args_bench(args.runs),
        What::Attach => attach(args.runs),
        What::Soak {
            idle_cycles,
            busy,
            compare_with,
            ..
        } if idle_cycles > 0 => {
            soak::idle_cycles(&clrprof()?, compare_with.as_deref(), idle_cycles, busy)
        }
        What::Soak {
            cycles,
            sampler_runs: 0,
            ..
        } => soak::run(&clrprof()?, cycles),
        What::Soak { sampler_runs, .. } => soak::sampler_runs(&clrprof()?, sampler_runs),
        What::Heap { objects } => heap::run(objects, args.runs),
        What::Hostile { n, minutes, only } => hostile::run(&clrprof()?, n, minutes, &only),
        What::Coverage => coverage::run(&clrprof()?, args.runs),
        What::Probes {
            runtimes,
            serve_workers,
            no_install,
        } => {
            let all = clrprof_testkit::Runtime::ALL;
            let runtimes = if runtimes.is_empty() {
                all.to_vec()
            } else {
                runtimes
                    .iter()
                    .map(|m| {
                        all.into_iter()
                            .find(|r| r.major() == *m)
                            .with_context(|| format!("no .NET {m} among 8, 9, 10"))
                    })
                    .collect::<Result<Vec<_>>>()?
            };
            probes::run(
                &clrprof()?,
                args.runs,
                scratch(),
                &probes::Options {
                    runtimes,
                    workers: serve_workers,
                    install: !no_install,
                },
            )
        }
        What::Alloc {
            workloads,
            only,
            cpus,
        } => alloc::run_all(
            &clrprof()?,
            args.runs,
            &alloc::Filter {
                workloads,
                only,
                cpus,
            },
        ),
        What::Live { window } => live::run(&clrprof()?, args.runs, window),
        What::PushSoak { minutes, every } => push_soak::run(&clrprof()?, minutes, every),
        What::Waits { cpus } => waits::run(&clrprof()?, args.runs, cpus.as_deref()),
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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
    println!("events mode, Demo app, {runs} interleaved rounds");
    let base = || dotnet_app(&demo, &[]);
    let events = || recorded(&clrprof, &["--mode", "events"], &out, &demo, &[]);
    // Without source positions and lines: the exception stacks' IL maps not read
    // (`CLRPROF_SAMPLER_NO_POSITIONS`, a diagnostic switch of the agent), no line table
    // appended at the end (`--no-lines`). What recording the maps costs in events mode.
    let no_maps = || {
        let mut c = recorded(
            &clrprof,
            &["--mode", "events", "--no-lines"],
            &out,
            &demo,
            &[],
        );
        c.env("CLRPROF_SAMPLER_NO_POSITIONS", "1");
        c
    };
    let configs: [(&str, &dyn Fn() -> Command); 3] = [
        ("no profiler", &base),
        ("clrprof --mode events", &events),
        ("clrprof --mode events, no positions, --no-lines", &no_maps),
    ];
    let runs = rounds::interleaved(runs, &configs, None)?;
    let r = rounds::print_cpu_table(&configs, &runs);
    println!(
        "events-mode overhead (median paired CPU ratio): {:+.1} %",
        100.0 * (r[1] - 1.0)
    );
    let maps = rounds::print_pair(&configs, &runs, 1, 2);
    println!(
        "recording the IL maps and the line table in events mode: {:+.1} % (median paired CPU ratio)",
        100.0 * (maps - 1.0)
    );
    Ok(())
}

fn sample(runs: usize, only: &[String], other: Option<&Path>) -> Result<()> {
    let clrprof = clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    let out = scratch().join("sample.clrprof");
    // ~4.5 s of work: long enough that the profiler's fixed start-up and exit cost
    // (measured separately by the 1 Hz row) does not dominate the per-second cost.
    let args = ["crunch", "60000"];
    // Looked for (and installed) only when its row is wanted.
    let dt_row = "dotnet-trace sampled-thread-time";
    let dotnet_trace = if only.is_empty() || only.iter().any(|o| dt_row.contains(o.as_str())) {
        find_dotnet_trace()
    } else {
        None
    };
    let nettrace = scratch().join("bench.nettrace");
    println!(
        "sampling, Scenarios crunch (fixed CPU work on 2 threads), {runs} interleaved rounds; \
         the figure is CPU time (user+sys of the whole process tree), paired round by round"
    );
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
    let other_at = |rate: &'static str| {
        let (out, app) = (&out, &app);
        move || {
            recorded(
                other.expect("--compare-with"),
                &["--mode", "sample", "--rate", rate, "--sampler", "signal"],
                out,
                app,
                &args,
            )
        }
    };
    let (o99, o999) = (other_at("99"), other_at("999"));
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
    // The same without the frames' IL offsets (a diagnostic switch of the agent) and
    // without the line table appended at the end (`--no-lines`): what recording source
    // lines costs.
    let no_positions = |rate: &'static str| {
        let (clrprof, out, app) = (&clrprof, &out, &app);
        move || {
            let mut c = recorded(
                clrprof,
                &[
                    "--mode",
                    "sample",
                    "--rate",
                    rate,
                    "--sampler",
                    "signal",
                    "--no-lines",
                ],
                out,
                app,
                &args,
            );
            c.env("CLRPROF_SAMPLER_NO_POSITIONS", "1");
            c
        }
    };
    let (n99, n999) = (no_positions("99"), no_positions("999"));
    let dt99 = dt(99);
    let mut configs: Vec<(&str, &dyn Fn() -> Command)> = vec![
        ("no profiler", &base),
        ("clrprof sample 1 Hz (start-up/exit cost)", &s1),
        ("clrprof sample 99 Hz (signal)", &s99),
        ("clrprof sample 999 Hz (signal)", &s999),
        ("clrprof sample 99 Hz (suspend)", &suspend99),
        ("clrprof sample 99 Hz (signal, no positions)", &n99),
        ("clrprof sample 999 Hz (signal, no positions)", &n999),
    ];
    if other.is_some() {
        configs.push(("other build: sample 99 Hz (signal)", &o99));
        configs.push(("other build: sample 999 Hz (signal)", &o999));
    }
    if dotnet_trace.is_some() {
        configs.push((dt_row, &dt99));
    } else {
        println!(
            "(dotnet-trace not found: `dotnet tool install --tool-path target/tools dotnet-trace` adds it)"
        );
    }
    if !only.is_empty() {
        let mut i = 0;
        configs.retain(|(name, _)| {
            i += 1;
            i == 1 || only.iter().any(|o| name.contains(o.as_str()))
        });
    }
    let runs = rounds::interleaved(runs, &configs, None)?;
    let r = rounds::print_cpu_table(&configs, &runs);
    for (i, (name, _)) in configs.iter().enumerate().skip(1) {
        println!(
            "{name}: CPU overhead {:+.1} % (median of paired ratios)",
            100.0 * (r[i] - 1.0)
        );
    }
    // Source lines on and off, paired round by round.
    let at = |name: &str| configs.iter().position(|(n, _)| *n == name);
    for rate in ["99", "999"] {
        if let (Some(with), Some(without)) = (
            at(&format!("clrprof sample {rate} Hz (signal)")),
            at(&format!("clrprof sample {rate} Hz (signal, no positions)")),
        ) {
            rounds::print_pair(&configs, &runs, with, without);
        }
    }
    if at("clrprof sample 999 Hz (signal)").is_some() {
        // The last round's 999 Hz trace is in `out` only if that row ran last: record it
        // again, then read it with and without lines.
        rounds::measure(s999(), None)?;
        report_lines_cost(&clrprof, &out, runs.first().map_or(5, Vec::len))?;
    }
    Ok(())
}

/// `report` of `trace` with its source lines and with `--no-lines`, interleaved `runs`
/// times after a warm-up: the paired ratio of their CPU time (median and p25–p75).
fn report_lines_cost(clrprof: &Path, trace: &Path, runs: usize) -> Result<f64> {
    let report = |no_lines: bool| {
        move || {
            let mut c = Command::new(clrprof);
            c.arg("report").arg(trace);
            if no_lines {
                c.arg("--no-lines");
            }
            c
        }
    };
    let (with, without) = (report(false), report(true));
    let configs: [(&str, &dyn Fn() -> Command); 2] = [
        ("clrprof report --no-lines", &without),
        ("clrprof report (lines)", &with),
    ];
    let bytes = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
    println!(
        "\nreading {} ({:.1} MB) with and without its source lines, {runs} interleaved rounds:",
        trace.display(),
        bytes as f64 / 1e6
    );
    let runs = rounds::interleaved(runs, &configs, None)?;
    rounds::print_cpu_table(&configs, &runs);
    Ok(rounds::print_pair(&configs, &runs, 1, 0))
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
         Fib ms = the thread's CPU time around Fib(32), from the app itself"
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
    // A new file for every run, kept until the end: its pages are new page cache, as on
    // a user's first run (docs/performance.md: a fresh VM's page cache accepts new pages
    // far more slowly than it reuses a deleted file's).
    let fresh = std::cell::Cell::new(0usize);
    let fresh_path = |n: usize| scratch().join(format!("trace-new-{n}.clrprof"));
    let new_file = || {
        let n = fresh.get() + 1;
        fresh.set(n);
        let p = fresh_path(n);
        let _ = std::fs::remove_file(&p);
        recorded(
            &clrprof,
            &["--mode", "trace", "--include", "Scenarios.*"],
            &p,
            &app,
            ONE,
        )
    };
    let (none1, events1, noop1, clock1, full1) = (
        plain(ONE),
        no_inlining(ONE),
        traced(ONE, Some("noop")),
        traced(ONE, Some("clock")),
        traced(ONE, None),
    );
    let counts_out = scratch().join("counts.clrprof");
    let counted = || {
        recorded(
            &clrprof,
            &["--mode", "trace", "--counts", "--include", "Scenarios.*"],
            &counts_out,
            &app,
            ONE,
        )
    };
    let configs: [(&str, &dyn Fn() -> Command); 7] = [
        ("no profiler", &none1),
        ("events mode, inlining off", &events1),
        ("trace, hooks only return", &noop1),
        ("trace, hooks only read the TSC", &clock1),
        ("trace, a new file each run", &new_file),
        ("trace, overwriting one file", &full1),
        ("trace --counts (no timestamps)", &counted),
    ];
    // The thread's CPU time over Fib, not its wall time: on a guest whose host steals a
    // third of the time, or beside other work, the wall time counts waits that have
    // nothing to do with the hooks (the two-thread table below keeps the wall time: there
    // the writer's competition for a core is the point).
    let runs1 = rounds::interleaved(runs, &configs, Some("fib_cpu_us"))?;
    let added = fib_table(&configs, &runs1, calls, 1);
    // The last runs of the round were the full traces: check they recorded what they cost.
    let last_new = fresh_path(fresh.get());
    verify_trace(
        &clrprof,
        &last_new,
        "Scenarios.FibScenario.Fib",
        calls as u64,
    )?;
    verify_trace(&clrprof, &out, "Scenarios.FibScenario.Fib", calls as u64)?;
    verify_trace(
        &clrprof,
        &counts_out,
        "Scenarios.FibScenario.Fib",
        calls as u64,
    )?;
    for n in 1..=fresh.get() {
        let _ = std::fs::remove_file(fresh_path(n));
    }
    println!(
        "ns added per traced call (enter+leave, recorded to disk, inside Fib): {:.1} ns to a new \
         file, {:.1} ns overwriting one",
        added[4].0, added[5].0
    );
    println!(
        "of which the JIT's hook calls: {:.1} ns, two TSC reads: {:.1} ns, the record: {:.1} ns",
        added[2].0,
        added[3].0 - added[2].0,
        added[5].0 - added[3].0
    );
    println!(
        "exact call-graph mode (--counts, per-thread tables, no record per call): {:.1} ns added \
         per call inside Fib",
        added[6].0
    );

    // Two traced threads on a 2-core machine: the writer no longer has a core to itself,
    // so its copying shows.
    let (none2, events2, full2) = (plain(TWO), no_inlining(TWO), traced(TWO, None));
    let configs2: [(&str, &dyn Fn() -> Command); 3] = [
        ("no profiler, 2 threads", &none2),
        ("events, inlining off, 2 threads", &events2),
        ("clrprof --mode trace, 2 threads", &full2),
    ];
    println!(
        "\ntwo threads each making the same {calls} calls at once (both cores busy); Fib ms = \
         the app's wall-clock stopwatch around both:"
    );
    let runs2 = rounds::interleaved(runs, &configs2, Some("fib_us"))?;
    let added2 = fib_table(&configs2, &runs2, calls, 1);
    println!(
        "ns added per traced call with both cores busy: {:.1} ns inside Fib (per thread; \
         the writer competes with the app for a core)",
        added2[2].0
    );
    read_speed(&clrprof, &out, runs)
}

/// Prints the Fib table of interleaved runs: median wall and Fib time with spreads, and
/// the ns each configuration adds per call over configuration `base` (paired round by
/// round: median and p25–p75). Returns the added ns (median, p25, p75) of each.
fn fib_table(
    configs: &[(&str, &dyn Fn() -> Command)],
    runs: &[Vec<rounds::Run>],
    calls: f64,
    base: usize,
) -> Vec<(f64, f64, f64)> {
    println!(
        "{:<34} {:>9} {:>9} {:>13} {:>11} {:>22}",
        "configuration", "wall ms", "Fib ms", "(p25–p75)", "Fib ns/call", "added ns/call (p25–p75)"
    );
    let fib = |i: usize| -> Vec<f64> {
        runs[i]
            .iter()
            .map(|r| r.app.unwrap_or_default().as_secs_f64() * 1e3)
            .collect()
    };
    let mut out = Vec::new();
    for (i, (name, _)) in configs.iter().enumerate() {
        let wall: Vec<f64> = runs[i].iter().map(|r| r.wall.as_secs_f64() * 1e3).collect();
        let (f, f25, f75) = rounds::spread(&fib(i));
        let added: Vec<f64> = fib(i)
            .iter()
            .zip(fib(base))
            .map(|(a, b)| (a - b) * 1e6 / calls)
            .collect();
        let (a, a25, a75) = rounds::spread(&added);
        println!(
            "{name:<34} {:>9.1} {f:>9.1} {:>13} {:>11.1} {:>22}",
            rounds::quantile(&wall, 0.5),
            format!("{f25:.0}–{f75:.0}"),
            f * 1e6 / calls,
            format!("{a:.1} ({a25:.1}–{a75:.1})"),
        );
        out.push((a, a25, a75));
    }
    out
}

/// `report` and `convert -f folded` of the two-thread trace: seconds and events per
/// second (median of `runs`), the events being the Enter and Leave of every call.
fn read_speed(clrprof: &Path, trace: &Path, runs: usize) -> Result<()> {
    let out = Command::new(clrprof)
        .args(["report", "--json"])
        .arg(trace)
        .output()?;
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let calls: u64 = r["functions"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["calls"].as_u64()).sum())
        .unwrap_or(0);
    let events = 2.0 * calls as f64;
    let bytes = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
    println!(
        "\nreading the two-thread trace: {:.1} M events (Enter and Leave of {calls} calls), \
         {:.0} MB, {:.2} bytes per event; {runs} runs each",
        events / 1e6,
        bytes as f64 / 1e6,
        bytes as f64 / events
    );
    let folded = scratch().join("trace.folded");
    // With and without source lines, paired (a trace-mode trace holds no positions, so
    // this is what looking for them costs when there are none).
    report_lines_cost(clrprof, trace, runs)?;
    type MakeCommand<'a> = Box<dyn Fn() -> Command + 'a>;
    let cmds: [(&str, MakeCommand); 2] = [
        (
            "clrprof report",
            Box::new(|| {
                let mut c = Command::new(clrprof);
                c.arg("report").arg(trace);
                c
            }),
        ),
        (
            "clrprof convert -f folded",
            Box::new(|| {
                let mut c = Command::new(clrprof);
                c.args(["convert", "-f", "folded", "-o"])
                    .arg(&folded)
                    .arg(trace);
                c
            }),
        ),
    ];
    for (name, make) in &cmds {
        let mut secs = Vec::new();
        for _ in 0..runs.max(1) {
            secs.push(rounds::measure(make(), None)?.wall.as_secs_f64());
        }
        let (m, lo, hi) = rounds::spread(&secs);
        println!(
            "{name:<28} {m:>6.2} s (p25–p75 {lo:.2}–{hi:.2}): {:.1} M events/s",
            events / m / 1e6
        );
    }
    drop(cmds);
    let _ = std::fs::remove_file(folded);
    Ok(())
}

/// `clrprof-bench read`: the two-thread Fib trace (recorded unless given) read by
/// `report` and `convert -f folded` on one CPU and on two, alternated round by round.
fn read_bench(runs: usize, given: Option<PathBuf>, other: Option<PathBuf>) -> Result<()> {
    let clrprof = clrprof()?;
    let trace = match given {
        Some(t) => t,
        None => {
            let app = clrprof_testkit::app("Scenarios");
            let out = scratch().join("read.clrprof");
            let _ = std::fs::remove_file(&out);
            rounds::measure(
                recorded(
                    &clrprof,
                    &["--mode", "trace", "--include", "Scenarios.*"],
                    &out,
                    &app,
                    &["fib", "32", "threads=2"],
                ),
                None,
            )?;
            out
        }
    };
    let out = Command::new(&clrprof)
        .args(["report", "--json"])
        .arg(&trace)
        .output()?;
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let calls: u64 = r["functions"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["calls"].as_u64()).sum())
        .unwrap_or(0);
    let events = 2.0 * calls as f64;
    let bytes = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
    println!(
        "reading {}: {:.1} M events (Enter and Leave of {calls} calls), {:.0} MB; {runs} rounds, \
         one CPU (taskset -c 0) and two alternated",
        trace.display(),
        events / 1e6,
        bytes as f64 / 1e6,
    );
    let folded = scratch().join("read.folded");
    // Both builds as they read by default: on two CPUs this one shares the trace's
    // threads out among two workers; pinned to one CPU it reads on one thread.
    let report = || {
        let mut c = Command::new(&clrprof);
        c.arg("report")
            .arg(&trace)
            .env_remove("CLRPROF_READ_THREADS");
        c
    };
    let convert = || {
        let mut c = Command::new(&clrprof);
        c.args(["convert", "-f", "folded", "-o"])
            .arg(&folded)
            .arg(&trace)
            .env_remove("CLRPROF_READ_THREADS");
        c
    };
    let (report1, convert1) = (
        || rounds::pinned(&report(), "0"),
        || rounds::pinned(&convert(), "0"),
    );
    // The other build's rows (its own output file: the two run in turn).
    let other = other.unwrap_or_default();
    let other_folded = scratch().join("read-other.folded");
    let (report_other, convert_other) = (
        || {
            let mut c = Command::new(&other);
            c.arg("report")
                .arg(&trace)
                .env_remove("CLRPROF_READ_THREADS");
            c
        },
        || {
            let mut c = Command::new(&other);
            c.args(["convert", "-f", "folded", "-o"])
                .arg(&other_folded)
                .arg(&trace)
                .env_remove("CLRPROF_READ_THREADS");
            c
        },
    );
    let (report_other1, convert_other1) = (
        || rounds::pinned(&report_other(), "0"),
        || rounds::pinned(&convert_other(), "0"),
    );
    let mut configs: Vec<(&str, &dyn Fn() -> Command)> = vec![
        ("report, one CPU", &report1),
        ("report, two CPUs", &report),
        ("convert -f folded, one CPU", &convert1),
        ("convert -f folded, two CPUs", &convert),
    ];
    let compared = !other.as_os_str().is_empty();
    if compared {
        println!("compared with {}", other.display());
        configs.push(("report, one CPU, other", &report_other1));
        configs.push(("convert, one CPU, other", &convert_other1));
        configs.push(("report, two CPUs, other", &report_other));
        configs.push(("convert, two CPUs, other", &convert_other));
    }
    let runs = rounds::interleaved(runs, &configs, None)?;
    let wall = |i: usize| -> Vec<f64> { runs[i].iter().map(|r| r.wall.as_secs_f64()).collect() };
    println!(
        "{:<30} {:>8} {:>15} {:>12} {:>8}",
        "configuration", "wall s", "(p25–p75)", "M events/s", "CPU s"
    );
    for (i, (name, _)) in configs.iter().enumerate() {
        let (m, lo, hi) = rounds::spread(&wall(i));
        let cpu: Vec<f64> = runs[i].iter().map(|r| r.cpu.as_secs_f64()).collect();
        println!(
            "{name:<30} {m:>8.2} {:>15} {:>12.1} {:>8.2}",
            format!("{lo:.2}–{hi:.2}"),
            events / m / 1e6,
            rounds::quantile(&cpu, 0.5)
        );
    }
    for (one, two, what) in [(0, 1, "report"), (2, 3, "convert -f folded")] {
        let ratio = rounds::paired(&wall(one), &wall(two));
        let (m, lo, hi) = rounds::spread(&ratio);
        let (min, max) = (rounds::quantile(&ratio, 0.0), rounds::quantile(&ratio, 1.0));
        println!(
            "{what}: one CPU's wall time over two CPUs', paired round by round: median {m:.2} \
             (p25–p75 {lo:.2}–{hi:.2}, min–max {min:.2}–{max:.2})"
        );
    }
    if compared {
        let cpu = |i: usize| -> Vec<f64> { runs[i].iter().map(|r| r.cpu.as_secs_f64()).collect() };
        for (this, that, what) in [
            (0, 4, "report, one CPU"),
            (2, 5, "convert -f folded, one CPU"),
            (1, 6, "report, two CPUs"),
            (3, 7, "convert -f folded, two CPUs"),
        ] {
            let (c, clo, chi) = rounds::spread(&rounds::paired(&cpu(this), &cpu(that)));
            let (w, wlo, whi) = rounds::spread(&rounds::paired(&wall(this), &wall(that)));
            println!(
                "{what}: this build over the other, paired round by round: CPU {c:.3} \
                 (p25–p75 {clo:.3}–{chi:.3}), wall {w:.3} ({wlo:.3}–{whi:.3})"
            );
        }
        let _ = std::fs::remove_file(other_folded);
    }
    let _ = std::fs::remove_file(folded);
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

/// Two of the app's printed figures (`key=N`), in microseconds: its stopwatch and its
/// thread's CPU time.
fn app_figures(mut cmd: Command, key: &str, cpu_key: &str) -> Result<(f64, f64)> {
    let out = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).output()?;
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let figure = |key: &str| -> Result<f64> {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("no {key} in the app's output: {stdout}"))
    };
    Ok((figure(key)?, figure(cpu_key)?))
}

/// The number of milliseconds after `sep` on the first stderr line containing `marker`.
fn ms_after(stderr: &str, marker: &str, sep: &str) -> Option<f64> {
    stderr
        .lines()
        .filter(|l| l.contains(marker))
        .find_map(|l| l.split(sep).nth(1)?.split(" ms").next()?.parse().ok())
}

/// `args`: what `--args` costs. Seven configurations, alternated run by run, on two
/// workloads: `fib 27` (635,621 calls of `int Fib(int)`) and `args bench=N` (N calls of
/// `int Describe(string, ID)`, a string and a struct split across an integer and a float
/// register); the figures are the app's own stopwatch around the calls and its thread's CPU
/// time over them, the latter also paired with the base run of the same round.
fn args_bench(runs: usize) -> Result<()> {
    let clrprof = clrprof()?;
    let app = clrprof_testkit::app("Scenarios");
    // A new file for every run, kept until the workload's end, as in the trace bench: a
    // user's first run writes new page cache.
    let fresh = std::cell::Cell::new(0usize);
    let fresh_path = |n: usize| scratch().join(format!("args-new-{n}.clrprof"));
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
            let (clrprof, app) = (clrprof.clone(), app.clone());
            let (fresh, fresh_path) = (&fresh, &fresh_path);
            move || {
                let n = fresh.get() + 1;
                fresh.set(n);
                let out = fresh_path(n);
                let _ = std::fs::remove_file(&out);
                recorded(&clrprof, &flags, &out, &app, app_args)
            }
        };
        let base = make(vec!["--mode", "events", "--events", "none"]);
        let base = move || {
            let mut c = base();
            c.env("DOTNET_JitNoInline", "1");
            c
        };
        let fast = make(vec!["--mode", "trace", "--include", "Scenarios.*"]);
        let args_of =
            |f: &'static str| vec!["--mode", "trace", "--include", "Scenarios.*", "--args", f];
        let slow = make(args_of("Scenarios.NoSuchMethod"));
        let with_args = make(args_of(function));
        // The same overwriting one file: pages the page cache already holds, the hooks'
        // own cost with the writer's work at its least.
        let overwriting = {
            let (clrprof, app) = (clrprof.clone(), app.clone());
            let out = scratch().join("args-overwritten.clrprof");
            let flags = args_of(function);
            move || recorded(&clrprof, &flags, &out, &app, app_args)
        };
        // A configuration with one environment variable set for the agent.
        let with_env = |flags: Vec<&'static str>, key: &'static str| {
            let make = make(flags);
            move || {
                let mut c = make();
                c.env(key, "0");
                c
            }
        };
        // The same through the runtime's slow path (`CLRPROF_ARGS_FAST=0`), for the
        // assembly hooks' gain over it.
        let slow_args = with_env(args_of(function), "CLRPROF_ARGS_FAST");
        // The same without the trampolines' own path (`CLRPROF_ARGS_ASM=0`: the Rust
        // hooks write every record), for its gain.
        let rust_args = with_env(args_of(function), "CLRPROF_ARGS_ASM");
        let slow_none = with_env(args_of("Scenarios.NoSuchMethod"), "CLRPROF_ARGS_FAST");
        let configs: [(&str, &dyn Fn() -> Command); 8] = [
            ("events, inlining off", &base),
            ("trace (fast path)", &fast),
            ("trace --args (none match)", &slow),
            ("  the same, ARGS_FAST=0", &slow_none),
            ("trace --args (this one)", &with_args),
            ("  the same, overwriting", &overwriting),
            ("  the same, ARGS_ASM=0", &rust_args),
            ("  the same, ARGS_FAST=0", &slow_args),
        ];
        println!(
            "\n{label}: {calls} calls, {runs} runs each, each recording to a new file but the \
             one marked overwriting (app's stopwatch around the calls, and its thread's CPU time, \
             which waiting for a core does not inflate)"
        );
        let cpu_key = key.replace("_us", "_cpu_us");
        // [config][run] = (stopwatch ns/call, thread CPU ns/call)
        let mut t: Vec<Vec<(f64, f64)>> = vec![Vec::new(); configs.len()];
        for round in 0..=runs {
            for (i, (_, make)) in configs.iter().enumerate() {
                // As every bench: one run's writeback is not charged to the next.
                let _ = Command::new("sync").status();
                let (us, cpu_us) = app_figures(make(), key, &cpu_key)?;
                if round > 0 {
                    t[i].push((us * 1e3 / calls, cpu_us * 1e3 / calls));
                }
            }
        }
        println!(
            "{:<30} {:>10} {:>10} {:>10} {:>10} {:>10} {:>18}",
            "configuration", "ns/call", "spread", "added", "cpu ns", "added", "cpu added, paired"
        );
        let med = |v: Vec<f64>| {
            let mut v = v;
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let wall = |i: usize| t[i].iter().map(|x| x.0).collect::<Vec<_>>();
        let cpu = |i: usize| t[i].iter().map(|x| x.1).collect::<Vec<_>>();
        let base_ns = med(wall(0));
        let base_cpu = med(cpu(0));
        for (i, (name, _)) in configs.iter().enumerate() {
            let m = med(wall(i));
            let (lo, hi) = wall(i)
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
            // Each run's CPU figure minus the base run of the same round: the median and
            // spread of those differences.
            let mut paired: Vec<f64> = cpu(i).iter().zip(cpu(0)).map(|(c, b)| c - b).collect();
            paired.sort_by(f64::total_cmp);
            println!(
                "{name:<30} {m:>10.1} {:>10} {:>10.1} {:>10.1} {:>10.1} {:>18}",
                format!("{lo:.0}–{hi:.0}"),
                m - base_ns,
                med(cpu(i)),
                med(cpu(i)) - base_cpu,
                format!(
                    "{:.1} ({:.0}–{:.0})",
                    paired[paired.len() / 2],
                    paired[0],
                    paired[paired.len() - 1]
                ),
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
            .arg(fresh_path(fresh.get()))
            .output()?;
        for n in 1..=fresh.get() {
            let _ = std::fs::remove_file(fresh_path(n));
        }
        let inv: Vec<serde_json::Value> = serde_json::from_slice(&rep.stdout).unwrap_or_default();
        let with_ret = inv.iter().filter(|i| !i["return"].is_null()).count();
        println!(
            "verified: the last run recorded {} invocations of {function} with {with_ret} return values (want {calls})",
            inv.len()
        );
    }
    Ok(())
}
