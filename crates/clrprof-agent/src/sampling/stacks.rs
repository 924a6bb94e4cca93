//! What a tick captures and how deep: the stacks walked (kept until the runtime runs
//! again), the depth limit and its truncation marker, and the most stack signal mode
//! copies.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use corprof::ThreadId;

use super::stats::SamplerStats;

/// One thread's stack from one tick, kept until the runtime is resumed.
pub(super) struct Walked {
    pub(super) thread: ThreadId,
    pub(super) os_tid: u64,
    pub(super) start: usize,
    pub(super) len: usize,
    /// Signal mode: the timestamp of the last tick before the thread's handler ran (the
    /// capture may be collected ticks later) and its CPU clock at the end of the handler
    /// (a reused stack: the tick's and the clock read then); None: now, read after the
    /// runtime resumed (suspend mode).
    pub(super) at: Option<(u64, u64)>,
}

/// Longest stack kept (leaf first; `CLRPROF_MAX_DEPTH`, default 512); deeper stacks lose
/// their root-most frames, end in [`clrprof_format::TRUNCATED_FRAME`] and are counted.
/// Set once per recording by [`start_recording`], before the sampler thread starts.
static MAX_DEPTH: AtomicUsize = AtomicUsize::new(512);
/// Whether the truncation marker was named in this recording.
static TRUNCATION_NAMED: AtomicBool = AtomicBool::new(false);

/// At a session's start: the marker is named again in the session's own trace.
pub(super) fn reset_for_session() {
    TRUNCATION_NAMED.store(false, Ordering::Relaxed);
}

pub(super) fn max_depth() -> usize {
    MAX_DEPTH.load(Ordering::Relaxed)
}

/// Signal mode: the most stack a handler copies. 512 KiB, or more for a deeper
/// `--max-depth` (~160 bytes a frame, at most 8 MiB): the pages are only touched as far
/// as a thread's stack actually goes (see os/pages.rs).
pub(super) fn stack_copy_bytes() -> usize {
    (max_depth() * 160).clamp(STACK_COPY_BYTES, 8 << 20)
}

/// Appends the truncation marker to a cut stack and names it once.
pub(super) fn mark_truncated(frames: &mut Vec<u64>, stats: &SamplerStats) {
    stats.truncated.fetch_add(1, Ordering::Relaxed);
    if !TRUNCATION_NAMED.swap(true, Ordering::Relaxed) {
        crate::names::emit_frame_name(
            clrprof_format::TRUNCATED_FRAME,
            format!("[truncated: deeper than {} frames]", max_depth()),
        );
    }
    frames.push(clrprof_format::TRUNCATED_FRAME);
}

/// A new recording's depth limit (`Sampler::start`, before its thread starts); the
/// truncation marker is named again in the new trace.
pub(super) fn start_recording(max_depth: usize) {
    MAX_DEPTH.store(max_depth.max(1), Ordering::Relaxed);
    TRUNCATION_NAMED.store(false, Ordering::Relaxed);
}

/// Most bytes of stack copied per thread and sample in signal mode (about a thousand
/// .NET frames); a deeper stack loses its root-most frames (counted as truncated).
pub(super) const STACK_COPY_BYTES: usize = 512 * 1024;
