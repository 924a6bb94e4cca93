//! Native code address → IL offset, on the sampler thread (never in the signal handler).
//!
//! Each managed frame of a sample is mapped through the IL → native map of the native code
//! version that holds its address: `GetNativeCodeStartAddresses` lists a method's versions
//! (Tier 0, Tier 1, OSR; ReadyToRun code is the default version's), `GetCodeInfo4` gives a
//! version's code ranges and `GetILToNativeMapping3` its map. Each version's map is read
//! once, on the first sample that lands in it, and cached by FunctionID; the cache is
//! bounded (cleared when it holds too many maps or addresses), so memory stays bounded
//! however many methods are sampled. Every version maps to IL of the same method body, so
//! Tier-0, Tier-1 and OSR frames of one method give the same IL offsets for the same
//! statement.

use clrprof_format::{IlPosition, position_of_il_offset};
use corprof::{FunctionId, IlToNative, ProfilerInfo, ReJitId};

use super::addrhash::AddrMap;

/// Methods whose versions are cached before the cache is cleared.
const MAX_FUNCTIONS: usize = 1 << 14;
/// Addresses whose position is cached before that cache is cleared.
const MAX_ADDRESSES: usize = 1 << 16;

/// One native code version of a method.
struct Body {
    /// Its code ranges, hot first: a native offset counts through them in this order.
    ranges: Vec<(u64, u64)>,
    /// Its IL → native map, sorted by native start.
    map: Vec<IlToNative>,
}

impl Body {
    /// The native offset of `addr` in this version, if the version holds it.
    fn offset_of(&self, addr: u64) -> Option<u64> {
        let mut before = 0u64;
        for &(start, size) in &self.ranges {
            if addr >= start && addr - start < size {
                return Some(before + (addr - start));
            }
            before += size;
        }
        None
    }
}

/// The IL position at native `offset` of a map sorted by native start: the entry whose
/// `[native_start, native_end)` holds it (the last such one), else the last entry that
/// starts at or before it; `None` for an empty map or an offset before every entry.
///
/// Code the JIT added without IL of its own (`NO_MAPPING`: a loop's GC poll, the call
/// of a helper) takes the IL offset of the nearest code before it that has one, as a
/// debugger's source view does: a thread the suspend sampler stopped at a loop's GC poll
/// is on the loop's line. `NoMapping` remains only when no code before it has IL.
pub fn position_in_map(map: &[IlToNative], offset: u64) -> Option<IlPosition> {
    let upto = map.partition_point(|m| u64::from(m.native_start) <= offset);
    let candidates = &map[..upto];
    let at = candidates
        .iter()
        .rposition(|m| offset < u64::from(m.native_end))
        .or(upto.checked_sub(1))?;
    let p = position_of_il_offset(candidates[at].il_offset);
    if p != Some(IlPosition::NoMapping) {
        return p;
    }
    candidates[..at]
        .iter()
        .rev()
        .find_map(|m| match position_of_il_offset(m.il_offset) {
            Some(IlPosition::Il(n)) => Some(IlPosition::Il(n)),
            _ => None,
        })
        .or(p)
}

/// Counters of what the maps answered, for the agent's log.
#[derive(Debug, Default, Clone, Copy)]
pub struct IlMapStats {
    /// Distinct code addresses of managed frames given a position.
    pub mapped: u64,
    /// Distinct code addresses of managed frames that no listed code version of their
    /// method holds, or whose version has no map.
    pub unmapped: u64,
    /// Code versions whose map was read.
    pub maps_read: u64,
    /// The first error the runtime answered a method's versions or a version's map with
    /// (e.g. `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` on a thread that may not trigger a GC).
    pub first_error: Option<corprof::HResult>,
}

#[derive(Default)]
pub struct IlMaps {
    /// False: positions are not asked for (every answer is `None`).
    enabled: bool,
    bodies: AddrMap<u64, Vec<Body>>,
    positions: AddrMap<u64, Option<IlPosition>>,
    pub stats: IlMapStats,
}

impl IlMaps {
    pub fn new(enabled: bool) -> IlMaps {
        IlMaps {
            enabled,
            ..IlMaps::default()
        }
    }

    /// Where in `function` the code at `addr` is (the IP of a leaf frame, a return address
    /// − 1 of a caller frame); `None` when the runtime gives no map for it.
    pub fn position(
        &mut self,
        info: &ProfilerInfo,
        function: u64,
        addr: u64,
    ) -> Option<IlPosition> {
        if !self.enabled {
            return None;
        }
        // Dynamic methods' code (live, or freed since): the runtime is never asked about
        // it (`dyncode`), and such methods have no source lines to map to.
        if super::dyncode::TABLE.find(addr) != super::dyncode::Found::Unknown {
            return None;
        }
        if let Some(&p) = self.positions.get(&addr) {
            return p;
        }
        if self.positions.len() >= MAX_ADDRESSES {
            self.positions.clear();
        }
        let mut p = self.lookup(function, addr);
        if p.is_none() {
            // A version not seen yet (a tier-up, an OSR version): read the method again.
            if !self.read_function(info, function) {
                // Refused on this thread: nothing is cached, so that a thread the runtime
                // answers maps it.
                return None;
            }
            p = self.lookup(function, addr);
        }
        if p.is_some() {
            self.stats.mapped += 1;
        } else {
            self.stats.unmapped += 1;
        }
        self.positions.insert(addr, p);
        p
    }

    /// Where in `function` the code at `addr` is, from the maps read already (no runtime
    /// call): `None` when they do not say yet (the method or that version of it not read),
    /// `Some(None)` when known to have no position.
    pub fn known(&self, function: u64, addr: u64) -> Option<Option<IlPosition>> {
        if !self.enabled {
            return Some(None);
        }
        if let Some(&p) = self.positions.get(&addr) {
            return Some(p);
        }
        self.lookup(function, addr).map(Some)
    }

    /// Whether `addr` lies in the code of one of `function`'s versions read already (no
    /// runtime call: false when they were not read).
    pub fn in_code_of(&self, function: u64, addr: u64) -> bool {
        self.bodies
            .get(&function)
            .is_some_and(|v| v.iter().any(|b| b.offset_of(addr).is_some()))
    }

    fn lookup(&self, function: u64, addr: u64) -> Option<IlPosition> {
        self.bodies.get(&function)?.iter().find_map(|b| {
            let off = b.offset_of(addr)?;
            position_in_map(&b.map, off)
        })
    }

    /// Reads `function`'s code versions and their maps; false, and nothing cached, when
    /// the runtime refused a call on this thread (`CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`).
    fn read_function(&mut self, info: &ProfilerInfo, function: u64) -> bool {
        if self.bodies.len() >= MAX_FUNCTIONS {
            self.bodies.clear();
        }
        let refused =
            |e: &corprof::HResult| *e == corprof::HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE;
        let starts =
            match info.get_native_code_start_addresses(FunctionId(function as usize), ReJitId(0)) {
                Ok(s) => s,
                Err(e) => {
                    self.stats.first_error.get_or_insert(e);
                    if refused(&e) {
                        return false;
                    }
                    Vec::new()
                }
            };
        let mut bodies = Vec::with_capacity(starts.len());
        for start in starts {
            let (ranges, mut map) = match (
                info.get_code_info4(start),
                info.get_il_to_native_mapping3(start),
            ) {
                (Ok(r), Ok(m)) => (r, m),
                (Err(e), _) | (_, Err(e)) => {
                    self.stats.first_error.get_or_insert(e);
                    if refused(&e) {
                        return false;
                    }
                    continue;
                }
            };
            map.sort_by_key(|m| m.native_start);
            self.stats.maps_read += 1;
            bodies.push(Body {
                ranges: ranges
                    .iter()
                    .map(|r| (r.start as u64, r.size as u64))
                    .collect(),
                map,
            });
        }
        self.bodies.insert(function, bodies);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(il_offset: i32, native_start: u32, native_end: u32) -> IlToNative {
        IlToNative {
            il_offset,
            native_start,
            native_end,
        }
    }

    #[test]
    fn positions_from_a_map() {
        let map = [
            m(-2, 0, 0x10),
            m(0, 0x10, 0x20),
            m(7, 0x20, 0x40),
            m(-1, 0x40, 0x48),
            m(12, 0x48, 0x60),
            m(-3, 0x60, 0x68),
        ];
        assert_eq!(position_in_map(&map, 0), Some(IlPosition::Prolog));
        assert_eq!(position_in_map(&map, 0x1f), Some(IlPosition::Il(0)));
        assert_eq!(position_in_map(&map, 0x20), Some(IlPosition::Il(7)));
        // Code without IL of its own: the IL of the code before it.
        assert_eq!(position_in_map(&map, 0x44), Some(IlPosition::Il(7)));
        assert_eq!(
            position_in_map(&[m(-2, 0, 8), m(-1, 8, 0x10)], 9),
            Some(IlPosition::NoMapping)
        );
        assert_eq!(position_in_map(&map, 0x50), Some(IlPosition::Il(12)));
        assert_eq!(position_in_map(&map, 0x61), Some(IlPosition::Epilog));
        // Past the last entry: the last one that started before.
        assert_eq!(position_in_map(&map, 0x100), Some(IlPosition::Epilog));
        assert_eq!(position_in_map(&[], 4), None);
        assert_eq!(position_in_map(&[m(3, 8, 9)], 4), None);
        // An empty entry at the same start as a real one: the one that holds the offset.
        let map = [m(5, 0x10, 0x10), m(9, 0x10, 0x18)];
        assert_eq!(position_in_map(&map, 0x12), Some(IlPosition::Il(9)));
    }

    #[test]
    fn offsets_count_through_the_ranges() {
        let b = Body {
            ranges: vec![(0x1000, 0x40), (0x9000, 0x20)],
            map: Vec::new(),
        };
        assert_eq!(b.offset_of(0x1000), Some(0));
        assert_eq!(b.offset_of(0x103f), Some(0x3f));
        assert_eq!(b.offset_of(0x1040), None);
        assert_eq!(b.offset_of(0x9004), Some(0x44));
        assert_eq!(b.offset_of(0x8fff), None);
    }
}
