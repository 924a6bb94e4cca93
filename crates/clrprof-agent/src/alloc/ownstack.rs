//! The allocating thread's managed stack, walked in place by frame pointers
//! (`CLRPROF_ALLOC_WALK=fp`; `compare` takes both this walk and DoStackSnapshot). Not the
//! default: on .NET 10 it costs about what DoStackSnapshot costs per sample (most of a
//! sample's cost is the runtime's, docs/allocations.md), and on the Demo 2-5 % of its
//! stacks differ from DoStackSnapshot's.
//!
//! `EventPipeEventDelivered` runs on the allocating thread, so its stack needs no copy:
//! the walk (`stackwalk::fpwalk::walk`) reads the words above the caller's frame buffer
//! directly, each read bounded to the thread's stack range (`os::thread::own_stack`,
//! asked once per thread and kept in a `thread_local!` without destructor). It starts at
//! the runtime's frame record: RBP as the callback found it, through the agent's own
//! records if its build keeps them (debug), else the first word above SP that points at
//! a record returning into code outside this library (in a release build, without frame
//! pointers, RBP is still the runtime's there, but nothing guarantees it), and follows the
//! chain to the root like the signal sampler's walk.
//!
//! Where it gives up and the caller asks DoStackSnapshot instead: no record found, no
//! managed frame found, or a record's return address that is not known code (the JIT
//! committed new pages: the map is read again within 20 ms). `CLRPROF_ALLOC_WALK=compare` walks both ways and
//! logs how many samples differ (docs/allocations.md, "Stacks").
//!
//! Return addresses become FunctionIDs through [`IpCache`], a fixed-size table of atomics:
//! a hit is two loads. A miss goes to a `Symbolizer` behind a mutex (the same checks as
//! the signal sampler's, then GetFunctionFromIP and the code version's prolog), which
//! happens once per distinct address until the slot is taken by another one; "not code"
//! is kept for an eighth of a second, as the JIT may map code there.

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use corprof::ProfilerInfo;

use super::ipcache::{Entry, IpCache};
use super::stackbuf::FrameBuf as Frames;
use crate::stackwalk::fpwalk::{self, Captured, Code, FrameKind, Memory, WalkEnd};
use crate::stackwalk::symbolize::Symbolizer;

thread_local! {
    /// This thread's stack `[low, high)`: (0, 0) until asked, (1, 1) when not known.
    static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// The highest frame record returning into managed code that a walk on this thread
    /// found (0: none yet). Above it lies the native code that started the thread, which
    /// does not change while the thread lives: later walks stop there instead of
    /// following that code's records to the root.
    static OUTERMOST: Cell<u64> = const { Cell::new(0) };
}

/// The top (highest address) of the calling thread's stack, if known.
fn stack_top() -> Option<(u64, u64)> {
    let mut r = RANGE.with(Cell::get);
    if r == (0, 0) {
        r = crate::os::thread::own_stack().unwrap_or((1, 1));
        RANGE.with(|c| c.set(r));
    }
    (r.1 > r.0 + 1).then_some(r)
}

/// The calling thread's stack from `sp` up to its top, read in place.
struct Live {
    sp: u64,
    len: usize,
}

impl Memory for Live {
    fn bytes(&self) -> usize {
        self.len
    }

    fn word_at(&self, off: usize) -> Option<u64> {
        if off.checked_add(8)? > self.len {
            return None;
        }
        let at = self.sp + off as u64;
        // SAFETY: (A10) `[at, at + 8)` lies within `[sp, top)` of the calling thread's own
        // stack (checked above), which is mapped for as long as the thread runs; the
        // frames there belong to this thread's callers, which are not running.
        Some(unsafe { std::ptr::read_unaligned(at as *const u64) })
    }
}

/// The cache's epoch: about an eighth of a second (2^27 ns).
fn epoch() -> u64 {
    crate::os::clock::monotonic_ns() >> 27
}

static CACHE: IpCache<8192> = IpCache::new();
/// Return address − 1 → the function its call calls (`code.function`; 0 = not known).
static CALLEES: IpCache<4096> = IpCache::new();
static SYMBOLS: Mutex<Option<Symbolizer>> = Mutex::new(None);
/// The symbolizer's `maps_read` when `CACHE` was last cleared.
static MAPS_SEEN: AtomicU64 = AtomicU64::new(0);

/// Why walks gave up: no frame record found, a record's return address that is not
/// known code, no managed frame.
pub static GAVE_UP: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

fn gave_up(why: usize) -> bool {
    GAVE_UP[why].fetch_add(1, Ordering::Relaxed);
    false
}

/// Misses of the cache (each took the symbolizer's lock).
pub static MISSES: AtomicU64 = AtomicU64::new(0);

fn entry(info: &ProfilerInfo, ret_minus_1: u64, epoch: u64) -> Entry {
    if let Some(e) = CACHE.get(ret_minus_1, epoch) {
        return e;
    }
    MISSES.fetch_add(1, Ordering::Relaxed);
    let Ok(mut guard) = SYMBOLS.lock() else {
        return Entry::NONE;
    };
    let symbols = guard.get_or_insert_with(Symbolizer::new);
    let found = symbols.caller_lasting(info, ret_minus_1);
    let maps = symbols.maps_read();
    if MAPS_SEEN.swap(maps, Ordering::Relaxed) != maps {
        CACHE.clear();
    }
    match found {
        Some((sym, call)) => {
            let e = Entry {
                code: sym.code(),
                call,
            };
            CACHE.put(ret_minus_1, e);
            e
        }
        None => {
            // Not in an executable mapping the symbolizer knows (stack words that are no
            // code come back every sample): kept for this epoch only.
            CACHE.put_transient(ret_minus_1, epoch);
            Entry::NONE
        }
    }
}

/// The managed function the call before `ret_minus_1` calls (0: not known).
fn callee(info: &ProfilerInfo, ret_minus_1: u64, epoch: u64) -> u64 {
    if let Some(e) = CALLEES.get(ret_minus_1, epoch) {
        return e.code.function;
    }
    MISSES.fetch_add(1, Ordering::Relaxed);
    let Ok(mut guard) = SYMBOLS.lock() else {
        return 0;
    };
    let symbols = guard.get_or_insert_with(Symbolizer::new);
    match symbols.callee(info, ret_minus_1) {
        Some(function) => {
            CALLEES.put(
                ret_minus_1,
                Entry {
                    code: Code {
                        function,
                        frame: FrameKind::Unknown,
                    },
                    call: true,
                },
            );
            function
        }
        None => 0,
    }
}

/// New code was seen: the symbolizer reads the executable map again, and this cache,
/// which keeps "not code" answers too, is emptied (once per stale map).
fn request_refresh() {
    if let Ok(mut guard) = SYMBOLS.lock()
        && let Some(symbols) = guard.as_mut()
    {
        symbols.mark_stale();
        if symbols.refresh_if_due() {
            MAPS_SEEN.store(symbols.maps_read(), Ordering::Relaxed);
            CACHE.clear();
            CALLEES.clear();
        }
    }
}

/// The frame pointer register (RBP) of the caller, read where it is called: in the
/// agent's callback, built without frame pointers, it is the runtime's last frame record
/// only if no function on the way used RBP for something else, which [`walk`] checks.
#[inline(always)]
pub fn frame_pointer() -> u64 {
    let fp: u64;
    // SAFETY: (A9) copies a register into another; no memory is touched.
    unsafe {
        std::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags));
    }
    fp
}

/// Whether `fp` points at a frame record of the runtime on `stack`: the saved RBP above
/// it, then a return address that follows a `call` in executable code outside this
/// library (records of the agent's own frames, live or stale, are passed over: a build
/// of the agent may or may not keep frame pointers, and its chain may break).
fn is_record(info: &ProfilerInfo, stack: &Live, fp: u64, epoch: u64) -> bool {
    if fp < stack.sp || !fp.is_multiple_of(8) {
        return false;
    }
    let off = (fp - stack.sp) as usize;
    match (stack.word_at(off), stack.word_at(off + 8)) {
        (Some(saved), Some(ret)) => {
            saved > fp
                && ret > 4096
                && entry(info, ret - 1, epoch).call
                && !in_own_library(info, ret - 1)
        }
        _ => false,
    }
}

/// From RBP as the callback found it: the runtime's frame record, following the agent's
/// own records first where its build keeps them (a debug build does; in a release build
/// RBP is the runtime's already, or some other value, which fails the checks).
fn runtime_record(info: &ProfilerInfo, stack: &Live, mut fp: u64, epoch: u64) -> Option<u64> {
    for _ in 0..64 {
        if fp < stack.sp || !fp.is_multiple_of(8) {
            return None;
        }
        let off = (fp - stack.sp) as usize;
        let (saved, ret) = (stack.word_at(off)?, stack.word_at(off + 8)?);
        if saved <= fp || ret <= 4096 || !entry(info, ret - 1, epoch).call {
            return None;
        }
        if !in_own_library(info, ret - 1) {
            return Some(fp);
        }
        fp = saved;
    }
    None
}

/// This library's executable range, `(0, 0)` until known.
static OWN_TEXT: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

fn in_own_library(_info: &ProfilerInfo, addr: u64) -> bool {
    let (mut lo, mut hi) = (
        OWN_TEXT[0].load(Ordering::Relaxed),
        OWN_TEXT[1].load(Ordering::Relaxed),
    );
    if hi == 0 {
        let here = in_own_library as *const () as u64;
        let Some((l, h)) = SYMBOLS
            .lock()
            .ok()
            .and_then(|mut g| g.get_or_insert_with(Symbolizer::new).exec_range(here))
        else {
            return false;
        };
        (lo, hi) = (l, h);
        OWN_TEXT[0].store(lo, Ordering::Relaxed);
        OWN_TEXT[1].store(hi, Ordering::Relaxed);
    }
    (lo..hi).contains(&addr)
}

/// How far above SP the frame record of the runtime's frame that called the agent is
/// looked for.
const FIND_BYTES: usize = 4096;

/// The runtime's RBP, as saved by the first function of the agent (built without frame
/// pointers) that used the register: the first word above SP that points higher up the
/// stack at a frame record.
fn find_record(info: &ProfilerInfo, stack: &Live, epoch: u64) -> Option<u64> {
    let mut off = 0;
    while off < FIND_BYTES.min(stack.len) {
        let at = stack.sp + off as u64;
        if let Some(w) = stack.word_at(off)
            && w > at
            && w - stack.sp < stack.len as u64
            && is_record(info, stack, w, epoch)
        {
            return Some(w);
        }
        off += 8;
    }
    None
}

/// Walks the calling thread's managed stack into `out` as FunctionIDs, leaf first (the
/// allocating method first), from `fp`, the frame pointer the callback was entered with
/// ([`frame_pointer`]). False when `fp` is not a frame record returning into code, or the
/// walk found no managed frame (the caller then asks DoStackSnapshot).
#[inline(never)]
pub fn walk<const N: usize>(info: &ProfilerInfo, fp: u64, out: &mut Frames<N>) -> bool {
    out.n = 0;
    let Some((low, top)) = stack_top() else {
        return false;
    };
    // Above `out` (the caller's buffer) and so above this function's own locals, which
    // change while the walk reads: nothing from here up is written until it returns.
    let sp = (std::ptr::addr_of!(*out) as u64 + std::mem::size_of::<Frames<N>>() as u64 + 7) & !7;
    if sp < low || sp >= top {
        return false;
    }
    let stack = Live {
        sp,
        len: (top - sp) as usize,
    };
    let epoch = epoch();
    let fp = if let Some(fp) = runtime_record(info, &stack, fp, epoch) {
        fp
    } else {
        match find_record(info, &stack, epoch) {
            Some(fp) => fp,
            None => return gave_up(0),
        }
    };
    let c = Captured {
        ip: 0,
        sp,
        fp,
        stack,
    };
    let mut addrs = Frames::<N>::new();
    // The walk asks for the next record's return address before it reaches that record:
    // the last answer is kept.
    let mut last = (0u64, Entry::NONE);
    let mut lookup = |a: u64| -> Entry {
        if last.0 != a {
            last = (a, entry(info, a, epoch));
        }
        last.1
    };
    let w = fpwalk::walk_through_stubs(
        &c,
        Code::NONE,
        &mut addrs,
        N,
        |a| lookup(a).code,
        |a| callee(info, a, epoch),
        OUTERMOST.with(Cell::get),
    );
    if w.outermost_managed > OUTERMOST.with(Cell::get) {
        OUTERMOST.with(|c| c.set(w.outermost_managed));
    }
    let mut prev = Code::NONE;
    // (The first address is the IP, 0 here.) A return address that is not known code
    // before the last managed frame fails the walk (new JIT code the map does not show
    // yet, most likely); past it, it is the end of the chain in the process's startup code.
    let mut first_unknown = None;
    let mut last_managed = 0;
    for (i, &a) in addrs.as_slice().iter().enumerate().skip(1) {
        let e = lookup(a);
        if !e.call && first_unknown.is_none() {
            first_unknown = Some(i);
        }
        let code = e.code;
        if code.function == 0 {
            continue;
        }
        last_managed = i;
        // The Tier-0 frame an OSR method continues, when the walk could not skip it.
        if prev.frame == FrameKind::Osr && prev.function == code.function {
            continue;
        }
        prev = code;
        out.push(code.function);
    }
    if let Some(i) = first_unknown
        && (i < last_managed || out.n == 0)
    {
        request_refresh();
        if out.n > 0 {
            out.n = 0;
            return gave_up(1);
        }
    }
    if out.n == 0 || w.end == WalkEnd::OutsideCopy {
        return gave_up(2);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_reads_stay_in_range() {
        let words = [1u64, 2, 3, 4];
        let sp = words.as_ptr() as u64;
        let m = Live { sp, len: 32 };
        assert_eq!(m.word_at(0), Some(1));
        assert_eq!(m.word_at(24), Some(4));
        assert_eq!(m.word_at(25), None);
        assert_eq!(m.word_at(usize::MAX - 3), None);
    }

    #[test]
    fn this_threads_stack_is_found() {
        let (low, top) = stack_top().expect("range");
        let local = 0u8;
        let at = std::ptr::addr_of!(local) as u64;
        assert!(low <= at && at < top);
    }
}
