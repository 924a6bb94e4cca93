//! `clrprof-bench live`: what `clrprof dump` and `clrprof top` cost. Dump: its wall time
//! (attach, capture, detach until the library is unmapped) on the `blocked` app. Top: the
//! throughput of the `serve` app (work items per second, counted by the app) over windows
//! of equal length, alternating without and with `clrprof top --once` attached for the
//! window, so that drift hits both alike.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

struct Target {
    child: Child,
    pid: u32,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Target {
    fn start(scenario: &str) -> Result<Target> {
        let app = clrprof_testkit::app("Scenarios");
        let mut child = super::dotnet_app(&app, &[scenario])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().context("stdin")?;
        let out = child.stdout.take().context("stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let pid = loop {
            let l = lines.recv_timeout(Duration::from_secs(60))?;
            if let Some(p) = l.trim().strip_prefix("READY ") {
                break p.parse()?;
            }
        };
        Ok(Target {
            child,
            pid,
            stdin,
            lines,
        })
    }

    /// `serve`'s work items so far.
    fn work_items(&mut self) -> Result<u64> {
        writeln!(self.stdin, "result")?;
        loop {
            let l = self.lines.recv_timeout(Duration::from_secs(30))?;
            if let Some(v) = l.strip_prefix("RESULT work_items=") {
                return Ok(v.trim().parse()?);
            }
        }
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "quit");
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn summary(v: &mut [f64], unit: &str) -> String {
    v.sort_by(f64::total_cmp);
    format!(
        "median {:.1} {unit}, min {:.1}, max {:.1}",
        v[v.len() / 2],
        v[0],
        v[v.len() - 1]
    )
}

pub fn run(clrprof: &Path, runs: usize, window_s: f64) -> Result<()> {
    // dump
    let t = Target::start("blocked")?;
    let mut dumps = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let o = Command::new(clrprof)
            .args(["dump", "--pid", &t.pid.to_string()])
            .output()?;
        if !o.status.success() {
            bail!(
                "clrprof dump failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        dumps.push(started.elapsed().as_secs_f64() * 1e3);
    }
    t.quit();
    println!(
        "`clrprof dump --pid` wall time (attach, capture, detach, library unmapped), {runs} runs: {}",
        summary(&mut dumps, "ms")
    );
    // top
    let mut t = Target::start("serve")?;
    let window = Duration::from_secs_f64(window_s);
    let mut without = Vec::new();
    let mut with = Vec::new();
    for _ in 0..runs {
        let before = t.work_items()?;
        let started = Instant::now();
        std::thread::sleep(window);
        let rate = (t.work_items()? - before) as f64 / started.elapsed().as_secs_f64();
        without.push(rate);

        let top = Command::new(clrprof)
            .args(["top", "--once", "--interval"])
            .arg(format!("{}", window_s + 2.0))
            .args(["--pid", &t.pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        // Measure inside top's interval, after its attach.
        std::thread::sleep(Duration::from_secs(1));
        let before = t.work_items()?;
        let started = Instant::now();
        std::thread::sleep(window);
        let rate = (t.work_items()? - before) as f64 / started.elapsed().as_secs_f64();
        with.push(rate);
        let o = top.wait_with_output()?;
        if !o.status.success() {
            bail!("clrprof top failed: {}", String::from_utf8_lossy(&o.stderr));
        }
    }
    t.quit();
    let (mw, mo) = (
        summary(&mut with.clone(), "items/s"),
        summary(&mut without.clone(), "items/s"),
    );
    with.sort_by(f64::total_cmp);
    without.sort_by(f64::total_cmp);
    println!("`serve` throughput without top, {runs} windows of {window_s} s: {mo}");
    println!("`serve` throughput with `clrprof top` at 99 Hz, {runs} windows: {mw}");
    println!(
        "ratio of medians with/without: {:.3}",
        with[with.len() / 2] / without[without.len() / 2]
    );
    Ok(())
}
