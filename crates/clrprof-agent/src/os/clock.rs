//! Timestamps. On x86_64 with an invariant TSC (`constant_tsc` and `nonstop_tsc` in
//! /proc/cpuinfo) events carry raw `rdtsc` ticks: ~10 ns instead of ~28 ns for the vDSO
//! clock. The writer records `ClockSync` pairs (ticks, CLOCK_MONOTONIC) so the reader
//! converts ticks to nanoseconds out of process. Elsewhere ticks are monotonic ns.

use std::sync::atomic::{AtomicBool, Ordering};

static USE_TSC: AtomicBool = AtomicBool::new(false);

/// Decides the clock once, at load. Returns whether the TSC is used.
pub fn init() -> bool {
    let tsc = cfg!(target_arch = "x86_64") && invariant_tsc();
    USE_TSC.store(tsc, Ordering::Relaxed);
    tsc
}

fn invariant_tsc() -> bool {
    if std::env::var_os("CLRPROF_NO_TSC").is_some() {
        return false;
    }
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(info) => {
            let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
            let has = |f: &str| flags.split_whitespace().any(|w| w == f);
            has("constant_tsc") && has("nonstop_tsc")
        }
        Err(_) => false,
    }
}

pub fn uses_tsc() -> bool {
    USE_TSC.load(Ordering::Relaxed)
}

/// The current tick value (raw TSC or monotonic ns).
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(Ordering::Relaxed) {
            return rdtsc();
        }
    }
    monotonic_ns()
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // `_rdtsc` has no preconditions; it reads the time-stamp counter.
    #[allow(unused_unsafe)]
    // SAFETY: (A9) rdtsc is available on every x86_64 CPU and has no memory effects.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch.
pub fn unix_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: (A8) `ts` is a valid, writable timespec; clock_gettime only writes to it.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A (ticks, monotonic ns, unix ns) triple read as close together as possible.
pub fn sync_point() -> (u64, u64, u64) {
    // Bracket the monotonic read with two tick reads and keep the tightest of a few tries.
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let t0 = ticks();
        let mono = monotonic_ns();
        let t1 = ticks();
        let width = t1.wrapping_sub(t0);
        if width < best.0 {
            best = (width, t0 / 2 + t1 / 2 + (t0 % 2 + t1 % 2) / 2, mono);
        }
    }
    (best.1, best.2, unix_ns())
}

/// CPU time of another thread of this process, via its per-thread CPU clock
/// (the clock id glibc's pthread_getcpuclockid builds: `(~tid << 3) | 6`).
pub fn thread_cpu_ns_of(os_tid: u64) -> u64 {
    if os_tid == 0 {
        return 0;
    }
    let clock = ((!(os_tid as libc::clockid_t)) << 3) | 6;
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: (A8) `t` is a valid out pointer; an invalid clock id only makes the call
    // fail.
    if unsafe { libc::clock_gettime(clock, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID, a local read; 0 on error).
/// Async-signal-safe: the SIGPROF handler reads it.
pub fn own_thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: (A8) `t` is a valid out pointer; clock_gettime is async-signal-safe.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `until_ns` (or a signal interrupts the sleep).
pub fn sleep_until_ns(until_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (until_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (until_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: (A8) `ts` is a valid timespec; a null remainder is allowed with
    // TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
}

/// The OS thread id of the calling thread.
pub fn gettid() -> u64 {
    // SAFETY: (A8) gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_thread_cpu_clock_reads() {
        let tid = gettid();
        let a = thread_cpu_ns_of(tid);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = thread_cpu_ns_of(tid);
        assert!(b > a, "{a} {b}");
    }

    #[test]
    fn ticks_are_monotonic() {
        init();
        let a = ticks();
        let b = ticks();
        assert!(b >= a);
        let (t, mono, unix) = sync_point();
        assert!(t >= a && mono > 0 && unix > 1_600_000_000_000_000_000);
    }
}
