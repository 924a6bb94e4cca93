//! Signal-mode capture of one tick (Linux x86_64): signal every registered thread that ran
//! since its last capture (in batches, `sigprof.rs`), walk each copied stack by its frame
//! pointers (`fpwalk.rs`) and turn the addresses into FunctionIDs or modules
//! (`symbolize.rs`). A thread that did not run reuses its previous capture. No thread
//! waits for another, and none waits for a safe point.

use std::sync::atomic::Ordering;

use corprof::{ProfilerInfo, ThreadId};

use super::stacks::{Walked, mark_truncated, max_depth, stack_copy_bytes};
use super::stats::SamplerStats;
use super::{sigprof, stackmap, threads};
use crate::os::clock;
use crate::stackwalk::addrhash::AddrMap;
use crate::stackwalk::{fpwalk, symbolize};

/// What a thread's first sample copies; each thread's amount then adapts: doubled after
/// a walk ran out of copied stack, shrunk slowly while walks end well inside it.
const FIRST_COPY_BYTES: usize = 32 * 1024;
const MIN_COPY_BYTES: usize = 8 * 1024;

/// CPU time below which a thread counts as not having run since its last capture: the
/// return from our own signal handler (measured after the capture) stays below it.
const IDLE_CPU_NS: u64 = 20_000;

/// How long the sampler waits for a lock owner's handler (`take_now`).
const OWNER_TIMEOUT_NS: u64 = 10_000_000;

pub(super) struct SignalCapture {
    pub(super) sig: sigprof::SignalSampler,
    symbols: symbolize::Symbolizer,
    threads: Vec<(u64, u32)>,
    tids: Vec<u32>,
    wants: Vec<usize>,
    stacks: Vec<stackmap::Bounds>,
    /// Per thread: its own stack mapping, for a `memcpy` copy in the handler.
    bounds: stackmap::StackBounds,
    /// Per OS thread: bytes of stack to copy next time.
    copy_bytes: AddrMap<u32, usize>,
    /// Per OS thread: CPU time at its last capture, the frames captured then and their
    /// code addresses (for their IL offsets).
    last: AddrMap<u32, (u64, Vec<u64>, Vec<u64>)>,
    /// This tick's threads that ran since their last capture (the others reuse it).
    to_signal: Vec<Target>,
    /// The batch signalled last and not yet collected (the tick's last batch is collected
    /// at the start of the next tick, or at stop), and when to stop waiting for it.
    pending: Vec<Target>,
    pending_deadline: u64,
    addrs: Vec<u64>,
}

/// A thread signalled at a tick: its ids, the tick's timestamp and its CPU clock then.
#[derive(Clone, Copy)]
struct Target {
    thread: u64,
    os_tid: u32,
    ts: u64,
    cpu: u64,
}

impl SignalCapture {
    pub(super) fn new(sig: sigprof::SignalSampler) -> SignalCapture {
        SignalCapture {
            sig,
            symbols: symbolize::Symbolizer::new(),
            threads: Vec::with_capacity(256),
            tids: Vec::with_capacity(sigprof::BATCH),
            wants: Vec::with_capacity(sigprof::BATCH),
            stacks: Vec::with_capacity(sigprof::BATCH),
            bounds: stackmap::StackBounds::default(),
            copy_bytes: AddrMap::default(),
            last: AddrMap::default(),
            to_signal: Vec::with_capacity(256),
            pending: Vec::with_capacity(sigprof::BATCH),
            pending_deadline: 0,
            addrs: Vec::with_capacity(max_depth()),
        }
    }

    /// One tick at timestamp `ts`: collect the previous tick's last batch, then reuse the
    /// stack of every thread that has not run since its last capture and signal the
    /// others, in batches. Each batch but the last is waited for and walked now; the last
    /// is left to run while the sampler sleeps and is collected by the next call (or by
    /// [`SignalCapture::collect`] at stop): so a tick costs the sampler one wake-up, and no
    /// handler has to wake it. No thread waits for another, and none for a safe point.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        interval_ns: u64,
        ts: u64,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        self.collect(info, stats, frames, at, walked);
        self.threads.clear();
        threads::copy_into(&mut self.threads);
        // Long enough for a thread this sampler preempted to be scheduled again.
        let timeout_ns = interval_ns.clamp(5_000_000, 20_000_000);
        if self.copy_bytes.len() > threads::MAX_THREADS {
            self.copy_bytes.clear();
        }
        if self.last.len() > threads::MAX_THREADS {
            self.last.clear();
        }
        self.bounds.prune(&self.threads);
        // A thread that used (next to) no CPU since its last capture has not run (the
        // per-thread CPU clock counts every nanosecond on a CPU), so its stack is still
        // the one captured then: reuse it instead of waking the thread with a signal. The
        // reading is also the sample's CPU figure (one clock read per thread and tick).
        self.to_signal.clear();
        for &(thread, os_tid) in self.threads.iter() {
            let cpu = clock::thread_cpu_ns_of(u64::from(os_tid));
            match self.last.get(&os_tid) {
                // (cpu < prev: the id now names a new thread.)
                Some((prev, stack, addrs))
                    if cpu >= *prev && cpu != 0 && cpu - *prev < IDLE_CPU_NS =>
                {
                    stats.reused.fetch_add(1, Ordering::Relaxed);
                    if stack.iter().all(|&f| f == 0) {
                        stats.walk_failures.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let begin = frames.len();
                    frames.extend_from_slice(stack);
                    at.extend_from_slice(addrs);
                    at.resize(frames.len(), 0);
                    walked.push(Walked {
                        thread: ThreadId(thread as usize),
                        os_tid: u64::from(os_tid),
                        start: begin,
                        len: stack.len(),
                        at: Some((ts, cpu)),
                    });
                }
                _ => self.to_signal.push(Target {
                    thread,
                    os_tid,
                    ts,
                    cpu,
                }),
            }
        }
        let to_signal = std::mem::take(&mut self.to_signal);
        let batches = to_signal.len().div_ceil(sigprof::BATCH);
        for (b, batch) in to_signal.chunks(sigprof::BATCH).enumerate() {
            self.send(batch);
            if b + 1 == batches {
                self.pending.extend_from_slice(batch);
                self.pending_deadline = clock::monotonic_ns() + timeout_ns;
            } else {
                let deadline = clock::monotonic_ns() + timeout_ns;
                let outcome = self.sig.finish(deadline);
                self.walk_batch(info, stats, batch, outcome, frames, at, walked);
            }
        }
        self.to_signal = to_signal;
    }

    /// Collects the batch signalled last (waiting for handlers that have not run yet, up
    /// to its deadline) and walks it.
    pub(super) fn collect(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        if self.pending.is_empty() {
            return;
        }
        let outcome = self.sig.finish(self.pending_deadline);
        let batch = std::mem::take(&mut self.pending);
        self.walk_batch(info, stats, &batch, outcome, frames, at, walked);
        self.pending = batch;
        self.pending.clear();
    }

    /// `--waits`: the stacks of `owners` (managed thread, OS thread id) now, each signalled
    /// at once (the caller collected the tick's pending batch first). The walked stacks
    /// are appended as for a tick (they are not samples: the caller records them as the
    /// lock owners' stacks); an owner without one is missing from `walked`. Their walk
    /// failures are not the sampler's (`stats` is not touched).
    pub(super) fn take_now(
        &mut self,
        info: &ProfilerInfo,
        owners: &[(u64, u32)],
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        debug_assert!(self.pending.is_empty());
        let ts = clock::ticks();
        let targets: Vec<Target> = owners
            .iter()
            .map(|&(thread, os_tid)| Target {
                thread,
                os_tid,
                ts,
                cpu: 0,
            })
            .collect();
        let own = SamplerStats::default();
        for batch in targets.chunks(sigprof::BATCH) {
            self.send(batch);
            // The owner is running or about to (it holds a lock others want): its
            // handler runs within a scheduling slice.
            let outcome = self.sig.finish(clock::monotonic_ns() + OWNER_TIMEOUT_NS);
            self.walk_batch(info, &own, batch, outcome, frames, at, walked);
        }
    }

    /// The ReadyToRun guard's counts, for the agent's log at the end.
    pub(super) fn log_checks(&self) {
        for line in &self.symbols.guard.read_log {
            crate::log_detail!("{line}");
        }
        let r = self.symbols.guard.stats;
        crate::log_detail!(
            "ReadyToRun guard: {} answered from method-def tables, {} asked above a method that ran; dropped: {} outside methods' code, {} in methods that never ran, {} unproven, {} unverified; checked against GetFunctionFromIP: {} compared, {} disagreed",
            r.answered,
            r.asked,
            r.outside_code,
            r.never_ran,
            r.unproven,
            r.unverified,
            r.compared,
            r.disagreed
        );
        let d = crate::stackwalk::dyncode::TABLE.stats();
        crate::log_detail!(
            "dynamic code: {} ranges compiled, {} methods unloaded; {} sampled addresses named from the table, {} dropped (freed dynamic code, table busy); {} dynamic methods asked of the runtime (compiled before the callbacks); {} not in the full table, {} pages not marked (page set full); unloads waited for a lookup {} times, {} timed out",
            d.compiled,
            d.unloaded,
            d.named,
            d.dropped,
            d.asked_dynamic,
            d.table_full,
            d.pages_full,
            d.waited,
            d.wait_timeouts
        );
    }

    fn send(&mut self, batch: &[Target]) {
        self.tids.clear();
        self.tids.extend(batch.iter().map(|t| t.os_tid));
        self.wants.clear();
        let copy_bytes = &self.copy_bytes;
        self.wants.extend(
            self.tids
                .iter()
                .map(|t| copy_bytes.get(t).copied().unwrap_or(FIRST_COPY_BYTES)),
        );
        self.stacks.clear();
        let bounds = &self.bounds;
        self.stacks
            .extend(batch.iter().map(|t| bounds.get(t.thread, t.os_tid)));
        self.sig.send(&self.tids, &self.wants, &self.stacks);
    }

    /// Walks and symbolises the captures of `batch` (the batch sent last).
    #[allow(clippy::too_many_arguments)]
    fn walk_batch(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        batch: &[Target],
        outcome: sigprof::BatchOutcome,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        let SignalCapture {
            sig,
            symbols,
            wants,
            copy_bytes,
            last,
            addrs,
            bounds,
            ..
        } = self;
        stats
            .signal_timeouts
            .fetch_add(outcome.timed_out as u64, Ordering::Relaxed);
        for (i, t) in batch.iter().enumerate() {
            let (thread, os_tid) = (t.thread, t.os_tid);
            let Some(c) = sig.captured(i) else {
                continue;
            };
            let copied = c.stack.len() as u64;
            stats.copies.fetch_add(1, Ordering::Relaxed);
            stats.copied_bytes.fetch_add(copied, Ordering::Relaxed);
            stats.copied_max.fetch_max(copied, Ordering::Relaxed);
            if sig.by_syscall(i) {
                stats.copies_by_syscall.fetch_add(1, Ordering::Relaxed);
            }
            bounds.learn(thread, os_tid, c.sp, sig.thread_pointer(i));
            addrs.clear();
            let leaf = symbols.leaf(info, c.ip).code();
            let read = fpwalk::Reach::new(c.stack);
            let tracked = fpwalk::Captured {
                ip: c.ip,
                sp: c.sp,
                fp: c.fp,
                stack: &read,
            };
            let walk = fpwalk::walk(&tracked, leaf, addrs, max_depth(), |a| {
                symbols.caller(info, a).code()
            });
            stats
                .walk_reach_bytes
                .fetch_add(read.reach() as u64, Ordering::Relaxed);
            stats
                .osr_frames
                .fetch_add(u64::from(walk.osr_frames), Ordering::Relaxed);
            let end = walk.end;
            let cut_short = bounds.walked(
                thread,
                os_tid,
                stackmap::Walked {
                    sp: c.sp,
                    copied: c.stack.len(),
                    reach: read.reach(),
                    end,
                },
            );
            if cut_short {
                stats.copies_cut_short.fetch_add(1, Ordering::Relaxed);
            }
            let want = wants[i];
            let copy_max = stack_copy_bytes();
            let cut = end == fpwalk::WalkEnd::Limit
                || (end == fpwalk::WalkEnd::OutsideCopy
                    && c.stack.len() >= want
                    && want >= copy_max);
            let next_want = if end == fpwalk::WalkEnd::OutsideCopy && c.stack.len() >= want {
                (want * 2).min(copy_max)
            } else if c.stack.len() * 2 < want {
                // The whole stack fit in half: copy less next time.
                (want - want / 8).max(MIN_COPY_BYTES)
            } else {
                want
            };
            copy_bytes.insert(os_tid, next_want);
            if symbols.rejected_walk(addrs) {
                stats.rejected_walks.fetch_add(1, Ordering::Relaxed);
            }
            let begin = frames.len();
            let mut inner = symbolize::Sym::default();
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
                if k > 0 && symbolize::is_osr_pair(inner, this) {
                    stats.osr_merged.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                inner = this;
                frames.push(f);
                // The IP of the leaf, a return address − 1 of a caller: the address whose
                // IL offset the sample records, for managed frames.
                at.push(if this.function != 0 { a } else { 0 });
            }
            // CPU clock at the end of the handler: if it has barely moved next tick (the
            // handler's own return may land after this reading), the thread has not
            // run since.
            let entry = last
                .entry(os_tid)
                .or_insert_with(|| (0, Vec::new(), Vec::new()));
            entry.0 = sig.cpu_after(i);
            entry.1.clear();
            entry.1.extend_from_slice(&frames[begin..]);
            entry.2.clear();
            entry.2.extend_from_slice(&at[begin..]);
            // Like DoStackSnapshot, which reports nothing for a thread without managed
            // frames (runtime threads waiting in native code): no sample.
            if frames[begin..]
                .iter()
                .all(|&f| clrprof_format::is_native_frame(f))
            {
                frames.truncate(begin);
                at.truncate(begin);
                stats.walk_failures.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if cut {
                mark_truncated(frames, stats);
                at.resize(frames.len(), 0);
            }
            walked.push(Walked {
                thread: ThreadId(thread as usize),
                os_tid: u64::from(os_tid),
                start: begin,
                len: frames.len() - begin,
                at: Some((t.ts, t.cpu)),
            });
        }
        if outcome.gone > 0 {
            for (i, t) in batch.iter().enumerate() {
                if sig.captured(i).is_none() && !threads::thread_alive(t.os_tid) {
                    threads::forget_tid(t.os_tid);
                }
            }
        }
        for (id, path) in symbols.take_new_modules() {
            crate::names::emit_native_module(id, path);
        }
    }
}
