//! A door every runtime callback passes (safety.md A11): a count of the callbacks inside
//! the profiler, and a way to close the door and wait until none is.
//!
//! A profiler the runtime never detaches (it used ReJIT) keeps receiving callbacks, so
//! there is no moment the runtime itself guarantees that no code of the profiler runs.
//! A dormant agent that starts a new session in place needs one, to free what the last
//! session held: [`quiesce`] closes the door (a callback arriving then returns `S_OK` at
//! once, touching nothing of the profiler) and waits until the callbacks inside have left.
//!
//! The count and the flag are a Dekker pair: a callback adds itself, then reads the flag;
//! `quiesce` sets the flag, then reads the count, all sequentially consistent, so either
//! the callback sees the door closed or `quiesce` sees it inside.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Callbacks inside the profiler now (nested ones count twice).
static INSIDE: AtomicUsize = AtomicUsize::new(0);
/// The door is closed: callbacks return at once.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// A callback inside the profiler; leaves on drop.
pub(crate) struct Inside(());

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Enters, unless the door is closed (`None`: the callback must touch nothing).
#[inline]
pub(crate) fn enter() -> Option<Inside> {
    INSIDE.fetch_add(1, Ordering::SeqCst);
    if CLOSED.load(Ordering::SeqCst) {
        INSIDE.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    Some(Inside(()))
}

/// The door closed with no callback inside; it opens again on drop.
#[derive(Debug)]
pub struct Quiet(());

impl Drop for Quiet {
    fn drop(&mut self) {
        CLOSED.store(false, Ordering::SeqCst);
    }
}

/// Closes the door and waits up to `limit` until no callback is inside the profiler;
/// `Err` with the number still inside when they did not all leave in time (the door is
/// open again then). Never call it from a callback: it would wait for itself.
pub fn quiesce(limit: Duration) -> Result<Quiet, usize> {
    if CLOSED.swap(true, Ordering::SeqCst) {
        // Someone else holds it closed: one quiet period at a time.
        return Err(INSIDE.load(Ordering::SeqCst));
    }
    let quiet = Quiet(());
    let end = Instant::now() + limit;
    loop {
        let inside = INSIDE.load(Ordering::SeqCst);
        if inside == 0 {
            return Ok(quiet);
        }
        if Instant::now() >= end {
            return Err(inside);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Callbacks inside the profiler now.
pub fn inside() -> usize {
    INSIDE.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_door_waits_for_those_inside_and_keeps_others_out() {
        let a = enter().expect("open");
        // One inside: not quiet within the limit, and the door opens again.
        assert_eq!(quiesce(Duration::from_millis(20)).err(), Some(1));
        let b = enter().expect("open again");
        drop((a, b));
        let q = quiesce(Duration::from_secs(1)).expect("quiet");
        assert!(enter().is_none(), "closed while quiet");
        assert_eq!(inside(), 0);
        // A second quiet period while the first holds is refused.
        assert!(quiesce(Duration::from_millis(1)).is_err());
        drop(q);
        assert!(enter().is_some());
        // One that leaves while `quiesce` waits lets it through.
        let c = enter().unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            drop(c);
        });
        assert!(quiesce(Duration::from_secs(5)).is_ok());
        t.join().unwrap();
    }
}
