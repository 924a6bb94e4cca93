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
