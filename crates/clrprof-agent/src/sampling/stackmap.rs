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

use std::collections::HashMap;

/// A thread's own stack mapping `[lo, hi)` and its thread pointer; all 0: unknown (copy
/// with `process_vm_readv`).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub lo: u64,
    pub hi: u64,
    pub tp: u64,
}

/// Per (managed thread, OS thread id): its stack's bounds, learnt once.
#[derive(Default)]
pub(super) struct StackBounds {
    known: HashMap<(u64, u32), Bounds>,
}

impl StackBounds {
    /// The thread's bounds, or unknown ones.
    pub(super) fn get(&self, thread: u64, os_tid: u32) -> Bounds {
        self.known
            .get(&(thread, os_tid))
            .copied()
            .unwrap_or_default()
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
        self.known.insert((thread, os_tid), bounds);
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
        return (readable_writable && own).then_some(Bounds { lo, hi, tp });
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
        s.known.insert(
            (1, 10),
            Bounds {
                lo: 1,
                hi: 2,
                tp: 3,
            },
        );
        s.known.insert((2, 20), Bounds::default());
        s.learn(1, 10, 0, 99);
        assert_eq!(
            s.get(1, 10),
            Bounds {
                lo: 1,
                hi: 2,
                tp: 3
            }
        );
        s.prune(&[(1, 10)]);
        assert_eq!(s.get(2, 20), Bounds::default());
        assert_eq!(s.known.len(), 1);
    }
}
