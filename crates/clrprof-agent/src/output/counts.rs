//! Per-thread call-count tables (`--mode trace --counts`): exact calls per caller→callee
//! edge, kept by each thread for itself, no record per call. The owner updates its table
//! from the ELT hooks with plain loads and stores (relaxed atomics: one `mov` each on
//! x86-64); the writer reads every table about once a second and at the end and writes
//! its cumulative counts as one `CallCounts` record, so a thread's last record holds its
//! totals and nothing is cleared under the owner's feet.
//!
//! The assembly fast path (`tracing/x64.rs`) handles the common case itself through
//! [`CountHead`]: an enter below the top frame whose edge is the one it counted last or
//! sits in its first hash slot, a leave of the top frame. Everything else takes the Rust half here.
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
/// Frames of the shadow stack: 16 bytes each.
pub const DEPTH: usize = 1 << 14;
/// The hash of an edge key (the assembly computes the same: `imul` by this constant,
/// the high half, masked).
pub const HASH: u64 = 0x9E37_79B9_7F4A_7C15;

/// What the assembly fast path reads and writes, at fixed offsets (a test pins them).
#[repr(C)]
pub struct CountHead {
    /// Offset 0, owner-only: frames in the shadow stack.
    pub depth: Cell<u64>,
    /// Offset 8: the edge keys (`caller << 32 | callee`; 0 = empty), `EDGES` of them.
    pub keys: *const AtomicU64,
    /// Offset 16: the edge counts, beside the keys.
    pub counts: *const AtomicU64,
    /// Offset 24, owner-only: the shadow stack, `DEPTH` entries of (caller SP, index).
    pub stack: *const [Cell<u64>; 2],
    /// Offset 32, owner-only: the edge the fast path counted last (0: none) …
    pub last_key: Cell<u64>,
    /// Offset 40: … and its count (keys never move, so this stays its count).
    pub last_count: Cell<*const AtomicU64>,
}

/// One thread's table. Stack fields are owner-only; keys and counts are atomics that
/// the writer reads.
#[repr(C)]
pub struct CountTable {
    /// First: a table pointer is a [`CountHead`] pointer for the assembly.
    pub head: CountHead,
    stack: Box<[[Cell<u64>; 2]]>,
    keys: Box<[AtomicU64]>,
    counts: Box<[AtomicU64]>,
    missed: AtomicU64,
    deep: AtomicU64,
}

// SAFETY: (A3) the Cells are touched only by the owning thread (through its own slot);
// the writer reads the atomics alone. The head's pointers point into the boxes, which
// live as long as the table and never move.
unsafe impl Sync for CountTable {}
// SAFETY: (A3) as above.
unsafe impl Send for CountTable {}

impl Default for CountTable {
    fn default() -> Self {
        CountTable::new()
    }
}

impl CountTable {
    pub fn new() -> CountTable {
        let stack: Box<[[Cell<u64>; 2]]> =
            (0..DEPTH).map(|_| [Cell::new(0), Cell::new(0)]).collect();
        let keys: Box<[AtomicU64]> = (0..EDGES).map(|_| AtomicU64::new(0)).collect();
        let counts: Box<[AtomicU64]> = (0..EDGES).map(|_| AtomicU64::new(0)).collect();
        CountTable {
            head: CountHead {
                depth: Cell::new(0),
                keys: keys.as_ptr(),
                counts: counts.as_ptr(),
                stack: stack.as_ptr(),
                last_key: Cell::new(0),
                last_count: Cell::new(std::ptr::null()),
            },
            stack,
            keys,
            counts,
            missed: AtomicU64::new(0),
            deep: AtomicU64::new(0),
        }
    }

    fn frame(&self, k: usize) -> (u64, u64) {
        (self.stack[k][0].get(), self.stack[k][1].get())
    }

    /// Owner: `function` entered with caller SP `sp`. Frames at the same or a shallower
    /// SP are over (left by an exception, or replaced by a tail call), as in the
    /// out-of-process call-tree rebuild; the innermost open frame is the caller.
    #[inline]
    pub fn enter(&self, function: u32, sp: u64) {
        let mut d = self.head.depth.get() as usize;
        while d > 0 && self.frame(d - 1).0 <= sp {
            d -= 1;
        }
        let caller = if d > 0 { self.frame(d - 1).1 } else { 0 };
        if d < DEPTH {
            self.stack[d][0].set(sp);
            self.stack[d][1].set(u64::from(function));
            d += 1;
        } else {
            bump(&self.deep);
        }
        self.head.depth.set(d as u64);
        self.count((caller << 32) | u64::from(function));
    }

    /// Owner: `function` left (or tail-called away) at caller SP `sp`: closes its frame
    /// and any deeper one still open. A leave that matches no open frame changes nothing.
    #[inline]
    pub fn leave(&self, function: u32, sp: u64) {
        let d = self.head.depth.get() as usize;
        let want = (sp, u64::from(function));
        if let Some(k) = (0..d).rev().find(|&k| self.frame(k) == want) {
            self.head.depth.set(k as u64);
        }
    }

    #[inline]
    fn count(&self, key: u64) {
        let mask = EDGES - 1;
        let mut i = (key.wrapping_mul(HASH) >> 32) as usize & mask;
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
    use std::mem::offset_of;

    /// Offsets the assembly (tracing/x64.rs) relies on.
    #[test]
    fn head_layout_is_what_the_assembly_reads() {
        assert_eq!(offset_of!(CountHead, depth), 0);
        assert_eq!(offset_of!(CountHead, keys), 8);
        assert_eq!(offset_of!(CountHead, counts), 16);
        assert_eq!(offset_of!(CountHead, stack), 24);
        assert_eq!(offset_of!(CountHead, last_key), 32);
        assert_eq!(offset_of!(CountHead, last_count), 40);
        assert_eq!(offset_of!(CountTable, head), 0);
        assert_eq!(std::mem::size_of::<[Cell<u64>; 2]>(), 16);
        assert_eq!(EDGES, 1 << 14);
        assert_eq!(DEPTH, 1 << 14);
    }

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
