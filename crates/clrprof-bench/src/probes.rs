//! `clrprof-bench probes`: the cost of a call to an IL-probed method (trace mode after
//! attach, docs/tracing.md), against the same call unprobed and under startup ELT tracing.
//!
//! Three `Scenarios serve` processes per runtime, alive together: one plain, one with
//! probes attached (`record --pid P --mode trace --include Scenarios.Serve.SpinCall`), one
//! started under `record --mode trace` with the same pattern (ELT hooks on that method
//! only). Each is warmed up (the probed body reaches tier 1), then asked `spin N` in turn,
//! round after round; the figures are per-call medians of the timed thread's CPU time
//! with the spread (min–max) and the paired per-round differences from the plain process,
//! then the same method after the revert and an unprobed method beside the probes. It
//! also prints how long the agent took to install the probes, from its log line.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_testkit::{Runtime, app_on};

/// Calls per round. Each probed or traced call writes two 8-byte events: 3.2 MB a round,
/// under the 4 MiB ring of trace mode, so a round never waits for the writer to make
/// room (a 300,000-call round, 4.8 MB, did: then the figure was the writer's turn on the
/// CPUs, not the call). [`PAUSE`] before each round lets the writer empty the ring.
const SPIN: u32 = 200_000;
/// Before each timed round: the writer drains every 20 ms (`CLRPROF_FLUSH_MS`).
const PAUSE: Duration = Duration::from_millis(60);

struct Serve {
    child: Child,
    stdin: ChildStdin,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
    pid: u32,
    /// The wall-clock ns per call of every `spin` asked, in order.
    wall: Vec<f64>,
}

fn lines(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    rx
}

impl Serve {
    fn start(mut cmd: Command) -> Result<Serve> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting Scenarios serve")?;
        let stdin = child.stdin.take().context("stdin")?;
        let out = lines(child.stdout.take().context("stdout")?);
        let err = lines(child.stderr.take().context("stderr")?);
        let end = Instant::now() + Duration::from_secs(120);
        loop {
            let l = out
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .context("no READY from Scenarios serve")?;
            if let Some(pid) = l.trim().strip_prefix("READY ") {
                let pid = pid.parse()?;
                return Ok(Serve {
                    child,
                    stdin,
                    out,
                    err,
                    pid,
                    wall: Vec::new(),
                });
            }
        }
    }

    /// Sends `cmd`; the values of the answer line starting with `answer`.
    fn ask(&mut self, cmd: &str, answer: &str) -> Result<BTreeMap<String, String>> {
        writeln!(self.stdin, "{cmd}")?;
        loop {
            let l = self
                .out
                .recv_timeout(Duration::from_secs(300))
                .with_context(|| format!("no answer to {cmd}"))?;
            if l.starts_with(answer) {
                return Ok(clrprof_testkit::parse_results(&l));
            }
        }
    }

    /// ns per call of `spin n`, by the app's own stopwatch.
    fn spin(&mut self, n: u32) -> Result<f64> {
        self.spin_as("spin", n)
    }

    /// ns per call of `spin-other n`: SpinCall's twin, which no pattern selects.
    fn spin_other(&mut self, n: u32) -> Result<f64> {
        self.spin_as("spin-other", n)
    }

    /// ns per call by the timed thread's CPU time (`spin_cpu_ns`), and by the stopwatch
    /// into `wall`. The CPU time is the figure: on a loaded host a round that outlasts a
    /// time slice waits for the CPU inside its stopwatch, one that fits in a slice rarely
    /// does, so wall-time differences between a traced and an untraced round measure the
    /// load (at load 16 on 2 cores a traced call "cost" 160–190 ns of wall time).
    fn spin_as(&mut self, cmd: &str, n: u32) -> Result<f64> {
        std::thread::sleep(PAUSE);
        let r = self.ask(&format!("{cmd} {n}"), "RESULT spin=")?;
        let wall: f64 = r.get("spin_ns").context("spin_ns")?.parse()?;
        let cpu: f64 = r.get("spin_cpu_ns").context("spin_cpu_ns")?.parse()?;
        if cpu < 0.0 {
            bail!("the app could not read its thread's CPU time");
        }
        self.wall.push(wall / f64::from(n));
        Ok(cpu / f64::from(n))
    }

    /// The first line of the app's stderr (the agent's log) containing `needle`.
    fn log_line(&self, needle: &str, timeout: Duration) -> Result<String> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(l) = self.err.recv_timeout(Duration::from_millis(200))
                && l.contains(needle)
            {
                return Ok(l);
            }
        }
        bail!("no {needle:?} in the app's log")
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.wait();
    }

    /// Quits, keeping the log readable (the recording's end summary comes at exit).
    fn quit_keeping_log(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.wait();
    }
}

fn interrupt(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn spread(v: &[f64]) -> (f64, f64) {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max)
}

/// Starts the probes on `app` and waits until they are live: the recording and the
/// agent's install line.
fn attach(clrprof: &Path, app: &Serve, out: &Path, include: &str) -> Result<(Child, String)> {
    let rec = Command::new(clrprof)
        .args(["record", "-q", "--force", "--pid", &app.pid.to_string()])
        .args(["--mode", "trace", "--include", include, "-o"])
        .arg(out)
        .stderr(Stdio::null())
        .spawn()?;
    let how = app.log_line(
        "calls without GC-mode transitions",
        Duration::from_secs(120),
    )?;
    let line = app.log_line("probes installed in", Duration::from_secs(120))?;
    Ok((
        rec,
        format!("{line}; {}", how.split("probes: ").last().unwrap_or(&how)),
    ))
}

/// The JIT's summary lines (`DOTNET_JitDisasmSummary`) naming `method`: each body it
/// compiled and at which tier, the rejitted ones included.
fn tiers(summary: &Path, method: &str) -> Vec<String> {
    std::fs::read_to_string(summary)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(method))
        .map(|l| l.trim().to_string())
        .collect()
}

/// A `serve` without its worker threads, its JIT summary written to `summary`: the bench
/// times one thread, and three processes of two ~50 %-busy workers each would keep both
/// cores of a 2-core host busier than it has room for (the timed thread then waits its
/// turn inside its stopwatch).
fn quiet_serve(cmd: &mut Command, summary: &Path) {
    cmd.env("DOTNET_JitDisasmSummary", "1")
        .env("DOTNET_JitStdOutFile", summary);
}

/// What `clrprof-bench probes` runs.
pub struct Options {
    /// The runtimes to measure.
    pub runtimes: Vec<Runtime>,
    /// Worker threads of each `serve` (0: none; 2 was the old bench's, whose six workers on
    /// two cores inflated every timed call).
    pub workers: u32,
    /// Also the 1,000-method install rounds.
    pub install: bool,
}

fn one_runtime(clrprof: &Path, rt: Runtime, runs: usize, dir: &Path, workers: u32) -> Result<()> {
    let app = app_on("Scenarios", rt);
    let probed_out = dir.join(format!("probes-{}.clrprof", rt.major()));
    let elt_out = dir.join(format!("probes-elt-{}.clrprof", rt.major()));
    let jit = |name: &str| dir.join(format!("probes-jit-{name}-{}.txt", rt.major()));
    let workers_arg = format!("workers={workers}");
    let serve = ["serve", workers_arg.as_str()];
    let mut plain_cmd = app.command(&serve);
    quiet_serve(&mut plain_cmd, &jit("plain"));
    let mut plain = Serve::start(plain_cmd)?;
    let mut probed_cmd = app.command(&serve);
    quiet_serve(&mut probed_cmd, &jit("probed"));
    let mut probed = Serve::start(probed_cmd)?;
    let mut elt_cmd = Command::new(clrprof);
    elt_cmd
        .args(["record", "-q", "--force", "--mode", "trace"])
        .args(["--include", "Scenarios.Serve.SpinCall", "-o"])
        .arg(&elt_out)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .args(serve);
    app.env(&mut elt_cmd);
    quiet_serve(&mut elt_cmd, &jit("elt"));
    let mut elt = Serve::start(elt_cmd)?;
    // Warm-up of the unprobed code (tier 1 for SpinCall, the loop's OSR body for Spin),
    // then the two processes paired before the probes: the floor of the pairing itself.
    for s in [&mut plain, &mut probed] {
        for _ in 0..3 {
            s.spin(SPIN)?;
            s.spin_other(SPIN)?;
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let (mut p0, mut q0) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        p0.push(plain.spin(SPIN)?);
        q0.push(probed.spin(SPIN)?);
    }
    let (mut rec, installed) = attach(clrprof, &probed, &probed_out, "Scenarios.Serve.SpinCall")?;
    // Warm-up: the new bodies start at tier 0; a pause lets the runtime's tiering promote
    // them (it waits ~100 ms without new tier-0 code), then they run at tier 1.
    for s in [&mut plain, &mut probed, &mut elt] {
        for _ in 0..3 {
            s.spin(SPIN)?;
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let (mut p, mut q, mut e, mut po, mut qo) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut pw, mut qw, mut ew) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        p.push(plain.spin(SPIN)?);
        pw.push(*plain.wall.last().unwrap_or(&0.0));
        q.push(probed.spin(SPIN)?);
        qw.push(*probed.wall.last().unwrap_or(&0.0));
        e.push(elt.spin(SPIN)?);
        ew.push(*elt.wall.last().unwrap_or(&0.0));
        po.push(plain.spin_other(SPIN)?);
        qo.push(probed.spin_other(SPIN)?);
    }
    interrupt(&mut rec);
    probed.log_line("probes removed from", Duration::from_secs(60))?;
    let probed_waits = waits(&probed);
    // The reverted method runs its original code again; that code, compiled before the
    // probes, is what runs (no new tier-0 round), but a pause settles it all the same.
    for _ in 0..2 {
        probed.spin(SPIN)?;
        std::thread::sleep(Duration::from_millis(300));
    }
    let (mut p2, mut q2) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        p2.push(plain.spin(SPIN)?);
        q2.push(probed.spin(SPIN)?);
    }
    let show = |name: &str, v: &[f64]| {
        let (lo, hi) = spread(v);
        println!(
            "  {name:<46} {:>7.1} ns/call  (min {lo:.1}, max {hi:.1})",
            median(v)
        );
    };
    let paired =
        |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(x, y)| x - y).collect() };
    println!(
        ".NET {} ({} rounds of {SPIN} calls, `serve {workers_arg}`; ns a call of the timed \
         thread's CPU time)",
        rt.major(),
        runs
    );
    show("unprobed (SpinCall, plain process)", &p);
    show("IL probes (attached)", &q);
    show("startup ELT trace mode", &e);
    show("probes - unprobed, paired", &paired(&q, &p));
    show("ELT - unprobed, paired", &paired(&e, &p));
    show("probes - ELT, paired", &paired(&q, &e));
    show(
        "unprobed method beside the probes, paired",
        &paired(&qo, &po),
    );
    show("before the probes, paired (the floor)", &paired(&q0, &p0));
    show("after the revert, paired", &paired(&q2, &p2));
    show("wall clock: probes - unprobed, paired", &paired(&qw, &pw));
    show("wall clock: ELT - unprobed, paired", &paired(&ew, &pw));
    let plain_jit = tiers(&jit("plain"), "SpinCall");
    let probed_jit = tiers(&jit("probed"), "SpinCall");
    let elt_jit = tiers(&jit("elt"), "SpinCall");
    for (name, lines) in [
        ("plain", &plain_jit),
        ("probed", &probed_jit),
        ("ELT", &elt_jit),
    ] {
        println!("  SpinCall compiled in the {name} process:");
        for l in lines.iter() {
            println!("    {l}");
        }
    }
    println!(
        "  install: {}",
        installed.split(": ").last().unwrap_or(&installed)
    );
    println!("  the probed process's calls waited for the writer: {probed_waits}");
    plain.quit();
    probed.quit();
    elt.quit_keeping_log();
    println!(
        "  the ELT process's calls waited for the writer: {}",
        waits(&elt)
    );
    for f in [probed_out, elt_out, jit("plain"), jit("probed"), jit("elt")] {
        let _ = std::fs::remove_file(f);
    }
    Ok(())
}

/// The agent's end-of-recording line on exact mode's waits for the writer (a ring found
/// full), or that there were none.
fn waits(app: &Serve) -> String {
    app.log_line("waited for the writer", Duration::from_secs(3))
        .map(|l| {
            l.split("waited for the writer ")
                .nth(1)
                .and_then(|r| r.split(" (").next())
                .unwrap_or(&l)
                .to_string()
        })
        .unwrap_or_else(|_| "never".into())
}

/// A number before `unit` after `key` in a log line (`installed in 1000 methods (303 ms)`).
fn figure(line: &str, key: &str) -> Option<f64> {
    let rest = &line[line.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Probes into the 1,000 methods of `Scenarios.Many`, one fresh process per round (the
/// agent stays dormant after one): the install's time, the runtime's `RequestReJIT` within
/// it, and the longest stall of an app thread while it ran against the longest in as long
/// long a window right after it (the probes live, idle).
fn install_rounds(clrprof: &Path, rt: Runtime, runs: usize, dir: &Path) -> Result<()> {
    let app = app_on("Scenarios", rt);
    let out = dir.join(format!("probes-many-{}.clrprof", rt.major()));
    let (mut total, mut rejit, mut quiet, mut stalled) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let mut s = Serve::start(app.command(&["serve"]))?;
        s.ask("many 2", "RESULT many=")?;
        let gap = |s: &mut Serve| -> Result<f64> {
            Ok(s.ask("pauses?", "RESULT pause_max_us=")?["pause_max_us"].parse::<f64>()? / 1e3)
        };
        s.ask("pauses", "WATCHING")?;
        let t = Instant::now();
        let (mut rec, installed) = attach(clrprof, &s, &out, "Scenarios.Many.*")?;
        let phases = s.log_line("probes: install took", Duration::from_secs(30))?;
        let window = t.elapsed();
        stalled.push(gap(&mut s)?);
        s.ask("pauses", "WATCHING")?;
        std::thread::sleep(window);
        quiet.push(gap(&mut s)?);
        total.push(figure(&installed, "methods (").context("install ms")?);
        rejit.push(figure(&phases, "RequestReJIT ").context("RequestReJIT ms")?);
        interrupt(&mut rec);
        s.quit();
        let _ = std::fs::remove_file(&out);
    }
    let show = |name: &str, v: &[f64]| {
        let (lo, hi) = spread(v);
        println!(
            "  {name:<46} {:>7.1} ms  (min {lo:.1}, max {hi:.1})",
            median(v)
        );
    };
    println!(
        ".NET {}: probes into 1,000 methods, {runs} processes",
        rt.major()
    );
    show("install (agent's figure)", &total);
    show("  of which RequestReJITWithInliners", &rejit);
    show("app thread's longest stall, attach + install", &stalled);
    show("app thread's longest stall, as long, right after", &quiet);
    let extra: Vec<f64> = stalled.iter().zip(&quiet).map(|(a, b)| a - b).collect();
    show("  difference, paired", &extra);
    Ok(())
}

pub fn run(clrprof: &Path, runs: usize, dir: PathBuf, opts: &Options) -> Result<()> {
    println!(
        "IL probes: ns per call of an empty method (Scenarios.Serve.SpinCall) by the timed \
         thread's CPU time; load {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for &rt in &opts.runtimes {
        one_runtime(clrprof, rt, runs, &dir, opts.workers)?;
        if opts.install {
            install_rounds(clrprof, rt, runs, &dir)?;
        }
    }
    Ok(())
}
