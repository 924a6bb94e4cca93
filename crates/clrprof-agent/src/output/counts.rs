//! Per-thread call-count tables (`--mode trace --counts`): exact calls per caller→callee
//! edge, kept by each thread for itself, no record per call. The owner updates its table
//! from the ELT hooks with plain loads and stores (relaxed atomics: one `mov` each on
//! x86-64); the writer reads every table about once a second and at the end and writes
//! its cumulative counts as one `CallCounts` record, so a thread's last record holds its
//! totals and nothing is cleared under the owner's feet.
//!
//! Bounded: [`EDGES`] edges per thread (open addressing, [`PROBES`] probes; a call whose
//! edge finds no room is counted in `missed`) and a shadow stack of [`DEPTH`] frames (a
//! call below it is counted in `deep`, with the deepest kept frame as its caller).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Edges a thread's table holds (a power of two): 16 bytes each.
pub const EDGES: usize = 1 << 14;
/// Slots looked at before an edge counts as missed.
const PROBES: usize = 16;
/// Frames of the shadow stack: 12 bytes each.
pub const DEPTH: usize = 1 << 14;

/// One thread's table. Stack fields are owner-only; keys and counts are atomics that
/// the writer reads.
pub struct CountTable {
    /// Owner-only: frames in `stack`.
    depth: Cell<usize>,
    /// Owner-only: the open frames, (caller SP, function index), innermost last.
    stack: Box<[Cell<(u64, u32)>]>,
    keys: Box<[AtomicU64]>,
    counts: Box<[AtomicU64]>,
    missed: AtomicU64,
    deep: AtomicU64,
}

// SAFETY: (A3) the Cells are touched only by the owning thread (through its own slot);
// the writer reads the atomics alone.
unsafe impl Sync for CountTable {}

impl Default for CountTable {
    fn default() -> Self {
        CountTable::new()
    }
}

impl CountTable {
    pub fn new() -> CountTable {
        CountTable {
            depth: Cell::new(0),
            stack: (0..DEPTH).map(|_| Cell::new((0, 0))).collect(),
            keys: (0..EDGES).map(|_| AtomicU64::new(0)).collect(),
            counts: (0..EDGES).map(|_| AtomicU64::new(0)).collect(),
            missed: AtomicU64::new(0),
            deep: AtomicU64::new(0),
        }
    }

    /// Owner: `function` entered with caller SP `sp`. Frames at the same or a shallower
    /// SP are over (left by an exception, or replaced by a tail call), as in the
    /// out-of-process call-tree rebuild; the innermost open frame is the caller.
    #[inline]
    pub fn enter(&self, function: u32, sp: u64) {
        let mut d = self.depth.get();
        while d > 0 && self.stack[d - 1].get().0 <= sp {
            d -= 1;
        }
        let caller = if d > 0 { self.stack[d - 1].get().1 } else { 0 };
        if d < DEPTH {
            self.stack[d].set((sp, function));
            d += 1;
        } else {
            bump(&self.deep);
        }
        self.depth.set(d);
        self.count((u64::from(caller) << 32) | u64::from(function));
    }

    /// Owner: `function` left (or tail-called away) at caller SP `sp`: closes its frame
    /// and any deeper one still open. A leave that matches no open frame changes nothing.
    #[inline]
    pub fn leave(&self, function: u32, sp: u64) {
        let d = self.depth.get();
        if d > 0 && self.stack[d - 1].get() == (sp, function) {
            self.depth.set(d - 1);
            return;
        }
        if let Some(k) = (0..d)
            .rev()
            .find(|&k| self.stack[k].get() == (sp, function))
        {
            self.depth.set(k);
        }
    }

    #[inline]
    fn count(&self, key: u64) {
        let mask = EDGES - 1;
        let mut i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        for _ in 0..PROBES {
            let k = self.keys[i].load(Ordering::Relaxed);
            if k == key {
                bump(&self.counts[i]);
                return;
            }
            if k == 0 {
                // The count first, then the key that makes it visible to the writer.
                self.counts[i].store(1, Ordering::Relaxed);
                self.keys[i].store(key, Ordering::Release);
                return;
            }
            i = (i + 1) & mask;
        }
        bump(&self.missed);
    }

    /// Writer: the cumulative counts as (caller, callee, calls) triples, flattened into
    /// `out`; returns (missed, deep).
    pub fn snapshot(&self, out: &mut Vec<u64>) -> (u64, u64) {
        out.clear();
        for (k, c) in self.keys.iter().zip(self.counts.iter()) {
            let key = k.load(Ordering::Acquire);
            if key != 0 {
                out.extend([key >> 32, key & 0xffff_ffff, c.load(Ordering::Relaxed)]);
            }
        }
        (
            self.missed.load(Ordering::Relaxed),
            self.deep.load(Ordering::Relaxed),
        )
    }
}

/// The owner's increment: a load and a store, not a locked read-modify-write (only the
/// owner writes).
#[inline(always)]
fn bump(a: &AtomicU64) {
    a.store(a.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(t: &CountTable) -> Vec<(u64, u64, u64)> {
        let mut v = Vec::new();
        t.snapshot(&mut v);
        let mut e: Vec<_> = v.chunks(3).map(|c| (c[0], c[1], c[2])).collect();
        e.sort();
        e
    }

    #[test]
    fn nested_calls_count_their_edges() {
        let t = CountTable::new();
        t.enter(1, 1000); // Main
        for _ in 0..3 {
            t.enter(2, 900); // A
            t.enter(3, 800); // B
            t.leave(3, 800);
            t.leave(2, 900);
        }
        t.leave(1, 1000);
        assert_eq!(edges(&t), [(0, 1, 1), (1, 2, 3), (2, 3, 3)]);
    }

    #[test]
    fn frames_left_by_an_exception_or_a_tail_call_close() {
        let t = CountTable::new();
        t.enter(1, 1000);
        t.enter(2, 900);
        t.enter(3, 800); // throws; 2 and 3 unwound without a leave
        t.enter(4, 900); // called by 1 at 2's old SP
        t.leave(4, 900);
        t.enter(5, 900);
        t.leave(5, 900); // tail call: 5 replaces itself with 6 at the same SP
        t.enter(6, 900);
        t.leave(1, 1000); // closes 6 too
        t.enter(7, 1000);
        assert_eq!(
            edges(&t),
            [
                (0, 1, 1),
                (0, 7, 1),
                (1, 2, 1),
                (1, 4, 1),
                (1, 5, 1),
                (1, 6, 1),
                (2, 3, 1)
            ]
        );
    }

    #[test]
    fn a_full_table_counts_what_it_misses() {
        let t = CountTable::new();
        for f in 1..=(EDGES as u32 + 100) {
            t.enter(f, 1000);
        }
        let mut v = Vec::new();
        let (missed, deep) = t.snapshot(&mut v);
        assert_eq!(v.len() / 3 + missed as usize, EDGES + 100);
        assert!(missed >= 100);
        assert_eq!(deep, 0);
    }
}
