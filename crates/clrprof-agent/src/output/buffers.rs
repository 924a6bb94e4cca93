//! Per-thread event buffers.
//!
//! Each thread that emits gets a [`Slot`] holding a [`Ring`]: a single-producer/
//! single-consumer ring that only the owning thread writes and only the writer thread
//! reads. Emitting an event is one thread-local lookup, one encode and one ring write: no
//! lock, no allocation once warm, no syscall. In trace mode the ELT hooks skip even the
//! thread-local lookup and write the ring from assembly (`tracing/x64.rs`, found through
//! [`tpmap`](super::tpmap)). A thread registers its slot once (the only lock on this
//! path); a pthread key destructor retires the slot when the thread exits. There is
//! deliberately no Rust `thread_local!` with a destructor: glibc would then pin the
//! library in memory and a detached profiler could never be unloaded.

use std::cell::{Cell, UnsafeCell};
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use clrprof_format::Event;

use super::ring::{Full, Ring};
use super::slot::Slot;
use crate::os::{clock, tls};

/// What the writer receives for each new thread.
pub struct Registration {
    pub slot: Arc<Slot>,
}

static PENDING: Mutex<Vec<Registration>> = Mutex::new(Vec::new());
static BUFFER_BYTES: AtomicUsize = AtomicUsize::new(256 * 1024);
static DROP_WHEN_FULL: AtomicBool = AtomicBool::new(false);
/// False before the writer starts and after it stops: events are then dropped and counted.
/// The ELT fast path reads it too (as a byte).
pub static ACCEPTING: AtomicBool = AtomicBool::new(false);
/// Events lost outside any slot (no writer, dead thread without a slot…).
static LOST_GLOBAL: AtomicU64 = AtomicU64::new(0);
/// Exact mode: how often a thread found its ring full and waited, and for how long.
static WAITS: AtomicU64 = AtomicU64::new(0);
static WAITED_NS: AtomicU64 = AtomicU64::new(0);

/// Times a thread waited for the writer (exact mode, ring full), and the ns it waited.
pub fn waits() -> (u64, u64) {
    (
        WAITS.load(Ordering::Relaxed),
        WAITED_NS.load(Ordering::Relaxed),
    )
}
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
    /// The thread's slot and the session it was made in (`session::state::generation`):
    /// the library records many sessions in one process, and a runtime thread that
    /// outlives a session keeps its pointer, whose slot that session's end freed. A
    /// pointer of another generation counts as none ([`current`]).
    static CURRENT: Cell<(*const Slot, u64)> = const { Cell::new((ptr::null(), 0)) };
    /// Set by the thread's exit destructor: a thread does not come back, so this is per
    /// thread for good, whatever the session.
    static EXITED: Cell<bool> = const { Cell::new(false) };
}

/// The calling thread's slot in this session, or null (none yet, or one of an earlier
/// session: freed, never to be touched). One generation compare on the hot path.
#[inline]
fn current() -> *const Slot {
    let (p, generation) = CURRENT.with(|c| c.get());
    if generation == super::session_cell::generation() {
        p
    } else {
        ptr::null()
    }
}

/// At a session's start (`session::state::begin`, nothing of ours running elsewhere):
/// the counters and lists of the previous session start again from empty.
pub fn reset_for_session() {
    LOST_GLOBAL.store(0, Ordering::Relaxed);
    WAITS.store(0, Ordering::Relaxed);
    WAITED_NS.store(0, Ordering::Relaxed);
    drop(take_registrations());
    thread_refs().clear();
    let mut f = FALLBACK.lock().unwrap_or_else(|p| p.into_inner());
    f.bytes.clear();
    f.last_ts = 0;
}

/// Wakes the writer (its doorbell, handed in by `init`): a ring past half full, or a
/// thread waiting for room in exact mode. Process-wide on purpose: every session hands in
/// the same function (`writer::wake`), which finds the session's writer itself.
static WAKE: OnceLock<fn()> = OnceLock::new();

fn wake_writer() {
    if let Some(wake) = WAKE.get() {
        wake();
    }
}

/// Sets up the buffers. Called once from Initialize before any event is emitted; `wake`
/// is the writer's doorbell.
pub fn init(buffer_bytes: usize, drop_when_full: bool, wake: fn()) -> bool {
    let _ = WAKE.set(wake);
    BUFFER_BYTES.store(buffer_bytes, Ordering::Relaxed);
    DROP_WHEN_FULL.store(drop_when_full, Ordering::Relaxed);
    // The destructor never unwinds (it catches panics) and stays valid until `shutdown`
    // deletes the key.
    let Some(key) = tls::create(slot_destructor) else {
        return false;
    };
    PTHREAD_KEY.store(key, Ordering::Release);
    true
}

/// Starts accepting events (the writer is running).
pub fn set_accepting(on: bool) {
    ACCEPTING.store(on, Ordering::Release);
}

/// The reference each live thread holds on its slot (`Arc::into_raw`), as an address, so
/// that a detach can release those of threads that outlive the profiler: once the key is
/// deleted their destructor never runs, and each ring (256 KiB and up) would leak.
static THREAD_REFS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn thread_refs() -> std::sync::MutexGuard<'static, Vec<usize>> {
    THREAD_REFS.lock().unwrap_or_else(|p| p.into_inner())
}

/// After a detach, when no thread can be inside a callback any more
/// (ProfilerDetachSucceeded): frees the slots of threads that are still alive.
pub fn release_thread_refs() {
    let refs = std::mem::take(&mut *thread_refs());
    for raw in refs {
        // SAFETY: (A3) each address is a pointer from Arc::into_raw in `register` whose
        // thread's destructor did not run (it removes its entry under the same lock); the
        // key is deleted, so it never will, and no callback runs any more to use it.
        drop(unsafe { Arc::from_raw(raw as *const Slot) });
    }
}

/// After a detach, with [`release_thread_refs`]: gives back the memory of the statics the
/// runtime's unload of the library would leave in the target's heap (`dlclose` drops no
/// static): the registration and reference lists and the fallback buffer.
pub fn release_statics() {
    drop(take_registrations());
    *thread_refs() = Vec::new();
    let mut f = FALLBACK.lock().unwrap_or_else(|p| p.into_inner());
    f.bytes = Vec::new();
}

/// Deletes the pthread key so no destructor of ours runs after the library is unloaded.
pub fn shutdown() {
    set_accepting(false);
    let key = PTHREAD_KEY.swap(usize::MAX, Ordering::AcqRel);
    if key != usize::MAX {
        // SAFETY: (A8) `key` came from tls::create and is deleted once (swap above).
        unsafe { tls::delete(key) };
    }
}

extern "C" fn slot_destructor(value: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        CURRENT.with(|c| c.set((ptr::null(), 0)));
        EXITED.with(|e| e.set(true));
        if value.is_null() {
            return;
        }
        {
            let mut refs = thread_refs();
            match refs.iter().position(|&r| r == value as usize) {
                Some(i) => {
                    refs.swap_remove(i);
                }
                // Already released by a detach.
                None => return,
            }
        }
        // SAFETY: (A3) `value` is the pointer `register` produced with Arc::into_raw and
        // stored under our key; glibc passes it here exactly once, and it was still in
        // THREAD_REFS, so no detach released it.
        let slot = unsafe { Arc::from_raw(value as *const Slot) };
        super::tpmap::remove();
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

/// Whether full buffers drop events (`--on-full drop`) rather than wait.
pub fn drop_when_full() -> bool {
    DROP_WHEN_FULL.load(Ordering::Relaxed)
}

/// Size of each thread's ring in bytes (a record may take at most half).
pub fn buffer_bytes() -> usize {
    BUFFER_BYTES.load(Ordering::Relaxed)
}

pub fn lost_global() -> u64 {
    LOST_GLOBAL.load(Ordering::Relaxed)
}

fn register() -> *const Slot {
    let key = PTHREAD_KEY.load(Ordering::Acquire);
    if key == usize::MAX || EXITED.with(|e| e.get()) {
        return ptr::null();
    }
    let Some(ring) = Ring::new(BUFFER_BYTES.load(Ordering::Relaxed), wake_writer) else {
        return ptr::null();
    };
    let slot = Arc::new(Slot {
        ring,
        scratch: UnsafeCell::new(Vec::with_capacity(4096)),
        os_tid: clock::gettid(),
        retired: AtomicBool::new(false),
        lost: AtomicU64::new(0),
        published: Cell::new(super::tpmap::enabled()),
        counts: std::sync::OnceLock::new(),
    });
    let raw = Arc::into_raw(slot.clone());
    // SAFETY: (A8) `key` is live (checked above); the value is released by slot_destructor.
    if !unsafe { tls::set(key, raw as *const _) } {
        // SAFETY: (A3) `raw` came from Arc::into_raw just above and was not stored.
        drop(unsafe { Arc::from_raw(raw) });
        return ptr::null();
    }
    thread_refs().push(raw as usize);
    super::tpmap::insert(&slot);
    match PENDING.lock() {
        Ok(mut p) => p.push(Registration { slot }),
        Err(poisoned) => poisoned.into_inner().push(Registration { slot }),
    }
    CURRENT.with(|c| c.set((raw, super::session_cell::generation())));
    raw
}

#[inline]
fn current_slot() -> *const Slot {
    let p = current();
    if !p.is_null() { p } else { register() }
}

/// Records one event on the calling thread, timestamped now.
#[inline]
pub fn emit(ev: &Event<'_>) {
    emit_at(clock::ticks(), ev)
}

/// Records one event with a given timestamp.
pub fn emit_at(ts: u64, ev: &Event<'_>) {
    emit_with(ts, ev, false);
}

/// Records one event, waiting for the writer when the ring is full whatever `--on-full`
/// says (heap snapshots: the target is stopped anyway, and a snapshot with holes is worth
/// little). False when it could not be recorded (not accepting, or too large).
pub fn emit_waiting(ev: &Event<'_>) -> bool {
    emit_with(clock::ticks(), ev, true)
}

/// [`emit_waiting`] of a record already encoded as `head` then `tail` (with a zero
/// timestamp, as [`clrprof_format::encode_u64_list_header`] writes it), copied into the
/// ring without joining them; `event` builds the same event for a thread that has no
/// ring of its own (the fallback).
pub fn emit_encoded_waiting(
    head: &[u8],
    tail: &[u8],
    event: impl FnOnce() -> Event<'static>,
) -> bool {
    let ts = clock::ticks();
    with_own_ring(
        || emit_fallback(ts, &event()),
        |slot, limit| {
            write_waiting(slot, limit, true, |ring, limit| {
                ring.try_write_record_parts(limit, ts, head, tail)
            })
        },
    )
}

fn emit_with(ts: u64, ev: &Event<'_>, always_wait: bool) -> bool {
    with_own_ring(
        || emit_fallback(ts, ev),
        |slot, limit| {
            // SAFETY: (A3) owner-only field, accessed from the owning thread (see `Slot`);
            // the ring is entered (busy), so no other borrow of it is live on this thread.
            let scratch = unsafe { &mut *slot.scratch.get() };
            scratch.clear();
            clrprof_format::encode(scratch, 0, ev);
            write_waiting(slot, limit, always_wait, |ring, limit| {
                ring.try_write_record(limit, ts, scratch)
            })
        },
    )
}

/// Runs `write` with the calling thread's slot and its ring entered (then leaves it);
/// `fallback` instead when the thread has no slot yet or is already inside an emit (a
/// runtime call made while encoding). False, and counted lost, when not accepting.
#[inline]
fn with_own_ring(
    fallback: impl FnOnce() -> bool,
    write: impl FnOnce(&Slot, &mut u64) -> bool,
) -> bool {
    if !ACCEPTING.load(Ordering::Acquire) {
        LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    let slot = current_slot();
    if slot.is_null() {
        return fallback();
    }
    // SAFETY: (A3) a non-null CURRENT pointer of this session's generation is a live slot:
    // the TLS pointer holds one Arc reference that only slot_destructor (which nulls
    // CURRENT first) or the session's end (after which the generation differs) releases.
    let slot = unsafe { &*slot };
    let Some(mut limit) = slot.ring.enter() else {
        return fallback();
    };
    let written = write(slot, &mut limit);
    slot.ring.leave(limit);
    written
}

/// `--args`: one `CallArgs` (`returned` false) or `CallReturn` record of `values`, written
/// into the ring as header and values without building an [`Event`] (the common path of
/// every traced call with values).
pub fn emit_call_values(ts: u64, returned: bool, function: u64, sp: u64, values: &[u8]) {
    let fallback = || {
        let values = std::borrow::Cow::Borrowed(values);
        let ev = if returned {
            Event::CallReturn {
                function,
                sp,
                values,
            }
        } else {
            Event::CallArgs {
                function,
                sp,
                values,
            }
        };
        emit_fallback(ts, &ev)
    };
    with_own_ring(fallback, |slot, limit| {
        let mut head = [0u8; clrprof_format::CALL_VALUES_HEADER_MAX];
        let n = clrprof_format::encode_call_values_header(
            &mut head,
            if returned { 41 } else { 40 },
            0,
            function,
            sp,
            values.len(),
        );
        write_waiting(slot, limit, false, |ring, limit| {
            ring.try_write_record_parts(limit, ts, &head[..n], values)
        })
    });
}

/// The tracing slow path: one enter/leave/tailcall record, for a thread the assembly
/// fast path could not serve (first event, table collision, ring full, no TSC). No lock,
/// allocation or syscall once the thread's slot exists, unless exact mode must wait.
pub fn emit_elt(kind: clrprof_format::EltKind, function: u64, caller_sp: u64) {
    emit_elt_at(clock::ticks(), kind, function, caller_sp)
}

/// [`emit_elt`] with a timestamp the caller read (`--args` gives its values the same one).
pub fn emit_elt_at(ts: u64, kind: clrprof_format::EltKind, function: u64, caller_sp: u64) {
    if !ACCEPTING.load(Ordering::Acquire) {
        LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let written = with_elt_slot(|slot| {
        let Some(mut limit) = slot.ring.enter() else {
            slot.lost.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let index = u32::try_from(function).unwrap_or(u32::MAX);
        write_waiting(slot, &mut limit, false, |ring, limit| {
            ring.try_write_elt(limit, ts, kind, index, caller_sp as u32)
        });
        slot.ring.leave(limit);
    });
    if written.is_none() {
        LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
    }
}

/// `--args`: an ELT event and the call's value list in one record: `EnterArgs` for an
/// Enter (its `CallArgs`), `ReturnLeave` for a Leave (its `CallReturn`), which the reader
/// returns as those two events; a tail call (rare) as its `CallReturn` then its Tailcall.
/// One look-up of the thread's ring, one `enter`/`leave` of it and one write: the per-call
/// path of every `--args` function. The record leaves the ring's ELT chain (last SP, high
/// half of the timestamp) as it was, as the reader does.
pub fn emit_elt_with_values(
    ts: u64,
    kind: clrprof_format::EltKind,
    function: u64,
    caller_sp: u64,
    values: &[u8],
) {
    use clrprof_format::EltKind;
    let sp = caller_sp & 0xffff_ffff;
    let record = match kind {
        EltKind::Enter => 44,
        EltKind::Leave => 45,
        EltKind::Tailcall => {
            emit_call_values(ts, true, function, sp, values);
            emit_elt_at(ts, kind, function, caller_sp);
            return;
        }
    };
    let written = ACCEPTING.load(Ordering::Acquire)
        && with_elt_slot(|slot| {
            let Some(mut limit) = slot.ring.enter() else {
                return false;
            };
            let mut head = [0u8; clrprof_format::CALL_VALUES_HEADER_MAX];
            let n = clrprof_format::encode_call_values_header(
                &mut head,
                record,
                0,
                function,
                sp,
                values.len(),
            );
            write_waiting(slot, &mut limit, false, |ring, limit| {
                ring.try_write_record_parts(limit, ts, &head[..n], values)
            });
            slot.ring.leave(limit);
            true
        })
        .unwrap_or(false);
    if !written {
        // No ring to write (not accepting, no slot, re-entered): each event takes its own
        // way, which counts or keeps it.
        if kind == EltKind::Leave {
            emit_call_values(ts, true, function, sp, values);
            emit_elt_at(ts, kind, function, caller_sp);
        } else {
            emit_elt_at(ts, kind, function, caller_sp);
            emit_call_values(ts, false, function, sp, values);
        }
    }
}

/// `--args`, the common path of every `--args` Enter and Leave: the record
/// [`emit_elt_with_values`] writes (`EnterArgs`, `ReturnLeave`), with the values written
/// by `write` (within `bound` bytes, at most 8192) straight into the thread's ring, the
/// header around them, stamped `ts` (which the hook read first). `None`, with nothing written, when it
/// cannot: not accepting, the thread not yet in the thread-pointer table (its first
/// event), re-entered, or a ring too small for the bound; the caller then encodes into a
/// buffer of its own and calls [`emit_elt_with_values`], which counts or keeps the
/// events. Otherwise whether the values were cut (also when the record was dropped, full
/// in `--on-full drop` mode, and counted lost).
// Inlined into each hook: the record kind is then a constant, and the hot path has no
// call of its own.
#[inline(always)]
pub fn emit_elt_with_values_in_place(
    ts: u64,
    kind: clrprof_format::EltKind,
    function: u64,
    caller_sp: u64,
    bound: usize,
    write: impl FnOnce(&mut clrprof_format::values::ValueWriter<'_>),
) -> Option<bool> {
    let record = match kind {
        clrprof_format::EltKind::Enter => 44,
        clrprof_format::EltKind::Leave => 45,
        clrprof_format::EltKind::Tailcall => return None,
    };
    if !ACCEPTING.load(Ordering::Acquire) {
        return None;
    }
    let published = super::tpmap::lookup();
    if published.is_null() {
        return None;
    }
    // SAFETY: (A3) the calling thread's own tpmap entry holds a reference to its live slot
    // until the thread's exit destructor or the session's end removes it, and neither runs
    // while this thread is inside a hook.
    let slot = unsafe { &*published };
    let sp = caller_sp & 0xffff_ffff;
    // The header, the values, and two bytes for the header's two lengths to take two
    // bytes each (8192 bytes of values at most) instead of one.
    let cap = bound.min(8192);
    let max_len = call_values_start(function, sp) + cap + 2;
    if !slot.ring.fits_record(max_len) {
        return None;
    }
    let mut limit = slot.ring.enter()?;
    let reserved = match slot.ring.try_reserve_record(&mut limit, max_len) {
        Ok(at) => Some(at),
        Err(_) => reserve_waiting(slot, &mut limit, max_len),
    };
    let mut cut = false;
    if let Some(at) = reserved {
        // SAFETY: (A4) `at` and `max_len` are the reservation just made; the slice is
        // dropped before the commit, and nothing else writes this ring meanwhile (it is
        // entered: a re-entrant write takes the fallback).
        let body = unsafe { slot.ring.record_body(at, max_len) };
        let len;
        (len, cut) = call_values_in_place(body, record, function, sp, cap, write);
        // SAFETY: (A4) the reservation made above, for `max_len >= len` bytes.
        unsafe { slot.ring.commit_record(at, len, ts) };
    }
    slot.ring.leave(limit);
    Some(cut)
}

/// A number below 2^35 with its LEB128 bytes encoded once, as
/// [`put_u35_wide`](clrprof_format::leb128::put_u35_wide) stores them: an `--args`
/// function's index, which its records repeat at every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leb35 {
    bytes: u64,
    len: usize,
}

impl Leb35 {
    pub fn new(value: u64) -> Option<Leb35> {
        (value < 1 << 35).then(|| {
            let mut b = [0u8; 8];
            let len = clrprof_format::leb128::put_u35_wide(&mut b, value);
            Leb35 {
                bytes: u64::from_le_bytes(b),
                len,
            }
        })
    }

    /// The LEB128 bytes, little-endian in a word (those past [`len`](Self::len) are 0).
    pub fn bytes(self) -> u64 {
        self.bytes
    }

    /// How many of [`bytes`](Self::bytes) the number takes (1 to 5).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> usize {
        self.len
    }
}

/// `--args`, the short path of a method whose values are all primitives: the record
/// [`emit_elt_with_values_in_place`] writes, its values (`values` of them, below 8) written
/// by `write` into a slice of [`PARAM_PRIM_ROOM`](clrprof_format::values::PARAM_PRIM_ROOM)
/// bytes each, which returns their length. So short a record has one-byte lengths; it is
/// never cut (the caller checks the per-call bound holds it). `false`, with nothing written, where the general path must go (as
/// there: not accepting, the thread's first event, re-entered, a ring too small).
#[inline(always)]
pub fn emit_prims_in_place(
    ts: u64,
    kind: clrprof_format::EltKind,
    function: Leb35,
    caller_sp: u64,
    values: usize,
    write: impl FnOnce(&mut [u8]) -> usize,
) -> bool {
    let record = match kind {
        clrprof_format::EltKind::Enter => 44,
        clrprof_format::EltKind::Leave => 45,
        clrprof_format::EltKind::Tailcall => return false,
    };
    let sp = caller_sp & 0xffff_ffff;
    if values >= 8 || !ACCEPTING.load(Ordering::Acquire) {
        return false;
    }
    let published = super::tpmap::lookup();
    if published.is_null() {
        return false;
    }
    // SAFETY: (A3) as in emit_elt_with_values_in_place.
    let slot = unsafe { &*published };
    let start = 4 + function.len + clrprof_format::leb128::len_u64(sp);
    // Below 128 bytes written: 4 + 5 + 5 header bytes, 7 values of 13 at most; and 8
    // more reserved for the SP's wide store when there are no values.
    let max_len = start + values * clrprof_format::values::PARAM_PRIM_ROOM + 8;
    if !slot.ring.fits_record(max_len) {
        return false;
    }
    let Some(mut limit) = slot.ring.enter() else {
        return false;
    };
    let reserved = match slot.ring.try_reserve_record(&mut limit, max_len) {
        Ok(at) => Some(at),
        Err(_) => reserve_waiting(slot, &mut limit, max_len),
    };
    if let Some(at) = reserved {
        // SAFETY: (A4) as in emit_elt_with_values_in_place: the reservation just made.
        let body = unsafe { slot.ring.record_body(at, max_len) };
        body[0] = record;
        body[2] = 0;
        body[3..11].copy_from_slice(&function.bytes.to_le_bytes());
        clrprof_format::leb128::put_u35_wide(&mut body[3 + function.len..], sp);
        let n = write(&mut body[start..]);
        body[1] = (start - 2 + n) as u8;
        body[start - 1] = n as u8;
        // SAFETY: (A4) the reservation made above, for `max_len >= start + n` bytes.
        unsafe { slot.ring.commit_record(at, start + n, ts) };
    }
    slot.ring.leave(limit);
    true
}

/// Encodes the record `record` (`EnterArgs` or `ReturnLeave`, a zero timestamp) of
/// `function`, `sp` and the values `write` writes (within `cap` bytes) into `body`, which
/// holds at least [`call_values_start`]` + cap + 2` bytes: the values first, where a header
/// whose two lengths take a byte each ends, moved on when they take more; then the header.
/// The same bytes as `clrprof_format::encode` of the event. Returns the record's length
/// and whether the values were cut.
#[inline(always)]
fn call_values_in_place(
    body: &mut [u8],
    record: u8,
    function: u64,
    sp: u64,
    cap: usize,
    write: impl FnOnce(&mut clrprof_format::values::ValueWriter<'_>),
) -> (usize, bool) {
    use clrprof_format::leb128::{len_u64, write_u64};
    let start = call_values_start(function, sp);
    // The function and the SP (below 2^35, as indices and 32-bit SPs are) where a one-byte
    // body length puts them, before the values, whose first bytes the wide stores would
    // otherwise overwrite.
    let narrow = function < 1 << 35 && sp < 1 << 35;
    if narrow {
        body[2] = 0;
        let lf = clrprof_format::leb128::put_u35_wide(&mut body[3..], function);
        clrprof_format::leb128::put_u35_wide(&mut body[3 + lf..], sp);
    }
    let mut w = clrprof_format::values::ValueWriter::new(&mut body[start..start + cap]);
    write(&mut w);
    let (values, cut) = w.finish();
    let n = values.len();
    body[0] = record;
    // The body's length with a one-byte values length; below 128, both lengths take one
    // byte (one compare, not two LEB128 lengths in a row on the way to the store).
    let short_body = start - 2 + n;
    if narrow && short_body < 0x80 {
        body[1] = short_body as u8;
        body[start - 1] = n as u8;
        return (start + n, cut);
    }
    let vl = len_u64(n as u64);
    let body_len = start - 3 + vl + n;
    let bl = len_u64(body_len as u64);
    let shift = vl + bl - 2;
    if shift > 0 {
        body.copy_within(start..start + n, start + shift);
    }
    let mut p = 1 + write_u64(&mut body[1..], body_len as u64);
    body[p] = 0;
    p += 1;
    p += write_u64(&mut body[p..], function);
    p += write_u64(&mut body[p..], sp);
    p += write_u64(&mut body[p..], n as u64);
    debug_assert_eq!(p, start + shift);
    (p + n, cut)
}

/// Where [`call_values_in_place`] writes the values: after the kind, a one-byte body
/// length, the zero timestamp, `function`, `sp` and a one-byte values length.
#[inline(always)]
fn call_values_start(function: u64, sp: u64) -> usize {
    use clrprof_format::leb128::len_u64;
    4 + len_u64(function) + len_u64(sp)
}

/// [`emit_elt_with_values_in_place`]'s reservation when the ring had no room: waits for
/// the writer (exact mode) or drops and counts.
#[cold]
#[inline(never)]
fn reserve_waiting(slot: &Slot, limit: &mut u64, max_len: usize) -> Option<u64> {
    let mut at = None;
    write_waiting(slot, limit, false, |ring, limit| {
        at = Some(ring.try_reserve_record(limit, max_len)?);
        Ok(())
    });
    at
}

/// Runs `f` with the calling thread's slot for an ELT event: made at its first event, and
/// published in the thread-pointer table (for the assembly fast path) once.
#[inline]
fn with_elt_slot<R>(f: impl FnOnce(&Slot) -> R) -> Option<R> {
    // The thread's entry in the thread-pointer table first: `fs:0` and one compare, where
    // the thread-local `current` costs a `__tls_get_addr` call in a `dlopen`ed library.
    let published = super::tpmap::lookup();
    if !published.is_null() {
        // SAFETY: (A3) the calling thread's own tpmap entry holds a reference to its live
        // slot until the thread's exit destructor or the session's end removes it, and
        // neither runs while this thread is inside a hook.
        return Some(f(unsafe { &*published }));
    }
    let mut slot = current();
    if slot.is_null() {
        slot = register();
        if slot.is_null() {
            return None;
        }
    }
    let raw = slot;
    // SAFETY: (A3) a non-null CURRENT pointer is a live slot (see `emit_at`).
    let slot = unsafe { &*raw };
    if !slot.published.replace(true) && super::tpmap::enabled() {
        // SAFETY: (A3) CURRENT's pointer came from Arc::into_raw and is live (see `emit_at`);
        // the extra count is owned by the temporary Arc, dropped right after.
        let arc = unsafe {
            Arc::increment_strong_count(raw);
            Arc::from_raw(raw)
        };
        super::tpmap::insert(&arc);
    }
    Some(f(slot))
}

/// `--counts`: runs `f` with the calling thread's call-count table (made, with the
/// thread's slot, at its first call). Nothing while not accepting: calls after the
/// recording stopped are not counted.
#[inline]
pub fn with_counts(f: impl FnOnce(&super::counts::CountTable)) {
    if !ACCEPTING.load(Ordering::Acquire) {
        return;
    }
    let mut slot = super::tpmap::lookup();
    if slot.is_null() {
        slot = current();
        if slot.is_null() {
            slot = register();
            if slot.is_null() {
                LOST_GLOBAL.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        // SAFETY: (A3) a non-null CURRENT pointer is a live slot (see `emit_at`).
        let s = unsafe { &*slot };
        if !s.published.replace(true) && super::tpmap::enabled() {
            // SAFETY: (A3) as in `emit_elt_at`: one extra count for the table's reference.
            let arc = unsafe {
                Arc::increment_strong_count(slot);
                Arc::from_raw(slot)
            };
            super::tpmap::insert(&arc);
        }
    }
    // SAFETY: (A3) the slot came from this thread's own tpmap entry or CURRENT pointer,
    // each holding a reference while the thread runs.
    let slot = unsafe { &*slot };
    let table = slot.counts.get_or_init(|| {
        let t = Box::new(super::counts::CountTable::new());
        // The assembly fast path finds the table beside the thread's map entry.
        super::tpmap::set_counts(&*t as *const super::counts::CountTable as *const u8);
        t
    });
    f(table);
}

/// Runs one ring write; when the ring is full, waits for the writer (exact mode) or
/// drops and counts. False when the record was dropped.
fn write_waiting(
    slot: &Slot,
    limit: &mut u64,
    always_wait: bool,
    mut write: impl FnMut(&Ring, &mut u64) -> Result<(), Full>,
) -> bool {
    let mut spins = 0u32;
    let mut waiting_since = 0u64;
    let done = |since: u64| {
        if since != 0 {
            WAITS.fetch_add(1, Ordering::Relaxed);
            WAITED_NS.fetch_add(
                clock::monotonic_ns().saturating_sub(since),
                Ordering::Relaxed,
            );
        }
    };
    loop {
        match write(&slot.ring, limit) {
            Ok(()) => {
                done(waiting_since);
                return true;
            }
            Err(Full::TooLarge) => {
                slot.lost.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            Err(Full::NoRoom) => {}
        }
        if (DROP_WHEN_FULL.load(Ordering::Relaxed) && !always_wait)
            || !ACCEPTING.load(Ordering::Acquire)
        {
            slot.lost.fetch_add(1, Ordering::Relaxed);
            done(waiting_since);
            return false;
        }
        // Exact mode: wait for the writer to make room.
        if waiting_since == 0 {
            waiting_since = clock::monotonic_ns().max(1);
        }
        wake_writer();
        spins += 1;
        if spins < 16 {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

fn emit_fallback(ts: u64, ev: &Event<'_>) -> bool {
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
        return false;
    }
    let delta = ts.wrapping_sub(f.last_ts);
    f.last_ts = ts;
    clrprof_format::encode(&mut f.bytes, delta, ev);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn a_function_index_encoded_once_stores_as_put_u35_wide() {
        for v in [0u64, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x3_ffff, 0x7_ffff_ffff] {
            let l = Leb35::new(v).unwrap();
            let mut want = [0u8; 8];
            let n = clrprof_format::leb128::put_u35_wide(&mut want, v);
            assert_eq!((l.bytes.to_le_bytes(), l.len), (want, n));
        }
        assert_eq!(Leb35::new(1 << 35), None);
    }

    #[test]
    fn wide_leb_stores_encode_as_leb128() {
        let mut values: Vec<u64> = (0..35).map(|b| 1u64 << b).collect();
        values.extend((1..36).map(|b| (1u64 << b) - 1));
        values.extend([0, 0x1234_5678, 0x7_ffff_ffff, 0x5_5555_5555]);
        for v in values {
            let mut got = [0xAAu8; 12];
            let n = clrprof_format::leb128::put_u35_wide(&mut got, v);
            let mut want = [0u8; 10];
            let m = clrprof_format::leb128::write_u64(&mut want, v);
            assert_eq!(&got[..n], &want[..m], "{v:#x}");
        }
    }

    /// Values written in place, whatever their length (the header's two lengths taking
    /// one or two bytes) or the bound, give the bytes `encode` gives the event.
    #[test]
    fn call_values_in_place_are_what_encode_writes() {
        for record in [44u8, 45] {
            for (function, sp) in [
                (1u64, 0u64),
                (127, 128),
                (300, 0x7fff_ffff),
                (200_000, 0xffff_ffff),
                (1 << 40, 0x1234_5678),
            ] {
                for text in [0usize, 50, 105, 110, 115, 120, 125, 130, 200, 5000, 8100] {
                    for cap in [64usize, 2048, 8192] {
                        let s = "x".repeat(text);
                        let put = |w: &mut clrprof_format::values::ValueWriter<'_>| {
                            w.param(0);
                            w.string(&s);
                            w.param(1);
                            w.int(-5);
                        };
                        let mut body = vec![0xAAu8; call_values_start(function, sp) + cap + 2];
                        let (len, cut) =
                            call_values_in_place(&mut body, record, function, sp, cap, put);
                        let mut buf = vec![0u8; cap];
                        let mut w = clrprof_format::values::ValueWriter::new(&mut buf);
                        put(&mut w);
                        let (values, want_cut) = w.finish();
                        assert_eq!(cut, want_cut);
                        let values = Cow::Borrowed(values);
                        let ev = if record == 44 {
                            Event::EnterArgs {
                                function,
                                sp,
                                values,
                            }
                        } else {
                            Event::ReturnLeave {
                                function,
                                sp,
                                values,
                            }
                        };
                        let mut want = Vec::new();
                        clrprof_format::encode(&mut want, 0, &ev);
                        assert_eq!(&body[..len], &want[..], "{record} {function} {text} {cap}");
                    }
                }
            }
        }
    }
}
