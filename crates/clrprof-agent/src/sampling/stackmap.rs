//! Where each sampled thread's stack lies, so that its SIGPROF handler can copy the stack
//! with a plain `memcpy` instead of a `process_vm_readv` system call.
//!
//! Learnt once per thread, after its first capture (taken with `process_vm_readv`), from
//! `/proc/self/maps`: the mapping that holds the captured RSP, accepted only when it is the
//! thread's own stack for as long as the thread lives: the main thread's `[stack]`, or the
//! glibc thread stack that also holds the thread's control block (the thread pointer,
//! `fs:0`, points into the top of the stack glibc allocated for it). The handler then
//! copies with `memcpy` only when it runs on that same thread (same thread pointer) and
//! RSP lies inside the mapping, at most up to the mapping's end: every byte from RSP to
//! the top of a live thread's own stack is mapped, so the copy cannot fault. Anything else
//! (an alternate signal stack, a thread not learnt yet) takes the `process_vm_readv` path.
//!
//! The top of that mapping is not all stack: above the thread's first frame glibc keeps
//! its control block and the static TLS of every module (the main thread: its arguments
//! and environment). So the sampler also learns, per thread, how far up its walks read
//! (the first frame's record lies at the same place for the thread's whole life), and
//! from then on the handler copies only up to there, plus a margin ([`Bounds::top`]):
//! on the `crunch` scenario's threads 2 KiB instead of 5.7. A walk that runs out of such
//! a copy makes the thread learn again with whole copies.

use crate::stackwalk::addrhash::AddrMap;
use crate::stackwalk::fpwalk::WalkEnd;

/// Walks ending at the thread's first frame, with whole copies, before copies stop at
/// the highest address they read.
const LEARN_WALKS: u32 = 4;

/// Copied above the highest address the learning walks read.
const TOP_MARGIN: u64 = 512;

/// A thread's own stack mapping `[lo, hi)` and its thread pointer; all 0: unknown (copy
/// with `process_vm_readv`).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub lo: u64,
    pub hi: u64,
    pub tp: u64,
    /// Where a copy stops (`lo < top <= hi`): above the highest address the thread's
    /// walks read; 0 until learnt (copies go up to `hi`).
    pub top: u64,
}

/// One thread's bounds and what its walks taught so far.
#[derive(Clone, Copy, Default, Debug)]
struct Known {
    bounds: Bounds,
    /// Walks that ended at the first frame with a whole copy, and the highest address
    /// they read.
    walks: u32,
    reach: u64,
}

/// Per (managed thread, OS thread id): its stack's bounds, learnt once.
#[derive(Default)]
pub(super) struct StackBounds {
    known: AddrMap<(u64, u32), Known>,
}

/// One walk of a copy taken with a thread's [`Bounds`]: where the copy began (SP), how
/// many bytes it held, how far the walk read into it and where the walk ended.
#[derive(Clone, Copy, Debug)]
pub(super) struct Walked {
    pub(super) sp: u64,
    pub(super) copied: usize,
    pub(super) reach: usize,
    pub(super) end: WalkEnd,
}

impl StackBounds {
    /// The thread's bounds, or unknown ones.
    pub(super) fn get(&self, thread: u64, os_tid: u32) -> Bounds {
        self.known
            .get(&(thread, os_tid))
            .map(|k| k.bounds)
            .unwrap_or_default()
    }

    /// After a walk of the thread's copy, taken with the bounds [`get`](Self::get) gave:
    /// learns where its copies may stop, or forgets it when the walk needed more (then
    /// true: the walk ran out of a copy cut at the learnt top).
    pub(super) fn walked(&mut self, thread: u64, os_tid: u32, w: Walked) -> bool {
        let Some(k) = self.known.get_mut(&(thread, os_tid)) else {
            return false;
        };
        let b = &mut k.bounds;
        if b.hi == 0 || !(b.lo <= w.sp && w.sp < b.hi) {
            return false; // not a memcpy of the thread's own stack
        }
        let end = w.sp.saturating_add(w.copied as u64);
        if b.top != 0 {
            if w.sp < b.top && end >= b.top && end < b.hi && w.end == WalkEnd::OutsideCopy {
                // The copy stopped at the learnt top and the walk wanted more: whole
                // copies again until the thread's walks are learnt anew.
                b.top = 0;
                k.walks = 0;
                k.reach = 0;
                return true;
            }
            return false;
        }
        if w.end != WalkEnd::Root {
            return false;
        }
        k.reach = k.reach.max(w.sp.saturating_add(w.reach as u64));
        k.walks += 1;
        if k.walks >= LEARN_WALKS {
            let top = k.reach.saturating_add(TOP_MARGIN).next_multiple_of(64);
            b.top = if top < b.hi { top } else { b.hi };
        }
        false
    }

    /// After a capture by `process_vm_readv` at `sp` on the thread whose thread pointer is
    /// `tp`: learns the thread's stack mapping, once (an unsuitable one is remembered as
    /// unknown, so /proc/self/maps is read once per thread).
    pub(super) fn learn(&mut self, thread: u64, os_tid: u32, sp: u64, tp: u64) {
        if tp == 0 || self.known.contains_key(&(thread, os_tid)) {
            return;
        }
        let bounds = std::fs::read_to_string("/proc/self/maps")
            .ok()
            .and_then(|maps| own_stack(&maps, sp, tp))
            .unwrap_or_default();
        self.known.insert(
            (thread, os_tid),
            Known {
                bounds,
                ..Known::default()
            },
        );
    }

    /// Forgets threads that are no longer registered (keeps the map as small as the
    /// registry, and a thread id reused by a new thread is learnt again).
    pub(super) fn prune(&mut self, threads: &[(u64, u32)]) {
        if self.known.len() > threads.len() {
            self.known.retain(|k, _| threads.contains(k));
        }
    }
}

/// The thread's own stack mapping in `maps` (text of /proc/self/maps): the readable,
/// writable mapping holding `sp` that is either `[stack]` or also holds `tp`.
pub fn own_stack(maps: &str, sp: u64, tp: u64) -> Option<Bounds> {
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if !(lo <= sp && sp < hi) {
            continue;
        }
        let readable_writable = perms.starts_with("rw");
        let path = fields.nth(3).unwrap_or("");
        let own = path == "[stack]" || (lo <= tp && tp < hi);
        return (readable_writable && own).then_some(Bounds { lo, hi, tp, top: 0 });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
7f0000000000-7f0000001000 ---p 00000000 00:00 0
7f0000001000-7f0000200000 rw-p 00000000 00:00 0
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00100000 rw-p 00000000 00:00 0                          [stack]
7ffd00000000-7ffd00001000 r--p 00000000 00:00 0                          [vvar]
";

    #[test]
    fn a_thread_stack_holds_its_thread_pointer() {
        let b = own_stack(MAPS, 0x7f0000100000, 0x7f00001ff000).unwrap();
        assert_eq!(
            (b.lo, b.hi, b.tp),
            (0x7f0000001000, 0x7f0000200000, 0x7f00001ff000)
        );
    }

    #[test]
    fn a_mapping_without_the_thread_pointer_is_not_its_stack() {
        // RSP on another anonymous mapping (an alternate signal stack, say).
        assert_eq!(own_stack(MAPS, 0x7f0000250000, 0x7f00001ff000), None);
    }

    #[test]
    fn the_main_thread_stack_is_named() {
        let b = own_stack(MAPS, 0x7ffc00000100, 0x5555_0000).unwrap();
        assert_eq!((b.lo, b.hi), (0x7ffc00000000, 0x7ffc00100000));
    }

    #[test]
    fn guard_pages_and_unknown_addresses_are_refused() {
        assert_eq!(own_stack(MAPS, 0x7f0000000800, 0x7f0000000900), None);
        assert_eq!(own_stack(MAPS, 0x1000, 0x1000), None);
        assert_eq!(own_stack(MAPS, 0x7ffd00000010, 0x7ffd00000020), None);
    }

    #[test]
    fn learnt_once_and_pruned_with_the_registry() {
        let mut s = StackBounds::default();
        let b = Bounds {
            lo: 1,
            hi: 2,
            tp: 3,
            top: 0,
        };
        s.known.insert(
            (1, 10),
            Known {
                bounds: b,
                ..Known::default()
            },
        );
        s.known.insert((2, 20), Known::default());
        s.learn(1, 10, 0, 99);
        assert_eq!(s.get(1, 10), b);
        s.prune(&[(1, 10)]);
        assert_eq!(s.get(2, 20), Bounds::default());
        assert_eq!(s.known.len(), 1);
    }

    const LO: u64 = 0x7f00_0000_0000;
    const HI: u64 = LO + 0x20_0000;

    fn one_thread() -> StackBounds {
        let mut s = StackBounds::default();
        s.known.insert(
            (1, 10),
            Known {
                bounds: Bounds {
                    lo: LO,
                    hi: HI,
                    tp: HI - 0x1000,
                    top: 0,
                },
                ..Known::default()
            },
        );
        s
    }

    fn walk(sp: u64, copied: u64, reach: u64, end: WalkEnd) -> Walked {
        Walked {
            sp,
            copied: copied as usize,
            reach: reach as usize,
            end,
        }
    }

    #[test]
    fn copies_stop_above_what_the_first_walks_read() {
        let mut s = one_thread();
        // Whole copies (SP up to the mapping's end, 6 KiB); the walks read 1.5 KiB of them.
        let sp = HI - 6144;
        for i in 0..LEARN_WALKS {
            assert_eq!(s.get(1, 10).top, 0, "learnt after {i} walks");
            s.walked(
                1,
                10,
                walk(sp, 6144, 1536 - 8 * u64::from(i), WalkEnd::Root),
            );
        }
        // The highest address read, plus the margin, rounded up to a cache line.
        let top = s.get(1, 10).top;
        assert_eq!(top, (sp + 1536 + TOP_MARGIN).next_multiple_of(64));
        assert!(top < HI);
        // Walks that did not reach the first frame teach nothing.
        let mut t = one_thread();
        for _ in 0..2 * LEARN_WALKS {
            t.walked(1, 10, walk(sp, 6144, 6144, WalkEnd::OutsideCopy));
            t.walked(1, 10, walk(sp, 6144, 800, WalkEnd::Limit));
        }
        assert_eq!(t.get(1, 10).top, 0);
        // Nor do copies that were not the thread's own stack.
        let mut t = one_thread();
        for _ in 0..2 * LEARN_WALKS {
            t.walked(1, 10, walk(LO - 0x10_0000, 4096, 100, WalkEnd::Root));
        }
        assert_eq!(t.get(1, 10).top, 0);
    }

    #[test]
    fn a_walk_that_ran_out_of_a_cut_copy_learns_again() {
        let mut s = one_thread();
        let sp = HI - 6144;
        for _ in 0..LEARN_WALKS {
            s.walked(1, 10, walk(sp, 6144, 1024, WalkEnd::Root));
        }
        let top = s.get(1, 10).top;
        assert_ne!(top, 0);
        // A deeper stack, copied up to the top, walked to its first frame: kept.
        let deeper = sp - 4096;
        assert!(!s.walked(1, 10, walk(deeper, top - deeper, 5000, WalkEnd::Root)));
        assert_eq!(s.get(1, 10).top, top);
        // A whole copy (RBP pointed above the top) that the walk ran out of: nothing was
        // cut, and nothing changes.
        assert!(!s.walked(1, 10, walk(sp, HI - sp, HI - sp, WalkEnd::OutsideCopy)));
        assert_eq!(s.get(1, 10).top, top);
        // A copy cut at the top that the walk ran out of: whole copies again.
        let cut = walk(deeper, top - deeper, top - deeper, WalkEnd::OutsideCopy);
        assert!(s.walked(1, 10, cut));
        assert_eq!(s.get(1, 10).top, 0);
        // ... and learnt anew from the next walks, higher if they read higher.
        for _ in 0..LEARN_WALKS {
            s.walked(1, 10, walk(sp, 6144, 3000, WalkEnd::Root));
        }
        assert_eq!(
            s.get(1, 10).top,
            (sp + 3000 + TOP_MARGIN).next_multiple_of(64)
        );
    }

    #[test]
    fn the_top_never_passes_the_mapping() {
        let mut s = one_thread();
        let sp = HI - 1024;
        for _ in 0..LEARN_WALKS {
            s.walked(1, 10, walk(sp, 1024, 1024, WalkEnd::Root));
        }
        assert_eq!(s.get(1, 10).top, HI);
    }
}
