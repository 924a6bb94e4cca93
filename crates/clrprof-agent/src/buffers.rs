//! Per-thread event buffers.
//!
//! Each thread that emits gets a [`Slot`]: a single-producer/single-consumer byte ring
//! (rtrb) that only the owning thread writes and only the writer thread reads. Emitting
//! an event is one thread-local lookup, an encode into an owner-only scratch buffer and
//! one ring write — no lock, no allocation once warm, no syscall. A thread registers its
//! slot once (the only lock on this path); a pthread key destructor retires the slot when
//! the thread exits. There is deliberately no Rust `thread_local!` with a destructor: glibc
//! would then pin the library in memory and a detached profiler could never be unloaded.

use std::cell::{Cell, UnsafeCell};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clrprof_format::Event;

use crate::clock;

/// One thread's buffer. Fields marked owner-only are touched by the owning thread alone.
pub struct Slot {
    /// Owner-only: the producing end of the ring.
    producer: UnsafeCell<rtrb::Producer<u8>>,
    /// Owner-only: encode scratch, reused for every event.
    scratch: UnsafeCell<Vec<u8>>,
    /// Owner-only: set while the owner is inside `emit`, to catch re-entrancy.
    busy: Cell<bool>,
    /// Owner-only: timestamp of the previous record (records carry deltas).
    last_ts: Cell<u64>,
    pub os_tid: u64,
    /// Set when the owning thread has exited; the writer frees the slot once drained.
    pub retired: AtomicBool,
    /// Events dropped because the ring was full (drop policy) or the writer had stopped.
    pub lost: AtomicU64,
}

// SAFETY: the owner-only fields (producer, scratch, busy) are only accessed by the thread
// that created the slot (enforced by reaching them solely through that thread's TLS
// pointer); the fields the writer reads are atomics or immutable.
unsafe impl Sync for Slot {}
// SAFETY: as above; moving the Arc to the writer thread moves no owner-only access.
unsafe impl Send for Slot {}

/// What the writer receives for each new thread.
pub struct Registration {
    pub slot: Arc<Slot>,
    pub consumer: rtrb::Consumer<u8>,
}

static PENDING: Mutex<Vec<Registration>> = Mutex::new(Vec::new());
static BUFFER_BYTES: AtomicUsize = AtomicUsize::new(256 * 1024);
static DROP_WHEN_FULL: AtomicBool = AtomicBool::new(false);
/// False before the writer starts and after it stops: events are then dropped and counted.
static ACCEPTING: AtomicBool = AtomicBool::new(false);
/// Events lost outside any slot (no writer, dead thread without a slot…).
static LOST_GLOBAL: AtomicU64 = AtomicU64::new(0);
static PTHREAD_KEY: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Records emitted by threads that have no usable slot (re-entrant or exiting), drained
/// by the writer into a process-wide block. Rare by construction.
static FALLBACK: Mutex<Fallback> = Mutex::new(Fallback {
    bytes: Vec::new(),
    last_ts: 0,
});

/// Records of threads without a usable slot, with their own timestamp-delta chain.
pub struct Fallback {
    pub bytes: Vec<u8>,
    pub last_ts: u64,
}
const FALLBACK_LIMIT: usize = 4 << 20;

thread_local! {
    static CURRENT: Cell<*const Slot> = const { Cell::new(ptr::null()) };
    static EXITED: Cell<bool> = const { Cell::new(false) };
}

/// Sets up the buffers. Called once from Initialize before any event is emitted.
pub fn init(buffer_bytes: usize, drop_when_full: bool) -> bool {
    BUFFER_BYTES.store(buffer_bytes, Ordering::Relaxed);
    DROP_WHEN_FULL.store(drop_when_full, Ordering::Relaxed);
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out pointer; the destructor is an extern "C" fn that never
    // unwinds (it catches panics) and stays valid until `shutdown` deletes the key.
    let rc = unsafe { libc::pthread_key_create(&mut key, Some(slot_destructor)) };
    if rc != 0 {
        return false;
    }
    PTHREAD_KEY.store(key as usize, Ordering::Release);
    true
}

/// Starts accepting events (the writer is running).
pub fn set_accepting(on: bool) {
    ACCEPTING.store(on, Ordering::Release);
}

/// Deletes the pthread key so no destructor of ours runs after the library is unloaded.
pub fn shutdown() {
    set_accepting(false);
    let key = PTHREAD_KEY.swap(usize::MAX, Ordering::AcqRel);
    if key != usize::MAX {
        // SAFETY: `key` came from pthread_key_create and is deleted once (swap above).
        unsafe { libc::pthread_key_delete(key as libc::pthread_key_t) };
    }
}

extern "C" fn slot_destructor(value: *mut libc::c_void) {
    let _ = std::panic::catch_unwind(|| {
        CURRENT.with(|c| c.set(ptr::null()));
        EXITED.with(|e| e.set(true));
        if value.is_null() {
            return;
        }
        // SAFETY: `value` is the pointer `register` produced with Arc::into_raw and
        // stored under our key; glibc passes it here exactly once.
        let slot = unsafe { Arc::from_raw(value as *const Slot) };
        slot.retired.store(true, Ordering::Release);
    });
}

/// Takes the registrations made since the last call (writer only).
pub fn take_registrations() -> Vec<Registration> {
    match PENDING.lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    }
}

/// Takes the fallback records (writer only).
pub fn take_fallback(into: &mut Vec<u8>) {
    let mut f = match FALLBACK.lock() {
        Ok(f) => f,
        Err(poisoned) => poisoned.into_inner(),
    };
    into.extend_from_slice(&f.bytes);
    f.bytes.clear();
}

pub fn lost_global() -> u64 {
    LOST_GLOBAL.load(Ordering::Relaxed)
}

fn register() -> *const Slot {
    let key = PTHREAD_KEY.load(Ordering::Acquire);
    if key == usize::MAX || EXITED.with(|e| e.get()) {
        return ptr::null();
    }
    let (producer, consumer) = rtrb::RingBuffer::new(BUFFER_BYTES.load(Ordering::Relaxed));
    let slot = Arc::new(Slot {
        producer: UnsafeCell::new(producer),
        scratch: UnsafeCell::new(Vec::with_capacity(4096)),
        busy: Cell::new(false),
        last_ts: Cell::new(0),
        os_tid: clock::gettid(),
        retired: AtomicBool::new(false),
        lost: AtomicU64::new(0),
    });
    let raw = Arc::into_raw(slot.clone());
    // SAFETY: `key` is live (checked above); the value is released by slot_destructor.
    if unsafe { libc::pthread_setspecific(key as libc::pthread_key_t, raw as *const _) } != 0 {
        // SAFETY: `raw` came from Arc::into_raw just above and was not stored.
        drop(unsafe { Arc::from_raw(raw) });
        return ptr::null();
    }
    match PENDING.lock() {
        Ok(mut p) => p.push(Registration { slot, consumer }),
        Err(poisoned) => poisoned.into_inner().push(Registration { slot, consumer }),
    }
    CURRENT.with(|c| c.set(raw));
    raw
}

#[inline]
fn current_slot() -> *const Slot {
    let p = CURRENT.with(|c| c.get());
    if !p.is_null() { p } else { register() }
}

/// Records one event on the calling thread, timestamped now.
#[inline]
pub fn emit(ev: &Event<'_>) {
    emit_at(clock::ticks(), ev)
}

/// Records one event with a given timestamp.
pub fn emit_at(ts: u64, ev: &Event<'_>) {
    if !ACCEPTING.load(Ordering::Acquire) {
        LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let slot = current_slot();
    if slot.is_null() {
        return emit_fallback(ts, ev);
    }
    // SAFETY: a non-null CURRENT pointer is a live slot: the TLS pointer holds one Arc
    // reference that only slot_destructor (which nulls CURRENT first) releases.
    let slot = unsafe { &*slot };
    if slot.busy.replace(true) {
        // Re-entered from inside our own emit (a runtime call made while encoding).
        return emit_fallback(ts, ev);
    }
    // SAFETY: owner-only fields, accessed from the owning thread (see `Slot`), and the
    // busy flag above guarantees no other borrow of them is live on this thread.
    let (scratch, producer) = unsafe { (&mut *slot.scratch.get(), &mut *slot.producer.get()) };
    scratch.clear();
    clrprof_format::encode(scratch, ts.wrapping_sub(slot.last_ts.get()), ev);
    if push(slot, producer, scratch) {
        // Only a record that made it into the ring moves the delta chain forward.
        slot.last_ts.set(ts);
    }
    slot.busy.set(false);
}

/// The tracing hot path: one enter/leave/tailcall record. Kept free of locks, allocation
/// and syscalls once the thread's slot exists; cannot panic.
#[inline(always)]
pub fn emit_elt(kind: crate::elt::EltKind, function: u64, caller_sp: u64) {
    let ts = clock::ticks();
    let mut slot = CURRENT.with(|c| c.get());
    if slot.is_null() {
        if !ACCEPTING.load(Ordering::Acquire) {
            LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
            return;
        }
        slot = register();
        if slot.is_null() {
            LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    // SAFETY: a non-null CURRENT pointer is a live slot (see `emit_at`).
    let slot = unsafe { &*slot };
    if slot.busy.get() {
        slot.lost.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let kind = match kind {
        crate::elt::EltKind::Enter => clrprof_format::EltKind::Enter,
        crate::elt::EltKind::Leave => clrprof_format::EltKind::Leave,
        crate::elt::EltKind::Tailcall => clrprof_format::EltKind::Tailcall,
    };
    let mut buf = [0u8; 32];
    let delta = ts.wrapping_sub(slot.last_ts.get());
    let n = clrprof_format::encode_elt(&mut buf, kind, delta, function, caller_sp & 0xffff_ffff);
    // SAFETY: owner-only field, on the owning thread, not borrowed elsewhere (busy unset
    // and this function does not re-enter).
    let producer = unsafe { &mut *slot.producer.get() };
    if push(slot, producer, &buf[..n]) {
        slot.last_ts.set(ts);
    }
}

/// Appends one record; false when it was dropped (and counted).
fn push(slot: &Slot, producer: &mut rtrb::Producer<u8>, bytes: &[u8]) -> bool {
    if bytes.len() > producer.buffer().capacity() {
        slot.lost.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    let mut spins = 0u32;
    loop {
        if producer.push_entire_slice(bytes).is_ok() {
            return true;
        }
        if DROP_WHEN_FULL.load(Ordering::Relaxed) || !ACCEPTING.load(Ordering::Acquire) {
            slot.lost.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        // Exact mode: wait for the writer to make room.
        crate::writer::wake();
        spins += 1;
        if spins < 16 {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

fn emit_fallback(ts: u64, ev: &Event<'_>) {
    let mut f = match FALLBACK.try_lock() {
        Ok(f) => f,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => match FALLBACK.lock() {
            Ok(f) => f,
            Err(p) => p.into_inner(),
        },
    };
    if f.bytes.len() > FALLBACK_LIMIT {
        LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let delta = ts.wrapping_sub(f.last_ts);
    f.last_ts = ts;
    clrprof_format::encode(&mut f.bytes, delta, ev);
}
