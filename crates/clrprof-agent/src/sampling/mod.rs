//! Sample mode: a thread of ours wakes every interval and records the stack of each
//! managed thread.
//!
//! - `tick`: the sampler thread and its loop (schedule, CPU times, names, records);
//! - `suspend`: suspend-mode capture (SuspendRuntime + DoStackSnapshot of every thread);
//! - `signal`: signal-mode capture of one tick, `sigprof` its SIGPROF handler and
//!   stack-copy slots, `stackmap` each thread's stack mapping (for a `memcpy` copy);
//!   the frame-pointer walk and the address → FunctionID checks are the `stackwalk`
//!   room's (Linux x86_64);
//! - `threads`: the registry of managed threads and their OS thread ids;
//! - `stacks`: what a tick captures, the depth limit and the truncation marker;
//! - `stats`: the sampler's counters;
//! - `tick` also serves `--waits`' requests for a lock owner's stack between ticks
//!   (`output/ondemand.rs`).

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod signal;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod sigprof;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod stackmap;
mod stacks;
mod stats;
mod suspend;
mod threads;
mod tick;

pub(crate) use stats::SamplerStats;
pub(crate) use suspend::wait_thread_destroyed;
pub(crate) use threads::release_at_detach;

/// At a session's start: the thread registry and the truncation marker are this
/// session's (the catch-up of an attach and the thread callbacks fill the registry).
pub fn reset_for_session() {
    threads::release_at_detach();
    stacks::reset_for_session();
    crate::output::ondemand::reset_for_session();
    crate::stackwalk::dyncode::TABLE.reset();
}
pub(crate) use threads::{thread_assigned, thread_gone};
pub(crate) use tick::Sampler;
