//! The end of a recording in the agent's log: what the sampler did and what the writer
//! wrote (and lost, and why).

use std::path::Path;

use crate::output::writer;
use crate::sampling::SamplerStats;

/// The sampler's counters, once its thread has stopped.
pub(super) fn log_sampler(st: &SamplerStats) {
    let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let ticks = get(&st.ticks).max(1);
    log_detail!(
        "sampler ({}): {} ticks, {} samples, {} ticks missed, {} suspend failures, {} empty walks, \
         {} rejected walks, {} signal timeouts, {} truncated stacks, {} idle reuses, {} OSR frames walked, {} OSR frames merged; per tick {:.0} µs capturing, {:.0} µs busy",
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
        get(&st.rejected_walks),
        get(&st.signal_timeouts),
        get(&st.truncated),
        get(&st.reused),
        get(&st.osr_frames),
        get(&st.osr_merged),
        get(&st.suspended_ns) as f64 / ticks as f64 / 1e3,
        get(&st.busy_ns) as f64 / ticks as f64 / 1e3
    );
    if st.signal.load(std::sync::atomic::Ordering::Relaxed) {
        log_detail!(
            "signal sampler skips: {} threads left out of a tick because their previous signal's handler had not run yet (no free core since, or SIGPROF blocked; collected when it ran), {} for want of a free capture slot, {} signals lost (thread exited first, or merged into another SIGPROF), {} captures still outstanding at stop",
            get(&st.skipped_pending),
            get(&st.skipped_no_slot),
            get(&st.signals_lost),
            get(&st.signal_timeouts).saturating_sub(get(&st.signals_lost))
        );
    }
    let copies = get(&st.copies);
    if copies > 0 {
        log_detail!(
            "stack copies: {} ({:.1} KiB on average, largest {:.1} KiB; the walks read {:.1} KiB of them on average), {} with process_vm_readv, {} cut short at a learnt top",
            copies,
            get(&st.copied_bytes) as f64 / copies as f64 / 1024.0,
            get(&st.copied_max) as f64 / 1024.0,
            get(&st.walk_reach_bytes) as f64 / copies as f64 / 1024.0,
            get(&st.copies_by_syscall),
            get(&st.copies_cut_short)
        );
    }
    let (interval, run) = (get(&st.interval_ns), get(&st.run_ns));
    if interval > 0 && run > 0 {
        let expected = run / interval;
        log_detail!(
            "sampler timing: {:.1} Hz asked, {:.1} Hz achieved over {:.2} s ({} ticks taken of {} due); \
             {} missed because ticks' own work ran past the next deadlines (longest tick {:.2} ms), \
             {} because the sampler thread was not scheduled in time (longest wake-up delay {:.2} ms); \
             taken over an interval late and caught up at once: {} after long ticks, {} after late wake-ups",
            1e9 / interval as f64,
            get(&st.ticks) as f64 * 1e9 / run as f64,
            run as f64 / 1e9,
            get(&st.ticks),
            expected,
            get(&st.missed_busy),
            get(&st.max_tick_ns) as f64 / 1e6,
            get(&st.missed_sched),
            get(&st.max_wake_delay_ns) as f64 / 1e6,
            get(&st.late_busy),
            get(&st.late_sched),
        );
    }
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
        if !crate::tracing::args::fast_path() {
            log!(
                "args: {} value lists cut at the per-call bound (CLRPROF_ARG_BYTES); \
                 {} function entries/returns read from learned slots, {} contradicted by the runtime",
                args.cut,
                args.slotted,
                args.slot_mismatches
            );
        } else {
            log!(
                "args: {} value lists cut at the per-call bound (CLRPROF_ARG_BYTES); values \
                 read in the assembly hooks, written by the trampolines for the entries of {} \
                 function(s) and the returns of {}; {} object(s) whose class was not described yet, \
                 {} class(es) the class table had no room for (or past its limit of descriptions); {} class load(s) described \
                 for it in {:.1} ms of thread CPU",
                args.cut,
                args.trampoline_entries,
                args.trampoline_returns,
                args.undescribed,
                args.table_full,
                args.described,
                args.describing_ns as f64 / 1e6
            );
        }
        if !args.unplaced.is_empty() {
            const SHOWN: usize = 40;
            let more = args.unplaced.len().saturating_sub(SHOWN);
            log!(
                "args: {} function(s) have values the assembly hooks cannot place (recorded \
                 as unreadable; with CLRPROF_ARGS_FAST=0 the runtime places them): {}{}",
                args.unplaced.len(),
                args.unplaced[..args.unplaced.len().min(SHOWN)].join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
        if !args.asking.is_empty() {
            const SHOWN: usize = 40;
            let more = args.asking.len().saturating_sub(SHOWN);
            log!(
                "args: {} function entries/returns ask the runtime on every call (values it \
                 copies, or slots it contradicted): {}{}",
                args.asking.len(),
                args.asking[..args.asking.len().min(SHOWN)].join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
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
