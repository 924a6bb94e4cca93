//! The sampler's counters: the `SamplerStats` record at the end of the trace and the
//! agent's log line (session/stats.rs) read them.

use std::sync::atomic::{AtomicBool, AtomicU64};

/// Counters of one sampler run, updated by the sampler thread.
#[derive(Debug, Default)]
pub struct SamplerStats {
    pub ticks: AtomicU64,
    pub missed_ticks: AtomicU64,
    pub samples: AtomicU64,
    pub suspend_failures: AtomicU64,
    pub walk_failures: AtomicU64,
    /// Signal mode: captures that never came: slots still armed when the sampler stopped
    /// (or, for a lock owner's stack, after its timeout) and slots taken back because
    /// their signal could no longer arrive ([`SamplerStats::signals_lost`]).
    pub signal_timeouts: AtomicU64,
    /// Signal mode: threads not signalled at a tick because their previous signal was
    /// still outstanding (its handler had not run: no core since, or SIGPROF blocked);
    /// that capture is collected when it runs.
    pub skipped_pending: AtomicU64,
    /// Signal mode: threads not signalled at a tick because every slot was outstanding.
    pub skipped_no_slot: AtomicU64,
    /// Signal mode: slots taken back because their signal could no longer arrive (the
    /// thread exited, or the signal was merged into another SIGPROF pending for it).
    pub signals_lost: AtomicU64,
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
    /// The sampler's run: its interval and how long it ran (for the achieved rate).
    pub interval_ns: AtomicU64,
    pub run_ns: AtomicU64,
    /// Missed ticks by reason ([`Lateness`]): the previous tick's own work ran past
    /// their deadlines, or the sampler thread woke late though it was free.
    pub missed_busy: AtomicU64,
    pub missed_sched: AtomicU64,
    /// Ticks taken more than one interval late (caught up at once), by the same reasons.
    pub late_busy: AtomicU64,
    pub late_sched: AtomicU64,
    /// The longest tick's work, and the longest delay between a free sampler's deadline
    /// and its wake-up.
    pub max_tick_ns: AtomicU64,
    pub max_wake_delay_ns: AtomicU64,
    /// Signal mode: walks that met a frame record whose return address no call
    /// instruction precedes (that frame was not taken for managed code).
    pub rejected_walks: AtomicU64,
    /// Signal mode: stacks copied by the handlers, the bytes copied (summed, and the
    /// largest copy), and the copies that took `process_vm_readv` instead of a `memcpy`.
    pub copies: AtomicU64,
    pub copied_bytes: AtomicU64,
    pub copied_max: AtomicU64,
    pub copies_by_syscall: AtomicU64,
    /// Signal mode: how far into the copies the walks read (bytes from SP, summed).
    pub walk_reach_bytes: AtomicU64,
    /// Signal mode: walks that ran out of a copy stopped where the thread's earlier
    /// walks had ended (`stackmap.rs`); the thread then learnt again with whole copies.
    pub copies_cut_short: AtomicU64,
}

/// Why a tick came late: how much of the delay between its deadline and the sampler's
/// wake-up the previous tick's work took (`busy_ns`: it ended after the deadline), and how
/// much passed with the sampler free but not running (`sched_ns`: not scheduled in time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lateness {
    pub busy_ns: u64,
    pub sched_ns: u64,
}

impl Lateness {
    /// `deadline` of the tick, `prev_end` when the previous tick's work ended, `woke` when
    /// the sampler woke for this tick.
    pub fn of(deadline: u64, prev_end: u64, woke: u64) -> Lateness {
        let busy_ns = prev_end.min(woke).saturating_sub(deadline);
        let sched_ns = woke.saturating_sub(deadline.max(prev_end));
        Lateness { busy_ns, sched_ns }
    }

    /// Whether the work of ticks, rather than scheduling, made most of the delay.
    pub fn mostly_busy(&self) -> bool {
        self.busy_ns >= self.sched_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_tick_is_split_between_overrun_work_and_scheduling() {
        // On time: nothing.
        assert_eq!(
            Lateness::of(1000, 900, 1000),
            Lateness {
                busy_ns: 0,
                sched_ns: 0
            }
        );
        // The previous tick's work ended 300 after the deadline, the sampler ran 50 later.
        let l = Lateness::of(1000, 1300, 1350);
        assert_eq!((l.busy_ns, l.sched_ns), (300, 50));
        assert!(l.mostly_busy());
        // Free before the deadline, woken 2000 late: scheduling.
        let l = Lateness::of(1000, 800, 3000);
        assert_eq!((l.busy_ns, l.sched_ns), (0, 2000));
        assert!(!l.mostly_busy());
    }
}
