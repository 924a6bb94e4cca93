//! Signal-mode capture of one tick (Linux x86_64): signal every registered thread that ran
//! since its last capture (in batches, `sigprof.rs`), walk each copied stack by its frame
//! pointers (`fpwalk.rs`) and turn the addresses into FunctionIDs or modules
//! (`symbolize.rs`). A thread that did not run reuses its previous capture. No thread
//! waits for another, and none waits for a safe point.

use std::sync::atomic::Ordering;
use std::time::Duration;

use corprof::{ProfilerInfo, ThreadId};

use super::stacks::{Walked, mark_truncated, max_depth, stack_copy_bytes};
use super::stats::SamplerStats;
use super::{sigprof, threads};
use crate::os::clock;
use crate::stackwalk::{fpwalk, symbolize};

/// What a thread's first sample copies; each thread's amount then adapts: doubled after
/// a walk ran out of copied stack, shrunk slowly while walks end well inside it.
const FIRST_COPY_BYTES: usize = 32 * 1024;
const MIN_COPY_BYTES: usize = 8 * 1024;

/// CPU time below which a thread counts as not having run since its last capture: the
/// return from our own signal handler (measured after the capture) stays below it.
const IDLE_CPU_NS: u64 = 20_000;

pub(super) struct SignalCapture {
    pub(super) sig: sigprof::SignalSampler,
    symbols: symbolize::Symbolizer,
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

impl SignalCapture {
    pub(super) fn new(sig: sigprof::SignalSampler) -> SignalCapture {
        SignalCapture {
            sig,
            symbols: symbolize::Symbolizer::new(),
            threads: Vec::with_capacity(256),
            tids: Vec::with_capacity(sigprof::BATCH),
            wants: Vec::with_capacity(sigprof::BATCH),
            copy_bytes: std::collections::HashMap::new(),
            last: std::collections::HashMap::new(),
            to_signal: Vec::with_capacity(256),
            addrs: Vec::with_capacity(max_depth()),
        }
    }

    /// One tick: signal every registered thread (in batches), walk and symbolise each
    /// captured stack. No thread waits for another, and none waits for a safe point.
    pub(super) fn take(
        &mut self,
        info: &ProfilerInfo,
        stats: &SamplerStats,
        interval_ns: u64,
        frames: &mut Vec<u64>,
        walked: &mut Vec<Walked>,
    ) {
        self.threads.clear();
        threads::copy_into(&mut self.threads);
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
        if copy_bytes.len() > threads::MAX_THREADS {
            copy_bytes.clear();
        }
        if last.len() > threads::MAX_THREADS {
            last.clear();
        }
        // A thread that used (next to) no CPU since its last capture has not run (the
        // per-thread CPU clock counts every nanosecond on a CPU), so its stack is still
        // the one captured then: reuse it instead of waking the thread with a signal.
        to_signal.clear();
        for &(thread, os_tid) in threads.iter() {
            let cpu = clock::thread_cpu_ns_of(u64::from(os_tid));
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
        for batch in to_signal.chunks(sigprof::BATCH) {
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
                let walk = fpwalk::walk(&c, leaf, addrs, max_depth(), |a| {
                    symbols.caller(info, a).code()
                });
                stats
                    .osr_frames
                    .fetch_add(u64::from(walk.osr_frames), Ordering::Relaxed);
                let end = walk.end;
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
                }
                // CPU clock after the handler ran: if it has barely moved next tick (the
                // handler's own return may land after this reading), the thread has not
                // run since.
                let entry = last.entry(os_tid).or_insert_with(|| (0, Vec::new()));
                entry.0 = clock::thread_cpu_ns_of(u64::from(os_tid));
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
                    if sig.captured(i).is_none() && !threads::thread_alive(t.1) {
                        threads::forget_tid(t.1);
                    }
                }
            }
        }
        for (id, path) in symbols.take_new_modules() {
            crate::names::emit_native_module(id, path);
        }
    }
}
