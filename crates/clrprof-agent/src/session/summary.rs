//! The end of a recording in the agent's log: what the sampler did and what the writer
//! wrote (and lost, and why).

use std::path::Path;

use crate::output::writer;
use crate::sampling::SamplerStats;

/// The sampler's counters, once its thread has stopped.
pub(super) fn log_sampler(st: &SamplerStats) {
    let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let ticks = get(&st.ticks).max(1);
    log!(
        "sampler ({}): {} ticks, {} samples, {} ticks missed, {} suspend failures, {} empty walks, \
         {} signal timeouts, {} truncated stacks, {} idle reuses, {} OSR frames walked, {} OSR frames merged; per tick {:.0} µs capturing, {:.0} µs busy",
        if st.signal.load(std::sync::atomic::Ordering::Relaxed) {
            "signal"
        } else {
            "suspend"
        },
        get(&st.ticks),
        get(&st.samples),
        get(&st.missed_ticks),
        get(&st.suspend_failures),
        get(&st.walk_failures),
        get(&st.signal_timeouts),
        get(&st.truncated),
        get(&st.reused),
        get(&st.osr_frames),
        get(&st.osr_merged),
        get(&st.suspended_ns) as f64 / ticks as f64 / 1e3,
        get(&st.busy_ns) as f64 / ticks as f64 / 1e3
    );
}

/// What the writer wrote, once it has stopped; `why` the recording ended, `args` whether
/// it recorded `--args` values.
pub(super) fn log_writer(why: &str, output: &Path, stats: &writer::Stats, args: bool) {
    log!(
        "{why}: wrote {} ({} blocks, {} bytes of events{})",
        output.display(),
        stats.blocks,
        stats.bytes,
        if stats.lost > 0 {
            format!(", {} events LOST", stats.lost)
        } else {
            String::new()
        }
    );
    if stats.capped > 0 {
        log!(
            "the trace reached --max-size: {} events after it were not recorded (the app ran on)",
            stats.capped
        );
    }
    if let Some(errno) = stats.write_errno {
        log!(
            "{} block(s) holding {} events could not be written to {}: {} ({}); the trace \
             records the loss if the disk had room again at the end",
            stats.write_errors,
            stats.write_lost,
            output.display(),
            std::io::Error::from_raw_os_error(errno),
            errno_name(errno)
        );
    }
    let (waits, waited_ns) = crate::output::buffers::waits();
    if waits > 0 {
        log!(
            "exact mode: threads found their buffer full and waited for the writer {waits} \
             time(s), {:.1} ms in all (the writer fell behind: a slow disk or small buffers, \
             --buffer-kb; `--on-full drop` drops and counts instead)",
            waited_ns as f64 / 1e6
        );
    }
    if args {
        let args = crate::tracing::args::stats();
        log!(
            "args: {} value lists cut at the per-call bound (CLRPROF_ARG_BYTES); \
             {} function entries/returns read from learned slots, {} contradicted by the runtime",
            args.cut,
            args.slotted,
            args.slot_mismatches
        );
    }
    if crate::output::tpmap::collisions() > 0 {
        log!(
            "trace: {} thread(s) shared a fast-path table entry and used the slow path",
            crate::output::tpmap::collisions()
        );
    }
}

/// The symbolic name of the errors a trace write meets.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::ENOSPC => "ENOSPC",
        libc::EDQUOT => "EDQUOT",
        libc::EIO => "EIO",
        libc::EFBIG => "EFBIG",
        libc::EROFS => "EROFS",
        libc::EBADF => "EBADF",
        _ => "errno",
    }
}
