//! The sampler: a thread of ours that never runs managed code. Each tick it suspends the
//! runtime (ICorProfilerInfo10::SuspendRuntime — on Linux a cross-thread DoStackSnapshot
//! is only allowed while the profiler holds the runtime suspended), enumerates the managed
//! threads, walks each one with an asynchronous DoStackSnapshot, resumes, and only then
//! does the slow work: CPU times, names of new functions, records.
//!
//! The rules of walking other threads with the profiling API, and where each is kept:
//! - suspend others only from a thread that never ran managed code: this thread;
//! - before first suspending anyone, call DoStackSnapshot once without suspending, so the
//!   runtime's per-thread state for this thread exists: `warm_up`;
//! - ThreadDestroyed must not complete while that thread is being walked: the callback
//!   calls [`wait_thread_destroyed`], which waits while a walk phase is active;
//! - hold no lock across calls that can trigger a GC: nothing is locked during the walk
//!   (buffers are preallocated; the record lock-free path is used after resume).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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

/// Longest stack kept (leaf first; `CLRPROF_MAX_DEPTH`, default 512); deeper stacks lose
/// their root-most frames, end in [`clrprof_format::TRUNCATED_FRAME`] and are counted.
/// Set once per recording by [`Sampler::start`], before the sampler thread starts.
static MAX_DEPTH: AtomicUsize = AtomicUsize::new(512);
/// Whether the truncation marker was named in this recording.
static TRUNCATION_NAMED: AtomicBool = AtomicBool::new(false);

fn max_depth() -> usize {
    MAX_DEPTH.load(Ordering::Relaxed)
}

/// Signal mode: the most stack a handler copies. 512 KiB, or more for a deeper
/// `--max-depth` (~160 bytes a frame, at most 8 MiB): the pages are only touched as far
/// as a thread's stack actually goes (see pages.rs).
fn stack_copy_bytes() -> usize {
    (max_depth() * 160).clamp(STACK_COPY_BYTES, 8 << 20)
}

/// Appends the truncation marker to a cut stack and names it once.
fn mark_truncated(frames: &mut Vec<u64>, stats: &SamplerStats) {
    stats.truncated.fetch_add(1, Ordering::Relaxed);
    if !TRUNCATION_NAMED.swap(true, Ordering::Relaxed) {
        crate::profiler::emit_frame_name(
            clrprof_format::TRUNCATED_FRAME,
            format!("[truncated: deeper than {} frames]", max_depth()),
        );
    }
    frames.push(clrprof_format::TRUNCATED_FRAME);
}

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
    /// Signal mode: threads whose handler did not run within the timeout.
    pub signal_timeouts: AtomicU64,
    /// Stacks cut at the depth limit or at the end of the largest stack copy.
    pub truncated: AtomicU64,
    /// Signal mode: samples of threads that had not run since their previous capture,
    /// which reuse that capture instead of being signalled.
    pub reused: AtomicU64,
    /// Signal mode: OSR frames whose caller the walk took from the Tier-0 record under
    /// them.
    pub osr_frames: AtomicU64,
    /// Signal mode: Tier-0 frames dropped because an OSR frame of the same method sat on
    /// them (the walk found no Tier-0 record, or did not know the OSR prolog).
    pub osr_merged: AtomicU64,
    /// Whether the signal sampler was installed (else SuspendRuntime was used).
    pub signal: AtomicBool,
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
        kind: SamplerKind,
        attached: bool,
        seen: Arc<Seen>,
        max_depth: usize,
    ) -> std::io::Result<Sampler> {
        MAX_DEPTH.store(max_depth.max(1), Ordering::Relaxed);
        TRUNCATION_NAMED.store(false, Ordering::Relaxed);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SamplerStats::default());
        let (s, st) = (stop.clone(), stats.clone());
        let handle = crate::thread::spawn("clrprof-sampler", move || {
            let plan = Plan {
                interval,
                duration,
                kind,
                attached,
            };
            run(&info, plan, &s, &st, &seen)
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

/// What the sampler thread is asked to do.
struct Plan {
    interval: Duration,
    duration: Option<Duration>,
    kind: SamplerKind,
    attached: bool,
}

fn run(info: &ProfilerInfo, plan: Plan, stop: &AtomicBool, stats: &SamplerStats, seen: &Seen) {
    let Plan {
        interval,
        duration,
        kind,
        attached,
    } = plan;
    warm_up(info);
    let no_suspend = std::env::var_os("CLRPROF_SAMPLER_NO_SUSPEND").is_some();
    let mut capture = Capture::choose(info, kind, attached);
    stats
        .signal
        .store(!matches!(capture, Capture::Suspend), Ordering::Relaxed);
    let mut reported_error = false;
    let interval_ns = interval.as_nanos().max(1) as u64;
    let start = clock::monotonic_ns();
    let end = duration.map(|d| start + d.as_nanos() as u64);
    let mut next = start + interval_ns;
    let mut frames: Vec<u64> = Vec::with_capacity(64 * (max_depth() + 1));
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
        match &mut capture {
            Capture::Suspend => {
                if !take_suspended(
                    info,
                    stats,
                    no_suspend,
                    &mut reported_error,
                    &mut frames,
                    &mut walked,
                ) {
                    continue;
                }
            }
            Capture::Signal(s) => s.take(info, stats, interval_ns, &mut frames, &mut walked),
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
                // Module frames are named by the signal sampler; never ask the runtime.
                if !clrprof_format::is_native_frame(*f) && seen.first(*f as usize) {
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
    capture.finish();
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    crate::buffers::emit(&Event::SamplerStats {
        ticks: get(&stats.ticks),
        samples: get(&stats.samples),
        missed_ticks: get(&stats.missed_ticks),
        signal_timeouts: get(&stats.signal_timeouts),
        truncated: get(&stats.truncated),
        max_depth: max_depth() as u64,
    });
}

/// Suspend-mode capture of one tick (the profiling API's own way): SuspendRuntime, an asynchronous
/// DoStackSnapshot of every managed thread, ResumeRuntime. False when the runtime could not
/// be suspended (the tick is skipped and counted).
fn take_suspended(
    info: &ProfilerInfo,
    stats: &SamplerStats,
    no_suspend: bool,
    reported_error: &mut bool,
    frames: &mut Vec<u64>,
    walked: &mut Vec<Walked>,
) -> bool {
    // Diagnostic only (CLRPROF_SAMPLER_NO_SUSPEND=1): walk without suspending, to see
    // what the runtime answers; never for real profiling.
    if !no_suspend && !suspend_with_retry(info) {
        stats.suspend_failures.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    WALK_ACTIVE.store(1, Ordering::Release);
    if let Ok(threads) = info.enum_threads() {
        for thread in threads {
            let os_tid = info.get_thread_info(thread).map(u64::from).unwrap_or(0);
            let begin = frames.len();
            let mut depth = 0usize;
            let r =
                info.do_stack_snapshot(Some(thread), 0, None, &mut |f: FunctionId, _ip, _ctx| {
                    // Runs of native frames arrive as one frame with id 0.
                    if frames.len() < frames.capacity() {
                        frames.push(f.0 as u64);
                    }
                    depth += 1;
                    depth < max_depth()
                });
            if depth >= max_depth() && frames.len() > begin {
                mark_truncated(frames, stats);
            }
            if let Err(e) = r
                && frames.len() == begin
            {
                if no_suspend && !*reported_error {
                    *reported_error = true;
                    crate::log!("DoStackSnapshot of another thread without SuspendRuntime: {e}");
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
    true
}

/// How stacks are captured (a setting: `CLRPROF_SAMPLER`).
pub use clrprof_settings::SamplerKind;

enum Capture {
    Suspend,
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    Signal(Box<SignalCapture>),
}

impl Capture {
    fn choose(info: &ProfilerInfo, kind: SamplerKind, seed: bool) -> Capture {
        if kind == SamplerKind::Suspend {
            return Capture::Suspend;
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            match crate::sigsample::SignalSampler::install(stack_copy_bytes()) {
                Ok(sig) => {
                    // At startup every thread reports itself (ThreadAssignedToOSThread)
                    // after this point; after attach, existing threads must be listed.
                    if seed {
                        seed_registry(info);
                    }
                    return Capture::Signal(Box::new(SignalCapture::new(sig)));
                }
                Err(e) => crate::log!(
                    "signal sampler unavailable ({e}); sampling with SuspendRuntime instead"
                ),
            }
        }
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        {
            let _ = (info, seed);
            crate::log!(
                "the signal sampler exists for Linux x86_64 only; sampling with SuspendRuntime"
            );
        }
        Capture::Suspend
    }

    fn finish(self) {
        match self {
            Capture::Suspend => {}
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            Capture::Signal(s) => s.sig.uninstall(),
        }
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

/// Before a thread of ours first suspends anyone, it calls DoStackSnapshot once without
/// suspending, so that the runtime's per-thread initialization for it completes first. On
/// our own (unmanaged) thread the call fails, which is expected.
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

/// Most bytes of stack copied per thread and sample in signal mode (about a thousand
/// .NET frames); a deeper stack loses its root-most frames (counted as truncated).
const STACK_COPY_BYTES: usize = 512 * 1024;

/// What a thread's first sample copies; each thread's amount then adapts: doubled after
/// a walk ran out of copied stack, shrunk slowly while walks end well inside it.
const FIRST_COPY_BYTES: usize = 32 * 1024;
const MIN_COPY_BYTES: usize = 8 * 1024;

/// CPU time below which a thread counts as not having run since its last capture: the
/// return from our own signal handler (measured after the capture) stays below it.
const IDLE_CPU_NS: u64 = 20_000;

/// Most threads the registry keeps (more are not sampled in signal mode, and counted).
const MAX_THREADS: usize = 16_384;

/// Managed threads and their OS thread ids (ThreadAssignedToOSThread, ThreadDestroyed):
/// the threads the signal sampler signals. A lock held only for a push, a removal or a
/// copy; the sampler thread never runs managed code, so waiting here cannot deadlock with
/// a GC.
static THREADS: Mutex<Vec<(u64, u32)>> = Mutex::new(Vec::new());

/// ThreadAssignedToOSThread: the thread becomes a sampling target.
pub fn thread_assigned(thread: u64, os_tid: u32) {
    let mut t = THREADS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = t.iter_mut().find(|e| e.0 == thread) {
        e.1 = os_tid;
    } else if t.len() < MAX_THREADS {
        t.push((thread, os_tid));
    }
}

/// ThreadDestroyed: the thread is no longer signalled.
pub fn thread_gone(thread: u64) {
    let mut t = THREADS.lock().unwrap_or_else(PoisonError::into_inner);
    t.retain(|e| e.0 != thread);
}

fn forget_tid(os_tid: u32) {
    let mut t = THREADS.lock().unwrap_or_else(PoisonError::into_inner);
    t.retain(|e| e.1 != os_tid);
}

/// Threads that existed before the callbacks could tell us (attach, or threads created
/// before the sampler started): one suspension to enumerate them safely.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn seed_registry(info: &ProfilerInfo) {
    if !suspend_with_retry(info) {
        crate::log!("signal sampler: could not suspend the runtime to list existing threads");
        return;
    }
    let found: Vec<(u64, u32)> = info
        .enum_threads()
        .map(|threads| {
            threads
                .into_iter()
                .filter_map(|t| {
                    let tid = info.get_thread_info(t).ok()?;
                    (tid != 0).then_some((t.0 as u64, tid))
                })
                .collect()
        })
        .unwrap_or_default();
    let _ = info.resume_runtime();
    for (thread, tid) in found {
        thread_assigned(thread, tid);
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct SignalCapture {
    sig: crate::sigsample::SignalSampler,
    symbols: crate::symbolize::Symbolizer,
    threads: Vec<(u64, u32)>,
    tids: Vec<u32>,
    wants: Vec<usize>,
    /// Per OS thread: bytes of stack to copy next time.
    copy_bytes: std::collections::HashMap<u32, usize>,
    /// Per OS thread: CPU time at its last capture and the frames captured then.
    last: std::collections::HashMap<u32, (u64, Vec<u64>)>,
    /// This tick's threads that ran since their last capture (the others reuse it).
    to_signal: Vec<(u64, u32)>,
    addrs: Vec<u64>,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl SignalCapture {
    fn new(sig: crate::sigsample::SignalSampler) -> SignalCapture {
        SignalCapture {
            sig,
            symbols: crate::symbolize::Symbolizer::new(),
            threads: Vec::with_capacity(256),
            tids: Vec::with_capacity(crate::sigsample::BATCH),
            wants: Vec::with_capacity(crate::sigsample::BATCH),
            copy_bytes: std::collections::HashMap::new(),
            last: std::collections::HashMap::new(),
            to_signal: Vec::with_capacity(256),
            addrs: Vec::with_capacity(max_depth()),
        }
    }

    /// One tick: signal every registered thread (in batches), walk and symbolise each
    /// captured stack. No thread waits for another, and none waits for a safe point.
    fn take(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        interval_ns: u64,
        frames: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        self.threads.clear();
        self.threads.extend(
            THREADS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .copied(),
        );
        // Long enough for a thread this sampler preempted to be scheduled again.
        let timeout = Duration::from_nanos(interval_ns.clamp(5_000_000, 20_000_000));
        let SignalCapture {
            sig,
            symbols,
            threads,
            tids,
            wants,
            copy_bytes,
            last,
            to_signal,
            addrs,
        } = self;
        if copy_bytes.len() > MAX_THREADS {
            copy_bytes.clear();
        }
        if last.len() > MAX_THREADS {
            last.clear();
        }
        // A thread that used (next to) no CPU since its last capture has not run (the
        // per-thread CPU clock counts every nanosecond on a CPU), so its stack is still
        // the one captured then: reuse it instead of waking the thread with a signal.
        to_signal.clear();
        for &(thread, os_tid) in threads.iter() {
            let cpu = thread_cpu_ns(u64::from(os_tid));
            match last.get(&os_tid) {
                // (cpu < prev: the id now names a new thread.)
                Some((prev, stack)) if cpu >= *prev && cpu != 0 && cpu - *prev < IDLE_CPU_NS => {
                    stats.reused.fetch_add(1, Ordering::Relaxed);
                    if stack.iter().all(|&f| f == 0) {
                        stats.walk_failures.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let begin = frames.len();
                    frames.extend_from_slice(stack);
                    walked.push(Walked {
                        thread: ThreadId(thread as usize),
                        os_tid: u64::from(os_tid),
                        start: begin,
                        len: stack.len(),
                    });
                }
                _ => to_signal.push((thread, os_tid)),
            }
        }
        for batch in to_signal.chunks(crate::sigsample::BATCH) {
            tids.clear();
            tids.extend(batch.iter().map(|t| t.1));
            wants.clear();
            wants.extend(
                tids.iter()
                    .map(|t| copy_bytes.get(t).copied().unwrap_or(FIRST_COPY_BYTES)),
            );
            let outcome = sig.capture(tids, wants, timeout);
            stats
                .signal_timeouts
                .fetch_add(outcome.timed_out as u64, Ordering::Relaxed);
            for (i, &(thread, os_tid)) in batch.iter().enumerate() {
                let Some(c) = sig.captured(i) else {
                    continue;
                };
                addrs.clear();
                let leaf = symbols.leaf(info, c.ip).code();
                let walk = crate::fpwalk::walk(&c, leaf, addrs, max_depth(), |a| {
                    symbols.caller(info, a).code()
                });
                stats
                    .osr_frames
                    .fetch_add(u64::from(walk.osr_frames), Ordering::Relaxed);
                let end = walk.end;
                let want = wants[i];
                let copy_max = stack_copy_bytes();
                let cut = end == crate::fpwalk::WalkEnd::Limit
                    || (end == crate::fpwalk::WalkEnd::OutsideCopy
                        && c.stack.len() >= want
                        && want >= copy_max);
                let next_want =
                    if end == crate::fpwalk::WalkEnd::OutsideCopy && c.stack.len() >= want {
                        (want * 2).min(copy_max)
                    } else if c.stack.len() * 2 < want {
                        // The whole stack fit in half: copy less next time.
                        (want - want / 8).max(MIN_COPY_BYTES)
                    } else {
                        want
                    };
                copy_bytes.insert(os_tid, next_want);
                let begin = frames.len();
                let mut inner = crate::symbolize::Sym::default();
                for (k, &a) in addrs.iter().enumerate() {
                    let this = if k == 0 {
                        symbols.leaf(info, a)
                    } else {
                        symbols.caller(info, a)
                    };
                    let mut f = this.function;
                    if f == 0 {
                        // Not managed: named by its module (`[libcoreclr.so]`), else
                        // `[native]` (0). A run in one module is one frame.
                        f = symbols.native(a);
                        if frames.len() > begin && frames.last() == Some(&f) {
                            continue;
                        }
                    }
                    // The Tier-0 frame an OSR method sits on is the same call: drop it.
                    if k > 0 && crate::symbolize::is_osr_pair(inner, this) {
                        stats.osr_merged.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    inner = this;
                    frames.push(f);
                }
                // CPU clock after the handler ran: if it has barely moved next tick (the
                // handler's own return may land after this reading), the thread has not
                // run since.
                let entry = last.entry(os_tid).or_insert_with(|| (0, Vec::new()));
                entry.0 = thread_cpu_ns(u64::from(os_tid));
                entry.1.clear();
                entry.1.extend_from_slice(&frames[begin..]);
                // Like DoStackSnapshot, which reports nothing for a thread without managed
                // frames (runtime threads waiting in native code): no sample.
                if frames[begin..]
                    .iter()
                    .all(|&f| clrprof_format::is_native_frame(f))
                {
                    frames.truncate(begin);
                    stats.walk_failures.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if cut {
                    mark_truncated(frames, stats);
                }
                walked.push(Walked {
                    thread: ThreadId(thread as usize),
                    os_tid: u64::from(os_tid),
                    start: begin,
                    len: frames.len() - begin,
                });
            }
            if outcome.gone > 0 {
                for (i, t) in batch.iter().enumerate() {
                    if sig.captured(i).is_none() && !thread_alive(t.1) {
                        forget_tid(t.1);
                    }
                }
            }
        }
        for (id, path) in symbols.take_new_modules() {
            crate::profiler::emit_native_module(id, path);
        }
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn thread_alive(os_tid: u32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{os_tid}")).exists()
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
