//! Stacks that allocation samples met before, known again without a walk.
//!
//! DoStackSnapshot of the allocating thread costs ~1 µs a frame and a fixed ~3-5 µs to
//! reach the first managed frame (.NET 10, the Demo's stacks: 7-9 µs a sample), while an
//! application's samples mostly repeat a few hundred stacks. A stack is known again by
//! its return addresses: where DoStackSnapshot found a managed frame, the return address
//! into it lies on the stack just below that frame's SP (`Rsp - 8` in the frame's register
//! context), and the frames' positions relative to the callback's own frame are the same
//! each time the same call path allocates. An entry keeps, per frame, that position (as
//! an offset from an anchor in the callback's frame), the return address found there and
//! the FunctionID; a later sample whose stack holds the same return addresses at every
//! one of those positions is that stack, and gets its frames without a walk. Anything
//! else (a position holding something else, a stack deeper than [`MAX_FRAMES`]) is
//! walked by DoStackSnapshot as before.
//!
//! Entries are found by the leaf's return address: it lies at one of a few offsets from
//! the anchor (one per path the runtime takes from the allocating method to the
//! callback, learnt from the walks), so a lookup reads the word at each known offset and
//! looks in that word's set of [`WAYS`] entries.
//!
//! The table is global and lock-free: a writer takes an entry by making its sequence
//! number odd (another writer then passes it over), a reader copies the entry and keeps
//! the copy only if the sequence number did not change meanwhile (a seqlock, every field
//! an atomic). Bounded: [`SETS`] × [`WAYS`] entries, replaced round robin within a set.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering, fence};

use super::stackbuf::FrameBuf;

/// Frames an entry holds; deeper stacks are always walked.
pub const MAX_FRAMES: usize = 32;
const SETS: usize = 64;
const WAYS: usize = 8;
/// Offsets of the leaf's return address kept (one per runtime path to the callback).
const LEAF_OFFSETS: usize = 8;

struct Entry {
    /// Odd while a writer fills the entry.
    seq: AtomicU64,
    key: AtomicU64,
    n: AtomicU64,
    /// Per frame, leaf first: the offset of its return address from the anchor, that
    /// return address, the FunctionID, and where in its method the frame is (a
    /// `SamplePositions` item, computed once when the stack was kept).
    offset: [AtomicU64; MAX_FRAMES],
    ret: [AtomicU64; MAX_FRAMES],
    function: [AtomicU64; MAX_FRAMES],
    position: [AtomicU64; MAX_FRAMES],
}

impl Entry {
    const fn new() -> Entry {
        Entry {
            seq: AtomicU64::new(0),
            key: AtomicU64::new(0),
            n: AtomicU64::new(0),
            offset: [const { AtomicU64::new(0) }; MAX_FRAMES],
            ret: [const { AtomicU64::new(0) }; MAX_FRAMES],
            function: [const { AtomicU64::new(0) }; MAX_FRAMES],
            position: [const { AtomicU64::new(0) }; MAX_FRAMES],
        }
    }
}

static TABLE: [Entry; SETS * WAYS] = [const { Entry::new() }; SETS * WAYS];
static LEAVES: [AtomicU64; LEAF_OFFSETS] = [const { AtomicU64::new(0) }; LEAF_OFFSETS];
static NEXT_WAY: AtomicU64 = AtomicU64::new(0);

/// Why a walked stack was not kept: a frame whose return address was not where its
/// context said, deeper than [`MAX_FRAMES`], a runtime path beyond [`LEAF_OFFSETS`], the
/// entry busy with another writer.
pub static NOT_KEPT: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// At a session's start: no stack of the last session is trusted again, and the counts
/// are this session's.
pub fn reset_for_session() {
    for e in &TABLE {
        e.seq.store(0, Ordering::Relaxed);
        e.key.store(0, Ordering::Relaxed);
        e.n.store(0, Ordering::Relaxed);
    }
    for l in LEAVES.iter().chain(&NOT_KEPT) {
        l.store(0, Ordering::Relaxed);
    }
    NEXT_WAY.store(0, Ordering::Relaxed);
}

fn not_kept(why: usize) {
    NOT_KEPT[why].fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    /// This thread's stack (per thread for good: a thread's stack does not move, so a
    /// later session may use what an earlier one asked) `[low, high)`: (0, 0) until asked, (1, 1) when not known.
    static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The calling thread's stack, if known (asked of the system once per thread).
fn stack_range() -> Option<(u64, u64)> {
    let mut r = RANGE.with(Cell::get);
    if r == (0, 0) {
        r = crate::os::thread::own_stack().unwrap_or((1, 1));
        RANGE.with(|c| c.set(r));
    }
    (r.1 > r.0 + 1).then_some(r)
}

/// The calling thread's stack from `anchor` (an address in the caller's frame) up to its
/// top: the frames of the callback's callers, which do not run while it does.
pub struct OwnStack {
    anchor: u64,
    top: u64,
}

impl OwnStack {
    /// `anchor`: the address of a local in the callback's frame, the same one for every
    /// sample (the offsets are from it).
    pub fn new(anchor: u64) -> Option<OwnStack> {
        let (low, top) = stack_range()?;
        (low <= anchor && anchor < top).then_some(OwnStack { anchor, top })
    }

    fn word(&self, offset: u64) -> Option<u64> {
        let at = self.anchor.checked_add(offset)?;
        if at.checked_add(8)? > self.top || !at.is_multiple_of(8) {
            return None;
        }
        // SAFETY: (A10) `[at, at + 8)` lies within `[anchor, top)` of the calling thread's
        // own stack, mapped while the thread runs; the words there belong to the frames
        // of the callback's callers, which are not running.
        Some(unsafe { std::ptr::read(at as *const u64) })
    }

    /// The offset of stack address `at` from the anchor, if it lies above it.
    fn offset_of(&self, at: u64) -> Option<u64> {
        (at >= self.anchor && at.checked_add(8)? <= self.top).then(|| at - self.anchor)
    }
}

fn key(offset: u64, ret: u64) -> u64 {
    super::splitmix(offset ^ ret.rotate_left(17))
}

/// Fills `out` with the frames of a stack seen before, and `positions` with where in
/// its method each is; false if this one was not.
pub fn find<const N: usize>(
    stack: &OwnStack,
    out: &mut FrameBuf<N>,
    positions: &mut FrameBuf<N>,
    rets: &mut FrameBuf<N>,
) -> bool {
    for leaf in &LEAVES {
        let offset = leaf.load(Ordering::Acquire);
        if offset == 0 {
            break;
        }
        let Some(ret) = stack.word(offset) else {
            continue;
        };
        let k = key(offset, ret);
        let set = (k as usize % SETS) * WAYS;
        for e in &TABLE[set..set + WAYS] {
            if read(e, k, stack, out, positions, rets) {
                return true;
            }
        }
    }
    out.n = 0;
    positions.n = 0;
    rets.n = 0;
    false
}

/// The entry's frames into `out` if it is `k`'s and every return address it expects is
/// on the stack where it expects it.
fn read<const N: usize>(
    e: &Entry,
    k: u64,
    stack: &OwnStack,
    out: &mut FrameBuf<N>,
    positions: &mut FrameBuf<N>,
    rets: &mut FrameBuf<N>,
) -> bool {
    let s1 = e.seq.load(Ordering::Acquire);
    if s1 & 1 == 1 || e.key.load(Ordering::Relaxed) != k {
        return false;
    }
    let n = e.n.load(Ordering::Relaxed) as usize;
    if n == 0 || n > MAX_FRAMES.min(N) {
        return false;
    }
    out.n = 0;
    positions.n = 0;
    rets.n = 0;
    for i in 0..n {
        let offset = e.offset[i].load(Ordering::Relaxed);
        let ret = e.ret[i].load(Ordering::Relaxed);
        if stack.word(offset) != Some(ret) {
            return false;
        }
        out.push(e.function[i].load(Ordering::Relaxed));
        positions.push(e.position[i].load(Ordering::Relaxed));
        rets.push(ret);
    }
    fence(Ordering::Acquire);
    e.seq.load(Ordering::Relaxed) == s1
}

/// One managed frame of a walk: its FunctionID, IP and SP (from its register context).
#[derive(Clone, Copy, Default)]
pub struct Walked {
    pub function: u64,
    pub ip: u64,
    pub sp: u64,
}

/// Keeps a stack DoStackSnapshot walked (all of it: `complete`), if every frame's slot
/// below its SP holds a return address into that frame's function: the IP the runtime
/// reported, or, for a frame the runtime reached through a transition frame (a P/Invoke's
/// `InlinedCallFrame` records an IP of its own), another address that `in_function`
/// (code address, FunctionID) places in that frame's function. `positions`: where in its
/// method each frame is (one item per frame), handed out with the frames.
///
/// `in_function` must not ask the runtime: the word it is handed is only a guess, and
/// `GetFunctionFromIP` on a guess inside a ReadyToRun image none of whose methods at or
/// below it has run faults inside the runtime (docs/safety.md, "The sampler's calls into
/// the runtime"). The caller answers from the code ranges the agent has read already.
pub fn keep(
    stack: &OwnStack,
    frames: &[Walked],
    positions: &[u64],
    complete: bool,
    in_function: impl Fn(u64, u64) -> bool,
) {
    if !complete
        || frames.is_empty()
        || frames.len() > MAX_FRAMES
        || positions.len() != frames.len()
    {
        return not_kept(1);
    }
    let mut offsets = [0u64; MAX_FRAMES];
    let mut rets = [0u64; MAX_FRAMES];
    for (i, f) in frames.iter().enumerate() {
        let slot = f.sp.checked_sub(8).and_then(|at| stack.offset_of(at));
        let word = slot.and_then(|o| stack.word(o));
        match (slot, word) {
            (Some(o), Some(w)) if w == f.ip || (w > 1 && in_function(w - 1, f.function)) => {
                offsets[i] = o;
                rets[i] = w;
            }
            _ => return not_kept(0),
        }
    }
    let leaf = offsets[0];
    if !LEAVES.iter().any(|l| {
        l.load(Ordering::Acquire) == leaf
            || l.compare_exchange(0, leaf, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }) {
        return not_kept(2);
    }
    let k = key(leaf, rets[0]);
    let set = (k as usize % SETS) * WAYS;
    let way = NEXT_WAY.fetch_add(1, Ordering::Relaxed) as usize % WAYS;
    let e = &TABLE[set + way];
    let s = e.seq.load(Ordering::Relaxed);
    if s & 1 == 1
        || e.seq
            .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return not_kept(3);
    }
    fence(Ordering::Release);
    e.key.store(k, Ordering::Relaxed);
    e.n.store(frames.len() as u64, Ordering::Relaxed);
    for (i, f) in frames.iter().enumerate() {
        e.offset[i].store(offsets[i], Ordering::Relaxed);
        e.ret[i].store(rets[i], Ordering::Relaxed);
        e.function[i].store(f.function, Ordering::Relaxed);
        e.position[i].store(positions[i], Ordering::Relaxed);
    }
    e.seq.store(s + 2, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake stack: words above an anchor, as a callback would see its callers' frames.
    fn stack_of(words: &[u64]) -> OwnStack {
        let anchor = words.as_ptr() as u64;
        OwnStack {
            anchor,
            top: anchor + 8 * words.len() as u64,
        }
    }

    #[test]
    fn a_kept_stack_is_found_while_its_return_addresses_stay() {
        // Frames at word 2 (leaf) and word 5, their return addresses stored below their SP.
        let mut words = vec![0u64; 8];
        words[2] = 0x7000_1234;
        words[5] = 0x7000_5678;
        let s = stack_of(&words);
        let at = |i: usize| s.anchor + 8 * i as u64;
        let frames = [
            Walked {
                function: 11,
                ip: 0x7000_1234,
                sp: at(3),
            },
            Walked {
                function: 22,
                ip: 0x7000_5678,
                sp: at(6),
            },
        ];
        keep(&s, &frames, &[0x14, 0x2a], true, |_, _| false);
        let (mut out, mut positions) = (FrameBuf::<8>::new(), FrameBuf::<8>::new());
        let mut rets = FrameBuf::<8>::new();
        assert!(find(&s, &mut out, &mut positions, &mut rets));
        assert_eq!(out.as_slice(), &[11, 22]);
        assert_eq!(positions.as_slice(), &[0x14, 0x2a]);
        // The return addresses, the walk's IPs (for positions mapped later).
        assert_eq!(rets.as_slice(), &[0x7000_1234, 0x7000_5678]);
        // Another caller (a different return address into frame 2): not this stack.
        words[5] = 0x7000_9999;
        let s = stack_of(&words);
        assert!(!find(&s, &mut out, &mut positions, &mut rets));
        assert_eq!((out.n, positions.n, rets.n), (0, 0, 0));
    }

    #[test]
    fn a_transition_frame_is_kept_only_when_its_word_is_in_its_function_code() {
        // The runtime reports the InlinedCallFrame's IP; the word below the SP is another
        // return address into the same function, which only the code ranges can confirm.
        let words = [0u64, 0x7200_0010, 0, 0];
        let s = stack_of(&words);
        let frames = [Walked {
            function: 7,
            ip: 0x7200_0042,
            sp: s.anchor + 16,
        }];
        let asked = std::cell::Cell::new(None);
        let before = NOT_KEPT[0].load(Ordering::Relaxed);
        keep(&s, &frames, &[0], true, |a, f| {
            asked.set(Some((a, f)));
            false
        });
        assert_eq!(asked.get(), Some((0x7200_000f, 7)));
        assert_eq!(NOT_KEPT[0].load(Ordering::Relaxed), before + 1);
        keep(&s, &frames, &[0x33], true, |a, f| {
            (0x7200_0000..0x7200_0100).contains(&a) && f == 7
        });
        let (mut out, mut positions) = (FrameBuf::<8>::new(), FrameBuf::<8>::new());
        let mut rets = FrameBuf::<8>::new();
        assert!(find(&s, &mut out, &mut positions, &mut rets));
        assert_eq!(out.as_slice(), &[7]);
    }

    #[test]
    fn frames_whose_return_address_is_elsewhere_are_not_kept() {
        let words = [0u64, 0x7100_0001, 0, 0];
        let s = stack_of(&words);
        let before = NOT_KEPT[0].load(Ordering::Relaxed);
        let frames = [Walked {
            function: 1,
            ip: 0x7100_0002,
            sp: s.anchor + 16,
        }];
        keep(&s, &frames, &[0], true, |_, _| false);
        assert_eq!(NOT_KEPT[0].load(Ordering::Relaxed), before + 1);
    }

    #[test]
    fn reads_stay_within_the_stack() {
        let words = [1u64, 2, 3];
        let s = stack_of(&words);
        assert_eq!(s.word(16), Some(3));
        assert_eq!(s.word(24), None);
        assert_eq!(s.word(3), None);
        assert_eq!(s.word(u64::MAX - 4), None);
    }
}
