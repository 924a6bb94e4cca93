//! Dynamic methods' code (LCG: `DynamicMethod`, compiled expressions; and the runtime's IL
//! stubs), as the signal sampler knows it without asking the runtime.
//!
//! The runtime frees an LCG method's code on the finalizer thread (`LCGMethodResolver::
//! Destroy` → `EEJitManager::FreeCodeMemory`) and releases an emptied host code heap in
//! the next GC (`GCToEEInterface::GcStartWork` → `ExecutionManager::CleanupCodeHeaps`).
//! The sampler's thread has no runtime `Thread`, so the runtime's lookup of an address
//! (`GetFunctionFromIP`/`GetFunctionFromIP3` → `EECodeInfo::Init` → `ExecutionManager::
//! FindCodeRange` with `ScanNoReaderLock`) takes no lock at all: it counts on the code's
//! range section, nibble map and code header staying put while it reads them, which
//! nothing holds for a thread like ours (docs/safety.md, "The sampler's calls into the
//! runtime"). So the sampler never asks about dynamic code:
//!
//! - **live**: `DynamicMethodJITCompilationFinished` (raised for LCG methods and IL
//!   stubs, on the compiling thread, once the code is published) puts the method's code
//!   ranges in [`DynCode`]'s table with its FunctionID; the sampler answers an address
//!   there from the table, no runtime call;
//! - **freed**: `DynamicMethodUnloaded` (raised by `RuntimeMethodHandle_Destroy` on the
//!   finalizer thread *before* `DynamicMethodDesc::Destroy` frees the code) first marks
//!   the method's pages as freed dynamic code, then takes its ranges out of the table,
//!   then waits until the sampler is not inside a runtime lookup of an address on those
//!   pages (a Dekker handshake on [`DynCode::asking`]); only then does the runtime free the
//!   code. An address on a marked page that no live method holds is never asked about
//!   (dropped, counted): a stale return address, or code freed since.
//! - **unknown**: anything else in anonymous executable memory (the JIT's ordinary code
//!   heaps, where methods are not freed; dynamic methods compiled before an attach) is
//!   asked of the runtime as before, announced in [`DynCode::asking`] first.
//!
//! The table is a sorted array behind a sequence lock: the sampler reads it without a
//! lock (and retries a few times, then gives up, if a writer was busy); the writers (JIT
//! and finalizer threads, rare) serialise on a mutex. Fixed sizes: [`LIVE`] ranges and
//! [`PAGE_SLOTS`] page marks, allocated once (statics); a method that does not fit is
//! counted and its frames are dropped, never asked about.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::time::{Duration, Instant};

/// Live dynamic code ranges the table holds.
pub const LIVE: usize = 1 << 14;
/// Slots of the freed-page set (open addressing, filled to 3/4 at most).
pub const PAGE_SLOTS: usize = 1 << 16;
/// Bytes before a method's code that the runtime's lookup reads too: its code header
/// (`CodeHeader`) and, in a host code heap, the `TrackAllocation` pointer before it.
const HEADER_SLACK: u64 = 16;
/// Pages marked per method at most (a method of more than 4 MiB of code is not seen).
const MAX_PAGES_PER_RANGE: u64 = 1 << 10;
/// How long an unload waits for the sampler's lookup of an address on its pages.
const ASK_WAIT: Duration = Duration::from_millis(50);

/// What the table says about an address in anonymous executable memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A live dynamic method's code: its FunctionID and the start of the range.
    Live { function: u64, start: u64 },
    /// On a page of dynamic code freed (or about to be): never ask the runtime.
    Freed,
    /// Not dynamic code the agent knows of: the runtime may be asked (announced first).
    Unknown,
    /// A writer kept the table busy through every retry: not known now.
    Busy,
}

/// Counters for the agent's log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DynStats {
    /// Ranges put in the table.
    pub compiled: u64,
    /// Methods unloaded (`DynamicMethodUnloaded`).
    pub unloaded: u64,
    /// Ranges that did not fit in the table (their frames are dropped).
    pub table_full: u64,
    /// Pages not marked because the page set was full (from then on, unknown anonymous
    /// addresses are dropped instead of asked about).
    pub pages_full: u64,
    /// Sampled addresses named from the table.
    pub named: u64,
    /// Sampled addresses dropped: on freed dynamic code's pages, or the table busy.
    pub dropped: u64,
    /// Runtime lookups of unknown anonymous addresses that named a dynamic method (one
    /// compiled before the agent's callbacks were on).
    pub asked_dynamic: u64,
    /// Unloads that waited for a sampler lookup on their pages.
    pub waited: u64,
    /// Unloads whose wait ran out (the lookup took longer than 50 ms).
    pub wait_timeouts: u64,
}

/// The table of live dynamic code ranges and the set of freed dynamic code pages.
/// `N`: live ranges held; `P`: page-set slots (a power of two).
pub struct DynCode<const N: usize, const P: usize> {
    write: Mutex<()>,
    /// Odd while a writer changes the table.
    seq: AtomicU64,
    len: AtomicUsize,
    starts: [AtomicU64; N],
    ends: [AtomicU64; N],
    functions: [AtomicU64; N],
    /// Page number + 1 of each freed dynamic code page; 0: empty slot.
    pages: [AtomicU64; P],
    pages_used: AtomicUsize,
    pages_overflowed: AtomicBool,
    /// The address the sampler is asking the runtime about, 0 when none.
    asking: AtomicU64,
    compiled: AtomicU64,
    unloaded: AtomicU64,
    table_full: AtomicU64,
    pages_full: AtomicU64,
    named: AtomicU64,
    dropped: AtomicU64,
    asked_dynamic: AtomicU64,
    waited: AtomicU64,
    wait_timeouts: AtomicU64,
}

/// The process's table (one session at a time owns it; reset at each session's start).
pub static TABLE: DynCode<LIVE, PAGE_SLOTS> = DynCode::new();

/// The page an address lies on.
fn page(addr: u64) -> u64 {
    addr >> 12
}

impl<const N: usize, const P: usize> DynCode<N, P> {
    pub const fn new() -> Self {
        DynCode {
            write: Mutex::new(()),
            seq: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            starts: [const { AtomicU64::new(0) }; N],
            ends: [const { AtomicU64::new(0) }; N],
            functions: [const { AtomicU64::new(0) }; N],
            pages: [const { AtomicU64::new(0) }; P],
            pages_used: AtomicUsize::new(0),
            pages_overflowed: AtomicBool::new(false),
            asking: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
            unloaded: AtomicU64::new(0),
            table_full: AtomicU64::new(0),
            pages_full: AtomicU64::new(0),
            named: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            asked_dynamic: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            wait_timeouts: AtomicU64::new(0),
        }
    }

    /// Empties the table, the page set and the counters (a session's start: no thread
    /// of a session uses it then).
    pub fn reset(&self) {
        let _w = self.lock();
        self.begin_write();
        self.len.store(0, Ordering::Relaxed);
        self.end_write();
        // Only a page set that was used is cleared: the statics' pages stay untouched
        // (not resident) in a process that never frees dynamic code.
        if self.pages_used.load(Ordering::Relaxed) > 0 {
            for p in &self.pages {
                p.store(0, Ordering::Relaxed);
            }
        }
        self.pages_used.store(0, Ordering::Relaxed);
        self.pages_overflowed.store(false, Ordering::Relaxed);
        self.asking.store(0, Ordering::SeqCst);
        for c in self.counters() {
            c.store(0, Ordering::Relaxed);
        }
    }

    fn counters(&self) -> [&AtomicU64; 9] {
        [
            &self.compiled,
            &self.unloaded,
            &self.table_full,
            &self.pages_full,
            &self.named,
            &self.dropped,
            &self.asked_dynamic,
            &self.waited,
            &self.wait_timeouts,
        ]
    }

    pub fn stats(&self) -> DynStats {
        let [
            compiled,
            unloaded,
            table_full,
            pages_full,
            named,
            dropped,
            asked_dynamic,
            waited,
            wait_timeouts,
        ] = self.counters().map(|c| c.load(Ordering::Relaxed));
        DynStats {
            compiled,
            unloaded,
            table_full,
            pages_full,
            named,
            dropped,
            asked_dynamic,
            waited,
            wait_timeouts,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.write.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn begin_write(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
    }

    fn end_write(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Release);
    }

    fn copy(&self, from: usize, to: usize) {
        for a in [&self.starts, &self.ends, &self.functions] {
            a[to].store(a[from].load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Puts `[start, end)` of `function` in the table (a JIT thread, in
    /// `DynamicMethodJITCompilationFinished`). Ranges it overlaps go first: their methods
    /// were freed without an unload the agent saw. False (counted) when the table is full.
    pub fn insert(&self, start: u64, end: u64, function: u64) -> bool {
        if start >= end {
            return false;
        }
        let _w = self.lock();
        let mut n = self.len.load(Ordering::Relaxed);
        let mut at = self.partition(n, start);
        // Overlaps: the range before `at` reaching past `start`, and those from `at` on
        // that begin before `end`.
        let first = if at > 0 && self.ends[at - 1].load(Ordering::Relaxed) > start {
            at - 1
        } else {
            at
        };
        let mut last = at;
        while last < n && self.starts[last].load(Ordering::Relaxed) < end {
            last += 1;
        }
        let stale = last - first;
        if stale == 0 && n == N {
            self.table_full.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.begin_write();
        if stale > 0 {
            for i in last..n {
                self.copy(i, i - stale);
            }
            n -= stale;
            at = first;
        }
        for i in (at..n).rev() {
            self.copy(i, i + 1);
        }
        self.starts[at].store(start, Ordering::Relaxed);
        self.ends[at].store(end, Ordering::Relaxed);
        self.functions[at].store(function, Ordering::Relaxed);
        self.len.store(n + 1, Ordering::Relaxed);
        self.end_write();
        self.compiled.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The ranges the table holds for `function`, into `out` (at most its length); how
    /// many there were.
    pub fn ranges_of(&self, function: u64, out: &mut [(u64, u64)]) -> usize {
        let _w = self.lock();
        let n = self.len.load(Ordering::Relaxed);
        let mut k = 0;
        for i in 0..n {
            if self.functions[i].load(Ordering::Relaxed) == function {
                if k < out.len() {
                    out[k] = (
                        self.starts[i].load(Ordering::Relaxed),
                        self.ends[i].load(Ordering::Relaxed),
                    );
                }
                k += 1;
            }
        }
        k
    }

    /// `function` is about to be freed (the finalizer thread, in `DynamicMethodUnloaded`;
    /// `ranges`: its code as the runtime still gives it, besides what the table holds).
    /// In this order: its pages are marked freed, its ranges leave the table, and the
    /// sampler is waited for if it is asking the runtime about an address on those pages.
    pub fn unload(&self, function: u64, ranges: &[(u64, u64)]) {
        self.unloaded.fetch_add(1, Ordering::Relaxed);
        let mut held = [(0u64, 0u64); 8];
        let k = self.ranges_of(function, &mut held).min(held.len());
        let all = || held[..k].iter().chain(ranges);
        for &(start, end) in all() {
            self.mark(start, end);
        }
        {
            let _w = self.lock();
            let n = self.len.load(Ordering::Relaxed);
            let mut kept = 0;
            let gone = (0..n)
                .filter(|&i| self.functions[i].load(Ordering::Relaxed) == function)
                .count();
            if gone > 0 {
                self.begin_write();
                for i in 0..n {
                    if self.functions[i].load(Ordering::Relaxed) != function {
                        if kept != i {
                            self.copy(i, kept);
                        }
                        kept += 1;
                    }
                }
                self.len.store(kept, Ordering::Relaxed);
                self.end_write();
            }
        }
        // Dekker with `begin_ask`: the pages were marked (SeqCst) before this load, the
        // sampler announces its address (SeqCst) before it reads the marks; one of the
        // two sees the other.
        let on_pages = |a: u64| {
            all().any(|&(s, e)| {
                page(a) >= page(s.saturating_sub(HEADER_SLACK)) && page(a) <= page(e - 1)
            })
        };
        let a = self.asking.load(Ordering::SeqCst);
        if a == 0 || !on_pages(a) {
            return;
        }
        self.waited.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + ASK_WAIT;
        loop {
            std::thread::yield_now();
            let a = self.asking.load(Ordering::SeqCst);
            if a == 0 || !on_pages(a) {
                return;
            }
            if Instant::now() >= deadline {
                self.wait_timeouts.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Marks the pages of `[start, end)` (and its code header's) freed dynamic code.
    fn mark(&self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let first = page(start.saturating_sub(HEADER_SLACK));
        let last = page(end - 1).min(first + MAX_PAGES_PER_RANGE - 1);
        for p in first..=last {
            if !self.mark_page(p) {
                self.pages_full.fetch_add(1, Ordering::Relaxed);
                self.pages_overflowed.store(true, Ordering::SeqCst);
            }
        }
    }

    fn slot_of(p: u64) -> usize {
        (p.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & (P - 1)
    }

    /// Inserts page `p` into the set; false if the set is full.
    fn mark_page(&self, p: u64) -> bool {
        let key = p + 1;
        let mut i = Self::slot_of(p);
        for _ in 0..P {
            match self.pages[i].load(Ordering::SeqCst) {
                k if k == key => return true,
                0 => {
                    if self.pages_used.load(Ordering::Relaxed) >= P / 4 * 3 {
                        return false;
                    }
                    match self.pages[i].compare_exchange(0, key, Ordering::SeqCst, Ordering::SeqCst)
                    {
                        Ok(_) => {
                            self.pages_used.fetch_add(1, Ordering::Relaxed);
                            return true;
                        }
                        Err(k) if k == key => return true,
                        Err(_) => {}
                    }
                }
                _ => {}
            }
            i = (i + 1) & (P - 1);
        }
        false
    }

    /// Whether `addr` lies on a page of freed dynamic code.
    fn freed(&self, addr: u64) -> bool {
        let key = page(addr) + 1;
        let mut i = Self::slot_of(page(addr));
        for _ in 0..P {
            match self.pages[i].load(Ordering::SeqCst) {
                k if k == key => return true,
                0 => return false,
                _ => {}
            }
            i = (i + 1) & (P - 1);
        }
        false
    }

    /// Index of the first range starting above `addr` among the first `n`.
    fn partition(&self, n: usize, addr: u64) -> usize {
        let (mut lo, mut hi) = (0, n.min(N));
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.starts[mid].load(Ordering::Relaxed) <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// What the table says about `addr` (the sampler thread; lock-free).
    pub fn find(&self, addr: u64) -> Found {
        for _ in 0..8 {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let n = self.len.load(Ordering::Relaxed);
            let at = self.partition(n, addr);
            let hit = at.checked_sub(1).and_then(|i| {
                let start = self.starts[i].load(Ordering::Relaxed);
                let end = self.ends[i].load(Ordering::Relaxed);
                let function = self.functions[i].load(Ordering::Relaxed);
                (addr >= start && addr < end).then_some(Found::Live { function, start })
            });
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) != s1 {
                continue;
            }
            return match hit {
                Some(live) => live,
                None if self.freed(addr) => Found::Freed,
                None => Found::Unknown,
            };
        }
        Found::Busy
    }

    /// The sampler is about to ask the runtime about `addr` (an [`Found::Unknown`]
    /// address): announced, then the freed pages read again. False: do not ask (the page
    /// was marked meanwhile, or the page set overflowed and a freed page could be missing
    /// from it); [`end_ask`](Self::end_ask) is then not needed.
    pub fn begin_ask(&self, addr: u64) -> bool {
        self.asking.store(addr, Ordering::SeqCst);
        if self.freed(addr) || self.pages_overflowed.load(Ordering::SeqCst) {
            self.asking.store(0, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// The runtime answered (or refused) the lookup [`begin_ask`](Self::begin_ask) announced.
    pub fn end_ask(&self) {
        self.asking.store(0, Ordering::SeqCst);
    }

    pub fn count_named(&self) {
        self.named.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_asked_dynamic(&self) {
        self.asked_dynamic.fetch_add(1, Ordering::Relaxed);
    }
}

impl<const N: usize, const P: usize> Default for DynCode<N, P> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_ranges_are_found_and_unloaded_ones_are_freed() {
        let t: Box<DynCode<4, 64>> = Box::default();
        assert!(t.insert(0x10_0000, 0x10_0100, 7));
        assert!(t.insert(0x20_0000, 0x20_0040, 8));
        assert!(t.insert(0x10_0200, 0x10_0300, 9));
        assert_eq!(
            t.find(0x10_0010),
            Found::Live {
                function: 7,
                start: 0x10_0000
            }
        );
        assert_eq!(
            t.find(0x10_02ff),
            Found::Live {
                function: 9,
                start: 0x10_0200
            }
        );
        // Between two ranges and past the end of one: not known.
        assert_eq!(t.find(0x10_0100), Found::Unknown);
        assert_eq!(t.find(0x20_0040), Found::Unknown);
        assert_eq!(t.find(0x5), Found::Unknown);
        // Unloaded: gone from the table, its page (and its header's) freed: a stale
        // return address there is never asked about, not even between live methods.
        t.unload(7, &[]);
        assert_eq!(t.find(0x10_0010), Found::Freed);
        assert_eq!(t.find(0x10_0100), Found::Freed);
        assert_eq!(
            t.find(0x10_0250),
            Found::Live {
                function: 9,
                start: 0x10_0200
            }
        );
        assert!(!t.begin_ask(0x10_0010));
        assert!(t.begin_ask(0x30_0000));
        t.end_ask();
        // A method the table never held (compiled before the callbacks were on): its
        // pages are marked from the ranges the runtime still gives at its unload.
        t.unload(42, &[(0x40_0000, 0x40_2000)]);
        assert_eq!(t.find(0x40_1fff), Found::Freed);
        assert_eq!(t.find(0x3f_ffc0), Found::Freed);
        assert_eq!(t.find(0x40_2000), Found::Unknown);
        // Memory reused by a new method: live again, named by the new one.
        assert!(t.insert(0x10_0000, 0x10_0080, 11));
        assert_eq!(
            t.find(0x10_0010),
            Found::Live {
                function: 11,
                start: 0x10_0000
            }
        );
        let s = t.stats();
        assert_eq!((s.compiled, s.unloaded, s.table_full), (4, 2, 0));
    }

    #[test]
    fn a_full_table_counts_and_drops_overlaps_replace() {
        let t: Box<DynCode<2, 64>> = Box::default();
        assert!(t.insert(0x1000, 0x1100, 1));
        assert!(t.insert(0x3000, 0x3100, 2));
        assert!(!t.insert(0x5000, 0x5100, 3));
        assert_eq!(t.stats().table_full, 1);
        assert_eq!(t.find(0x5010), Found::Unknown);
        // A range over a stale one (freed without an unload seen) replaces it.
        assert!(t.insert(0x1080, 0x1180, 4));
        assert_eq!(
            t.find(0x1010),
            Found::Unknown,
            "the stale range is gone, not kept beside the new one"
        );
        assert_eq!(
            t.find(0x10f0),
            Found::Live {
                function: 4,
                start: 0x1080
            }
        );
        let mut out = [(0, 0); 2];
        assert_eq!(t.ranges_of(4, &mut out), 1);
        assert_eq!(out[0], (0x1080, 0x1180));
        // Empty ranges are refused.
        assert!(!t.insert(0x9000, 0x9000, 5));
    }

    #[test]
    fn a_full_page_set_stops_every_unknown_lookup() {
        let t: Box<DynCode<4, 8>> = Box::default();
        // 8 slots hold 6 pages: a 10-page method overflows it.
        t.unload(1, &[(0x10_0000 + HEADER_SLACK, 0x10_a000)]);
        let s = t.stats();
        assert!(s.pages_full > 0, "{s:?}");
        // Asking about any unknown address is refused from then on.
        assert!(!t.begin_ask(0x99_0000));
        t.reset();
        assert!(t.begin_ask(0x99_0000));
        t.end_ask();
        assert_eq!(t.stats(), DynStats::default());
    }

    /// The sampler's reads never see a torn entry while writers insert and remove.
    #[test]
    fn readers_see_whole_entries_while_writers_change_the_table() {
        use std::sync::Arc;
        let t: Arc<DynCode<64, 1024>> = Arc::new(DynCode::new());
        let w = {
            let t = t.clone();
            std::thread::spawn(move || {
                for round in 0..2000u64 {
                    let k = round % 32;
                    // Function k always has code [k * 0x10000, k * 0x10000 + 0x100).
                    t.insert(k << 16, (k << 16) + 0x100, k + 1);
                    if round % 3 == 0 {
                        let j = (round / 3) % 32;
                        let _w = t.lock();
                        let n = t.len.load(Ordering::Relaxed);
                        if let Some(i) =
                            (0..n).find(|&i| t.functions[i].load(Ordering::Relaxed) == j + 1)
                        {
                            t.begin_write();
                            for m in i + 1..n {
                                t.copy(m, m - 1);
                            }
                            t.len.store(n - 1, Ordering::Relaxed);
                            t.end_write();
                        }
                    }
                }
            })
        };
        let mut seen = 0;
        let mut last = false;
        while !last {
            // One more pass after the writer is done (a busy machine may run it first).
            last = w.is_finished();
            for k in 0..32u64 {
                match t.find((k << 16) + 0x10) {
                    Found::Live { function, start } => {
                        assert_eq!((function, start), (k + 1, k << 16));
                        seen += 1;
                    }
                    Found::Unknown | Found::Busy => {}
                    Found::Freed => panic!("nothing was freed"),
                }
            }
        }
        w.join().unwrap();
        assert!(seen > 0);
    }
}
