//! The described classes by ClassID, for the assembly hooks: a fixed, lock-free table that
//! the runtime's callbacks fill ([`ClassTable::insert`], where planning may ask the
//! runtime) and the hooks read ([`ClassTable::get`]: a few atomic loads, no lock, no
//! allocation). In CoreCLR an object's ClassID is its method table, the first word of
//! the object (`SafeGetClassIDFromObject` → `TypeHandleToClassID` of the method table,
//! arrays included on .NET 8, 9 and 10), so a hook finds an argument's description from
//! the object alone.
//!
//! Bounded: [`SLOTS`] classes at most (open addressing, [`PROBES`] probes); a class that
//! finds no slot is counted ([`ClassTable::full`]) and its objects read as "class not
//! described yet". Descriptions are leaked on insertion and never freed, so a reader's
//! `&'static` stays valid: a class that unloads is withdrawn, but a hook may still be
//! reading its description. So the descriptions ever published are bounded too
//! ([`PUBLISHED_MAX`]): an app that loads and unloads collectible classes forever stops
//! having new ones described there, each counted with the classes that found no slot.

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::plan::ClassDesc;

/// Slots of the table (a power of two): 1 MiB of keys and pointers.
pub(super) const SLOTS: usize = 1 << 16;
/// Slots probed from a class's home before giving up.
const PROBES: usize = 32;
/// Descriptions published at most over the process's life (withdrawn ones included, whose
/// memory stays): four times the table.
pub(super) const PUBLISHED_MAX: u64 = 4 * SLOTS as u64;

pub(super) struct ClassTable {
    /// ClassIDs; 0 is a free slot. A key once set never changes.
    keys: Box<[AtomicUsize]>,
    /// The key's description, null until it is published (Release; readers Acquire).
    descs: Box<[AtomicPtr<ClassDesc>]>,
    /// Classes that found no slot, or came after `limit` descriptions.
    full: AtomicU64,
    /// Descriptions published so far (each one's memory is kept for good).
    published: AtomicU64,
    limit: u64,
}

impl ClassTable {
    /// A table of `slots` entries that publishes at most `limit` descriptions in all.
    pub(super) fn new(slots: usize, limit: u64) -> ClassTable {
        assert!(slots.is_power_of_two());
        ClassTable {
            keys: (0..slots).map(|_| AtomicUsize::new(0)).collect(),
            descs: (0..slots)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            full: AtomicU64::new(0),
            published: AtomicU64::new(0),
            limit,
        }
    }

    fn home(&self, class: usize) -> usize {
        // Method tables are 8-aligned: drop the zero bits, then spread (Fibonacci hashing).
        let h = ((class >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & (self.keys.len() - 1)
    }

    /// The description of `class`, if one was published. Lock-free, allocation-free.
    pub(super) fn get(&self, class: usize) -> Option<&'static ClassDesc> {
        if class == 0 {
            return None;
        }
        let mask = self.keys.len() - 1;
        let home = self.home(class);
        for i in 0..PROBES.min(self.keys.len()) {
            let at = (home + i) & mask;
            match self.keys[at].load(Ordering::Acquire) {
                0 => return None,
                k if k == class => {
                    let p = self.descs[at].load(Ordering::Acquire);
                    // SAFETY: (A1) a published pointer comes from `Arc::into_raw` in
                    // `insert` and is never released, so it stays valid for good.
                    return (!p.is_null()).then(|| unsafe { &*p });
                }
                _ => {}
            }
        }
        None
    }

    /// [`ClassTable::get`] as a counted reference (one atomic increment: for descriptions
    /// built from others, off the common path).
    pub(super) fn get_arc(&self, class: usize) -> Option<Arc<ClassDesc>> {
        let d: *const ClassDesc = self.get(class)?;
        // SAFETY: (A1) `d` came from `Arc::into_raw` and the table keeps its count for
        // good, so taking one more and rebuilding an `Arc` from it is sound.
        unsafe {
            Arc::increment_strong_count(d);
            Some(Arc::from_raw(d))
        }
    }

    /// Publishes `desc` for `class` (the first description wins; later ones are dropped).
    /// Returns whether the table holds a description of `class` now. Past the table's
    /// limit of descriptions, a class not published yet is refused and counted.
    pub(super) fn insert(&self, class: usize, desc: &Arc<ClassDesc>) -> bool {
        if class == 0 {
            return false;
        }
        if self.get(class).is_some() {
            return true;
        }
        // Callbacks insert one class at a time per thread; two racing past the limit by
        // one each are still bounded (by the number of threads).
        if self.published.load(Ordering::Relaxed) >= self.limit {
            self.full.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let mask = self.keys.len() - 1;
        let home = self.home(class);
        for i in 0..PROBES.min(self.keys.len()) {
            let at = (home + i) & mask;
            let key =
                match self.keys[at].compare_exchange(0, class, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => class,
                    Err(k) => k,
                };
            if key != class {
                continue;
            }
            let p = Arc::into_raw(desc.clone()) as *mut ClassDesc;
            if self.descs[at]
                .compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // SAFETY: (A1) `p` came from `Arc::into_raw` just above and was not
                // published: give the count back.
                drop(unsafe { Arc::from_raw(p) });
            } else {
                self.published.fetch_add(1, Ordering::Relaxed);
            }
            return true;
        }
        self.full.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Withdraws the descriptions `drop_it` picks (a class unloads: its method table may
    /// be reused). The key stays; a later [`ClassTable::insert`] of it publishes anew. The
    /// description itself is not freed (a hook may be reading it).
    pub(super) fn withdraw(&self, drop_it: impl Fn(usize, &ClassDesc) -> bool) {
        for (k, d) in self.keys.iter().zip(self.descs.iter()) {
            let p = d.load(Ordering::Acquire);
            // SAFETY: (A1) published pointers are never released (see `get`).
            if !p.is_null() && drop_it(k.load(Ordering::Acquire), unsafe { &*p }) {
                d.store(std::ptr::null_mut(), Ordering::Release);
            }
        }
    }

    pub(super) fn full(&self) -> u64 {
        self.full.load(Ordering::Relaxed)
    }
}

/// The process's table, made on first use (by a callback: the hooks only read it).
pub(super) fn table() -> &'static ClassTable {
    static_table().get_or_init(|| ClassTable::new(SLOTS, PUBLISHED_MAX))
}

/// The table if it exists yet: what the hooks use, so they never build it.
pub(super) fn existing() -> Option<&'static ClassTable> {
    static_table().get()
}

fn static_table() -> &'static OnceLock<ClassTable> {
    // One OnceLock shared by `table` and `existing`.
    static TABLE: OnceLock<ClassTable> = OnceLock::new();
    &TABLE
}

#[cfg(test)]
mod tests {
    use super::super::plan::Shape;
    use super::*;

    fn desc(name: &str) -> Arc<ClassDesc> {
        Arc::new(ClassDesc {
            name: name.into(),
            size: 0,
            shape: Shape::String,
        })
    }

    #[test]
    fn published_classes_are_found_and_others_are_not() {
        let t = ClassTable::new(64, 100);
        assert!(t.get(0x7f00_0000_1000).is_none());
        assert!(t.insert(0x7f00_0000_1000, &desc("A")));
        assert!(t.insert(0x7f00_0000_2000, &desc("B")));
        // The first description of a class stays.
        assert!(t.insert(0x7f00_0000_1000, &desc("A2")));
        assert_eq!(t.get(0x7f00_0000_1000).unwrap().name, "A");
        assert_eq!(t.get(0x7f00_0000_2000).unwrap().name, "B");
        assert!(t.get(0x7f00_0000_3000).is_none());
        assert!(t.get(0).is_none());
        assert!(!t.insert(0, &desc("zero")));
        // A class that unloads is withdrawn; its method table may be described anew.
        t.withdraw(|class, _| class == 0x7f00_0000_1000);
        assert!(t.get(0x7f00_0000_1000).is_none());
        assert_eq!(t.get(0x7f00_0000_2000).unwrap().name, "B");
        assert!(t.insert(0x7f00_0000_1000, &desc("C")));
        assert_eq!(t.get(0x7f00_0000_1000).unwrap().name, "C");
    }

    #[test]
    fn a_full_table_counts_what_it_could_not_hold() {
        let t = ClassTable::new(8, 100);
        for i in 1..=8usize {
            assert!(t.insert(i << 3, &desc("x")));
        }
        assert!(!t.insert(9 << 3, &desc("y")));
        assert_eq!(t.full(), 1);
        for i in 1..=8usize {
            assert!(t.get(i << 3).is_some(), "{i}");
        }
        assert!(t.get(9 << 3).is_none());
    }
    /// A class that unloads is withdrawn but its description stays (a hook may be reading
    /// it): an app that loads and unloads classes forever would grow without bound, so
    /// past the limit new classes are refused and counted, and the table stays usable.
    #[test]
    fn reloaded_classes_stop_being_described_at_the_limit() {
        let t = ClassTable::new(8, 12);
        let class = 0x7f00_0000_1000;
        for round in 0..12 {
            assert!(t.insert(class, &desc("gen")), "round {round}");
            assert!(
                t.insert(class, &desc("again")),
                "already there: no new description"
            );
            t.withdraw(|c, _| c == class);
            assert!(t.get(class).is_none());
        }
        assert_eq!(t.full(), 0);
        for round in 0..5 {
            assert!(!t.insert(class, &desc("gen")), "round {round}");
        }
        assert!(!t.insert(0x7f00_0000_2000, &desc("other")));
        assert_eq!(t.full(), 6);
        assert!(t.get(class).is_none());
    }
}
