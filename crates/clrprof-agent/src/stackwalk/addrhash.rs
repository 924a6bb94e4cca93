//! The sampler's hash for its caches, keyed by code addresses, FunctionIDs and thread ids
//! (integers): one multiply-rotate per word instead of SipHash, whose cost showed in the
//! sampler thread's profile at 999 Hz (the walks look up every return-address candidate).
//! Not for keys an outsider chooses: these are the process's own addresses.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`AddrHasher`].
pub(crate) type AddrMap<K, V> = HashMap<K, V, BuildHasherDefault<AddrHasher>>;

/// FxHash's mixing step on whole words; `finish` folds the high bits down, as hashbrown
/// takes the bucket from the low bits and the tag from the top seven.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(K);
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_addresses_spread_over_buckets() {
        // Return addresses 16 bytes apart and thread ids in a row: the low bits differ.
        let mut map: AddrMap<u64, u64> = AddrMap::default();
        for i in 0..10_000u64 {
            map.insert(0x7f00_1234_0000 + 16 * i, i);
        }
        assert_eq!(map.len(), 10_000);
        assert_eq!(map.get(&(0x7f00_1234_0000 + 16 * 777)), Some(&777));
        let buckets: std::collections::HashSet<u64> = (0..256u64)
            .map(|i| {
                let mut h = AddrHasher::default();
                h.write_u64(0x7f00_1234_0000 + 16 * i);
                h.finish() & 255
            })
            .collect();
        assert!(buckets.len() > 128, "{} of 256 buckets", buckets.len());
        let mut a = AddrHasher::default();
        a.write_u64(1);
        a.write_u64(2);
        let mut b = AddrHasher::default();
        b.write_u64(2);
        b.write_u64(1);
        assert_ne!(a.finish(), b.finish());
    }
}
