//! The two runtime events `--alloc` reads, decoded from their EventPipe payloads (pure).
//!
//! Layouts (ClrEtwAll.man, little endian, pointers 8 bytes on x64):
//! - `GCAllocationTick_V4` (id 10, keyword GC 0x1, verbose): AllocationAmount u32,
//!   AllocationKind u32, ClrInstanceID u16, AllocationAmount64 u64, TypeID ptr,
//!   TypeName UTF-16z, HeapIndex u32, Address ptr, ObjectSize u64 (V3 has no ObjectSize).
//! - `AllocationSampled` (id 303, keyword AllocationSampling 0x80000000000, .NET 10):
//!   AllocationKind u32, ClrInstanceID u16, TypeID ptr, TypeName UTF-16z, HeapIndex u32,
//!   Address ptr, ObjectSize u64, SampledByteOffset u64. Some descriptions of the event
//!   leave HeapIndex out: the length after the name tells which.

/// `GCAllocationTick` event id.
pub const ALLOCATION_TICK: u32 = 10;
/// `AllocationSampled` event id.
pub const ALLOCATION_SAMPLED: u32 = 303;

/// One decoded allocation event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// The type's `TypeID` (a MethodTable pointer, which is the profiler's ClassID).
    pub class: u64,
    /// The object's address (its ObjectID), 0 when the event does not carry it.
    pub address: u64,
    /// The object's size in bytes.
    pub size: u64,
    /// AllocationTick: bytes allocated since the previous tick; 0 for AllocationSampled.
    pub amount: u64,
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// Skips a NUL-terminated UTF-16 string.
    fn skip_utf16z(&mut self) -> Option<()> {
        loop {
            if self.u16()? == 0 {
                return Some(());
            }
        }
    }
    fn left(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }
}

/// Decodes `GCAllocationTick` version 2 or later (`None` for anything shorter).
pub fn allocation_tick(data: &[u8]) -> Option<Allocation> {
    let mut r = Reader { data, pos: 0 };
    let amount32 = r.u32()?;
    let _kind = r.u32()?;
    let _clr = r.u16()?;
    let amount = r.u64().unwrap_or(u64::from(amount32));
    let class = r.u64()?;
    r.skip_utf16z()?;
    let _heap = r.u32()?;
    let address = r.u64().unwrap_or(0);
    let size = r.u64().unwrap_or(0);
    Some(Allocation {
        class,
        address,
        size,
        amount,
    })
}

/// Decodes `AllocationSampled`.
pub fn allocation_sampled(data: &[u8]) -> Option<Allocation> {
    let mut r = Reader { data, pos: 0 };
    let _kind = r.u32()?;
    let _clr = r.u16()?;
    let class = r.u64()?;
    r.skip_utf16z()?;
    if r.left() >= 4 + 8 + 8 + 8 {
        let _heap = r.u32()?;
    }
    let address = r.u64()?;
    let size = r.u64()?;
    Some(Allocation {
        class,
        address,
        size,
        amount: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str, out: &mut Vec<u8>) {
        for u in s.encode_utf16().chain([0]) {
            out.extend_from_slice(&u.to_le_bytes());
        }
    }

    #[test]
    fn tick_v4() {
        let mut d = Vec::new();
        d.extend_from_slice(&102_500u32.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&7u16.to_le_bytes());
        d.extend_from_slice(&102_500u64.to_le_bytes());
        d.extend_from_slice(&0x7f00_1000u64.to_le_bytes());
        name("System.Byte[]", &mut d);
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&0x7e00_0040u64.to_le_bytes());
        d.extend_from_slice(&1048u64.to_le_bytes());
        assert_eq!(
            allocation_tick(&d),
            Some(Allocation {
                class: 0x7f00_1000,
                address: 0x7e00_0040,
                size: 1048,
                amount: 102_500
            })
        );
        // Cut anywhere before the address: no event.
        for n in 0..30 {
            assert_eq!(allocation_tick(&d[..n]), None, "{n}");
        }
    }

    #[test]
    fn sampled_with_and_without_heap_index() {
        for heap_index in [true, false] {
            let mut d = Vec::new();
            d.extend_from_slice(&1u32.to_le_bytes());
            d.extend_from_slice(&7u16.to_le_bytes());
            d.extend_from_slice(&0x7f00_2000u64.to_le_bytes());
            name("System.String", &mut d);
            if heap_index {
                d.extend_from_slice(&3u32.to_le_bytes());
            }
            d.extend_from_slice(&0x7e00_0080u64.to_le_bytes());
            d.extend_from_slice(&2022u64.to_le_bytes());
            d.extend_from_slice(&100u64.to_le_bytes());
            assert_eq!(
                allocation_sampled(&d),
                Some(Allocation {
                    class: 0x7f00_2000,
                    address: 0x7e00_0080,
                    size: 2022,
                    amount: 0
                })
            );
        }
        assert_eq!(allocation_sampled(&[1, 2, 3]), None);
    }
}
