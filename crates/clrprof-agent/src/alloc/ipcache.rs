//! The address cache of the in-place stack walk (`ownstack`): code address → what it is,
//! a fixed-size table of atomics that any thread reads and writes without a lock.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::stackwalk::fpwalk::{Code, FrameKind};

/// What a code address (a return address − 1) is: the managed function and its frame
/// shape (function 0: not managed), and whether a `call` precedes it in executable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub code: Code,
    pub call: bool,
}

impl Entry {
    pub const NONE: Entry = Entry {
        code: Code::NONE,
        call: false,
    };
}

/// Code address → [`Entry`], lock-free: slot `i` holds `key = addr ^ value` and
/// `value = function << 4 | call << 3 | kind`, so a reader that sees a key and a value of
/// two different writes finds `key ^ value != addr` and treats it as a miss (Hyatt's
/// lockless hashing). An empty slot (0, 0) matches no address but 0, which is never asked.
/// "Not in an executable mapping (yet)" is kept as `epoch << 4 | TRANSIENT` and holds only
/// in that epoch: the JIT may map new code there.
pub struct IpCache<const N: usize> {
    keys: [AtomicU64; N],
    values: [AtomicU64; N],
}

impl<const N: usize> IpCache<N> {
    pub const fn new() -> Self {
        IpCache {
            keys: [const { AtomicU64::new(0) }; N],
            values: [const { AtomicU64::new(0) }; N],
        }
    }

    fn slot(addr: u64) -> usize {
        (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % N
    }

    pub fn get(&self, addr: u64, epoch: u64) -> Option<Entry> {
        let i = Self::slot(addr);
        let value = self.values[i].load(Ordering::Relaxed);
        let key = self.keys[i].load(Ordering::Relaxed);
        if key ^ value != addr || addr == 0 {
            return None;
        }
        if value & TRANSIENT != 0 {
            return (value >> 4 == epoch & EPOCH_MASK).then_some(Entry::NONE);
        }
        Some(Entry {
            code: Code {
                function: value >> 4,
                frame: match value & 3 {
                    1 => FrameKind::Record,
                    2 => FrameKind::Osr,
                    3 => FrameKind::Frameless,
                    _ => FrameKind::Unknown,
                },
            },
            call: value & 8 != 0,
        })
    }

    /// Keeps "not code in this epoch" for `addr`.
    pub fn put_transient(&self, addr: u64, epoch: u64) {
        let value = ((epoch & EPOCH_MASK) << 4) | TRANSIENT;
        let i = Self::slot(addr);
        self.values[i].store(value, Ordering::Relaxed);
        self.keys[i].store(addr ^ value, Ordering::Relaxed);
    }

    pub fn put(&self, addr: u64, e: Entry) {
        let kind = match e.code.frame {
            FrameKind::Unknown => 0,
            FrameKind::Record => 1,
            FrameKind::Osr => 2,
            FrameKind::Frameless => 3,
        };
        let value = (e.code.function << 4) | (u64::from(e.call) << 3) | kind;
        let i = Self::slot(addr);
        self.values[i].store(value, Ordering::Relaxed);
        self.keys[i].store(addr ^ value, Ordering::Relaxed);
    }

    /// Forgets everything (a reader meanwhile may still see an old entry).
    pub fn clear(&self) {
        for i in 0..N {
            self.keys[i].store(0, Ordering::Relaxed);
            self.values[i].store(0, Ordering::Relaxed);
        }
    }
}

const TRANSIENT: u64 = 4;
const EPOCH_MASK: u64 = (1 << 59) - 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keeps_what_was_put_and_misses_the_rest() {
        let c = IpCache::<64>::new();
        assert_eq!(c.get(0x1000, 0), None);
        assert_eq!(c.get(0, 0), None);
        let code = Entry {
            code: Code {
                function: 0x7f00_1234_5678,
                frame: FrameKind::Osr,
            },
            call: true,
        };
        c.put(0x1000, code);
        assert_eq!(c.get(0x1000, 0), Some(code));
        c.put(0x2000, Entry::NONE);
        assert_eq!(c.get(0x2000, 0), Some(Entry::NONE));
        // Another address in the same slot replaces it.
        let other = (1..10_000u64)
            .map(|k| 0x1000 + 64 * k)
            .find(|&a| IpCache::<64>::slot(a) == IpCache::<64>::slot(0x1000))
            .unwrap();
        c.put(other, Entry::NONE);
        assert_eq!(c.get(0x1000, 0), None);
        assert_eq!(c.get(other, 0), Some(Entry::NONE));
        c.clear();
        assert_eq!(c.get(other, 0), None);
    }

    #[test]
    fn not_code_holds_for_its_epoch_only() {
        let c = IpCache::<64>::new();
        c.put_transient(0x3000, 7);
        assert_eq!(c.get(0x3000, 7), Some(Entry::NONE));
        assert_eq!(c.get(0x3000, 8), None);
    }

    #[test]
    fn a_torn_slot_is_a_miss() {
        let c = IpCache::<64>::new();
        let a = Entry {
            code: Code {
                function: 0x10,
                frame: FrameKind::Record,
            },
            call: true,
        };
        c.put(0x1000, a);
        let i = IpCache::<64>::slot(0x1000);
        // Another writer's value landed, its key not yet.
        c.values[i].store(0x99 << 4, Ordering::Relaxed);
        assert_eq!(c.get(0x1000, 0), None);
    }
}
