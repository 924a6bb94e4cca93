//! Suspend-mode capture, the profiling API's own way: SuspendRuntime, an asynchronous
//! DoStackSnapshot of every managed thread, ResumeRuntime. The rules of walking other
//! threads, and where each is kept:
//! - suspend others only from a thread that never ran managed code: the sampler thread;
//! - before first suspending anyone, call DoStackSnapshot once without suspending, so the
//!   runtime's per-thread state for this thread exists: [`warm_up`];
//! - ThreadDestroyed must not complete while that thread is being walked: the callback
//!   calls [`wait_thread_destroyed`], which waits while a walk phase is active;
//! - hold no lock across calls that can trigger a GC: nothing is locked during the walk
//!   (buffers are preallocated; the record lock-free path is used after resume).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use corprof::{FunctionId, ProfilerInfo};

use super::stacks::{Walked, mark_truncated, max_depth};
use super::stats::SamplerStats;

/// Non-zero while the sampler holds the runtime suspended and walks threads.
static WALK_ACTIVE: AtomicUsize = AtomicUsize::new(0);

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

/// Suspend-mode capture of one tick (the profiling API's own way): SuspendRuntime, an asynchronous
/// DoStackSnapshot of every managed thread, ResumeRuntime. False when the runtime could not
/// be suspended (the tick is skipped and counted).
pub(super) fn take_suspended(
    info: &ProfilerInfo,
    stats: &SamplerStats,
    no_suspend: bool,
    reported_error: &mut bool,
    frames: &mut Vec<u64>,
    at: &mut Vec<u64>,
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
                info.do_stack_snapshot(Some(thread), 0, None, &mut |f: FunctionId, ip, _ctx| {
                    // Runs of native frames arrive as one frame with id 0.
                    if frames.len() < frames.capacity() {
                        frames.push(f.0 as u64);
                        // Where the frame is, mapped to IL after the runtime resumes: the
                        // leaf's IP, a caller's return address − 1 (inside the call).
                        let ip = ip as u64;
                        at.push(match (f.0, depth) {
                            (0, _) => 0,
                            (_, 0) => ip,
                            _ => ip.saturating_sub(1),
                        });
                    }
                    depth += 1;
                    depth < max_depth()
                });
            if depth >= max_depth() && frames.len() > begin {
                mark_truncated(frames, stats);
            }
            at.resize(frames.len(), 0);
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
                at: None,
            });
        }
    }
    WALK_ACTIVE.store(0, Ordering::Release);
    if !no_suspend {
        let _ = info.resume_runtime();
    }
    true
}

/// Suspends the runtime; when a GC (or another suspension) is already in progress the
/// runtime answers CORPROF_E_SUSPENSION_IN_PROGRESS, so try again briefly before giving the
/// tick up (a GC usually ends within a few hundred microseconds).
pub(super) fn suspend_with_retry(info: &ProfilerInfo) -> bool {
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
pub(super) fn warm_up(info: &ProfilerInfo) {
    let _ = info.do_stack_snapshot(None, 0, None, &mut |_, _, _| false);
}
