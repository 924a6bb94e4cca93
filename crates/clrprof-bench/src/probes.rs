//! `clrprof-bench probes`: the cost of a call to an IL-probed method (trace mode after
//! attach, docs/tracing.md), against the same call unprobed and under startup ELT tracing.
//!
//! Three `Scenarios serve` processes per runtime, alive together: one plain, one with
//! probes attached (`record --pid P --mode trace --include Scenarios.Serve.SpinCall`), one
//! started under `record --mode trace` with the same pattern (ELT hooks on that method
//! only). Each is warmed up (the probed body reaches tier 1), then asked `spin N` in turn,
//! round after round; the figures are per-call medians with the spread (min–max) and the
//! paired per-round differences from the plain process. It also prints how long the
//! agent took to install the probes, from its log line.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_testkit::{Runtime, app_on};

/// Calls per round (each probed or traced one writes two 8-byte events).
const SPIN: u32 = 300_000;

struct Serve {
    child: Child,
    stdin: ChildStdin,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
    pid: u32,
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
        let r = self.ask(&format!("spin {n}"), "RESULT spin=")?;
        let ns: f64 = r.get("spin_ns").context("spin_ns")?.parse()?;
        Ok(ns / f64::from(n))
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

fn one_runtime(clrprof: &Path, rt: Runtime, runs: usize, dir: &Path) -> Result<()> {
    let app = app_on("Scenarios", rt);
    let probed_out = dir.join(format!("probes-{}.clrprof", rt.major()));
    let elt_out = dir.join(format!("probes-elt-{}.clrprof", rt.major()));
    let mut plain = Serve::start(app.command(&["serve"]))?;
    let mut probed = Serve::start(app.command(&["serve"]))?;
    let mut elt_cmd = Command::new(clrprof);
    elt_cmd
        .args(["record", "-q", "--force", "--mode", "trace"])
        .args(["--include", "Scenarios.Serve.SpinCall", "-o"])
        .arg(&elt_out)
        .arg("--")
        .arg(&app.dotnet)
        .arg(&app.dll)
        .arg("serve");
    app.env(&mut elt_cmd);
    let mut elt = Serve::start(elt_cmd)?;
    // The probed process's own unprobed figure first, then the probes.
    probed.spin(SPIN)?;
    let before = probed.spin(SPIN)?;
    let (mut rec, installed) = attach(clrprof, &probed, &probed_out, "Scenarios.Serve.SpinCall")?;
    // Warm-up: the new bodies start at tier 0; a pause lets the runtime's tiering promote
    // them (it waits ~100 ms without new tier-0 code), then they run at tier 1.
    for s in [&mut plain, &mut probed, &mut elt] {
        for _ in 0..3 {
            s.spin(SPIN)?;
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let (mut p, mut q, mut e) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        p.push(plain.spin(SPIN)?);
        q.push(probed.spin(SPIN)?);
        e.push(elt.spin(SPIN)?);
    }
    interrupt(&mut rec);
    let after = probed.spin(SPIN)?;
    let show = |name: &str, v: &[f64]| {
        let (lo, hi) = spread(v);
        println!(
            "  {name:<34} {:>7.1} ns/call  (min {lo:.1}, max {hi:.1})",
            median(v)
        );
    };
    let diff = |v: &[f64]| -> Vec<f64> { v.iter().zip(&p).map(|(a, b)| a - b).collect() };
    println!(".NET {} ({} rounds of {SPIN} calls)", rt.major(), runs);
    show("unprobed", &p);
    show("IL probes (attached)", &q);
    show("startup ELT trace mode", &e);
    show("probes - unprobed, paired", &diff(&q));
    show("ELT - unprobed, paired", &diff(&e));
    let probes_over_elt: Vec<f64> = q.iter().zip(&e).map(|(a, b)| a - b).collect();
    show("probes - ELT, paired", &probes_over_elt);
    println!(
        "  the probed process itself: {before:.1} ns/call before the probes, {after:.1} after"
    );
    println!(
        "  install: {}",
        installed.split(": ").last().unwrap_or(&installed)
    );
    plain.quit();
    probed.quit();
    elt.quit();
    let _ = std::fs::remove_file(&probed_out);
    let _ = std::fs::remove_file(&elt_out);
    Ok(())
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

pub fn run(clrprof: &Path, runs: usize, dir: PathBuf) -> Result<()> {
    println!(
        "IL probes: ns per call of an empty method (Scenarios.Serve.SpinCall) by the app's \
         own stopwatch; load {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for rt in Runtime::ALL {
        one_runtime(clrprof, rt, runs, &dir)?;
        install_rounds(clrprof, rt, runs, &dir)?;
    }
    Ok(())
}
