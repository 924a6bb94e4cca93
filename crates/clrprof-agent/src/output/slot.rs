//! A thread's output slot: its ring, what only the owning thread touches, and its
//! counters. A leaf beside `buffers` (which creates and finds slots) and `tpmap` (through
//! which the ELT assembly finds them), so neither needs the other for the type.

use std::cell::{Cell, UnsafeCell};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64};

use super::counts::CountTable;
use super::ring::Ring;

/// One thread's buffer. Fields marked owner-only are touched by the owning thread alone.
#[repr(C)]
pub struct Slot {
    /// First, so that a `*const Slot` is a `*const RingHead` for the assembly.
    pub ring: Ring,
    /// Owner-only: encode scratch, reused for every event.
    pub(super) scratch: UnsafeCell<Vec<u8>>,
    pub os_tid: u64,
    /// Set when the owning thread has exited; the writer frees the slot once drained.
    pub retired: AtomicBool,
    /// Events dropped because the ring was full (drop policy) or the writer had stopped.
    pub lost: AtomicU64,
    /// Owner-only: whether the slot was offered to [`tpmap`](super::tpmap) (a thread that
    /// registered before trace mode turned the map on is offered at its first ELT event).
    pub(super) published: Cell<bool>,
    /// `--counts`: the thread's call-count table, made at its first hooked call.
    pub counts: OnceLock<Box<CountTable>>,
}

// SAFETY: (A3) the owner-only parts (the ring's producer side, scratch) are only accessed by
// the thread that created the slot (reached solely through that thread's TLS pointer or
// its own tpmap entry); the writer uses the ring's consumer side and atomics.
unsafe impl Sync for Slot {}
// SAFETY: (A3) as above; moving the Arc to the writer thread moves no owner-only access.
unsafe impl Send for Slot {}
