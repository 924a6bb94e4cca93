//! `clrprof-bench soak`: what issue #16 tried by hand, as one command. Each stress case
//! runs a Scenarios workload under `clrprof record` with a time limit (a target that dies
//! by a signal or exits non-zero is a crash; one that outlives the limit is a hang), then
//! reads the report for what was lost and why. Then one `serve` target, kept busy by a
//! CPU-bound app beside it, goes through N attach/detach cycles; its RSS after the first
//! three and after all of them gives the growth per cycle.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

struct Case {
    name: &'static str,
    flags: &'static [&'static str],
    args: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "thread churn, sampled at 999 Hz",
        flags: &["--rate", "999"],
        args: &["churn", "seconds=5"],
    },
    Case {
        name: "64 threads traced, 4 KiB buffers in drop mode",
        flags: &["--mode", "trace", "--buffer-kb", "4", "--on-full", "drop"],
        args: &["threads64", "calls=20000"],
    },
    Case {
        name: "200 000 exceptions with their stacks",
        flags: &["--mode", "events"],
        args: &["exceptions", "200000"],
    },
    Case {
        name: "recursion 10 000 deep, sampled at 999 Hz",
        flags: &["--rate", "999"],
        args: &["deep", "depth=10000", "seconds=3"],
    },
    Case {
        name: "hostile argument shapes read by --args",
        flags: &["--mode", "trace", "--args", "Scenarios.HostileArgs.*"],
        args: &["hostile-args"],
    },
    Case {
        name: "GC storm with allocation events",
        flags: &["--mode", "events", "--events", "default,alloc"],
        args: &["alloc", "3000000"],
    },
];

const CASE_LIMIT: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Tally {
    crashes: usize,
    hangs: usize,
    lost: BTreeMap<String, u64>,
}

pub fn run(clrprof: &Path, cycles: usize) -> Result<()> {
    let app = clrprof_testkit::app("Scenarios");
    let dir = crate::scratch().join("soak");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut t = Tally::default();
    for (i, case) in CASES.iter().enumerate() {
        let trace = dir.join(format!("case{i}.clrprof"));
        let mut cmd = Command::new(clrprof);
        cmd.args(["record", "-q", "-o"])
            .arg(&trace)
            .args(case.flags)
            .arg("--")
            .arg(clrprof_testkit::dotnet())
            .arg(&app.dll)
            .args(case.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let started = Instant::now();
        let outcome = match wait_limited(cmd.spawn()?, CASE_LIMIT)? {
            None => {
                t.hangs += 1;
                "HANG".to_string()
            }
            Some(s) if !s.success() => {
                t.crashes += 1;
                format!("CRASH ({s})")
            }
            Some(_) => "ok".to_string(),
        };
        let r = report(clrprof, &trace);
        let lost = lost_of(&r);
        for (k, v) in &lost {
            *t.lost.entry(k.clone()).or_default() += v;
        }
        println!(
            "{:<48} {outcome:<6} {:>6.1} s  lost {}  truncated stacks {}",
            case.name,
            started.elapsed().as_secs_f64(),
            describe(&lost),
            r["sampler"]["truncated_stacks"].as_u64().unwrap_or(0)
        );
    }

    // Attach/detach cycles on a busy target, with a CPU-bound neighbour for load.
    let mut load = crate::dotnet_app(&app, &["hot", "seconds=900"])
        .stdout(Stdio::null())
        .spawn()?;
    let mut target = crate::dotnet_app(&app, &["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null()) // the agent's log lines, one set per cycle
        .spawn()?;
    let mut line = String::new();
    BufReader::new(target.stdout.take().context("stdout")?).read_line(&mut line)?;
    let pid: u32 = line
        .trim()
        .strip_prefix("READY ")
        .context("READY")?
        .parse()?;
    let mut before = 0;
    let mut failed = 0;
    let started = Instant::now();
    for i in 0..cycles + 3 {
        if i == 3 {
            before = rss_kb(pid);
        }
        let trace = dir.join("cycle.clrprof");
        let mut cmd = Command::new(clrprof);
        cmd.args(["record", "--pid", &pid.to_string(), "--rate", "999"])
            .args(["--duration", "0.3", "-q", "--force", "-o"])
            .arg(&trace)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match wait_limited(cmd.spawn()?, Duration::from_secs(60))? {
            None => t.hangs += 1,
            Some(s) if !s.success() => failed += 1,
            Some(_) => {
                for (k, v) in lost_of(&report(clrprof, &trace)) {
                    *t.lost.entry(k).or_default() += v;
                }
            }
        }
    }
    let after = rss_kb(pid);
    if let Some(mut stdin) = target.stdin.take() {
        let _ = writeln!(stdin, "quit");
    }
    match wait_limited(target, Duration::from_secs(30))? {
        None => t.hangs += 1,
        Some(s) if !s.success() => t.crashes += 1,
        Some(_) => {}
    }
    let _ = load.kill();
    let _ = load.wait();
    let growth = after as f64 - before as f64;
    println!(
        "{cycles} attach/detach cycles (999 Hz, 0.3 s each, target under load): {failed} failed, \
         {:.1} s; target RSS {before} KiB after 3 warm-up cycles, {after} KiB after all: \
         {growth:+.0} KiB, {:+.1} KiB per cycle",
        started.elapsed().as_secs_f64(),
        growth / cycles.max(1) as f64
    );
    idle_and_refused_cycles(clrprof, &app, &dir, cycles, &mut t)?;
    println!(
        "target crashes {}, hangs {}; events lost: {}",
        t.crashes,
        t.hangs,
        describe(&t.lost)
    );
    Ok(())
}

/// Many short sampled runs, the shape of the rare sampler-thread segfault inside
/// libcoreclr (issue #26 item 3: once in ~1,800 runs of `exceptions n=2` at 99 Hz under
/// load): `runs` runs alternating `exceptions 2` and a one-second thread churn, each
/// `nice`d so the machine's other work preempts it at any point, each under a time limit.
/// A target that dies by a signal or exits non-zero is a crash; the first few crashes'
/// `clrprof` output is kept beside the traces (`crash-N.txt`).
pub fn sampler_runs(clrprof: &Path, runs: usize) -> Result<()> {
    let app = clrprof_testkit::app("Scenarios");
    let dir = crate::scratch().join("sampler-runs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let workloads: [&[&str]; 2] = [&["exceptions", "2"], &["churn", "seconds=1"]];
    let (mut crashes, mut hangs, mut by_workload) = (0usize, 0usize, [0usize; 2]);
    let started = Instant::now();
    for i in 0..runs {
        let which = i % workloads.len();
        let trace = dir.join("run.clrprof");
        let out = dir.join("run.txt");
        let mut cmd = Command::new("nice");
        cmd.args(["-n", "10"])
            .arg(clrprof)
            .args(["record", "--rate", "99", "--force", "-o"])
            .arg(&trace)
            .arg("--")
            .arg(clrprof_testkit::dotnet())
            .arg(&app.dll)
            .args(workloads[which])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&out)?);
        match wait_limited(cmd.spawn()?, Duration::from_secs(120))? {
            None => hangs += 1,
            Some(s) if !s.success() => {
                crashes += 1;
                by_workload[which] += 1;
                if crashes <= 5 {
                    let _ = std::fs::copy(&out, dir.join(format!("crash-{crashes}.txt")));
                }
                println!(
                    "run {i} ({}): {s}: {}",
                    workloads[which].join(" "),
                    std::fs::read_to_string(&out)
                        .unwrap_or_default()
                        .lines()
                        .last()
                        .unwrap_or_default()
                );
            }
            Some(_) => {}
        }
        if (i + 1) % 100 == 0 {
            println!(
                "{} runs, {:.0} s: {crashes} crashes, {hangs} hangs",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "{runs} short runs at 99 Hz (nice 10; exceptions 2 / churn 1 s alternating), {:.0} s: \
         target crashes {crashes} ({} exceptions, {} churn), hangs {hangs}",
        started.elapsed().as_secs_f64(),
        by_workload[0],
        by_workload[1]
    );
    Ok(())
}

/// An idle target: `cycles` attach/detach cycles after 20 that settle the runtime's and
/// malloc's state, for the growth per cycle (docs/safety.md: at most 16 KiB); then as many
/// rounds of a refused attach (another TMPDIR, so the first `clrprof` cannot be seen)
/// during a recording, each followed by an attach that must record.
fn idle_and_refused_cycles(
    clrprof: &Path,
    app: &clrprof_testkit::BuiltApp,
    dir: &Path,
    cycles: usize,
    t: &mut Tally,
) -> Result<()> {
    let mut target = crate::dotnet_app(app, &["sleeper", "seconds=3600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = target.id();
    std::thread::sleep(Duration::from_millis(500));
    let trace = dir.join("idle.clrprof");
    let attach = |extra_env: Option<&Path>, out: &Path, duration: &str| -> Result<Child> {
        let mut cmd = Command::new(clrprof);
        if let Some(tmp) = extra_env {
            cmd.env("TMPDIR", tmp);
        }
        cmd.args(["record", "--pid", &pid.to_string(), "--duration", duration])
            .args(["-q", "--force", "-o"])
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Ok(cmd.spawn()?)
    };
    let mut failed = 0;
    let run = |t: &mut Tally, child: Child| -> Result<bool> {
        Ok(match wait_limited(child, Duration::from_secs(60))? {
            None => {
                t.hangs += 1;
                false
            }
            Some(s) => s.success(),
        })
    };
    let warm = 20;
    let mut before = 0;
    let started = Instant::now();
    for i in 0..warm + cycles {
        if i == warm {
            before = rss_kb(pid);
        }
        if !run(t, attach(None, &trace, "0.2")?)? {
            failed += 1;
        }
    }
    let after = rss_kb(pid);
    let growth = after as f64 - before as f64;
    println!(
        "{cycles} attach/detach cycles on an idle target (after {warm}): {failed} failed, {:.1} s; \
         RSS {before} → {after} KiB: {:+.1} KiB per cycle",
        started.elapsed().as_secs_f64(),
        growth / cycles.max(1) as f64
    );
    let other_tmp = dir.join("other-tmp");
    std::fs::create_dir_all(&other_tmp)?;
    let (mut refused, mut recorded, mut odd) = (0, 0, 0);
    for _ in 0..cycles {
        let first = attach(None, &trace, "1.5")?;
        std::thread::sleep(Duration::from_millis(700));
        match run(
            t,
            attach(Some(&other_tmp), &dir.join("refused.clrprof"), "0.2")?,
        )? {
            false => refused += 1,
            true => odd += 1,
        }
        if !run(t, first)? {
            odd += 1;
        }
        let after = dir.join("after.clrprof");
        if run(t, attach(None, &after, "0.3")?)?
            && report(clrprof, &after)["samples"]["total"]
                .as_u64()
                .unwrap_or(0)
                > 0
        {
            recorded += 1;
        }
    }
    println!(
        "{cycles} refused attaches during a recording: {refused} refused, {recorded} attaches after \
         them recorded, {odd} unexpected outcomes"
    );
    let alive = matches!(target.try_wait(), Ok(None));
    if !alive {
        t.crashes += 1;
    }
    let _ = target.kill();
    let _ = target.wait();
    Ok(())
}

/// `cycles` attach/detach cycles (`record --pid --duration 0.2`) on an idle `sleeper` of
/// each runtime, after 20 that settle the runtime's and malloc's state; with `other`, a
/// second target of the same runtime cycled by that build, one cycle each in turn. Per
/// build: the target's resident KiB outside the agent library after the warm-up and after
/// each third of the cycles, the growth per cycle overall and over the smallest third (the
/// CI test's figure), and malloc's thread arenas (count, resident KiB) before the first
/// attach and after the last.
pub fn idle_cycles(clrprof: &Path, other: Option<&Path>, cycles: usize, busy: bool) -> Result<()> {
    let mut load = if busy {
        Some(
            Command::new("yes")
                .stdout(Stdio::null())
                .spawn()
                .context("yes")?,
        )
    } else {
        None
    };
    let dir = crate::scratch().join("idle-cycles");
    std::fs::create_dir_all(&dir)?;
    let builds: Vec<(&str, &Path)> = std::iter::once(("this build", clrprof))
        .chain(other.map(|o| ("other build", o)))
        .collect();
    let warm = 20;
    let third = cycles.div_ceil(3).max(1);
    for rt in clrprof_testkit::Runtime::ALL {
        let app = clrprof_testkit::app_on("Scenarios", rt);
        let mut targets = Vec::new();
        for _ in &builds {
            targets.push(
                app.command(&["sleeper", "seconds=3600"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?,
            );
        }
        std::thread::sleep(Duration::from_millis(700));
        let pids: Vec<u32> = targets.iter().map(Child::id).collect();
        let arenas_before: Vec<_> = pids
            .iter()
            .map(|&p| clrprof_testkit::malloc_arenas(p))
            .collect();
        let mut marks: Vec<Vec<u64>> = vec![Vec::new(); builds.len()];
        let mut failed = vec![0usize; builds.len()];
        let started = Instant::now();
        for i in 0..warm + 3 * third {
            if i >= warm && (i - warm).is_multiple_of(third) {
                for (b, &pid) in pids.iter().enumerate() {
                    marks[b].push(clrprof_testkit::rss_outside_agent(pid));
                }
            }
            for (b, (_, exe)) in builds.iter().enumerate() {
                let child = Command::new(exe)
                    .args(["record", "--pid", &pids[b].to_string(), "--duration", "0.2"])
                    .args(["-q", "--force", "-o"])
                    .arg(dir.join(format!("t{b}.clrprof")))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?;
                if !matches!(wait_limited(child, Duration::from_secs(60))?, Some(s) if s.success())
                {
                    failed[b] += 1;
                }
            }
        }
        for (b, (name, _)) in builds.iter().enumerate() {
            marks[b].push(clrprof_testkit::rss_outside_agent(pids[b]));
            let m = &marks[b];
            let slopes: Vec<f64> = m
                .windows(2)
                .map(|w| (w[1] as f64 - w[0] as f64) / third as f64)
                .collect();
            let smallest = slopes.iter().copied().fold(f64::INFINITY, f64::min);
            let after = clrprof_testkit::malloc_arenas(pids[b]);
            println!(
                "{} {name}: {} idle cycles after {warm}, {} failed, {:.0} s; RSS outside the agent \
                 {} KiB: {:+.1} KiB a cycle overall, {smallest:+.1} over the smallest third; \
                 malloc thread arenas {} holding {} KiB before the first attach, {} holding {} KiB after",
                rt.tfm(),
                3 * third,
                failed[b],
                started.elapsed().as_secs_f64(),
                m.iter().map(u64::to_string).collect::<Vec<_>>().join(" → "),
                (m[m.len() - 1] as f64 - m[0] as f64) / (3 * third) as f64,
                arenas_before[b].0,
                arenas_before[b].1,
                after.0,
                after.1
            );
        }
        for mut t in targets {
            let alive = matches!(t.try_wait(), Ok(None));
            if !alive {
                println!("{}: a target died: {:?}", rt.tfm(), t.try_wait());
            }
            let _ = t.kill();
            let _ = t.wait();
        }
    }
    if let Some(l) = load.as_mut() {
        let _ = l.kill();
        let _ = l.wait();
    }
    Ok(())
}

/// Waits for `child` at most `limit`; kills it and returns `None` past that.
fn wait_limited(mut child: Child, limit: Duration) -> Result<Option<std::process::ExitStatus>> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(None)
}

fn report(clrprof: &Path, trace: &Path) -> serde_json::Value {
    Command::new(clrprof)
        .args(["report", "--json"])
        .arg(trace)
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn lost_of(r: &serde_json::Value) -> BTreeMap<String, u64> {
    r["lost_by_reason"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

fn describe(lost: &BTreeMap<String, u64>) -> String {
    if lost.values().all(|&v| v == 0) {
        return "0".into();
    }
    lost.iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{v} ({k})"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
