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
//!
//! The door counts only once it is armed ([`arm`]), which the agent does when a session
//! that may use ReJIT starts, before its event mask lets any callback in: until then a
//! callback reads one flag and passes, with no atomic read-modify-write on a line all
//! threads share. A door never armed has counted nothing, so it cannot say that nothing
//! is inside, and [`quiesce`] refuses it ([`Refused::NotArmed`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The door's state: whether it counts, how many are inside, whether it is closed.
struct Door {
    /// Callbacks count themselves (set once, never cleared).
    armed: AtomicBool,
    /// Callbacks inside the profiler now (nested ones count twice), once armed.
    inside: AtomicUsize,
    /// The door is closed: callbacks return at once.
    closed: AtomicBool,
}

impl Door {
    const fn new() -> Door {
        Door {
            armed: AtomicBool::new(false),
            inside: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        }
    }

    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    #[inline]
    fn enter(&'static self) -> Result<Option<Inside>, Closed> {
        // Unarmed, nothing closes the door (`quiesce` refuses): pass uncounted.
        if !self.armed.load(Ordering::Acquire) {
            return Ok(None);
        }
        self.inside.fetch_add(1, Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            self.inside.fetch_sub(1, Ordering::SeqCst);
            return Err(Closed);
        }
        Ok(Some(Inside(self)))
    }

    fn quiesce(&'static self, limit: Duration) -> Result<Quiet, Refused> {
        if !self.armed.load(Ordering::SeqCst) {
            return Err(Refused::NotArmed);
        }
        if self.closed.swap(true, Ordering::SeqCst) {
            // Someone else holds it closed: one quiet period at a time.
            return Err(Refused::StillInside(self.inside.load(Ordering::SeqCst)));
        }
        let quiet = Quiet(self);
        let end = Instant::now() + limit;
        loop {
            let inside = self.inside.load(Ordering::SeqCst);
            if inside == 0 {
                return Ok(quiet);
            }
            if Instant::now() >= end {
                return Err(Refused::StillInside(inside));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The one door of the process's callback shims.
static DOOR: Door = Door::new();

/// A callback inside the profiler, counted; leaves on drop.
pub(crate) struct Inside(&'static Door);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The door is closed: the callback must touch nothing of the profiler.
#[derive(Debug)]
pub(crate) struct Closed;

/// Enters: `Ok(Some)` counted (armed), `Ok(None)` uncounted (never armed), `Err` when
/// the door is closed.
#[inline]
pub(crate) fn enter() -> Result<Option<Inside>, Closed> {
    DOOR.enter()
}

/// Arms the door: from now on every callback counts itself, and [`quiesce`] can close it.
///
/// Call it only while no callback is inside the profiler but the caller's own
/// initialisation (`Initialize` and `InitializeForAttach` pass the door uncounted
/// anyway): before the session's event mask is set, in a process where no earlier
/// session's callback can still run (none yet, or the runtime detached the last one).
/// A callback that passed the unarmed door earlier would be inside uncounted.
pub fn arm() {
    DOOR.arm();
}

/// Why [`quiesce`] did not close the door.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The door was never armed: callbacks were not counted, so none can be said to be
    /// out.
    NotArmed,
    /// This many callbacks were still inside at the limit (the door is open again), or
    /// another quiet period holds the door.
    StillInside(usize),
}

/// The door closed with no callback inside; it opens again on drop.
#[derive(Debug)]
pub struct Quiet(&'static Door);

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door")
            .field("armed", &self.armed.load(Ordering::Relaxed))
            .field("inside", &self.inside.load(Ordering::Relaxed))
            .finish()
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        self.0.closed.store(false, Ordering::SeqCst);
    }
}

/// Closes the door and waits up to `limit` until no callback is inside the profiler.
/// Refused when the door was never armed, or when callbacks did not all leave in time
/// (the door is open again then). Never call it from a callback: it would wait for
/// itself.
pub fn quiesce(limit: Duration) -> Result<Quiet, Refused> {
    DOOR.quiesce(limit)
}

/// Callbacks inside the profiler now (0 while the door is unarmed: it counts none).
pub fn inside() -> usize {
    DOOR.inside.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn door() -> &'static Door {
        Box::leak(Box::new(Door::new()))
    }

    #[test]
    fn the_door_waits_for_those_inside_and_keeps_others_out() {
        let d = door();
        d.arm();
        let a = d.enter().expect("open").expect("counted");
        // One inside: not quiet within the limit, and the door opens again.
        assert_eq!(
            d.quiesce(Duration::from_millis(20)).err(),
            Some(Refused::StillInside(1))
        );
        let b = d.enter().expect("open again");
        drop((a, b));
        let q = d.quiesce(Duration::from_secs(1)).expect("quiet");
        assert!(d.enter().is_err(), "closed while quiet");
        assert_eq!(d.inside.load(Ordering::SeqCst), 0);
        // A second quiet period while the first holds is refused.
        assert!(d.quiesce(Duration::from_millis(1)).is_err());
        drop(q);
        assert!(d.enter().is_ok_and(|i| i.is_some()));
        // One that leaves while `quiesce` waits lets it through.
        let c = d.enter().unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            drop(c);
        });
        assert!(d.quiesce(Duration::from_secs(5)).is_ok());
        t.join().unwrap();
    }

    /// Sessions that never arm it (no ReJIT) pay no shared atomic per callback: the
    /// unarmed door counts nothing, and a quiet period cannot be had from it.
    #[test]
    fn an_unarmed_door_counts_nothing_and_cannot_be_closed() {
        let d = door();
        let a = d.enter().expect("never closed");
        assert!(a.is_none(), "uncounted");
        assert_eq!(d.inside.load(Ordering::SeqCst), 0);
        assert_eq!(
            d.quiesce(Duration::from_millis(1)).err(),
            Some(Refused::NotArmed)
        );
        assert!(
            !d.closed.load(Ordering::SeqCst),
            "the refusal closes nothing"
        );
        // Armed, the next callback counts.
        d.arm();
        let b = d.enter().unwrap();
        assert!(b.is_some());
        assert_eq!(d.inside.load(Ordering::SeqCst), 1);
        drop(b);
        assert!(d.quiesce(Duration::from_secs(1)).is_ok());
    }
}
