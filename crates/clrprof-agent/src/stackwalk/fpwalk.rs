//! Frame-pointer walk over a copied stack (pure logic, no memory access outside the copy).
//!
//! The signal sampler (`sampling/sigprof.rs`) captures, on the sampled thread itself, the
//! registers RIP/RSP/RBP and a copy of the stack from RSP upwards. This module turns that
//! copy into code addresses, leaf first, on the sampler thread.
//!
//! Why frame pointers work for .NET on Linux x64: the JIT defines `ETW_EBP_FRAMED` for
//! UNIX_AMD64_ABI (dotnet/runtime `src/coreclr/jit/targetamd64.h`), so RBP is never a
//! scratch register and most methods build an RBP frame; libcoreclr is built with frame
//! pointers too. The gaps handled here:
//! - a *frameless* leaf (small JIT'd methods, assembly helpers, or any function in its
//!   prologue/epilogue) leaves RBP pointing at its caller's frame, so the first
//!   `[RBP+8]` skips the caller. If the word at RSP is a return address into code (the
//!   `is_code` classifier decides) and differs from that first `[RBP+8]`, it is the
//!   missing caller;
//! - a frameless method further up leaves its return address in the gap between two
//!   records. The gap is searched only when the method a record returns into is frameless
//!   or of unknown shape ([`FrameKind`], read from its prolog): the body of a method with
//!   a record of its own holds only its locals, where old return addresses linger;
//! - an OSR method continues a Tier-0 frame that stays on the stack under it, and its
//!   record's return slot was never written by a call: the caller comes from the Tier-0
//!   frame's record instead (see [`FrameKind::Osr`]);
//! - a chain that leaves the copy or stops increasing ends the walk (counted by the
//!   caller as truncated), so garbage in RBP (native code built without frame pointers)
//!   can never make the walk loop or read outside the copy.

/// Where a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// RBP reached 0 (the thread's first frame) or pointed below the previous frame.
    Root,
    /// The next frame lies outside the copied part of the stack.
    OutsideCopy,
    /// `max` frames were produced.
    Limit,
}

/// The stack memory a walk reads: `bytes()` bytes from SP upwards (the signal sampler's
/// copy, a byte slice).
pub trait Memory {
    /// How many bytes from SP may be read.
    fn bytes(&self) -> usize;
    /// The 8-byte word at offset `off` from SP; `None` unless all of it is readable.
    fn word_at(&self, off: usize) -> Option<u64>;
}

impl<T: AsRef<[u8]>> Memory for T {
    fn bytes(&self) -> usize {
        self.as_ref().len()
    }

    fn word_at(&self, off: usize) -> Option<u64> {
        let bytes = self.as_ref().get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// A copy that remembers how far into it a walk read: the end of the highest word asked
/// for, up to the copy's end.
pub struct Reach<'a> {
    bytes: &'a [u8],
    reach: std::cell::Cell<usize>,
}

impl<'a> Reach<'a> {
    pub fn new(bytes: &'a [u8]) -> Reach<'a> {
        Reach {
            bytes,
            reach: std::cell::Cell::new(0),
        }
    }

    /// Bytes from SP up to the end of the highest word read so far.
    pub fn reach(&self) -> usize {
        self.reach.get()
    }
}

impl Memory for &Reach<'_> {
    fn bytes(&self) -> usize {
        self.bytes.len()
    }

    fn word_at(&self, off: usize) -> Option<u64> {
        let end = off.checked_add(8)?.min(self.bytes.len());
        if end > self.reach.get() {
            self.reach.set(end);
        }
        self.bytes.word_at(off)
    }
}

/// Where a walk puts its addresses: a `Vec` (the sampler thread), or a fixed buffer
/// (`--alloc`, on the allocating thread, which must not allocate).
pub trait Sink {
    fn len(&self) -> usize;
    fn push(&mut self, addr: u64);
}

impl Sink for Vec<u64> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn push(&mut self, addr: u64) {
        Vec::push(self, addr);
    }
}

/// A stack captured by the signal handler (registers plus `stack[i] == *(sp + i)`), or
/// the live stack of the calling thread.
pub struct Captured<M> {
    pub ip: u64,
    pub sp: u64,
    pub fp: u64,
    pub stack: M,
}

impl<M: Memory> Captured<M> {
    /// The 8-byte word at `addr`, when the copy holds all of it.
    fn word(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        self.stack.word_at(off)
    }

    fn len(&self) -> u64 {
        self.stack.bytes() as u64
    }
}

/// What a walk produced besides the addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    pub end: WalkEnd,
    /// OSR frames whose caller was taken from the Tier-0 frame record under them.
    pub osr_frames: u32,
}

/// How a code version builds its frame, as its first instructions show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameKind {
    /// Not known (not managed code, or its code version was not found).
    #[default]
    Unknown,
    /// Starts with `push rbp`: it keeps a frame record (saved RBP, return address) that
    /// RBP points at. The JIT's usual prolog on Unix x64, and Tier-0 code's always.
    Record,
    /// Starts with `mov rax, [rbp]; push rax`: an OSR method. Its record holds the saved
    /// RBP of the Tier-0 frame it continues (that frame's caller's) and, as return
    /// address, whatever the Tier-0 frame left in that slot: no call pushed it (dotnet/
    /// runtime `JIT_Patchpoint` enters the OSR method with RSP = Tier-0 SP − 8).
    Osr,
    /// Anything else: no frame record of its own; its return address lies in the gap
    /// between its callee's record and the next one.
    Frameless,
}

impl FrameKind {
    /// Reads the first bytes of a code version.
    pub fn of_prolog(code: &[u8]) -> FrameKind {
        match code {
            [0x55, ..] => FrameKind::Record,
            [0x48, 0x8b, 0x45, 0x00, 0x50, ..] => FrameKind::Osr,
            [] => FrameKind::Unknown,
            _ => FrameKind::Frameless,
        }
    }
}

/// A code address as `walk` sees it: the managed function holding it (0: not managed)
/// and the shape of that code version's frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Code {
    pub function: u64,
    pub frame: FrameKind,
}

impl Code {
    pub const NONE: Code = Code {
        function: 0,
        frame: FrameKind::Unknown,
    };
}

/// `leaf` is the code at the interrupted IP; `is_code` classifies a return address − 1
/// (function 0: not managed code). Appends code addresses to `out`, leaf first: the
/// interrupted IP, then one *return address minus one* per caller (so that a call at the
/// very end of a method still maps to that method). At most `max` addresses.
pub fn walk<M: Memory>(
    c: &Captured<M>,
    leaf: Code,
    out: &mut impl Sink,
    max: usize,
    mut is_code: impl FnMut(u64) -> Code,
) -> Walk {
    let mut w = Walk {
        end: WalkEnd::Root,
        osr_frames: 0,
    };
    w.end = walk_frames(c, Some(leaf), out, max, &mut is_code, &mut w);
    w
}

fn walk_frames<M: Memory>(
    c: &Captured<M>,
    leaf: Option<Code>,
    out: &mut impl Sink,
    max: usize,
    is_code: &mut impl FnMut(u64) -> Code,
    w: &mut Walk,
) -> WalkEnd {
    if max == 0 {
        return WalkEnd::Limit;
    }
    let limit = out.len() + max;
    // The code whose frame record RBP points at, as far as the walk knows.
    let mut inner = Code::NONE;
    let mut fp = 0;
    if let Some(leaf) = leaf {
        out.push(c.ip);
        inner = leaf;
        let first_return = c.word(c.fp.wrapping_add(8));
        let caller = [prolog_return(c, leaf), c.word(c.sp)]
            .into_iter()
            .flatten()
            .filter(|&r0| r0 > 1 && Some(r0) != first_return)
            .find_map(|r0| {
                let code = is_code(r0 - 1);
                (code.function != 0).then_some((r0, code))
            });
        if let Some((r0, code)) = caller {
            if out.len() == limit {
                return WalkEnd::Limit;
            }
            out.push(r0 - 1);
            inner = code;
        }
        fp = c.fp;
    }
    let mut resumes = 0;
    // Everything below this address has been walked: scans start here.
    let mut floor = c.sp;
    'walk: loop {
        // Each way RBP can fail to lead to the next frame record leaves this block for the
        // one resume after it; every other path records a frame and continues, or ends.
        'lost: {
            if fp == 0 && floor == c.sp && resumes == 0 {
                // RBP 0 at the interrupted point is not the root: code without frame pointers
                // (glibc's futex and syscall paths) keeps other values in it.
                break 'lost;
            }
            if fp == 0 {
                return WalkEnd::Root;
            }
            let valid = fp >= c.sp && fp.is_multiple_of(8);
            let record = if valid {
                c.word(fp).zip(c.word(fp.wrapping_add(8)))
            } else {
                None
            };
            let (next, ret) = match record {
                // (An OSR frame's return slot may hold anything, 0 included.)
                Some((_, ret)) if ret <= 1 && inner.frame != FrameKind::Osr => {
                    return WalkEnd::Root;
                }
                Some(r) => r,
                None if valid && fp.wrapping_sub(c.sp) >= c.len() => {
                    return WalkEnd::OutsideCopy;
                }
                // RBP is not a frame pointer here (code built without them, e.g. libc, was
                // interrupted).
                None => break 'lost,
            };
            // Frames grow towards higher addresses as the walk goes to the root; anything else
            // is not a frame chain (and could loop).
            floor = fp + 16;
            let tier0 = if inner.frame == FrameKind::Osr && next > fp {
                tier0_record(c, floor, next, is_code)
            } else {
                None
            };
            if let Some((ret0, caller)) = tier0 {
                // An OSR frame: its return slot is not a return address. The Tier-0 frame it
                // continues lies in the gap, and that frame's record returns to the real
                // caller; the Tier-0 frame itself is the same call as the OSR one.
                w.osr_frames += 1;
                if out.len() == limit {
                    return WalkEnd::Limit;
                }
                out.push(ret0 - 1);
                inner = caller;
                fp = next;
                continue 'walk;
            }
            if ret <= 1 {
                return WalkEnd::Root;
            }
            if out.len() == limit {
                return WalkEnd::Limit;
            }
            out.push(ret - 1);
            let owner = is_code(ret - 1);
            inner = owner;
            let frameless_managed = owner.function != 0
                && matches!(owner.frame, FrameKind::Frameless | FrameKind::Unknown);
            if next > fp && frameless_managed {
                // The gap above this record belongs to the method this record returns into.
                // When that method is frameless, its own return address lies in the gap:
                // recover returns into other managed methods found there, up to the first
                // one with a frame record of its own (its record is `next`; the rest of the
                // gap is its locals, where old return addresses may linger). A method known
                // to keep a record is not scanned at all, for the same reason.
                let mut at = floor;
                let mut last = owner.function;
                let gap_end = next.min(floor.saturating_add(GAP_BYTES));
                while at < gap_end {
                    if let Some(w) = c.word(at)
                        && (4096..0x8000_0000_0000).contains(&w)
                        && let code = is_code(w - 1)
                        && code.function != 0
                        && code.function != last
                    {
                        last = code.function;
                        if out.len() == limit {
                            return WalkEnd::Limit;
                        }
                        out.push(w - 1);
                        inner = code;
                        if matches!(code.frame, FrameKind::Record | FrameKind::Osr) {
                            break;
                        }
                    }
                    at += 8;
                }
            }
            if next <= fp {
                if next == 0 {
                    return WalkEnd::Root;
                }
                break 'lost;
            }
            fp = next;
            continue 'walk;
        }
        match resume_walk(c, floor, &mut resumes, is_code) {
            Some(at) => {
                fp = at;
                inner = Code::NONE;
            }
            None => return WalkEnd::Root,
        }
    }
}

/// Where a walk whose RBP led nowhere goes on: the next frame record whose return address
/// is code, above everything walked so far (`floor`), at most [`MAX_RESUMES`] times a walk
/// (`resumes` counts them). `None`: the walk ends there, at what it takes for the root.
fn resume_walk<M: Memory>(
    c: &Captured<M>,
    floor: u64,
    resumes: &mut u32,
    is_code: &mut impl FnMut(u64) -> Code,
) -> Option<u64> {
    if *resumes >= MAX_RESUMES {
        return None;
    }
    let at = resume(c, floor, is_code)?;
    *resumes += 1;
    Some(at)
}

/// A managed leaf interrupted inside its prolog, after `push rbp` and before RBP is set
/// to its own record: RBP is still the caller's, and the words from SP up are the
/// callee-saved registers the prolog pushed so far, the pushed RBP (equal to RBP now),
/// then the return address into the caller. Without this the walk took the caller's
/// record for the leaf's and lost the caller (under an OSR caller it read the OSR
/// frame's unwritten return slot as a frame: `Worker;[native];HotA`). Only the prolog
/// puts the current RBP's value on the stack: a method's body never spills RBP, and its
/// epilogue pops the saved RBP (the caller's, not the current value) before `ret`.
fn prolog_return<M: Memory>(c: &Captured<M>, leaf: Code) -> Option<u64> {
    if leaf.function == 0 || c.fp == 0 {
        return None;
    }
    // `push rbp` comes first; at most five callee-saved registers follow it.
    (0..6u64).find_map(|k| {
        let at = c.sp.wrapping_add(8 * k);
        (c.word(at) == Some(c.fp)).then(|| c.word(at.wrapping_add(8)))?
    })
}

/// How much of the gap between two frame records is searched for frameless frames.
const GAP_BYTES: u64 = 1024;

/// How often one walk may resume by scanning after a broken link.
const MAX_RESUMES: u32 = 4;

/// How far (bytes) a resume, or the search for a Tier-0 record, scans before giving up.
const SCAN_BYTES: u64 = 16 * 1024;

/// Under an OSR frame whose record is at `floor − 16` and holds the saved RBP `next`:
/// the Tier-0 frame's record, which holds the same saved RBP and returns into managed
/// code. Searched downwards from `next`, so that the live record wins over stale copies
/// lower down (earlier callees of the same caller left theirs at the same place or
/// below). Returns that return address and its code.
fn tier0_record<M: Memory>(
    c: &Captured<M>,
    floor: u64,
    next: u64,
    is_code: &mut impl FnMut(u64) -> Code,
) -> Option<(u64, Code)> {
    let low = floor.max(next.saturating_sub(SCAN_BYTES));
    let mut at = next.checked_sub(16)? & !7;
    while at >= low {
        if c.word(at) == Some(next)
            && let Some(ret) = c.word(at.wrapping_add(8))
            && (4096..0x8000_0000_0000).contains(&ret)
            && let code = is_code(ret - 1)
            && code.function != 0
        {
            return Some((ret, code));
        }
        at = at.checked_sub(8)?;
    }
    None
}

/// Scans `[from, from + SCAN_BYTES)` for a frame record: a saved RBP pointing higher up
/// the copied stack, followed by a return address that `is_code` accepts.
fn resume<M: Memory>(
    c: &Captured<M>,
    from: u64,
    is_code: &mut impl FnMut(u64) -> Code,
) -> Option<u64> {
    let mut at = from.checked_add(7)? & !7;
    let end = from.saturating_add(SCAN_BYTES);
    while at < end {
        let (Some(saved), Some(ret)) = (c.word(at), c.word(at.wrapping_add(8))) else {
            return None;
        };
        if saved > at
            && saved.is_multiple_of(8)
            && saved.wrapping_sub(c.sp) < c.len()
            && (4096..0x8000_0000_0000).contains(&ret)
            && is_code(ret - 1).function != 0
        {
            return Some(at);
        }
        at += 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A fake stack at `base`, built from (offset, value) words.
    fn stack(len: usize, words: &[(usize, u64)]) -> Vec<u8> {
        let mut s = vec![0u8; len];
        for &(off, v) in words {
            s[off..off + 8].copy_from_slice(&v.to_le_bytes());
        }
        s
    }

    const SP: u64 = 0x7000_0000;

    /// Walks the stack `s` (copied from `SP`), interrupted at `ip` with RBP `fp`, to at
    /// most 64 frames.
    fn walk_stack(
        s: &[u8],
        ip: u64,
        fp: u64,
        leaf: Code,
        is_code: impl FnMut(u64) -> Code,
    ) -> (Vec<u64>, Walk) {
        let c = Captured {
            ip,
            sp: SP,
            fp,
            stack: s,
        };
        let mut out = vec![];
        let w = walk(&c, leaf, &mut out, 64, is_code);
        (out, w)
    }

    /// A classifier that knows functions but not their frames (`FrameKind::Unknown`).
    fn managed(f: impl Fn(u64) -> u64) -> impl FnMut(u64) -> Code {
        move |a| Code {
            function: f(a),
            frame: FrameKind::Unknown,
        }
    }

    #[test]
    fn follows_the_chain_to_the_root() {
        // leaf frame at +0x20, caller at +0x60, root at +0xa0 (saved rbp 0).
        let s = stack(
            0x100,
            &[
                (0x20, SP + 0x60),
                (0x28, 0x1111),
                (0x60, SP + 0xa0),
                (0x68, 0x2222),
                (0xa0, 0),
                (0xa8, 0x3333),
            ],
        );
        let (out, w) = walk_stack(&s, 0x9999, SP + 0x20, Code::NONE, managed(|_| 0));
        assert_eq!(out, vec![0x9999, 0x1110, 0x2221, 0x3332]);
        assert_eq!(w.end, WalkEnd::Root);
    }

    #[test]
    fn a_leaf_inside_its_prolog_gets_its_caller_from_above_the_pushed_rbp() {
        // The leaf (function 9) has run `push rbp; push r15`: [sp] = r15, [sp+8] = the
        // caller's RBP (RBP still holds it), [sp+16] = the return into the caller
        // (function 5). RBP is the caller's record, whose [rbp+8] returns into function 6.
        let s = stack(
            0x100,
            &[
                (0x0, 0x1234),
                (0x8, SP + 0x40),
                (0x10, 0x5555),
                (0x40, 0),
                (0x48, 0x6666),
            ],
        );
        let is_code = managed(|a| match a {
            0x5554 => 5,
            0x6665 => 6,
            _ => 0,
        });
        let leaf = Code {
            function: 9,
            frame: FrameKind::Record,
        };
        let (out, _) = walk_stack(&s, 0x9999, SP + 0x40, leaf, is_code);
        assert_eq!(out, vec![0x9999, 0x5554, 0x6665]);
        // Not for native code, whose RBP may be anything.
        let (out, _) = walk_stack(
            &s,
            0x9999,
            SP + 0x40,
            Code::NONE,
            managed(|a| u64::from(a == 0x6665)),
        );
        assert_eq!(out, vec![0x9999, 0x6665]);
    }

    #[test]
    fn frameless_leaf_gets_its_caller_from_the_word_at_sp() {
        // [sp] is the return address into the caller; rbp is the caller's frame, whose
        // [rbp+8] returns into the caller's caller.
        let s = stack(0x100, &[(0x0, 0x5555), (0x40, 0), (0x48, 0x6666)]);
        let (out, _) = walk_stack(
            &s,
            0x9999,
            SP + 0x40,
            Code::NONE,
            managed(|a| u64::from(a == 0x5554)),
        );
        assert_eq!(out, vec![0x9999, 0x5554, 0x6665]);
    }

    #[test]
    fn word_at_sp_equal_to_the_first_return_is_not_doubled() {
        let s = stack(0x100, &[(0x0, 0x5555), (0x40, 0), (0x48, 0x5555)]);
        let (out, _) = walk_stack(&s, 0x9999, SP + 0x40, Code::NONE, managed(|_| 1));
        assert_eq!(out, vec![0x9999, 0x5554]);
    }

    #[test]
    fn a_broken_link_resumes_at_the_next_frame_record_returning_into_code() {
        // RBP holds a non-pointer (libc used it as a register); above some native stack
        // data lies a record (saved rbp, return into managed code), then the root.
        let s = stack(
            0x200,
            &[
                (0x10, SP + 0x18), // looks like a record, but 0x7777 is not code
                (0x18, 0x7777),
                (0x80, SP + 0x100),
                (0x88, 0x5555),
                (0x100, 0),
                (0x108, 0x6666),
            ],
        );
        let (out, w) = walk_stack(
            &s,
            0x9999,
            0x1234,
            Code::NONE,
            managed(|a| u64::from(a == 0x5554 || a == 0x6665)),
        );
        assert_eq!(out, vec![0x9999, 0x5554, 0x6665]);
        assert_eq!(w.end, WalkEnd::Root);
    }

    #[test]
    fn a_frameless_method_between_two_records_is_recovered() {
        // Record at +0x20 returns into G (frameless); G's call into it left the return
        // into H at +0x40; H's record is at +0x60.
        let s = stack(
            0x100,
            &[
                (0x20, SP + 0x60),
                (0x28, 0x1111),
                (0x40, 0x4444),
                (0x48, 0x1234_5678), // data, not code
                (0x60, 0),
                (0x68, 0x2222),
            ],
        );
        let (out, _) = walk_stack(
            &s,
            0x9999,
            SP + 0x20,
            Code::NONE,
            managed(|a| match a {
                0x4443 => 2,
                0x1110 => 1,
                _ => 0,
            }),
        );
        assert_eq!(out, vec![0x9999, 0x1110, 0x4443, 0x2221]);
    }

    #[test]
    fn chain_leaving_the_copy_is_reported() {
        let s = stack(0x40, &[(0x20, SP + 0x1000), (0x28, 0x1111)]);
        let c = Captured {
            ip: 1,
            sp: SP,
            fp: SP + 0x20,
            stack: &s,
        };
        let mut out = vec![];
        assert_eq!(
            walk(&c, Code::NONE, &mut out, 64, managed(|_| 0)).end,
            WalkEnd::OutsideCopy
        );
        assert_eq!(out, vec![1, 0x1110]);
    }

    #[test]
    fn limit_is_respected() {
        let s = stack(
            0x100,
            &[(0x20, SP + 0x60), (0x28, 0x1111), (0x60, 0), (0x68, 0x2222)],
        );
        let c = Captured {
            ip: 7,
            sp: SP,
            fp: SP + 0x20,
            stack: &s,
        };
        let mut out = vec![];
        assert_eq!(
            walk(&c, Code::NONE, &mut out, 2, managed(|_| 0)).end,
            WalkEnd::Limit
        );
        assert_eq!(out.len(), 2);
    }

    /// Functions by address: 0x1000 Main, 0x2000 frameless, 0x3000 RunHot, 0x4000 and
    /// 0x5000 framed, 0x7000 an OSR version and 0x7100 the Tier-0 version of method 7.
    fn shaped(a: u64) -> Code {
        let (function, frame) = match a {
            0x1000..0x1100 => (1, FrameKind::Record),
            0x2000..0x2100 => (2, FrameKind::Frameless),
            0x3000..0x3100 => (3, FrameKind::Record),
            0x4000..0x4100 => (4, FrameKind::Record),
            0x5000..0x5300 => (5, FrameKind::Record),
            0x7000..0x7100 => (7, FrameKind::Osr),
            0x7100..0x7200 => (7, FrameKind::Record),
            _ => (0, FrameKind::Unknown),
        };
        Code { function, frame }
    }

    const LEAF: Code = Code {
        function: 9,
        frame: FrameKind::Record,
    };

    #[test]
    fn the_gap_of_a_method_with_a_record_is_not_searched() {
        // The record at +0x20 returns into 3, which keeps a record (+0x80): the old return
        // address into 5 at +0x40 is one of its locals.
        let s = stack(
            0x100,
            &[
                (0x20, SP + 0x80),
                (0x28, 0x3001),
                (0x40, 0x5001),
                (0x80, 0),
                (0x88, 0x1001),
            ],
        );
        let (out, _) = walk_stack(&s, 0x9999, SP + 0x20, LEAF, shaped);
        assert_eq!(out, vec![0x9999, 0x3000, 0x1000]);
    }

    #[test]
    fn the_gap_search_stops_at_the_first_method_with_a_record() {
        // 2 is frameless: its return into 4 lies in the gap; 4 keeps a record (+0x80), so
        // the return into 5 above it is stale.
        let s = stack(
            0x100,
            &[
                (0x20, SP + 0x80),
                (0x28, 0x2001),
                (0x40, 0x4001),
                (0x50, 0x5001),
                (0x80, 0),
                (0x88, 0x1001),
            ],
        );
        let (out, _) = walk_stack(&s, 0x9999, SP + 0x20, LEAF, shaped);
        assert_eq!(out, vec![0x9999, 0x2000, 0x4000, 0x1000]);
    }

    /// The stack of Main → RunHot → Worker (Tier-0, then OSR) → leaf, as the runtime
    /// leaves it: the OSR record (+0x40) saves RunHot's RBP and its return slot holds
    /// `fake`; the Tier-0 frame (+0x50..+0xb0) holds an old return into 5, and with
    /// `tier0_record` a stale record of an earlier callee of RunHot (+0x70) under its own
    /// record (+0xa0).
    fn osr_stack(fake: u64, tier0_record: bool) -> Vec<u8> {
        let mut words = vec![
            (0x20, SP + 0x40),
            (0x28, 0x7001),
            (0x40, SP + 0x100),
            (0x48, fake),
            (0x60, 0x5101),
            (0x100, 0),
            (0x108, 0x1001),
        ];
        if tier0_record {
            words.extend([
                (0x70, SP + 0x100),
                (0x78, 0x5201),
                (0xa0, SP + 0x100),
                (0xa8, 0x3001),
            ]);
        }
        stack(0x200, &words)
    }

    #[test]
    fn an_osr_frame_takes_its_caller_from_the_tier0_record() {
        for fake in [0x7101, 0x5001, 0] {
            let s = osr_stack(fake, true);
            let (out, w) = walk_stack(&s, 0x9999, SP + 0x20, LEAF, shaped);
            assert_eq!(out, vec![0x9999, 0x7000, 0x3000, 0x1000], "fake {fake:#x}");
            assert_eq!((w.end, w.osr_frames), (WalkEnd::Root, 1));
        }
    }

    #[test]
    fn an_osr_frame_as_leaf_is_recognised() {
        let s = osr_stack(0x7101, true);
        let c = Captured {
            ip: 0x7050,
            sp: SP + 0x30,
            fp: SP + 0x40,
            stack: &s[0x30..],
        };
        let mut out = vec![];
        walk(&c, shaped(0x7050), &mut out, 64, shaped);
        assert_eq!(out, vec![0x7050, 0x3000, 0x1000]);
    }

    #[test]
    fn without_a_tier0_record_the_osr_return_slot_is_used() {
        // The Tier-0 frame's return (0x7101) is merged by the sampler; RunHot is lost.
        let s = osr_stack(0x7101, false);
        let (out, w) = walk_stack(&s, 0x9999, SP + 0x20, LEAF, shaped);
        assert_eq!(out, vec![0x9999, 0x7000, 0x7100, 0x1000]);
        assert_eq!(w.osr_frames, 0);
    }

    #[test]
    fn prologs_are_read() {
        let k = FrameKind::of_prolog;
        assert_eq!(k(&[0x55, 0x48, 0x8b, 0xec]), FrameKind::Record);
        assert_eq!(k(&[0x48, 0x8b, 0x45, 0x00, 0x50, 0x48]), FrameKind::Osr);
        assert_eq!(k(&[0x53, 0x48, 0x83, 0xec]), FrameKind::Frameless);
        assert_eq!(k(&[]), FrameKind::Unknown);
    }

    proptest! {
        /// Arbitrary bytes and registers never panic, never loop, never exceed the limit.
        #[test]
        fn arbitrary_stacks_are_safe(
            bytes in proptest::collection::vec(any::<u8>(), 0..512),
            ip in any::<u64>(),
            sp in any::<u64>(),
            fp_off in any::<u64>(),
            max in 0usize..40,
        ) {
            let c = Captured { ip, sp, fp: sp.wrapping_add(fp_off % 600), stack: &bytes };
            let mut out = vec![];
            const KINDS: [FrameKind; 4] = [
                FrameKind::Unknown,
                FrameKind::Record,
                FrameKind::Osr,
                FrameKind::Frameless,
            ];
            walk(&c, Code::NONE, &mut out, max, |a| Code {
                function: a % 3,
                frame: KINDS[(a % 4) as usize],
            });
            prop_assert!(out.len() <= max);
        }
    }
}
