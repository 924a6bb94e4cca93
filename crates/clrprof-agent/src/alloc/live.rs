//! The live heap of `--alloc`: each sampled object is followed through a weak GC handle
//! (ICorProfilerInfo13::CreateHandle) in a fixed table of [`TRACKED_MAX`] slots; when a
//! GC ends, the handles whose object is gone are the samples that died. Bounded: a
//! sample that finds the table full is not followed, and counted.
//!
//! Lock-free: allocating threads claim an empty slot with one compare-exchange; the
//! sweep at GC end (one at a time: the runtime runs one GC at a time) and the release at
//! the end free slots, each taking the handle out of its slot with an atomic operation
//! before destroying it. A slot being filled is `RESERVED` and skipped by the sweep; the
//! release closes every slot (`CLOSED`), and a fill it interrupted destroys its own handle.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use corprof::{ObjectId, ProfilerInfo};

/// Sampled objects followed at once: at the default 100 KiB interval, up to ~400 MiB of
/// live sampled heap. 16 bytes per slot (64 KiB) plus one runtime handle per object.
pub const TRACKED_MAX: usize = 4096;

const EMPTY: usize = 0;
const RESERVED: usize = 1;
/// A slot `release_all` has emptied for good: never reserved again, and a `track` that
/// had reserved it before finds it closed and destroys its own handle.
const CLOSED: usize = 2;

struct Slot {
    handle: AtomicUsize,
    id: AtomicU64,
}

pub struct LiveTable {
    slots: Box<[Slot]>,
    next: AtomicUsize,
    used: AtomicUsize,
}

impl LiveTable {
    pub fn new(capacity: usize) -> LiveTable {
        LiveTable {
            slots: (0..capacity)
                .map(|_| Slot {
                    handle: AtomicUsize::new(EMPTY),
                    id: AtomicU64::new(0),
                })
                .collect(),
            next: AtomicUsize::new(0),
            used: AtomicUsize::new(0),
        }
    }

    /// Follows `object` as sample `id`; false if the table is full or the runtime gave no
    /// handle. `object` must be the live object the runtime just reported (R7).
    pub fn track(&self, info: &ProfilerInfo, object: ObjectId, id: u64) -> bool {
        let n = self.slots.len();
        if object.0 == 0 || self.used.load(Ordering::Relaxed) >= n {
            return false;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            let slot = &self.slots[(start + i) % n];
            if slot
                .handle
                .compare_exchange(EMPTY, RESERVED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            return match info.create_handle(object, corprof_sys::COR_PRF_HANDLE_TYPE_WEAK) {
                Ok(h) if h > CLOSED => {
                    slot.id.store(id, Ordering::Relaxed);
                    self.used.fetch_add(1, Ordering::Relaxed);
                    if slot
                        .handle
                        .compare_exchange(RESERVED, h, Ordering::Release, Ordering::Relaxed)
                        .is_ok()
                    {
                        true
                    } else {
                        // `release_all` closed the slot meanwhile: the handle is ours.
                        let _ = info.destroy_handle(h);
                        self.used.fetch_sub(1, Ordering::Relaxed);
                        false
                    }
                }
                _ => {
                    let _ = slot.handle.compare_exchange(
                        RESERVED,
                        EMPTY,
                        Ordering::Release,
                        Ordering::Relaxed,
                    );
                    false
                }
            };
        }
        false
    }

    /// At a GC's end: appends the ids of followed samples whose objects are gone to
    /// `died` and releases their handles.
    pub fn sweep(&self, info: &ProfilerInfo, died: &mut Vec<u64>) {
        for slot in self.slots.iter() {
            let h = slot.handle.load(Ordering::Acquire);
            if h <= CLOSED {
                continue;
            }
            if let Ok(ObjectId(0)) = info.get_object_id_from_handle(h) {
                let id = slot.id.load(Ordering::Relaxed);
                // Whoever takes the handle out of the slot destroys it, exactly once
                // (`release_all` may run at the same time, at the end).
                if slot
                    .handle
                    .compare_exchange(h, EMPTY, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    died.push(id);
                    let _ = info.destroy_handle(h);
                    self.used.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// At the end of the recording: releases every handle (a detached agent leaves none
    /// in the target) and returns how many samples were still alive.
    pub fn release_all(&self, info: &ProfilerInfo) -> u64 {
        let mut alive = 0;
        for slot in self.slots.iter() {
            let h = slot.handle.swap(CLOSED, Ordering::AcqRel);
            if h <= CLOSED {
                continue;
            }
            if !matches!(info.get_object_id_from_handle(h), Ok(ObjectId(0))) {
                alive += 1;
            }
            let _ = info.destroy_handle(h);
            self.used.fetch_sub(1, Ordering::Relaxed);
        }
        alive
    }

    /// Samples followed now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}
