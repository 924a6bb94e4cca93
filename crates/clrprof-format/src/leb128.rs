//! Unsigned LEB128 integers: 7 bits per byte, least significant group first, high bit set
//! on every byte but the last. A `u64` takes 1 to 10 bytes.

/// The longest encoding of a `u64`.
pub const MAX_LEN: usize = 10;

/// Why an integer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LebError {
    /// The input ended inside the integer.
    Truncated,
    /// More than 64 bits (or more than the target width).
    Overflow,
}

/// Number of bytes `v` encodes to.
#[inline]
pub const fn len_u64(v: u64) -> usize {
    // 1 byte per started group of 7 significant bits; 0 still takes one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes `v` to the start of `buf` (which must hold at least [`len_u64`] bytes; extra
/// bytes are left alone) and returns the bytes written. Never panics: a too-short buffer
/// receives a prefix and the return value is then the number of bytes that fitted.
#[inline]
pub fn write_u64(buf: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    for slot in buf.iter_mut() {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        n += 1;
        if v == 0 {
            *slot = low;
            return n;
        }
        *slot = low | 0x80;
    }
    n
}

/// Writes `v` (below 2^35) as LEB128 at the start of `out` without a loop: its five
/// 7-bit groups spread into one little-endian word, continuation bits on all but the last
/// byte used, stored whole into `out`'s 8 bytes (those after the encoding are left for
/// the caller to overwrite). Returns the bytes the encoding takes: those [`write_u64`]
/// writes.
#[inline(always)]
pub fn put_u35_wide(out: &mut [u8], v: u64) -> usize {
    debug_assert!(v < 1 << 35);
    let n = len_u64(v);
    let groups = (v & 0x7f)
        | ((v << 1) & 0x7f00)
        | ((v << 2) & 0x7f_0000)
        | ((v << 3) & 0x7f00_0000)
        | ((v << 4) & 0x7f_0000_0000);
    let more = 0x80_8080_8080u64 & ((1u64 << (8 * (n - 1))) - 1);
    out[..8].copy_from_slice(&(groups | more).to_le_bytes());
    n
}

/// Appends `v` to `out`. Does not allocate when `out` has room for [`MAX_LEN`] more bytes.
#[inline]
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
    } else {
        let mut buf = [0u8; MAX_LEN];
        let n = write_u64(&mut buf, v);
        out.extend_from_slice(&buf[..n]);
    }
}

/// Reads a `u64` at `*pos`, advancing `*pos` past it. Overlong encodings (redundant zero
/// groups) are accepted as long as the value fits.
#[inline]
pub fn read_u64(bytes: &[u8], pos: &mut usize) -> Result<u64, LebError> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&b) = bytes.get(*pos) else {
            return Err(LebError::Truncated);
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(LebError::Overflow);
        }
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift > 63 {
            return Err(LebError::Overflow);
        }
    }
}

/// Reads a `u32` (a `u64` that must fit in 32 bits).
#[inline]
pub fn read_u32(bytes: &[u8], pos: &mut usize) -> Result<u32, LebError> {
    u32::try_from(read_u64(bytes, pos)?).map_err(|_| LebError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_stores_encode_as_write_u64() {
        let mut v = 0u64;
        while v < 1 << 35 {
            for x in [v, v.saturating_sub(1), v | 0x55] {
                let x = x.min((1 << 35) - 1);
                let mut a = [0xAAu8; 8];
                let mut b = [0xAAu8; 10];
                let n = put_u35_wide(&mut a, x);
                let m = write_u64(&mut b, x);
                assert_eq!((n, &a[..n]), (m, &b[..m]), "{x}");
            }
            v = (v << 1) | 1;
        }
    }

    #[test]
    fn known_encodings() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0]),
            (1, &[1]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for &(v, bytes) in cases {
            let mut out = Vec::new();
            put_u64(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(len_u64(v), bytes.len(), "{v}");
            let mut pos = 0;
            assert_eq!(read_u64(bytes, &mut pos), Ok(v));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn lengths_at_group_boundaries() {
        for k in 1..64 {
            let v = 1u64 << k;
            let mut out = Vec::new();
            put_u64(&mut out, v);
            assert_eq!(out.len(), len_u64(v));
            put_u64(&mut out, v - 1);
            assert_eq!(out.len() - len_u64(v), len_u64(v - 1));
        }
    }

    #[test]
    fn rejects_bad_input() {
        let mut pos = 0;
        assert_eq!(read_u64(&[], &mut pos), Err(LebError::Truncated));
        let mut pos = 0;
        assert_eq!(read_u64(&[0x80, 0x80], &mut pos), Err(LebError::Truncated));
        let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        let mut pos = 0;
        assert_eq!(read_u64(&too_big, &mut pos), Err(LebError::Overflow));
        let eleven = [0x80; 11];
        let mut pos = 0;
        assert_eq!(read_u64(&eleven, &mut pos), Err(LebError::Overflow));
        let mut pos = 0;
        assert_eq!(
            read_u32(&[0x80, 0x80, 0x80, 0x80, 0x10], &mut pos),
            Err(LebError::Overflow)
        );
        // Overlong but in range.
        let mut pos = 0;
        assert_eq!(read_u64(&[0x81, 0x00], &mut pos), Ok(1));
    }

    #[test]
    fn short_buffer_never_panics() {
        let mut buf = [0u8; 2];
        assert_eq!(write_u64(&mut buf, u64::MAX), 2);
    }
}
