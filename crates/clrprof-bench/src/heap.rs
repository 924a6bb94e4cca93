//! `clrprof-bench heap`: a heap of a given number of objects (the `heap` scenario: a linked
//! list of 2/3 of them under a static, the rest held by a local), snapshots of it by
//! `clrprof heap --pid` and by `dotnet-gcdump collect` alternated round by round on the
//! same process, then `clrprof report` of one of ours.
//!
//! The target's stop is measured the same way for both tools: the app runs a thread that
//! wakes every millisecond and notes the longest gap between two wake-ups (the `ticker`
//! and `gap` commands of the scenario), read before and after each snapshot. clrprof's own
//! figure (the agent's forced GC + walk, `pause_ms`) is printed beside it. The report's
//! peak memory is GNU time's maximum resident set (the mapped trace file included) and
//! the peak `RssAnon` (heap only), sampled every 20 ms from `/proc/PID/status`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The app's stdout lines and stdin.
struct App {
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    stdin: ChildStdin,
}

impl App {
    /// Sends `command` and returns the first line that starts with `reply`.
    fn ask(&mut self, command: &str, reply: &str) -> Result<String> {
        writeln!(self.stdin, "{command}")?;
        self.stdin.flush()?;
        loop {
            let l = self.lines.next().context("the app ended")??;
            if let Some(rest) = l.strip_prefix(reply) {
                return Ok(rest.trim().to_string());
            }
        }
    }

    /// The longest stop of the app's ticker since the previous call, in ms.
    fn gap_ms(&mut self) -> Result<f64> {
        Ok(self.ask("gap", "GAP ")?.parse()?)
    }
}

/// One snapshot: the app's longest stop, the CPU time the target spent meanwhile (all its
/// threads: the GC and the walk, the agent's writer or the runtime's EventPipe thread; a
/// figure the other processes of a loaded host do not stretch, as they do the stop), the
/// tool's own pause figure (clrprof), the tool's wall time and the file's size.
struct Snapshot {
    stop_ms: f64,
    cpu_ms: f64,
    pause_ms: Option<f64>,
    wall: Duration,
    bytes: u64,
}

/// The CPU time (user and system) process `pid` has used, in ms (`/proc/PID/stat`).
fn cpu_ms(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command's closing parenthesis: state is field 3, utime and stime 14 and 15.
    let rest = stat.rsplit_once(')').context("/proc/PID/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64> {
        Ok(fields
            .get(i - 3)
            .context("/proc/PID/stat")?
            .parse::<f64>()?)
    };
    // In clock ticks of USER_HZ, which Linux fixes at 100 on x86-64 whatever its CONFIG_HZ.
    Ok((ticks(14)? + ticks(15)?) * 10.0)
}

/// The median of the figures that are numbers (a failed round's are NaN).
fn median(v: &mut [f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

pub fn run(objects: u64, runs: usize) -> Result<()> {
    let clrprof = crate::clrprof()?;
    let gcdump = find_gcdump();
    let app = clrprof_testkit::app("Scenarios");
    let n = (objects * 2 / 3).max(3);
    let started = Instant::now();
    let mut child = crate::dotnet_app(&app, &["heap", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = std::io::BufReader::new(child.stdout.take().context("stdout")?).lines();
    let pid: u32 = loop {
        let l = lines.next().context("the app ended before READY")??;
        if let Some(p) = l.strip_prefix("READY ") {
            break p.trim().parse()?;
        }
    };
    let built = started.elapsed();
    let mut app_io = App {
        lines,
        stdin: child.stdin.take().context("stdin")?,
    };
    app_io.ask("ticker", "TICKING")?;
    let dir = crate::scratch();
    let ours = |round: usize, app_io: &mut App| -> Result<(Snapshot, PathBuf, u64, u64, u64)> {
        let trace = dir.join(format!("heap-{round}.clrprof"));
        // The bench's own file from a previous run: `clrprof heap` never writes over one.
        let _ = std::fs::remove_file(&trace);
        app_io.gap_ms()?;
        let cpu = cpu_ms(pid)?;
        let t = Instant::now();
        let out = Command::new(&clrprof)
            .args([
                "heap",
                "--pid",
                &pid.to_string(),
                "--json",
                "--top",
                "5",
                "-o",
            ])
            .arg(&trace)
            .output()?;
        let wall = t.elapsed();
        let cpu_ms = cpu_ms(pid)? - cpu;
        let stop_ms = app_io.gap_ms()?;
        if !out.status.success() {
            bail!(
                "clrprof heap failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let h = &v["heap"];
        let figures = (
            h["objects"].as_u64().unwrap_or(0),
            h["references"].as_u64().unwrap_or(0),
            h["lost"].as_u64().unwrap_or(0),
        );
        let bytes = std::fs::metadata(&trace)?.len();
        Ok((
            Snapshot {
                stop_ms,
                cpu_ms,
                pause_ms: h["pause_ms"].as_f64(),
                wall,
                bytes,
            },
            trace,
            figures.0,
            figures.1,
            figures.2,
        ))
    };
    let theirs = |round: usize, gcdump: &Path, app_io: &mut App| -> Result<Snapshot> {
        let file = dir.join(format!("heap-{round}.gcdump"));
        let _ = std::fs::remove_file(&file);
        app_io.gap_ms()?;
        let cpu = cpu_ms(pid)?;
        let t = Instant::now();
        let out = Command::new(gcdump)
            .args(["collect", "-p", &pid.to_string(), "-o"])
            .arg(&file)
            .output()?;
        let wall = t.elapsed();
        let cpu_ms = cpu_ms(pid)? - cpu;
        let stop_ms = app_io.gap_ms()?;
        if !out.status.success() {
            bail!(
                "dotnet-gcdump failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let _ = std::fs::remove_file(&file);
        Ok(Snapshot {
            stop_ms,
            cpu_ms,
            pause_ms: None,
            wall,
            bytes,
        })
    };

    println!(
        "heap scenario, {n} list nodes and {} locals (the app built its heap in {:.1} s); {runs} rounds, \
         clrprof heap and dotnet-gcdump alternated (each round the other first)",
        n / 2,
        built.as_secs_f64()
    );
    if gcdump.is_none() {
        println!(
            "(dotnet-gcdump not found: `dotnet tool install --tool-path target/tools dotnet-gcdump` adds it)"
        );
    }
    println!(
        "| round | tool | app stopped, ms | target's CPU, ms | tool's pause, ms | tool's wall, s | file, MB |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let (mut our_stops, mut their_stops, mut our_pauses) = (Vec::new(), Vec::new(), Vec::new());
    // Per round, clrprof's stop and CPU over dotnet-gcdump's.
    let (mut our_cpus, mut their_cpus) = (Vec::new(), Vec::new());
    let mut last = None;
    let print = |round: usize, tool: &str, s: &Snapshot| {
        println!(
            "| {round} | {tool} | {:.0} | {:.0} | {} | {:.1} | {:.1} |",
            s.stop_ms,
            s.cpu_ms,
            s.pause_ms.map_or("—".to_string(), |p| format!("{p:.0}")),
            s.wall.as_secs_f64(),
            s.bytes as f64 / 1e6
        );
    };
    for round in 0..runs.max(1) {
        for k in 0..2 {
            let clrprof_turn = (round + k) % 2 == 0;
            if clrprof_turn {
                let (s, trace, objects, references, lost) = ours(round, &mut app_io)?;
                print(round, "clrprof heap", &s);
                our_stops.push(s.stop_ms);
                our_cpus.push(s.cpu_ms);
                our_pauses.push(s.pause_ms.unwrap_or(f64::NAN));
                if let Some((old, ..)) = last.replace((trace, objects, references, lost, s.bytes)) {
                    let _ = std::fs::remove_file(old);
                }
            } else if let Some(g) = &gcdump {
                match theirs(round, g, &mut app_io) {
                    Ok(s) => {
                        print(round, "dotnet-gcdump", &s);
                        their_stops.push(s.stop_ms);
                        their_cpus.push(s.cpu_ms);
                    }
                    Err(e) => {
                        println!("| {round} | dotnet-gcdump | failed: {e} | | | | |");
                        their_stops.push(f64::NAN);
                        their_cpus.push(f64::NAN);
                    }
                }
            }
        }
    }
    drop(app_io);
    let _ = child.wait();
    let (trace, recorded, references, lost, bytes) = last.context("no snapshot")?;
    // Ratios of the same round (a round whose dotnet-gcdump failed has none: NaN).
    let ratios = |ours: &[f64], theirs: &[f64]| -> String {
        let mut r: Vec<f64> = ours
            .iter()
            .zip(theirs)
            .map(|(a, b)| a / b)
            .filter(|x| x.is_finite())
            .collect();
        let (lo, hi) = r
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            });
        format!("median {:.2} ({lo:.2}–{hi:.2})", median(&mut r))
    };
    println!(
        "clrprof over dotnet-gcdump, same round: app stopped {}, target's CPU {}",
        ratios(&our_stops, &their_stops),
        ratios(&our_cpus, &their_cpus)
    );
    println!(
        "app stopped, median: clrprof heap {:.0} ms (its own pause figure {:.0} ms), dotnet-gcdump {:.0} ms; \
         target's CPU, median: clrprof heap {:.0} ms, dotnet-gcdump {:.0} ms",
        median(&mut our_stops),
        median(&mut our_pauses),
        median(&mut their_stops),
        median(&mut our_cpus),
        median(&mut their_cpus)
    );
    println!(
        "snapshot of {recorded} objects, {references} references, {lost} lost; file {:.1} MB, \
         {:.1} bytes per object",
        bytes as f64 / 1e6,
        bytes as f64 / recorded.max(1) as f64,
    );

    // The report on its own, under GNU time for the peak memory, twice: once sampled for
    // its RssAnon.
    let t = Instant::now();
    let rep = Command::new("/usr/bin/time")
        .args(["-f", "%M %U %S"])
        .arg(&clrprof)
        .arg("report")
        .arg(&trace)
        .stdout(Stdio::null())
        .output()
        .context("running /usr/bin/time (GNU time)")?;
    let report_s = t.elapsed().as_secs_f64();
    if !rep.status.success() {
        bail!(
            "clrprof report failed: {}",
            String::from_utf8_lossy(&rep.stderr)
        );
    }
    // GNU time's last line: peak KB, user s, system s.
    let stderr = String::from_utf8_lossy(&rep.stderr);
    let figures: Vec<f64> = stderr
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (peak_kb, cpu_s) = match figures[..] {
        [kb, user, sys] => (kb, user + sys),
        _ => (0.0, 0.0),
    };
    let anon_kb = peak_rss_anon_kb(&clrprof, &trace)?;
    let per = |kb: f64| kb * 1024.0 / recorded.max(1) as f64;
    println!(
        "clrprof report: {report_s:.1} s ({cpu_s:.1} s of CPU); peak RSS {:.0} MB = {:.1} bytes per object \
         (the mapped file included), peak RssAnon {:.0} MB = {:.1} bytes per object",
        peak_kb / 1024.0,
        per(peak_kb),
        anon_kb / 1024.0,
        per(anon_kb)
    );
    let _ = std::fs::remove_file(&trace);
    Ok(())
}

/// `clrprof report TRACE`'s peak RssAnon in KB, sampled every 20 ms.
fn peak_rss_anon_kb(clrprof: &Path, trace: &Path) -> Result<f64> {
    let mut child = Command::new(clrprof)
        .arg("report")
        .arg(trace)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0.0f64;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status)
            && let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<f64>().ok())
        {
            peak = peak.max(kb);
        }
        if child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(peak)
}

/// dotnet-gcdump from `target/tools`, installed there from the NuGet feed if missing.
fn find_gcdump() -> Option<PathBuf> {
    let tools = clrprof_testkit::target_dir().join("tools");
    let local = tools.join("dotnet-gcdump");
    if local.is_file() {
        return Some(local);
    }
    let st = Command::new(clrprof_testkit::dotnet())
        .args(["tool", "install", "--tool-path"])
        .arg(&tools)
        .arg("dotnet-gcdump")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    (st.success() && local.is_file()).then_some(local)
}
