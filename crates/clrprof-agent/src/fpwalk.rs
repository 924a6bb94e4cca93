//! Frame-pointer walk over a copied stack (pure logic, no memory access outside the copy).
//!
//! The signal sampler (`sigsample.rs`) captures, on the sampled thread itself, the
//! registers RIP/RSP/RBP and a copy of the stack from RSP upwards. This module turns that
//! copy into code addresses, leaf first, on the sampler thread.
//!
//! Why frame pointers work for .NET on Linux x64: the JIT defines `ETW_EBP_FRAMED` for
//! UNIX_AMD64_ABI (dotnet/runtime `src/coreclr/jit/targetamd64.h`), so RBP is never a
//! scratch register and most methods build an RBP frame; libcoreclr is built with frame
//! pointers too. Two gaps are handled here:
//! - a *frameless* leaf (small JIT'd methods, assembly helpers, or any function in its
//!   prologue/epilogue) leaves RBP pointing at its caller's frame, so the first
//!   `[RBP+8]` skips the caller. If the word at RSP is a return address into code (the
//!   `is_code` classifier decides) and differs from that first `[RBP+8]`, it is the
//!   missing caller;
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

/// A stack captured by the signal handler: registers plus `stack[i] == *(sp + i)`.
pub struct Captured<'a> {
    pub ip: u64,
    pub sp: u64,
    pub fp: u64,
    pub stack: &'a [u8],
}

impl Captured<'_> {
    /// The 8-byte word at `addr`, when the copy holds all of it.
    fn word(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let bytes = self.stack.get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// `is_code` names the managed method containing an address (0: not managed code).
/// Appends code addresses to `out`, leaf first: the interrupted IP, then one *return
/// address minus one* per caller (so that a call at the very end of a method still maps
/// to that method). At most `max` addresses.
pub fn walk(
    c: &Captured<'_>,
    out: &mut Vec<u64>,
    max: usize,
    mut is_code: impl FnMut(u64) -> u64,
) -> WalkEnd {
    if max == 0 {
        return WalkEnd::Limit;
    }
    out.push(c.ip);
    let mut produced = 1usize;
    let first_return = c.word(c.fp.wrapping_add(8));
    if let Some(r0) = c.word(c.sp)
        && r0 > 1
        && Some(r0) != first_return
        && is_code(r0 - 1) != 0
    {
        if produced == max {
            return WalkEnd::Limit;
        }
        out.push(r0 - 1);
        produced += 1;
    }
    let mut fp = c.fp;
    let mut resumes = 0;
    // Everything below this address has been walked: scans start here.
    let mut floor = c.sp;
    loop {
        if fp == 0 && floor == c.sp && resumes == 0 {
            // RBP 0 at the interrupted point is not the root: code without frame pointers
            // (glibc's futex and syscall paths) keeps other values in it.
            match resume(c, floor, &mut is_code) {
                Some(at) => {
                    resumes += 1;
                    fp = at;
                    continue;
                }
                None => return WalkEnd::Root,
            }
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
            Some((_, ret)) if ret <= 1 => return WalkEnd::Root,
            Some(r) => r,
            None if valid && fp.wrapping_sub(c.sp) >= c.stack.len() as u64 => {
                return WalkEnd::OutsideCopy;
            }
            None => {
                // RBP is not a frame pointer here (code built without them, e.g. libc,
                // was interrupted): find the next frame record whose return address is
                // code, above everything walked so far.
                match resume(c, floor, &mut is_code) {
                    Some(at) if resumes < MAX_RESUMES => {
                        resumes += 1;
                        fp = at;
                        continue;
                    }
                    _ => return WalkEnd::Root,
                }
            }
        };
        if produced == max {
            return WalkEnd::Limit;
        }
        out.push(ret - 1);
        produced += 1;
        // Frames grow towards higher addresses as the walk goes to the root; anything else
        // is not a frame chain (and could loop).
        floor = fp + 16;
        let owner = is_code(ret - 1);
        if next > fp && owner != 0 {
            // The gap above this record belongs to managed code (the method this record
            // returns into). When that method is frameless, its own return address lies
            // in the gap: recover returns into other managed methods found there.
            let mut at = floor;
            let mut last = owner;
            let gap_end = next.min(floor.saturating_add(GAP_BYTES));
            while at < gap_end {
                if let Some(w) = c.word(at)
                    && (4096..0x8000_0000_0000).contains(&w)
                    && let f = is_code(w - 1)
                    && f != 0
                    && f != last
                {
                    last = f;
                    if produced == max {
                        return WalkEnd::Limit;
                    }
                    out.push(w - 1);
                    produced += 1;
                }
                at += 8;
            }
        }
        if next <= fp {
            if next == 0 {
                return WalkEnd::Root;
            }
            match resume(c, floor, &mut is_code) {
                Some(at) if resumes < MAX_RESUMES => {
                    resumes += 1;
                    fp = at;
                    continue;
                }
                _ => return WalkEnd::Root,
            }
        }
        fp = next;
    }
}

/// How much of the gap between two frame records is searched for frameless frames.
const GAP_BYTES: u64 = 1024;

/// How often one walk may resume by scanning after a broken link.
const MAX_RESUMES: u32 = 4;

/// How far (bytes) a resume scans before giving up.
const SCAN_BYTES: u64 = 16 * 1024;

/// Scans `[from, from + SCAN_BYTES)` for a frame record: a saved RBP pointing higher up
/// the copied stack, followed by a return address that `is_code` accepts.
fn resume(c: &Captured<'_>, from: u64, is_code: &mut impl FnMut(u64) -> u64) -> Option<u64> {
    let mut at = from.checked_add(7)? & !7;
    let end = from.saturating_add(SCAN_BYTES);
    while at < end {
        let (Some(saved), Some(ret)) = (c.word(at), c.word(at.wrapping_add(8))) else {
            return None;
        };
        if saved > at
            && saved.is_multiple_of(8)
            && saved.wrapping_sub(c.sp) < c.stack.len() as u64
            && (4096..0x8000_0000_0000).contains(&ret)
            && is_code(ret - 1) != 0
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
        let c = Captured {
            ip: 0x9999,
            sp: SP,
            fp: SP + 0x20,
            stack: &s,
        };
        let mut out = vec![];
        let end = walk(&c, &mut out, 64, |_| 0);
        assert_eq!(out, vec![0x9999, 0x1110, 0x2221, 0x3332]);
        assert_eq!(end, WalkEnd::Root);
    }

    #[test]
    fn frameless_leaf_gets_its_caller_from_the_word_at_sp() {
        // [sp] is the return address into the caller; rbp is the caller's frame, whose
        // [rbp+8] returns into the caller's caller.
        let s = stack(0x100, &[(0x0, 0x5555), (0x40, 0), (0x48, 0x6666)]);
        let c = Captured {
            ip: 0x9999,
            sp: SP,
            fp: SP + 0x40,
            stack: &s,
        };
        let mut out = vec![];
        walk(&c, &mut out, 64, |a| u64::from(a == 0x5554));
        assert_eq!(out, vec![0x9999, 0x5554, 0x6665]);
    }

    #[test]
    fn word_at_sp_equal_to_the_first_return_is_not_doubled() {
        let s = stack(0x100, &[(0x0, 0x5555), (0x40, 0), (0x48, 0x5555)]);
        let c = Captured {
            ip: 0x9999,
            sp: SP,
            fp: SP + 0x40,
            stack: &s,
        };
        let mut out = vec![];
        walk(&c, &mut out, 64, |_| 1);
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
        let c = Captured {
            ip: 0x9999,
            sp: SP,
            fp: 0x1234,
            stack: &s,
        };
        let mut out = vec![];
        let end = walk(&c, &mut out, 64, |a| u64::from(a == 0x5554 || a == 0x6665));
        assert_eq!(out, vec![0x9999, 0x5554, 0x6665]);
        assert_eq!(end, WalkEnd::Root);
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
        let c = Captured {
            ip: 0x9999,
            sp: SP,
            fp: SP + 0x20,
            stack: &s,
        };
        let mut out = vec![];
        walk(&c, &mut out, 64, |a| match a {
            0x4443 => 2,
            0x1110 => 1,
            _ => 0,
        });
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
        assert_eq!(walk(&c, &mut out, 64, |_| 0), WalkEnd::OutsideCopy);
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
        assert_eq!(walk(&c, &mut out, 2, |_| 0), WalkEnd::Limit);
        assert_eq!(out.len(), 2);
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
            walk(&c, &mut out, max, |a| a % 3);
            prop_assert!(out.len() <= max);
        }
    }
}
