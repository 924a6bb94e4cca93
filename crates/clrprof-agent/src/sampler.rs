//! The sampler: a thread of ours that never runs managed code. Each tick it suspends the
//! runtime (ICorProfilerInfo10::SuspendRuntime — on Linux a cross-thread DoStackSnapshot
//! is only allowed while the profiler holds the runtime suspended), enumerates the managed
//! threads, walks each one with an asynchronous DoStackSnapshot, resumes, and only then
//! does the slow work: CPU times, names of new functions, records.
//!
//! Seed 002's rules, and where each is kept:
//! - suspend others only from a thread that never ran managed code: this thread;
//! - before first suspending anyone, call DoStackSnapshot once without suspending, so the
//!   runtime's per-thread state for this thread exists: `warm_up`;
//! - ThreadDestroyed must not complete while that thread is being walked: the callback
//!   calls [`wait_thread_destroyed`], which waits while a walk phase is active;
//! - hold no lock across calls that can trigger a GC: nothing is locked during the walk
//!   (buffers are preallocated; the record lock-free path is used after resume).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use clrprof_format::Event;
use corprof::{FunctionId, ProfilerInfo, ThreadId};

use crate::buffers::emit_at;
use crate::clock;
use crate::names::Seen;

/// Non-zero while the sampler holds the runtime suspended and walks threads.
static WALK_ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Ticks a late sampler may catch up on before it skips (and counts) the rest.
const MAX_CATCH_UP: u64 = 10;

/// Longest stack kept (leaf first); deeper frames are cut and marked.
const MAX_FRAMES: usize = 512;

/// Called from ThreadDestroyed: returns once no walk is in progress.
pub fn wait_thread_destroyed() {
    let mut spins = 0u32;
    while WALK_ACTIVE.load(Ordering::Acquire) != 0 && spins < 200_000 {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

#[derive(Debug, Default)]
pub struct SamplerStats {
    pub ticks: AtomicU64,
    pub missed_ticks: AtomicU64,
    pub samples: AtomicU64,
    pub suspend_failures: AtomicU64,
    pub walk_failures: AtomicU64,
    /// Time the runtime spent suspended by us, summed.
    pub suspended_ns: AtomicU64,
    /// Time the sampler spent per tick (suspend, walk, resume, record), summed.
    pub busy_ns: AtomicU64,
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<crate::thread::NativeThread>,
    pub stats: Arc<SamplerStats>,
}

impl Sampler {
    /// Starts sampling every `interval`, for at most `duration` when given.
    pub fn start(
        info: ProfilerInfo,
        interval: Duration,
        duration: Option<Duration>,
        seen: Arc<Seen>,
    ) -> std::io::Result<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SamplerStats::default());
        let (s, st) = (stop.clone(), stats.clone());
        let handle = crate::thread::spawn("clrprof-sampler", move || {
            run(&info, interval, duration, &s, &st, &seen)
        })?;
        Ok(Sampler {
            stop,
            handle: Some(handle),
            stats,
        })
    }

    /// Stops the sampler and waits for its thread to end.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One thread's stack from one tick, kept until the runtime is resumed.
struct Walked {
    thread: ThreadId,
    os_tid: u64,
    start: usize,
    len: usize,
}

struct ThreadCpu {
    os_tid: u64,
    last_cpu_ns: u64,
}

fn run(
    info: &ProfilerInfo,
    interval: Duration,
    duration: Option<Duration>,
    stop: &AtomicBool,
    stats: &SamplerStats,
    seen: &Seen,
) {
    warm_up(info);
    let no_suspend = std::env::var_os("CLRPROF_SAMPLER_NO_SUSPEND").is_some();
    let mut reported_error = false;
    let interval_ns = interval.as_nanos().max(1) as u64;
    let start = clock::monotonic_ns();
    let end = duration.map(|d| start + d.as_nanos() as u64);
    let mut next = start + interval_ns;
    let mut frames: Vec<u64> = Vec::with_capacity(64 * MAX_FRAMES);
    let mut walked: Vec<Walked> = Vec::with_capacity(256);
    let mut cpu: Vec<ThreadCpu> = Vec::with_capacity(256);
    let mut new_functions: Vec<u64> = Vec::with_capacity(256);
    while !stop.load(Ordering::Acquire) {
        sleep_until(next, stop);
        if stop.load(Ordering::Acquire) {
            break;
        }
        let now = clock::monotonic_ns();
        if let Some(end) = end
            && now >= end
        {
            break;
        }
        // Keep the schedule: a late tick is taken at once (the next deadline stays on the
        // grid), so short delays do not lower the rate; only when far behind (a stalled
        // machine) are whole ticks skipped, and counted.
        next += interval_ns;
        if now > next + MAX_CATCH_UP * interval_ns {
            let behind = (now - next) / interval_ns;
            stats.missed_ticks.fetch_add(behind, Ordering::Relaxed);
            next += behind * interval_ns;
        }
        stats.ticks.fetch_add(1, Ordering::Relaxed);
        let ts = clock::ticks();
        let tick_start = now;
        frames.clear();
        walked.clear();
        // Diagnostic only (CLRPROF_SAMPLER_NO_SUSPEND=1): walk without suspending, to see
        // what the runtime answers; never for real profiling.
        if !no_suspend && !suspend_with_retry(info) {
            stats.suspend_failures.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        WALK_ACTIVE.store(1, Ordering::Release);
        if let Ok(threads) = info.enum_threads() {
            for thread in threads {
                let os_tid = info.get_thread_info(thread).map(u64::from).unwrap_or(0);
                let begin = frames.len();
                let mut depth = 0usize;
                let r = info.do_stack_snapshot(
                    Some(thread),
                    0,
                    None,
                    &mut |f: FunctionId, _ip, _ctx| {
                        // Runs of native frames arrive as one frame with id 0.
                        if frames.len() < frames.capacity() {
                            frames.push(f.0 as u64);
                        }
                        depth += 1;
                        depth < MAX_FRAMES
                    },
                );
                if let Err(e) = r
                    && frames.len() == begin
                {
                    if no_suspend && !reported_error {
                        reported_error = true;
                        crate::log!(
                            "DoStackSnapshot of another thread without SuspendRuntime: {e}"
                        );
                    }
                    stats.walk_failures.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                walked.push(Walked {
                    thread,
                    os_tid,
                    start: begin,
                    len: frames.len() - begin,
                });
            }
        }
        WALK_ACTIVE.store(0, Ordering::Release);
        if !no_suspend {
            let _ = info.resume_runtime();
        }
        stats.suspended_ns.fetch_add(
            clock::monotonic_ns().saturating_sub(tick_start),
            Ordering::Relaxed,
        );

        // The runtime runs again: now read CPU clocks, name new functions and record.
        for w in &walked {
            let cpu_now = thread_cpu_ns(w.os_tid);
            let cpu_delta = match cpu.iter_mut().find(|c| c.os_tid == w.os_tid) {
                Some(c) => {
                    let d = cpu_now.saturating_sub(c.last_cpu_ns);
                    c.last_cpu_ns = cpu_now;
                    d
                }
                None => {
                    cpu.push(ThreadCpu {
                        os_tid: w.os_tid,
                        last_cpu_ns: cpu_now,
                    });
                    0
                }
            };
            let stack = &frames[w.start..w.start + w.len];
            for f in stack {
                if *f != 0 && seen.first(*f as usize) {
                    new_functions.push(*f);
                }
            }
            for f in new_functions.drain(..) {
                crate::profiler::emit_function_info(info, FunctionId(f as usize));
            }
            // Running: the thread used at least half the interval on a CPU since its
            // previous sample (a sleeping thread's brief wake-ups stay below that).
            let state = u8::from(cpu_delta * 2 >= interval_ns);
            emit_at(
                ts,
                &Event::Sample {
                    os_tid: w.os_tid,
                    thread: w.thread.0 as u64,
                    cpu_ns: cpu_delta,
                    state,
                    frames: stack.to_vec().into(),
                },
            );
            stats.samples.fetch_add(1, Ordering::Relaxed);
        }
        if cpu.len() > 4096 {
            cpu.clear();
        }
        stats.busy_ns.fetch_add(
            clock::monotonic_ns().saturating_sub(tick_start),
            Ordering::Relaxed,
        );
    }
}

/// Suspends the runtime; when a GC (or another suspension) is already in progress the
/// runtime answers CORPROF_E_SUSPENSION_IN_PROGRESS, so try again briefly before giving the
/// tick up (a GC usually ends within a few hundred microseconds).
fn suspend_with_retry(info: &ProfilerInfo) -> bool {
    for attempt in 0..4 {
        if info.suspend_runtime().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(250 << attempt));
    }
    false
}

/// Seed 002: let the runtime initialise this thread's state with a walk that suspends
/// nobody. On our own (unmanaged) thread the call fails, which is expected.
fn warm_up(info: &ProfilerInfo) {
    let _ = info.do_stack_snapshot(None, 0, None, &mut |_, _, _| false);
}

/// Sleeps until `deadline_ns` (CLOCK_MONOTONIC), in slices of at most 10 ms so that a stop
/// request (shutdown, detach) is seen quickly even at low rates.
fn sleep_until(deadline_ns: u64, stop: &AtomicBool) {
    const SLICE_NS: u64 = 10_000_000;
    loop {
        let now = clock::monotonic_ns();
        if now >= deadline_ns || stop.load(Ordering::Acquire) {
            return;
        }
        let until = deadline_ns.min(now + SLICE_NS);
        let ts = libc::timespec {
            tv_sec: (until / 1_000_000_000) as libc::time_t,
            tv_nsec: (until % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            );
        }
    }
}

/// CPU time of another thread of this process, via its per-thread CPU clock
/// (the clock id glibc's pthread_getcpuclockid builds: `(~tid << 3) | 6`).
fn thread_cpu_ns(os_tid: u64) -> u64 {
    if os_tid == 0 {
        return 0;
    }
    let clock = ((!(os_tid as libc::clockid_t)) << 3) | 6;
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid out pointer; an invalid clock id only makes the call fail.
    if unsafe { libc::clock_gettime(clock, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_thread_cpu_clock_reads() {
        let tid = clock::gettid();
        let a = thread_cpu_ns(tid);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = thread_cpu_ns(tid);
        assert!(b > a, "{a} {b}");
    }
}
