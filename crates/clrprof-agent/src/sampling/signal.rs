//! Signal-mode capture of one tick (Linux x86_64): signal every registered thread that ran
//! since its last capture (each into a slot of its own that stays armed until its handler
//! runs, `sigprof.rs`), walk each copied stack by its frame pointers (`fpwalk.rs`) and
//! turn the addresses into FunctionIDs or modules (`symbolize.rs`). A thread that did not
//! run reuses its previous capture. No thread waits for another, none waits for a safe
//! point, and the tick waits for no handler: a capture is collected at whichever tick
//! finds it done.

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

/// How long the sampler waits for a lock owner's handler (`take_now`). The owner is
/// runnable but may wait for a core behind other runnable threads for a scheduling period
/// (CFS's is 12 ms on two cores and grows with the runnable count): with a core kept busy
/// beside the app, 10 ms let every request of a `--waits` run time out once. Only an
/// overloaded machine waits this long, and there the sampler's tick is late anyway.
const OWNER_TIMEOUT_NS: u64 = 40_000_000;

/// At stop: how long the sampler waits for the handlers still outstanding.
const STOP_TIMEOUT_NS: u64 = 20_000_000;

pub(super) struct SignalCapture {
    pub(super) sig: sigprof::SignalSampler,
    symbols: symbolize::Symbolizer,
    threads: Vec<(u64, u32)>,
    /// Per thread: its own stack mapping, for a `memcpy` copy in the handler.
    bounds: stackmap::StackBounds,
    /// Per OS thread: bytes of stack to copy next time.
    copy_bytes: AddrMap<u32, usize>,
    /// Per OS thread: CPU time at its last capture, the frames captured then and their
    /// code addresses (for their IL offsets).
    last: AddrMap<u32, (u64, Vec<u64>, Vec<u64>)>,
    /// This tick's threads that ran since their last capture (the others reuse it).
    to_signal: Vec<(u64, u32)>,
    /// Where this tick's signalling starts in `to_signal`: when there are more threads
    /// than free slots, the ones left out go first next time.
    rotation: usize,
    slots: Vec<usize>,
    addrs: Vec<u64>,
    /// The last ticks' timestamps: a capture is stamped with the last tick before its
    /// handler ran, so a tick's samples share one instant as in suspend mode.
    recent_ticks: TickRing,
}

/// The timestamps of the last [`TickRing::LEN`] ticks.
struct TickRing {
    ts: [u64; TickRing::LEN],
    next: usize,
}

impl Default for TickRing {
    fn default() -> TickRing {
        TickRing {
            ts: [0; TickRing::LEN],
            next: 0,
        }
    }
}

impl TickRing {
    const LEN: usize = 64;

    fn push(&mut self, ts: u64) {
        self.ts[self.next % Self::LEN] = ts;
        self.next = self.next.wrapping_add(1);
    }

    /// The last tick at or before `at`; the oldest known when all came after it (a
    /// handler older than the ring: armed more than 64 ticks ago); `at` when none.
    fn stamp(&self, at: u64) -> u64 {
        let known = &self.ts[..self.next.min(Self::LEN)];
        known
            .iter()
            .copied()
            .filter(|&t| t <= at)
            .max()
            .or_else(|| known.iter().copied().min())
            .unwrap_or(at)
    }
}

impl SignalCapture {
    pub(super) fn new(sig: sigprof::SignalSampler) -> SignalCapture {
        SignalCapture {
            sig,
            symbols: symbolize::Symbolizer::new(),
            threads: Vec::with_capacity(256),
            bounds: stackmap::StackBounds::default(),
            copy_bytes: AddrMap::default(),
            last: AddrMap::default(),
            to_signal: Vec::with_capacity(256),
            rotation: 0,
            slots: Vec::with_capacity(sigprof::SLOT_COUNT),
            addrs: Vec::with_capacity(max_depth()),
            recent_ticks: TickRing::default(),
        }
    }

    /// One tick at timestamp `ts`: collect the captures whose handlers have run since,
    /// take back slots whose signal can no longer arrive, then reuse the stack of every
    /// thread that has not run since its last capture and signal the others. A thread
    /// whose previous signal is still outstanding (no core since) is skipped, and
    /// counted. Never waits for a handler, except when more threads ran than slots are
    /// free: then for slots freed by handlers that run within half the interval.
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
        let tick_start = clock::monotonic_ns();
        self.recent_ticks.push(ts);
        self.collect_done(info, stats, frames, at, walked);
        // A slot armed for 4 intervals (at least 20 ms): is its signal still pending?
        let stale_ns = (4 * interval_ns).clamp(20_000_000, 1_000_000_000);
        self.sig
            .reclaim_stale(tick_start, stale_ns, sigprof::outstanding, |owner, why| {
                stats.signals_lost.fetch_add(1, Ordering::Relaxed);
                stats.signal_timeouts.fetch_add(1, Ordering::Relaxed);
                if why == sigprof::Outstanding::Gone {
                    threads::forget_tid(owner.os_tid);
                }
            });
        self.threads.clear();
        threads::copy_into(&mut self.threads);
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
            if self.sig.ledger().slot_of(os_tid).is_some() {
                // Its signal is still outstanding: the capture comes when its handler
                // runs; a second SIGPROF would be dropped by the kernel anyway.
                stats.skipped_pending.fetch_add(1, Ordering::Relaxed);
                continue;
            }
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
                _ => self.to_signal.push((thread, os_tid)),
            }
        }
        let mut to_signal = std::mem::take(&mut self.to_signal);
        if !to_signal.is_empty() {
            let k = self.rotation % to_signal.len();
            to_signal.rotate_left(k);
        }
        let mut next = 0;
        let overflow_deadline = tick_start + interval_ns / 2;
        loop {
            while let Some(&(thread, os_tid)) = to_signal.get(next) {
                match self.arm(thread, os_tid, true) {
                    sigprof::Sent::NoSlot => break,
                    sigprof::Sent::Slot(_) | sigprof::Sent::Gone => next += 1,
                }
            }
            if next >= to_signal.len() || clock::monotonic_ns() >= overflow_deadline {
                break;
            }
            // More threads ran than slots are free: the handlers of threads that have a
            // core run within microseconds; collect them and use their slots, until half
            // the interval has passed (so the next tick is never late for it).
            self.sig.wait_any_done(overflow_deadline);
            self.collect_done(info, stats, frames, at, walked);
        }
        let left = (to_signal.len() - next) as u64;
        stats.skipped_no_slot.fetch_add(left, Ordering::Relaxed);
        self.rotation = self.rotation.wrapping_add(next);
        self.to_signal = to_signal;
    }

    /// Arms a slot for a thread and signals it; a thread found gone is forgotten.
    fn arm(&mut self, thread: u64, os_tid: u32, by_tick: bool) -> sigprof::Sent {
        let want = self
            .copy_bytes
            .get(&os_tid)
            .copied()
            .unwrap_or(FIRST_COPY_BYTES);
        let stack = self.bounds.get(thread, os_tid);
        let sent = self.sig.arm(thread, os_tid, want, stack, by_tick);
        if sent == sigprof::Sent::Gone && !threads::thread_alive(os_tid) {
            threads::forget_tid(os_tid);
        }
        sent
    }

    /// Walks the captures whose handlers have run (samples) and frees their slots;
    /// never waits.
    fn collect_done(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        for i in 0..sigprof::SLOT_COUNT {
            let Some(owner) = self.sig.ledger().owner(i) else {
                continue;
            };
            if !self.sig.is_done(i) {
                continue;
            }
            if owner.by_tick {
                self.walk_slot(info, stats, i, owner, frames, at, walked);
            }
            self.sig.release(i);
        }
        for (id, path) in self.symbols.take_new_modules() {
            crate::names::emit_native_module(id, path);
        }
    }

    /// Collects the captures whose handlers have run; with `stopping`, first waits (up to
    /// 20 ms) for those still outstanding, and takes back (and counts) the rest.
    pub(super) fn collect(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        stopping: bool,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        if stopping {
            self.slots.clear();
            self.slots
                .extend((0..sigprof::SLOT_COUNT).filter(|&i| self.sig.ledger().owner(i).is_some()));
            self.sig
                .wait_for(&self.slots, clock::monotonic_ns() + STOP_TIMEOUT_NS);
        }
        self.collect_done(info, stats, frames, at, walked);
        if stopping {
            for i in 0..sigprof::SLOT_COUNT {
                if self.sig.take_back(i) {
                    stats.signal_timeouts.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// `--waits`: the stacks of `owners` (managed thread, OS thread id) now, each signalled
    /// at once (or, if its signal from a tick is still outstanding, that one waited for).
    /// The walked stacks are appended as for a tick (they are not samples: the caller
    /// records them as the lock owners' stacks); an owner without one is missing from
    /// `walked`. Their walk failures are not the sampler's (`stats` is not touched).
    pub(super) fn take_now(
        &mut self,
        info: &ProfilerInfo,
        owners: &[(u64, u32)],
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        let own = SamplerStats::default();
        self.slots.clear();
        for &(thread, os_tid) in owners {
            if let Some(i) = self.sig.ledger().slot_of(os_tid) {
                self.slots.push(i);
            } else if let sigprof::Sent::Slot(i) = self.arm(thread, os_tid, false) {
                self.slots.push(i);
            }
        }
        // The owner is running or about to (it holds a lock others want): its handler
        // runs within a scheduling slice.
        let slots = std::mem::take(&mut self.slots);
        self.sig
            .wait_for(&slots, clock::monotonic_ns() + OWNER_TIMEOUT_NS);
        for &i in &slots {
            let Some(owner) = self.sig.ledger().owner(i) else {
                continue;
            };
            if self.sig.is_done(i) {
                self.walk_slot(info, &own, i, owner, frames, at, walked);
            }
            if !owner.by_tick {
                // Ours: freed (a tick's capture stays for the tick to record as a sample).
                if !self.sig.take_back(i) {
                    self.sig.release(i);
                }
            }
        }
        self.slots = slots;
        for (id, path) in self.symbols.take_new_modules() {
            crate::names::emit_native_module(id, path);
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

    /// Walks and symbolises the capture in slot `i` (done), taken for `owner`.
    #[allow(clippy::too_many_arguments)]
    fn walk_slot(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        i: usize,
        owner: sigprof::Owner,
        frames: &mut Vec<u64>,
        at: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        let SignalCapture {
            sig,
            symbols,
            copy_bytes,
            last,
            addrs,
            bounds,
            recent_ticks,
            ..
        } = self;
        let (thread, os_tid) = (owner.thread, owner.os_tid);
        let Some(c) = sig.captured(i) else {
            return;
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
        let want = owner.want;
        let copy_max = stack_copy_bytes();
        let cut = end == fpwalk::WalkEnd::Limit
            || (end == fpwalk::WalkEnd::OutsideCopy && c.stack.len() >= want && want >= copy_max);
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
        let (taken, cpu_after) = sig.taken_at(i);
        entry.0 = cpu_after;
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
            return;
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
            at: Some((recent_ticks.stamp(taken), cpu_after)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::TickRing;

    #[test]
    fn a_capture_is_stamped_with_the_last_tick_before_its_handler_ran() {
        let mut r = TickRing::default();
        assert_eq!(r.stamp(50), 50, "no tick yet");
        for t in [100, 200, 300] {
            r.push(t);
        }
        assert_eq!(r.stamp(250), 200);
        assert_eq!(r.stamp(300), 300);
        assert_eq!(r.stamp(10_000), 300);
        assert_eq!(r.stamp(50), 100, "older than every tick known: the oldest");
        for t in 0..200u64 {
            r.push(1000 + t);
        }
        assert_eq!(r.stamp(1150), 1150, "in the ring");
        assert_eq!(r.stamp(500), 1000 + 200 - 64, "the oldest of the last 64");
    }
}
