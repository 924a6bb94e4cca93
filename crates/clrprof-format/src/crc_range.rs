//! CRC-32 of any range of a file in time independent of the range's length, from the CRCs
//! of its prefixes: what keeps resynchronisation linear when a crafted file is full of
//! fake block headers, each claiming a long payload whose CRC would otherwise be computed
//! again and again.
//!
//! CRC-32 is linear over GF(2): for byte strings A and B,
//! `crc(A‖B) = crc(A)·x^(8|B|) mod P ⊕ crc(B)` (zlib's `crc32_combine`). So with the CRC
//! of every 64-byte-aligned prefix, the CRC of `[a, b)` is the difference of two prefixes
//! between the aligned ends, and the ragged ends (< 64 bytes each) are hashed directly.

/// The reflected CRC-32 polynomial (IEEE), as `crc32fast` uses.
const POLY: u32 = 0xedb8_8320;
/// Prefix CRCs are kept every this many bytes.
const STEP: usize = 64;

/// `a·b mod P` in the reflected representation (bit 31 is x⁰).
fn mult(a: u32, mut b: u32) -> u32 {
    let mut m: u32 = 1 << 31;
    let mut p = 0;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        m >>= 1;
    }
    p
}

/// The CRCs of the aligned prefixes of one file, and the powers of x to shift by.
pub(crate) struct CrcRanges {
    /// `prefix[k]` = CRC-32 of `bytes[..k·STEP]`.
    prefix: Vec<u32>,
    /// `x^(8·16^j·d) mod P` for digit `d` of a byte count in base 16, position `j`.
    powers: [[u32; 16]; 16],
}

impl CrcRanges {
    pub fn new(bytes: &[u8]) -> CrcRanges {
        let mut prefix = Vec::with_capacity(bytes.len() / STEP + 1);
        let mut h = crc32fast::Hasher::new();
        prefix.push(0);
        for chunk in bytes.chunks_exact(STEP) {
            h.update(chunk);
            prefix.push(h.clone().finalize());
        }
        // x^8 (one byte) in the reflected representation is 1 << (31 - 8).
        let mut powers = [[0u32; 16]; 16];
        let mut base = 1u32 << 23;
        for row in &mut powers {
            row[0] = 1 << 31;
            for d in 1..16 {
                row[d] = mult(row[d - 1], base);
            }
            base = mult(row[15], base);
        }
        CrcRanges { prefix, powers }
    }

    /// `x^(8·n) mod P`: shifting a CRC past `n` bytes.
    fn shift(&self, mut n: u64) -> u32 {
        let mut p = 1 << 31;
        let mut j = 0;
        while n != 0 {
            let d = (n & 15) as usize;
            if d != 0 {
                p = mult(p, self.powers[j][d]);
            }
            n >>= 4;
            j += 1;
        }
        p
    }

    /// `crc(A‖B)` from `crc(A)`, `crc(B)` and `|B|`.
    pub fn combine(&self, a: u32, b: u32, b_len: usize) -> u32 {
        mult(self.shift(b_len as u64), a) ^ b
    }

    /// CRC-32 of `bytes[start..end]`, `bytes` being the file the table was built from.
    pub fn range(&self, bytes: &[u8], start: usize, end: usize) -> u32 {
        let (a, b) = (start.div_ceil(STEP), end / STEP);
        if a >= b {
            return crc32fast::hash(&bytes[start..end]);
        }
        let head = crc32fast::hash(&bytes[start..a * STEP]);
        let mid_len = (b - a) * STEP;
        let mid = self.prefix[b] ^ mult(self.shift(mid_len as u64), self.prefix[a]);
        let tail = crc32fast::hash(&bytes[b * STEP..end]);
        let head_mid = self.combine(head, mid, mid_len);
        self.combine(head_mid, tail, end - b * STEP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_direct_hashing() {
        let mut x = 7u32;
        let bytes: Vec<u8> = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let t = CrcRanges::new(&bytes);
        for (s, e) in [
            (0, 0),
            (0, 5000),
            (1, 4999),
            (63, 65),
            (64, 128),
            (100, 3000),
            (4990, 5000),
        ] {
            assert_eq!(
                t.range(&bytes, s, e),
                crc32fast::hash(&bytes[s..e]),
                "{s}..{e}"
            );
        }
        let (a, b) = (&bytes[..777], &bytes[777..2000]);
        assert_eq!(
            t.combine(crc32fast::hash(a), crc32fast::hash(b), b.len()),
            crc32fast::hash(&bytes[..2000])
        );
    }
}
