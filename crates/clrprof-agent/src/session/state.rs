//! The library is loaded once per process and records many sessions: every attach after
//! the first names the same file, and `dlopen` returns the loaded object with its statics
//! (docs/attach.md, step 2). This room says which session, if any, owns them.
//!
//! - [`STATE`]: `IDLE -> STARTING -> ACTIVE -> DETACHING -> IDLE` (or `ACTIVE -> DORMANT`
//!   for good, after IL probes). Only the initialisation that moves it from `IDLE` to
//!   `STARTING` may touch process-wide state; any other Initialize or InitializeForAttach
//!   (the runtime may load the library and create a profiler object for a second attach
//!   while a session runs, then refuse it with `CORPROF_E_PROFILER_ALREADY_ACTIVE`) is
//!   refused before it touches anything. It returns to `IDLE` only after
//!   ProfilerDetachSucceeded has stopped every thread of ours and freed what the session
//!   held ([`end`]), or after a start that failed.
//! - [`generation`]: bumped by each start. A thread-local that outlives its session (the
//!   slot pointer of a runtime thread, `output/buffers.rs`) carries the generation it was
//!   made in, and one from an earlier session counts as unset.
//! - [`SessionCell`]: a session's state behind one pointer, read lock-free on hot paths,
//!   freed only when no code of ours can be running (rule A11 in docs/safety.md).

use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};

pub const IDLE: u8 = 0;
pub const STARTING: u8 = 1;
pub const ACTIVE: u8 = 2;
pub const DETACHING: u8 = 3;
/// After IL probes the runtime never lets the profiler go: the recording is over, the
/// library stays, and no new session can start in this process.
pub const DORMANT: u8 = 4;

/// Process-wide on purpose: it is what tells the sessions apart.
static STATE: AtomicU8 = AtomicU8::new(IDLE);
/// Process-wide on purpose: the number of sessions started, the current one's id.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Claims the process for a new session (`IDLE -> STARTING`) and resets what the last
/// session left in the statics; `Err` names the state that refused it.
pub fn begin() -> Result<u64, &'static str> {
    STATE
        .compare_exchange(IDLE, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .map_err(name)?;
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
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

/// The runtime keeps the library after IL probes (`DETACHING -> DORMANT`, for good).
pub fn dormant() {
    STATE.store(DORMANT, Ordering::Release);
}

/// ProfilerDetachSucceeded, or a start that failed: no thread of ours runs and no callback
/// will (the runtime delivers none before a successful initialisation nor after the
/// detach). Frees what the session held, then lets the next one start.
pub fn end() {
    release_session();
    STATE.store(IDLE, Ordering::Release);
}

/// The current session's number (0 before the first).
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
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

/// One session's state behind a pointer: set once by the session's start, read without a
/// lock by every callback, freed by [`end`](SessionCell::clear) when the session is over.
pub struct SessionCell<T>(AtomicPtr<T>);

impl<T> SessionCell<T> {
    pub const fn new() -> SessionCell<T> {
        SessionCell(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// The session's value, if it set one.
    #[inline]
    pub fn get(&self) -> Option<&T> {
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: (A11) a non-null pointer came from Box::into_raw in `set` and is freed
        // only by `clear`, which runs when no code of ours runs on any other thread (no
        // session, or one just starting), so no reference handed out here is live then.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Sets the value; false (and `value` dropped) when this session set one already.
    pub fn set(&self, value: T) -> bool {
        let raw = Box::into_raw(Box::new(value));
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: (A11) `raw` came from Box::into_raw just above and was not
                // published.
                drop(unsafe { Box::from_raw(raw) });
                false
            }
        }
    }

    /// Frees the value. Only from [`end`] / [`begin`]'s helpers, when no code of ours runs
    /// on another thread (rule A11).
    pub fn clear(&self) {
        let p = self.0.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: (A11) `p` came from Box::into_raw in `set` and was swapped out, so it
            // is freed once; callers run only when no other thread of ours can hold a
            // reference from `get` (between sessions).
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl<T> Default for SessionCell<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_set_once_per_session_and_cleared_between() {
        static CELL: SessionCell<String> = SessionCell::new();
        assert!(CELL.get().is_none());
        assert!(CELL.set("one".into()));
        assert!(!CELL.set("two".into()));
        assert_eq!(CELL.get().map(String::as_str), Some("one"));
        CELL.clear();
        assert!(CELL.get().is_none());
        assert!(CELL.set("three".into()));
        assert_eq!(CELL.get().map(String::as_str), Some("three"));
        CELL.clear();
    }
}
