//! What lets the statics of one loaded library serve many sessions (`session::state`
//! drives them): the session generation, and [`SessionCell`], a session's state behind
//! one pointer. A leaf below every room that reads them on a hot path.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Process-wide on purpose: the number of sessions started, the current one's id.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The current session's number (0 before the first).
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Starts the next session's number (`session::state::begin` only).
pub fn next_generation() -> u64 {
    GENERATION.fetch_add(1, Ordering::AcqRel) + 1
}

/// One session's state behind a pointer: set once by the session's start, read without a
/// lock by every callback, freed by `clear` when the session is over (`session::state::end`).
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

    /// Takes the value out without freeing it (a dormant agent's restart keeps the last
    /// session's until the new one started, `callbacks::restart`). Same rule as `clear`.
    pub fn take(&self) -> Option<Box<T>> {
        let p = self.0.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: (A11) `p` came from Box::into_raw in `set` or `put` and was swapped out,
        // so it is owned once; callers run only when no other thread of ours can hold a
        // reference from `get` (between sessions).
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }

    /// Puts back what `take` took; false (and `value` dropped) when a value is set.
    pub fn put(&self, value: Box<T>) -> bool {
        let raw = Box::into_raw(value);
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

    /// Frees the value. Only between sessions (`session::state::end` and `begin`), when no
    /// code of ours runs on another thread (rule A11).
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
        let taken = CELL.take().unwrap();
        assert!(CELL.get().is_none());
        assert!(CELL.put(taken));
        assert!(!CELL.put(Box::new("four".into())));
        assert_eq!(CELL.get().map(String::as_str), Some("three"));
        CELL.clear();
    }
}
