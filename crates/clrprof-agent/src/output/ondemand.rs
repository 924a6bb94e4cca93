//! `--waits`: the lock owner's stack on demand. A waiting thread's ContentionStart
//! callback asks the signal sampler for the stack of the thread that holds the lock
//! (`request`); the sampler thread, woken by the request, signals that thread at once and
//! records its stack as a `WaitOwnerStack` (`sampling/tick.rs`). The mailbox lives here,
//! below both rooms, so that neither imports the other.
//!
//! The waiter never waits: `request` claims a free slot of a fixed table with one
//! compare-and-swap (no lock, no allocation), publishes it, and wakes the sampler with
//! one futex wake only when the sampler sleeps (the waiter is about to block in the
//! kernel anyway). Requests that cannot be served are counted by reason and written
//! at the end (`WaitOwnerStats`): the owner is not known (the runtime gave no owner, or
//! it is not a managed thread the sampler knows), it exited before it was signalled, the
//! table was full, its handler did not answer or its stack had no managed frame, or no
//! signal sampler was running (suspend sampling, another mode, the recording stopping).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::os::futex;

/// Requests outstanding at once; more are counted (`queue_full`).
pub(crate) const SLOTS: usize = 64;

const FREE: u32 = 0;
const CLAIMED: u32 = 1;
const READY: u32 = 2;

struct Slot {
    state: AtomicU32,
    /// The waiter's managed thread id.
    thread: AtomicU64,
    lock: AtomicU64,
    /// `LockOwnerThreadID` as the runtime gave it (the owner's OS thread id).
    owner: AtomicU64,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU32::new(FREE),
        thread: AtomicU64::new(0),
        lock: AtomicU64::new(0),
        owner: AtomicU64::new(0),
    }
}; SLOTS];

/// Bumped by every request; the sampler sleeps on it (futex) between ticks.
pub(crate) static WORD: AtomicU32 = AtomicU32::new(0);
/// 1 while the sampler sleeps on [`WORD`]: only then does a request wake it.
pub(crate) static SLEEPING: AtomicU32 = AtomicU32::new(0);
/// Whether a signal sampler serves requests now.
static SERVING: AtomicBool = AtomicBool::new(false);
/// Where the next request starts looking for a free slot.
static HINT: AtomicU32 = AtomicU32::new(0);

/// The counters of one recording (`WaitOwnerStats`).
pub(crate) struct Counts {
    pub requested: AtomicU64,
    pub taken: AtomicU64,
    pub owner_unknown: AtomicU64,
    pub owner_exited: AtomicU64,
    pub queue_full: AtomicU64,
    pub walk_failed: AtomicU64,
    pub no_sampler: AtomicU64,
}

pub(crate) static COUNTS: Counts = Counts {
    requested: AtomicU64::new(0),
    taken: AtomicU64::new(0),
    owner_unknown: AtomicU64::new(0),
    owner_exited: AtomicU64::new(0),
    queue_full: AtomicU64::new(0),
    walk_failed: AtomicU64::new(0),
    no_sampler: AtomicU64::new(0),
};

/// At a session's start: nothing outstanding, nothing counted.
pub(crate) fn reset_for_session() {
    SERVING.store(false, Ordering::SeqCst);
    for s in &TABLE {
        s.state.store(FREE, Ordering::Relaxed);
    }
    for c in [
        &COUNTS.requested,
        &COUNTS.taken,
        &COUNTS.owner_unknown,
        &COUNTS.owner_exited,
        &COUNTS.queue_full,
        &COUNTS.walk_failed,
        &COUNTS.no_sampler,
    ] {
        c.store(0, Ordering::Relaxed);
    }
}

/// The waiter's side (a ContentionStart callback): asks for `owner`'s stack. Never
/// blocks: one compare-and-swap per slot tried, at most one futex wake.
pub(crate) fn request(thread: u64, lock: u64, owner: u64) {
    COUNTS.requested.fetch_add(1, Ordering::Relaxed);
    if owner == 0 {
        COUNTS.owner_unknown.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if !SERVING.load(Ordering::Acquire) {
        COUNTS.no_sampler.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let start = HINT.fetch_add(1, Ordering::Relaxed) as usize;
    for k in 0..SLOTS {
        let slot = &TABLE[(start + k) % SLOTS];
        if slot
            .state
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            slot.thread.store(thread, Ordering::Relaxed);
            slot.lock.store(lock, Ordering::Relaxed);
            slot.owner.store(owner, Ordering::Relaxed);
            slot.state.store(READY, Ordering::Release);
            // SeqCst on both sides: the sampler announces its sleep, then reads WORD; a
            // request bumps WORD, then reads SLEEPING: one of the two sees the other.
            WORD.fetch_add(1, Ordering::SeqCst);
            if SLEEPING.load(Ordering::SeqCst) != 0 {
                futex::wake(&WORD);
            }
            return;
        }
    }
    COUNTS.queue_full.fetch_add(1, Ordering::Relaxed);
}

/// One request, taken off the table by the sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub thread: u64,
    pub lock: u64,
    pub owner: u64,
}

/// The sampler's side: moves the published requests into `out` (their slots become
/// free). Returns whether there were any.
pub(crate) fn take(out: &mut Vec<Request>) -> bool {
    let before = out.len();
    for slot in &TABLE {
        if slot.state.load(Ordering::Acquire) == READY {
            out.push(Request {
                thread: slot.thread.load(Ordering::Relaxed),
                lock: slot.lock.load(Ordering::Relaxed),
                owner: slot.owner.load(Ordering::Relaxed),
            });
            slot.state.store(FREE, Ordering::Release);
        }
    }
    out.len() > before
}

/// Whether a request waits to be served.
pub(crate) fn pending() -> bool {
    TABLE
        .iter()
        .any(|s| s.state.load(Ordering::Acquire) == READY)
}

/// The signal sampler starts (true) or stops (false) serving. When it stops, the
/// requests still outstanding are counted as not served.
pub(crate) fn serving(on: bool) {
    SERVING.store(on, Ordering::Release);
    if !on {
        let mut left = Vec::new();
        take(&mut left);
        COUNTS
            .no_sampler
            .fetch_add(left.len() as u64, Ordering::Relaxed);
    }
}

/// Sleeps until `deadline_ns` or until a request arrives, whichever is first (at most
/// `max_ns`).
pub(crate) fn sleep(now_ns: u64, deadline_ns: u64, max_ns: u64) {
    SLEEPING.store(1, Ordering::SeqCst);
    let seen = WORD.load(Ordering::SeqCst);
    if !pending() && deadline_ns > now_ns {
        futex::wait(&WORD, seen, (deadline_ns - now_ns).min(max_ns));
    }
    SLEEPING.store(0, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_queued_served_and_counted() {
        reset_for_session();
        request(1, 2, 0);
        assert_eq!(COUNTS.owner_unknown.load(Ordering::Relaxed), 1);
        request(1, 2, 33);
        assert_eq!(COUNTS.no_sampler.load(Ordering::Relaxed), 1);
        SERVING.store(true, Ordering::Release);
        for i in 0..SLOTS as u64 + 3 {
            request(i, 7, 1000 + i);
        }
        assert_eq!(COUNTS.queue_full.load(Ordering::Relaxed), 3);
        assert!(pending());
        let mut out = Vec::new();
        assert!(take(&mut out));
        assert_eq!(out.len(), SLOTS);
        out.sort_by_key(|r| r.thread);
        assert_eq!(
            out[5],
            Request {
                thread: 5,
                lock: 7,
                owner: 1005
            }
        );
        assert!(!pending());
        request(9, 7, 1009);
        serving(false);
        assert_eq!(COUNTS.no_sampler.load(Ordering::Relaxed), 2);
        assert_eq!(COUNTS.requested.load(Ordering::Relaxed), SLOTS as u64 + 6);
        assert!(!pending());
        reset_for_session();
    }
}
