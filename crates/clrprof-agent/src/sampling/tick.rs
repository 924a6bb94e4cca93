//! The tick loop: the sampler thread (one of ours, never running managed code) wakes
//! every interval, captures the stacks of the managed threads (by signal or by
//! suspension), and once the runtime runs again does the slow work: CPU times, names of
//! new functions, records.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use clrprof_format::Event;
use corprof::{FunctionId, ProfilerInfo};

use super::stacks::{self, Walked, max_depth};
use super::stats::{Lateness, SamplerStats};
use super::suspend;
use crate::config::SamplerKind;
use crate::names::Seen;
use crate::os::clock;
use crate::output::buffers::emit_at;
use crate::output::ondemand::{self, COUNTS, Request};
use crate::stackwalk::ilmap::IlMaps;

/// Ticks a late sampler may catch up on before it skips (and counts) the rest.
const MAX_CATCH_UP: u64 = 10;

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<crate::os::thread::NativeThread>,
    pub stats: Arc<SamplerStats>,
}

impl Sampler {
    /// Starts sampling every `interval`, for at most `duration` when given; with
    /// `owner_stacks` (`--waits`), also takes lock owners' stacks when asked.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        info: ProfilerInfo,
        interval: Duration,
        duration: Option<Duration>,
        kind: SamplerKind,
        attached: bool,
        seen: Arc<Seen>,
        max_depth: usize,
        owner_stacks: bool,
    ) -> std::io::Result<Sampler> {
        stacks::start_recording(max_depth);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SamplerStats::default());
        let (s, st) = (stop.clone(), stats.clone());
        let handle = crate::os::thread::spawn("clrprof-sampler", move || {
            let plan = Plan {
                interval,
                duration,
                kind,
                attached,
                owner_stacks,
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
    /// `--waits`: serve requests for lock owners' stacks (signal mode only).
    owner_stacks: bool,
}

fn run(info: &ProfilerInfo, plan: Plan, stop: &AtomicBool, stats: &SamplerStats, seen: &Seen) {
    let Plan {
        interval,
        duration,
        kind,
        attached,
        owner_stacks,
    } = plan;
    suspend::warm_up(info);
    let no_suspend = std::env::var_os("CLRPROF_SAMPLER_NO_SUSPEND").is_some();
    // Diagnostic only (CLRPROF_SAMPLER_NO_POSITIONS=1): samples without IL offsets, to
    // measure what recording them costs.
    let positions = std::env::var_os("CLRPROF_SAMPLER_NO_POSITIONS").is_none();
    let mut capture = Capture::choose(info, kind, attached);
    stats
        .signal
        .store(!matches!(capture, Capture::Suspend), Ordering::Relaxed);
    let mut reported_error = false;
    let interval_ns = interval.as_nanos().max(1) as u64;
    let start = clock::monotonic_ns();
    let end = duration.map(|d| start + d.as_nanos() as u64);
    let mut next = start + interval_ns;
    stats.interval_ns.store(interval_ns, Ordering::Relaxed);
    // When the previous tick's work ended: what made a late tick late.
    let mut prev_end = start;
    let mut scratch = Scratch::new(positions);
    let serve = owner_stacks && capture.is_signal();
    if serve {
        ondemand::serving(true);
    } else if owner_stacks {
        crate::log!(
            "waits: lock owners' stacks are taken on demand by the signal sampler only; this recording has none"
        );
    }
    let mut owners = Owners::default();
    while !stop.load(Ordering::Acquire) {
        if serve {
            // Between ticks, the lock owners' stacks asked for (`--waits`) are taken
            // as soon as they are asked for.
            loop {
                let now = clock::monotonic_ns();
                if stop.load(Ordering::Acquire) || now >= next {
                    break;
                }
                if ondemand::pending() {
                    collect_and_record(
                        info,
                        seen,
                        stats,
                        interval_ns,
                        &mut capture,
                        &mut scratch,
                        false,
                    );
                    owners.serve(info, seen, &mut capture);
                    continue;
                }
                ondemand::sleep(now, next, 10_000_000);
            }
        } else {
            sleep_until(next, stop);
        }
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
        let late = Lateness::of(next, prev_end, now);
        if late.busy_ns + late.sched_ns > interval_ns {
            let by = if late.mostly_busy() {
                &stats.late_busy
            } else {
                &stats.late_sched
            };
            by.fetch_add(1, Ordering::Relaxed);
        }
        stats
            .max_wake_delay_ns
            .fetch_max(late.sched_ns, Ordering::Relaxed);
        next += interval_ns;
        if now > next + MAX_CATCH_UP * interval_ns {
            let behind = (now - next) / interval_ns;
            stats.missed_ticks.fetch_add(behind, Ordering::Relaxed);
            let by = if late.mostly_busy() {
                &stats.missed_busy
            } else {
                &stats.missed_sched
            };
            by.fetch_add(behind, Ordering::Relaxed);
            next += behind * interval_ns;
        }
        stats.ticks.fetch_add(1, Ordering::Relaxed);
        let ts = clock::ticks();
        let tick_start = now;
        scratch.clear_batch();
        let Scratch {
            frames, at, walked, ..
        } = &mut scratch;
        match &mut capture {
            Capture::Suspend => {
                if !suspend::take_suspended(
                    info,
                    stats,
                    no_suspend,
                    &mut reported_error,
                    frames,
                    at,
                    walked,
                ) {
                    continue;
                }
            }
            Capture::Signal(s) => s.take(info, stats, interval_ns, ts, frames, at, walked),
        }
        stats.suspended_ns.fetch_add(
            clock::monotonic_ns().saturating_sub(tick_start),
            Ordering::Relaxed,
        );

        // The runtime runs again: now read CPU clocks, name new functions and record.
        record(info, seen, stats, ts, interval_ns, &mut scratch);
        if scratch.cpu.len() > 4096 {
            scratch.cpu.clear();
        }
        prev_end = clock::monotonic_ns();
        let took = prev_end.saturating_sub(tick_start);
        stats.busy_ns.fetch_add(took, Ordering::Relaxed);
        stats.max_tick_ns.fetch_max(took, Ordering::Relaxed);
        stats
            .run_ns
            .store(prev_end.saturating_sub(start), Ordering::Relaxed);
    }
    if serve {
        ondemand::serving(false);
    }
    // The signal captures still outstanding (waited for briefly; the rest are counted).
    collect_and_record(
        info,
        seen,
        stats,
        interval_ns,
        &mut capture,
        &mut scratch,
        true,
    );
    let il = scratch.ilmaps.stats;
    crate::log_detail!(
        "source positions: {} code addresses mapped to IL, {} not; {} code maps read",
        il.mapped,
        il.unmapped,
        il.maps_read
    );
    capture.finish();
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    crate::output::buffers::emit(&Event::SamplerStats {
        ticks: get(&stats.ticks),
        samples: get(&stats.samples),
        missed_ticks: get(&stats.missed_ticks),
        signal_timeouts: get(&stats.signal_timeouts),
        truncated: get(&stats.truncated),
        max_depth: max_depth() as u64,
    });
    crate::output::buffers::emit(&Event::SamplerTiming {
        interval_ns: get(&stats.interval_ns),
        run_ns: get(&stats.run_ns),
        missed_busy: get(&stats.missed_busy),
        missed_sched: get(&stats.missed_sched),
        late_busy: get(&stats.late_busy),
        late_sched: get(&stats.late_sched),
        max_tick_ns: get(&stats.max_tick_ns),
        max_wake_delay_ns: get(&stats.max_wake_delay_ns),
        busy_ns: get(&stats.busy_ns),
        capture_ns: get(&stats.suspended_ns),
        rejected_walks: get(&stats.rejected_walks),
    });
    if stats.signal.load(Ordering::Relaxed) {
        // The signal sampler's skips by reason (a Meta record: no format change).
        let json = serde_json::json!({
            "handler_pending": get(&stats.skipped_pending),
            "no_free_slot": get(&stats.skipped_no_slot),
            "signals_lost": get(&stats.signals_lost),
        })
        .to_string();
        crate::output::buffers::emit(&Event::Meta {
            key: "sampler_skips".into(),
            json: json.into(),
        });
    }
}

/// The sampler thread's buffers, reused from tick to tick: one batch of captured stacks
/// (`frames`, `at`, `walked`) and what outlives a batch (each thread's last CPU time, the
/// IL maps).
struct Scratch {
    frames: Vec<u64>,
    /// Per frame: the code address whose IL offset the sample records (0: none).
    at: Vec<u64>,
    walked: Vec<Walked>,
    cpu: Vec<ThreadCpu>,
    ilmaps: IlMaps,
}

impl Scratch {
    fn new(positions: bool) -> Scratch {
        let frames = Vec::with_capacity(64 * (max_depth() + 1));
        Scratch {
            at: Vec::with_capacity(frames.capacity()),
            frames,
            walked: Vec::with_capacity(256),
            cpu: Vec::with_capacity(256),
            ilmaps: IlMaps::new(positions),
        }
    }

    /// Empties the batch (the CPU times and the IL maps stay).
    fn clear_batch(&mut self) {
        self.frames.clear();
        self.at.clear();
        self.walked.clear();
    }
}

/// Collects the signal captures whose handlers have run and records them: between ticks
/// before serving lock owners' stacks, and once after the last tick (`stopping`: waiting
/// briefly for those still outstanding).
fn collect_and_record(
    info: &ProfilerInfo,
    seen: &Seen,
    stats: &SamplerStats,
    interval_ns: u64,
    capture: &mut Capture,
    scratch: &mut Scratch,
    stopping: bool,
) {
    scratch.clear_batch();
    capture.collect(
        info,
        stats,
        stopping,
        &mut scratch.frames,
        &mut scratch.at,
        &mut scratch.walked,
    );
    record(info, seen, stats, clock::ticks(), interval_ns, scratch);
}

/// Records one sample per walked stack of the batch, with the CPU time its thread used
/// since its previous sample, naming the functions not seen before.
fn record(
    info: &ProfilerInfo,
    seen: &Seen,
    stats: &SamplerStats,
    tick_ts: u64,
    interval_ns: u64,
    scratch: &mut Scratch,
) {
    let Scratch {
        frames,
        at,
        walked,
        cpu,
        ilmaps,
    } = scratch;
    for w in walked.iter() {
        let (ts, cpu_now) =
            w.at.unwrap_or_else(|| (tick_ts, clock::thread_cpu_ns_of(w.os_tid)));
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
                super::threads::emit_os_name(w.os_tid);
                0
            }
        };
        let stack = &frames[w.start..w.start + w.len];
        // Functions not seen before are named ahead of the sample that holds them. Module
        // frames are named by the signal sampler; never ask the runtime.
        for &f in stack {
            if !clrprof_format::is_native_frame(f) && seen.first(f as usize) {
                crate::names::emit_function_info(info, FunctionId(f as usize));
            }
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
        // Where each managed frame was in its method (the IL offset), right after the
        // sample: the same thread's next record, so the reader pairs them.
        if let Some(addrs) = at.get(w.start..w.start + w.len) {
            let positions: Vec<u64> = stack
                .iter()
                .zip(addrs)
                .map(|(&f, &a)| {
                    let p = (a != 0 && !clrprof_format::is_native_frame(f))
                        .then(|| ilmaps.position(info, f, a))
                        .flatten();
                    clrprof_format::position_item(p)
                })
                .collect();
            if positions.iter().any(|&p| p != 0) {
                emit_at(
                    ts,
                    &Event::SamplePositions {
                        os_tid: w.os_tid,
                        positions: positions.into(),
                    },
                );
            }
        }
        stats.samples.fetch_add(1, Ordering::Relaxed);
    }
}

/// The sampler's buffers for lock owners' stacks (`--waits`, `ondemand.rs`).
#[derive(Default)]
struct Owners {
    requests: Vec<Request>,
    registry: Vec<(u64, u32)>,
    /// Each request's owner: its index in `owners`, if it is a registered thread.
    which: Vec<Option<usize>>,
    owners: Vec<(u64, u32)>,
    frames: Vec<u64>,
    at: Vec<u64>,
    walked: Vec<Walked>,
}

impl Owners {
    /// Takes the requests outstanding, signals each owner once, and records one
    /// `WaitOwnerStack` per request served; counts the others by reason.
    fn serve(&mut self, info: &ProfilerInfo, seen: &Seen, capture: &mut Capture) {
        self.requests.clear();
        if !ondemand::take(&mut self.requests) {
            return;
        }
        self.registry.clear();
        super::threads::copy_into(&mut self.registry);
        self.owners.clear();
        self.which.clear();
        for r in &self.requests {
            // `LockOwnerThreadID` is the owner's OS thread id (docs/waits.md).
            let Some(&(thread, os_tid)) = self.registry.iter().find(|e| u64::from(e.1) == r.owner)
            else {
                COUNTS.owner_unknown.fetch_add(1, Ordering::Relaxed);
                self.which.push(None);
                continue;
            };
            let k = match self.owners.iter().position(|o| o.1 == os_tid) {
                Some(k) => k,
                None => {
                    self.owners.push((thread, os_tid));
                    self.owners.len() - 1
                }
            };
            self.which.push(Some(k));
        }
        self.frames.clear();
        self.at.clear();
        self.walked.clear();
        match capture {
            Capture::Suspend => {
                let n = self.which.iter().flatten().count() as u64;
                COUNTS.no_sampler.fetch_add(n, Ordering::Relaxed);
                return;
            }
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            Capture::Signal(s) => s.take_now(
                info,
                &self.owners,
                &mut self.frames,
                &mut self.at,
                &mut self.walked,
            ),
        }
        for (r, k) in self.requests.iter().zip(&self.which) {
            let Some(k) = *k else {
                continue;
            };
            let os_tid = u64::from(self.owners[k].1);
            let Some(w) = self.walked.iter().find(|w| w.os_tid == os_tid) else {
                #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
                let gone = !super::threads::thread_alive(os_tid as u32);
                #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
                let gone = false;
                if gone {
                    COUNTS.owner_exited.fetch_add(1, Ordering::Relaxed);
                } else {
                    COUNTS.walk_failed.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            };
            let stack = &self.frames[w.start..w.start + w.len];
            for &f in stack {
                if !clrprof_format::is_native_frame(f) && seen.first(f as usize) {
                    crate::names::emit_function_info(info, FunctionId(f as usize));
                }
            }
            let ts = w.at.map_or_else(clock::ticks, |a| a.0);
            emit_at(
                ts,
                &Event::WaitOwnerStack {
                    thread: r.thread,
                    lock: r.lock,
                    owner: r.owner,
                    frames: stack.into(),
                },
            );
            COUNTS.taken.fetch_add(1, Ordering::Relaxed);
        }
    }
}

enum Capture {
    Suspend,
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    Signal(Box<super::signal::SignalCapture>),
}

impl Capture {
    fn choose(info: &ProfilerInfo, kind: SamplerKind, seed: bool) -> Capture {
        if kind == SamplerKind::Suspend {
            return Capture::Suspend;
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            match super::sigprof::SignalSampler::install(stacks::stack_copy_bytes()) {
                Ok(sig) => {
                    // At startup every thread reports itself (ThreadAssignedToOSThread)
                    // after this point; after attach, existing threads must be listed.
                    if seed {
                        super::threads::seed_registry(info);
                    }
                    return Capture::Signal(Box::new(super::signal::SignalCapture::new(sig)));
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

    fn is_signal(&self) -> bool {
        !matches!(self, Capture::Suspend)
    }

    /// Collects the signal captures whose handlers have run (`stopping`: waits briefly
    /// for the others first, and counts those that never came).
    fn collect(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        stopping: bool,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        match self {
            Capture::Suspend => {
                let _ = (info, stats, stopping, frames, at, walked);
            }
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            Capture::Signal(s) => s.collect(info, stats, stopping, frames, at, walked),
        }
    }

    fn finish(self) {
        match self {
            Capture::Suspend => {}
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            Capture::Signal(s) => {
                s.log_checks();
                s.sig.uninstall();
            }
        }
    }
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
        clock::sleep_until_ns(deadline_ns.min(now + SLICE_NS));
    }
}
