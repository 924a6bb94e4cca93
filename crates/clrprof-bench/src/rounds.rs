//! Interleaved rounds and what they can show on a noisy machine: each configuration runs
//! once per round, in turn (after a warm-up round), so drift hits all of them alike; each
//! run records wall time and the CPU time (user + sys) of the whole process tree; the
//! figures are medians with their spread (the middle half of the runs, p25–p75), and a
//! configuration is compared with the first one round by round (paired ratios), with a
//! warning when the spread of those ratios is larger than the effect.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// One run of one configuration.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub wall: Duration,
    /// User + system CPU time of the process and every descendant it waited for.
    pub cpu: Duration,
    /// What the app printed under the key asked for (its own stopwatch), if any.
    pub app: Option<Duration>,
}

/// CPU time (user + sys) of the children this process has waited for, to the
/// microsecond (`getrusage(RUSAGE_CHILDREN)`; `/proc/self/stat` counts 10 ms ticks, half a
/// per cent of a 2 s run).
fn children_cpu() -> Result<Duration> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let d = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64)
            + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    Ok(d(u.user_time()) + d(u.system_time()))
}

/// Runs `cmd` to completion: wall time, CPU time of its whole tree, and the µs it printed
/// as `key=N` when a key is given.
pub fn measure(mut cmd: Command, key: Option<&str>) -> Result<Run> {
    // The previous run's trace may still be going to disk: flush it first, so that its
    // writeback is not charged to this run.
    let _ = Command::new("sync").status();
    let cpu0 = children_cpu()?;
    let t = Instant::now();
    let out = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).output()?;
    let wall = t.elapsed();
    let cpu = children_cpu()?.saturating_sub(cpu0);
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    let app = match key {
        None => None,
        Some(key) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let us: u64 = stdout
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("no {key} in the app's output: {stdout}"))?;
            Some(Duration::from_micros(us))
        }
    };
    Ok(Run { wall, cpu, app })
}

/// `cmd` under `taskset -c cpus`: the same program, arguments, environment and
/// directory, with its whole process tree confined to those CPUs.
pub fn pinned(cmd: &Command, cpus: &str) -> Command {
    let mut c = Command::new("taskset");
    c.arg("-c")
        .arg(cpus)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        c.current_dir(dir);
    }
    c
}

/// Runs every configuration once per round, in turn, for `rounds` rounds after one
/// warm-up round (page cache, the SDK host's JIT). `runs[i][r]` is configuration `i`'s
/// run of round `r`.
pub fn interleaved(
    rounds: usize,
    configs: &[(&str, &dyn Fn() -> Command)],
    key: Option<&str>,
) -> Result<Vec<Vec<Run>>> {
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); configs.len()];
    for round in 0..=rounds {
        for (i, (_, make)) in configs.iter().enumerate() {
            let run = measure(make(), key)?;
            if round > 0 {
                runs[i].push(run);
            }
        }
    }
    Ok(runs)
}

/// The `q` quantile (0 ≤ q ≤ 1) of `v`, by linear interpolation.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let x = q * (v.len() - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
}

/// Median and the middle half (p25, p75).
pub fn spread(v: &[f64]) -> (f64, f64, f64) {
    (quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75))
}

/// Round-by-round ratios `a[r] / b[r]`.
pub fn paired(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

/// Prints, per configuration, median wall and CPU time with their spreads, the paired CPU
/// ratio to the first configuration, and the ratio of the fastest tenths (each
/// configuration's 10th-percentile CPU time to the first's: a slow spell of a shared host
/// only ever adds time, so the fastest runs weigh it least); warns where the ratios'
/// spread is larger than the effect. Returns each configuration's median paired CPU ratio.
pub fn print_cpu_table(configs: &[(&str, &dyn Fn() -> Command)], runs: &[Vec<Run>]) -> Vec<f64> {
    let secs = |i: usize, f: fn(&Run) -> Duration| -> Vec<f64> {
        runs[i].iter().map(|r| f(r).as_secs_f64() * 1e3).collect()
    };
    // The first column as wide as the longest name (at least 42).
    let width = configs
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(42);
    println!(
        "{:<width$} {:>9} {:>13} {:>9} {:>13} {:>17} {:>10}",
        "configuration",
        "wall ms",
        "(p25–p75)",
        "CPU ms",
        "(p25–p75)",
        "CPU ratio (p25–p75)",
        "p10 ratio"
    );
    let base_cpu = secs(0, |r| r.cpu);
    let base_p10 = quantile(&base_cpu, 0.1);
    let mut ratios = Vec::new();
    let mut unresolved = Vec::new();
    for (i, (name, _)) in configs.iter().enumerate() {
        let (w, w25, w75) = spread(&secs(i, |r| r.wall));
        let cpu = secs(i, |r| r.cpu);
        let (c, c25, c75) = spread(&cpu);
        let (r, r25, r75) = spread(&paired(&cpu, &base_cpu));
        println!(
            "{name:<width$} {w:>9.1} {:>13} {c:>9.1} {:>13} {:>17} {:>10.3}",
            format!("{w25:.0}–{w75:.0}"),
            format!("{c25:.0}–{c75:.0}"),
            format!("{r:.3} ({r25:.3}–{r75:.3})"),
            quantile(&cpu, 0.1) / base_p10,
        );
        ratios.push(r);
        if i > 0 && r75 - r25 > (r - 1.0).abs() {
            unresolved.push(*name);
        }
    }
    for name in unresolved {
        println!(
            "  note: for {name}, the spread of the paired CPU ratios is larger than the effect: \
             this run cannot tell its cost from noise (more --runs, or a quieter machine)"
        );
    }
    ratios
}

/// Prints the paired CPU ratio of configuration `with` over configuration `without`
/// (round by round: median and p25–p75), and whether 1.0 lies within that spread (the
/// difference is then not told from noise). Returns the median ratio.
pub fn print_pair(
    configs: &[(&str, &dyn Fn() -> Command)],
    runs: &[Vec<Run>],
    with: usize,
    without: usize,
) -> f64 {
    let cpu = |i: usize| -> Vec<f64> { runs[i].iter().map(|r| r.cpu.as_secs_f64()).collect() };
    let (r, r25, r75) = spread(&paired(&cpu(with), &cpu(without)));
    println!(
        "{} over {}: CPU ratio {r:.3} (p25–p75 {r25:.3}–{r75:.3}){}",
        configs[with].0,
        configs[without].0,
        if (r25..=r75).contains(&1.0) {
            ", 1.0 within the spread"
        } else {
            ""
        }
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [4.0, 1.0, 3.0, 2.0, 5.0];
        assert_eq!(spread(&v), (3.0, 2.0, 4.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.5), 1.5);
        assert_eq!(paired(&[2.0, 3.0], &[1.0, 2.0]), vec![2.0, 1.5]);
    }

    #[test]
    fn children_cpu_counts_a_busy_child() {
        let before = children_cpu().unwrap();
        let st = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(st.success());
        assert!(children_cpu().unwrap() > before);
    }
}
