//! Thread pointer → slot, for the ELT fast path.
//!
//! The fast path (`tracing/x64.rs`) must find the calling thread's ring without a call. A
//! Rust `thread_local!` in a `dlopen`ed library goes through `__tls_get_addr` (a call that
//! clobbers registers the hooks must keep), and initial-exec TLS can make `dlopen` fail
//! when the static TLS surplus is used up, which would leave the app unprofiled. Instead
//! the thread pointer (`fs:0` on x86-64 Linux, unique per live thread) is hashed into a
//! fixed table. A thread whose entry is taken by another uses the slow path, which is
//! correct, only slower; [`collisions`] counts them.
//!
//! An entry is only ever matched by the thread whose pointer it holds, and that thread
//! also creates and removes it (at registration and in the thread-exit destructor), so
//! entries need no ordering beyond a single thread's own program order. The table owns
//! one reference to each slot it points to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::slot::Slot;

/// log2 of the number of entries. 65,536 × 16 bytes of .bss; only touched pages are real.
pub const BITS: u32 = 16;
/// The multiplier: `imul r, r, imm32` sign-extends it, so the table uses the same value.
pub const HASH_MUL: u64 = 0x9E37_79B1_u32 as i32 as i64 as u64;

#[repr(C)]
pub struct Entry {
    /// The owning thread's pointer; 0 = free.
    pub key: AtomicUsize,
    pub slot: AtomicPtr<Slot>,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Entry = Entry {
    key: AtomicUsize::new(0),
    slot: AtomicPtr::new(std::ptr::null_mut()),
};

/// Read by the assembly as `TABLE + (hash(tp) << 4)`.
pub static TABLE: [Entry; 1 << BITS] = [FREE; 1 << BITS];

/// `--counts`: the call-count table (`output/counts.rs`) of the thread whose key is in
/// the same index of [`TABLE`], null until its first counted call. A table of its own
/// with the same 16-byte stride, so that the count hooks load it beside the key check
/// (`COUNTS + (hash(tp) << 4)`) instead of through the slot, one dependent load less.
/// Set and cleared by the entry's owner, as the entry itself.
#[repr(C)]
pub struct CountsEntry {
    pub table: AtomicPtr<u8>,
    _stride: u64,
}

#[allow(clippy::declare_interior_mutable_const)]
const NO_COUNTS: CountsEntry = CountsEntry {
    table: AtomicPtr::new(std::ptr::null_mut()),
    _stride: 0,
};

/// Read by the count hooks as `COUNTS + (hash(tp) << 4)`.
pub static COUNTS: [CountsEntry; 1 << BITS] = [NO_COUNTS; 1 << BITS];

static ENABLED: AtomicBool = AtomicBool::new(false);
static COLLISIONS: AtomicU64 = AtomicU64::new(0);

/// Starts publishing new threads' slots (trace mode, before the hooks are set).
pub fn enable() {
    ENABLED.store(true, Ordering::Release);
}

/// At a session's start: its own collision count.
pub fn reset_for_session() {
    COLLISIONS.store(0, Ordering::Relaxed);
}

/// Between sessions (no thread of ours runs, no hook or callback is called): every entry
/// of a thread that outlived the session is released and the map turned off, so a thread
/// of the next session never finds a slot of the last one.
pub fn release_at_detach() {
    // Never on: no entry was made (and the table's pages stay untouched).
    if !ENABLED.swap(false, Ordering::AcqRel) {
        return;
    }
    for (e, c) in TABLE.iter().zip(&COUNTS) {
        if e.key.load(Ordering::Acquire) == 0 {
            continue;
        }
        e.key.store(usize::MAX, Ordering::Release);
        c.table.store(std::ptr::null_mut(), Ordering::Release);
        let raw = e.slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        e.key.store(0, Ordering::Release);
        if !raw.is_null() {
            // SAFETY: (A3) `raw` was stored by `insert` from Arc::into_raw and is released
            // once (swapped out above); between sessions its thread reaches it no more.
            drop(unsafe { Arc::from_raw(raw) });
        }
    }
}

/// Threads that found their entry taken and use the slow path.
pub fn collisions() -> u64 {
    COLLISIONS.load(Ordering::Relaxed)
}

/// The index the assembly computes: `(tp * HASH_MUL) >> (64 - BITS)`.
#[inline]
pub fn index(tp: usize) -> usize {
    ((tp as u64).wrapping_mul(HASH_MUL) >> (64 - BITS)) as usize
}

/// The calling thread's thread pointer.
#[inline]
pub fn thread_pointer() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tp: usize;
        // SAFETY: (A9) on x86-64 Linux fs:0 holds the TCB's self pointer (the thread pointer);
        // reading it has no side effects.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags));
        }
        tp
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        0
    }
}

/// Whether threads are published (trace mode with the fast path).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Publishes the calling thread's slot, if the map is on and its entry is free.
pub fn insert(slot: &Arc<Slot>) {
    if !enabled() {
        return;
    }
    let tp = thread_pointer();
    if tp == 0 {
        return;
    }
    let e = &TABLE[index(tp)];
    let raw = Arc::into_raw(slot.clone()) as *mut Slot;
    // Slot first: the key makes the entry match, and only this thread matches it.
    if e.key
        .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        e.slot.store(raw, Ordering::Release);
        // A table made before the slot was published (the map turned on later).
        let counts = slot
            .counts
            .get()
            .map_or(std::ptr::null_mut(), |t| &**t as *const _ as *mut u8);
        COUNTS[index(tp)].table.store(counts, Ordering::Release);
        e.key.store(tp, Ordering::Release);
    } else {
        COLLISIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: (A3) `raw` came from Arc::into_raw above and was not published.
        drop(unsafe { Arc::from_raw(raw) });
    }
}

/// Removes the calling thread's entry (thread exit).
pub fn remove() {
    let tp = thread_pointer();
    if tp == 0 {
        return;
    }
    let e = &TABLE[index(tp)];
    if e.key.load(Ordering::Acquire) != tp {
        return;
    }
    // Unmatch first, then release the reference the table held.
    e.key.store(usize::MAX, Ordering::Release);
    COUNTS[index(tp)]
        .table
        .store(std::ptr::null_mut(), Ordering::Release);
    let raw = e.slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
    e.key.store(0, Ordering::Release);
    if !raw.is_null() {
        // SAFETY: (A3) `raw` was stored by `insert` from Arc::into_raw and is released once
        // (swapped out above).
        drop(unsafe { Arc::from_raw(raw) });
    }
}

/// `--counts`: publishes the calling thread's new call-count table beside its entry, if
/// the entry is its own (else the count hooks keep taking the slow path).
pub fn set_counts(table: *const u8) {
    let tp = thread_pointer();
    if tp == 0 {
        return;
    }
    let i = index(tp);
    if TABLE[i].key.load(Ordering::Acquire) == tp {
        COUNTS[i].table.store(table as *mut u8, Ordering::Release);
    }
}

/// The calling thread's slot as the fast path would find it (tests).
pub fn lookup() -> *const Slot {
    let tp = thread_pointer();
    let e = &TABLE[index(tp)];
    if e.key.load(Ordering::Acquire) == tp {
        e.slot.load(Ordering::Acquire)
    } else {
        std::ptr::null()
    }
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_imul_with_sign_extended_immediate() {
        let tp: u64 = 0x7f12_3456_7000;
        let mut via_asm: u64;
        // SAFETY: (A9) pure register arithmetic.
        unsafe {
            core::arch::asm!(
                "imul {o}, {i}, -1640531535",
                "shr {o}, 48",
                i = in(reg) tp,
                o = out(reg) via_asm,
            );
        }
        assert_eq!(via_asm as usize, index(tp as usize));
        assert!(index(usize::MAX) < 1 << BITS);
    }

    #[test]
    fn distinct_threads_get_distinct_pointers() {
        let here = thread_pointer();
        let there = std::thread::spawn(thread_pointer).join().unwrap();
        assert_ne!(here, 0);
        assert_ne!(here, there);
    }
}
