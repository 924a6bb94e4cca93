//! The library is loaded once per process and records many sessions: every attach after
//! the first names the same file, and `dlopen` returns the loaded object with its statics
//! (docs/attach.md, step 2). This room says which session, if any, owns them.
//!
//! - [`STATE`]: `IDLE -> STARTING -> ACTIVE -> DETACHING -> IDLE` (or `DETACHING ->
//!   DORMANT` after IL probes, the runtime refusing the detach; a dormant agent's next
//!   session goes `DORMANT -> STARTING -> ACTIVE -> DETACHING -> DORMANT`, [`wake`]). Only the initialisation that moves it from `IDLE` to
//!   `STARTING` may touch process-wide state; any other Initialize or InitializeForAttach
//!   (the runtime may load the library and create a profiler object for a second attach
//!   while a session runs, then refuse it with `CORPROF_E_PROFILER_ALREADY_ACTIVE`) is
//!   refused before it touches anything. It returns to `IDLE` only after
//!   ProfilerDetachSucceeded has stopped every thread of ours and freed what the session
//!   held ([`end`]), or after a start that failed.
//! - [`generation`]: bumped by each start. A thread-local that outlives its session (the
//!   slot pointer of a runtime thread, `output/buffers.rs`) carries the generation it was
//!   made in, and one from an earlier session counts as unset.
//! - `SessionCell`: a session's state behind one pointer, read lock-free on hot paths,
//!   freed only when no code of ours can be running (rule A11 in docs/safety.md). It and
//!   the generation live in `output::session_cell`, below every room that uses them.

use std::sync::atomic::{AtomicU8, Ordering};

pub use crate::output::session_cell::generation;

pub const IDLE: u8 = 0;
pub const STARTING: u8 = 1;
pub const ACTIVE: u8 = 2;
pub const DETACHING: u8 = 3;
/// After IL probes the runtime never lets the profiler go: the recording is over, the
/// library stays, and the next session starts in place, asked on the control socket.
pub const DORMANT: u8 = 4;

/// Process-wide on purpose: it is what tells the sessions apart.
static STATE: AtomicU8 = AtomicU8::new(IDLE);

/// Claims the process for a new session (`IDLE -> STARTING`) and resets what the last
/// session left in the statics; `Err` names the state that refused it.
pub fn begin() -> Result<u64, &'static str> {
    STATE
        .compare_exchange(IDLE, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .map_err(name)?;
    let generation = crate::output::session_cell::next_generation();
    reset_for_session();
    Ok(generation)
}

/// The session started (`STARTING -> ACTIVE`).
pub fn started() {
    let _ = STATE.compare_exchange(STARTING, ACTIVE, Ordering::AcqRel, Ordering::Acquire);
}

/// The session asked the runtime to detach (`ACTIVE -> DETACHING`).
pub fn detaching() {
    let _ = STATE.compare_exchange(ACTIVE, DETACHING, Ordering::AcqRel, Ordering::Acquire);
}

/// The runtime keeps the library after IL probes (`DETACHING -> DORMANT`): it never
/// detaches again, and the next session starts in place ([`wake`]).
pub fn dormant() {
    STATE.store(DORMANT, Ordering::Release);
}

/// The state now.
pub fn current() -> u8 {
    STATE.load(Ordering::Acquire)
}

/// Claims a dormant agent for a new session (`DORMANT -> STARTING`); `Err` names the
/// state that refused it. The caller then quiets the callbacks (`corprof::quiesce`) and
/// calls [`renew`], and ends in [`started`] or [`back_to_dormant`].
pub fn wake() -> Result<(), &'static str> {
    STATE
        .compare_exchange(DORMANT, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .map(|_| ())
        .map_err(name)
}

/// A woken dormant agent, with no callback inside (`corprof::quiesce`) and no thread of
/// ours running: frees what the last session held, starts the next generation and resets
/// the statics, as `end` and `begin` do for an attach.
pub fn renew() -> u64 {
    release_session();
    let generation = crate::output::session_cell::next_generation();
    reset_for_session();
    generation
}

/// A woken agent whose new session failed to start: what the failed start made goes, and
/// it is dormant again.
pub fn back_to_dormant() {
    release_session();
    STATE.store(DORMANT, Ordering::Release);
}

/// ProfilerDetachSucceeded, or a start that failed: no thread of ours runs and no callback
/// will (the runtime delivers none before a successful initialisation nor after the
/// detach). Frees what the session held, then lets the next one start.
pub fn end() {
    release_session();
    STATE.store(IDLE, Ordering::Release);
}

pub fn name(state: u8) -> &'static str {
    match state {
        IDLE => "idle",
        STARTING => "starting",
        ACTIVE => "recording",
        DETACHING => "detaching",
        DORMANT => "dormant",
        _ => "unknown",
    }
}

/// Counters, caches and tables that belong to one recording, back to their first value.
/// Runs in [`begin`], while nothing of ours runs on any other thread.
fn reset_for_session() {
    crate::output::buffers::reset_for_session();
    crate::output::writer::reset_for_session();
    crate::output::tpmap::reset_for_session();
    crate::alloc::reset_for_session();
    crate::names::reset_for_session();
    crate::heap::reset_for_session();
    crate::sampling::reset_for_session();
    crate::tracing::reset_for_session();
    crate::log::reset_for_session();
}

/// What a session held that would otherwise stay in the target's heap until it exits.
fn release_session() {
    crate::output::buffers::shutdown();
    crate::output::buffers::release_thread_refs();
    crate::output::buffers::release_statics();
    crate::output::tpmap::release_at_detach();
    crate::output::writer::release_at_detach();
    crate::alloc::release_at_detach();
    crate::names::release_at_detach();
    crate::sampling::release_at_detach();
    crate::heap::release_at_detach();
    crate::tracing::release_at_detach();
}
