//! `clrprof-bench sample --busy`: the ticks the signal sampler keeps on a busy server.
//! The Scenarios app's `pool-hot` (4 pool threads on the same CPU-bound path: more threads
//! than this machine's cores) runs beside a `yes > /dev/null` hog while being recorded at
//! 999 and 99 Hz, by this build and (with `--compare-with`) another, interleaved round by
//! round. Each recording's report (read by this build) gives the rate the sampler kept,
//! the share of the ticks due it took, the missed ticks by reason, and the threads it left
//! out of ticks by reason (this build's `sampler_skips`); the median and the spread
//! (p25–p75) over the rounds are printed, with the load average before and after.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::rounds::spread;

/// What one recording kept.
#[derive(Default, Clone)]
struct Kept {
    achieved_hz: f64,
    /// Ticks taken over ticks due.
    ratio: f64,
    missed_own_work: f64,
    missed_not_scheduled: f64,
    signal_timeouts: f64,
    handler_pending: f64,
    no_free_slot: f64,
    signals_lost: f64,
    samples: f64,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn run(clrprof: &Path, runs: usize, other: Option<&Path>) -> Result<()> {
    let app = clrprof_testkit::app("Scenarios");
    let out = super::scratch().join("busy.clrprof");
    let args = ["pool-hot", "4", "workers=4"];
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "busy server: Scenarios pool-hot 4 s, 4 CPU-bound pool threads, beside a `yes` hog, on \
         {cores} cores; {runs} interleaved rounds; load average before: {}",
        loadavg()
    );
    let mut configs: Vec<(String, &Path, &str)> = Vec::new();
    for rate in ["999", "99"] {
        configs.push((format!("this build {rate} Hz (signal)"), clrprof, rate));
        if let Some(o) = other {
            configs.push((format!("other build {rate} Hz (signal)"), o, rate));
        }
    }
    let mut kept: Vec<Vec<Kept>> = vec![Vec::new(); configs.len()];
    for round in 0..runs {
        for (c, (name, exe, rate)) in configs.iter().enumerate() {
            let mut hog = Command::new("yes")
                .stdout(Stdio::null())
                .spawn()
                .context("starting the `yes` hog")?;
            let status = super::recorded(
                exe,
                &["--mode", "sample", "--rate", rate, "--sampler", "signal"],
                &out,
                &app,
                &args,
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
            let _ = hog.kill();
            let _ = hog.wait();
            if !status?.success() {
                bail!("{name}: the recording failed");
            }
            let k = read(clrprof, &out)?;
            println!(
                "  round {round} {name}: {:.1} Hz ({:.1} % of ticks due), missed {} (own work) + {} (not scheduled), threads left out: {} pending, {} no slot, {} lost; {} samples",
                k.achieved_hz,
                100.0 * k.ratio,
                k.missed_own_work,
                k.missed_not_scheduled,
                k.handler_pending,
                k.no_free_slot,
                k.signals_lost,
                k.samples
            );
            kept[c].push(k);
        }
    }
    println!("load average after: {}", loadavg());
    println!(
        "{:<34} {:>24} {:>22} {:>18} {:>16} {:>28}",
        "configuration",
        "achieved Hz (p25–p75)",
        "% of ticks due",
        "% of asked rate",
        "missed (work/sched)",
        "left out (pending/slot/lost)"
    );
    for ((name, _, rate), ks) in configs.iter().zip(&kept) {
        let col = |f: fn(&Kept) -> f64| spread(&ks.iter().map(f).collect::<Vec<_>>());
        let (hz, hz25, hz75) = col(|k| k.achieved_hz);
        let (r, r25, r75) = col(|k| 100.0 * k.ratio);
        let asked: f64 = rate.parse().unwrap_or(1.0);
        let (w, _, _) = col(|k| k.missed_own_work);
        let (s, _, _) = col(|k| k.missed_not_scheduled);
        let (p, _, _) = col(|k| k.handler_pending);
        let (n, _, _) = col(|k| k.no_free_slot);
        let (l, _, _) = col(|k| k.signals_lost);
        let (t, _, _) = col(|k| k.signal_timeouts);
        println!(
            "{name:<34} {hz:>8.1} ({hz25:.1}–{hz75:.1}) {r:>8.1} ({r25:.1}–{r75:.1}) {:>17.1} {w:>8.0}/{s:<7.0} {p:>10.0}/{n:.0}/{l:.0} (timeouts {t:.0})",
            100.0 * hz / asked,
        );
    }
    Ok(())
}

/// The sampler's figures from `clrprof report --json` of `trace`.
fn read(clrprof: &Path, trace: &Path) -> Result<Kept> {
    let out = Command::new(clrprof)
        .arg("report")
        .arg("--json")
        .arg(trace)
        .output()?;
    if !out.status.success() {
        bail!("report failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let r: Value = serde_json::from_slice(&out.stdout)?;
    let s = &r["sampler"];
    let t = &s["timing"];
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    Ok(Kept {
        achieved_hz: f(&t["achieved_hz"]),
        ratio: f(&t["achieved_ratio"]),
        missed_own_work: f(&t["missed_own_work"]),
        missed_not_scheduled: f(&t["missed_not_scheduled"]),
        signal_timeouts: f(&s["signal_timeouts"]),
        handler_pending: f(&s["skipped"]["handler_pending"]),
        no_free_slot: f(&s["skipped"]["no_free_slot"]),
        signals_lost: f(&s["skipped"]["signals_lost"]),
        samples: f(&s["samples"]),
    })
}
