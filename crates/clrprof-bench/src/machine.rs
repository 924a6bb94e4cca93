//! The machine a figure was measured on, printed before every bench so that a figure from
//! one machine is never read as another's: the CPU model, its cores, the load when the
//! bench started, the clock source and what one clock read costs (the agent time-stamps
//! every traced call with it), the build measured and when.

use std::time::Instant;

/// One line: `machine: MODEL · N cores · load L · clock SOURCE, R ns a read, rdtsc T ns ·
/// clrprof VERSION · DATE`.
pub fn describe(clrprof: Option<&std::path::Path>) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
    let version = clrprof
        .and_then(|p| std::process::Command::new(p).arg("--version").output().ok())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "clrprof (version unknown)".into());
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "machine: {model} · {cores} cores · load {load} · clock {source}, {:.1} ns a read{} · {version} · {date}",
        clock_read_ns(),
        tsc_read_ns().map_or(String::new(), |ns| format!(", rdtsc {ns:.1} ns"))
    )
}

/// What the agent's own clock read costs: the median of nine timings of ten million
/// `rdtsc` (the agent stamps each traced call with it where the TSC is invariant; the
/// system clock above costs more, its vDSO orders and scales the read).
fn tsc_read_ns() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        const N: u32 = 10_000_000;
        let mut runs: Vec<f64> = (0..9)
            .map(|_| {
                let start = Instant::now();
                let mut acc = 0u64;
                for _ in 0..N {
                    // SAFETY: (A9) rdtsc is available on every x86_64 CPU and has no memory
                    // effects, as the agent's clock reads it.
                    acc ^= unsafe { core::arch::x86_64::_rdtsc() };
                }
                std::hint::black_box(acc);
                start.elapsed().as_secs_f64() * 1e9 / f64::from(N)
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        Some(runs[runs.len() / 2])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The median of nine timings of a million `Instant::now()` calls, in ns per call.
fn clock_read_ns() -> f64 {
    const N: u32 = 1_000_000;
    let mut runs: Vec<f64> = (0..9)
        .map(|_| {
            let start = Instant::now();
            let mut last = start;
            for _ in 0..N {
                last = std::hint::black_box(Instant::now());
            }
            (last - start).as_secs_f64() * 1e9 / f64::from(N)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}
