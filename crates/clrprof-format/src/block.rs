//! The block header: 48 bytes (magic `BLK2`, format 2), or 40 (magic `BLK1`, format 1,
//! which had no sequence number). All integers little-endian.
//!
//! ```text
//! offset size
//!      0    4  magic "BLK2" ("BLK1" in format 1)
//!      4    4  payload length on disk (u32), at most 64 MiB
//!      8    4  CRC-32 of this header with this field zeroed, then the payload on disk
//!     12    4  flags (u32): bit 0 = payload is an LZ4 block; bit 1 = once decompressed,
//!              the payload is 16-byte units (see `units`), not records; bit 2 = it is
//!              compact 8-byte words (see `compact`, 1.3); other bits reserved (0)
//!     16    8  os_tid of the thread whose events these are (u64; 0 = process-wide)
//!     24    8  base_ts (u64): the tick value the first record's timestamp delta is
//!              relative to
//!     32    4  record count (u32)
//!     36    4  records length (u32): payload length once decompressed (= payload
//!              length when not compressed), at most 64 MiB
//!     40    8  seq (u64, format 2 only): the block's number in the writer's sequence,
//!              0 for its first block, one more for each block it wrote (or tried to)
//! ```

/// First 4 bytes of every block of a format 2 file.
pub const BLOCK_MAGIC: [u8; 4] = *b"BLK2";
/// First 4 bytes of every block of a format 1 file.
pub const BLOCK_MAGIC_V1: [u8; 4] = *b"BLK1";
/// Size of a block header (format 2).
pub const BLOCK_HEADER_LEN: usize = 48;
/// Size of a format 1 block header (no sequence number).
pub const BLOCK_HEADER_LEN_V1: usize = 40;
/// Largest ratio of decompressed to compressed size LZ4 can reach (a run of one byte:
/// 255 bytes of length per byte of input, rounded up); a block claiming more is damaged.
pub const MAX_LZ4_RATIO: usize = 256;
/// The largest ratio of records to compressed payload a format 2 writer produces: a block
/// that would compress better is written uncompressed instead, and a reader refuses a
/// compressed format 2 block that claims more (an LZ4 bomb), so a small file never
/// inflates into a large one.
pub const MAX_LZ4_RATIO_WRITTEN: usize = 32;
/// Largest payload (on disk or decompressed) a reader accepts; larger means corruption.
pub const MAX_BLOCK_PAYLOAD: usize = 64 << 20;
/// Flag bit: the payload is an LZ4 block (no size prefix; the size is `records_len`).
pub const FLAG_LZ4: u32 = 1;
/// Flag bit: the (decompressed) payload is agent ring units, see [`units`](crate::units).
/// `record_count` then counts units.
pub const FLAG_UNITS: u32 = 2;
/// Flag bit (1.3): the (decompressed) payload is compact 8-byte ring words, see
/// [`compact`](crate::compact). `record_count` then counts words.
pub const FLAG_COMPACT: u32 = 4;
/// Flag bits this version understands.
pub const KNOWN_FLAGS: u32 = FLAG_LZ4 | FLAG_UNITS | FLAG_COMPACT;

/// A decoded block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHeader {
    /// Bytes of payload on disk after the header.
    pub payload_len: u32,
    /// CRC-32 of the header (CRC field zeroed) followed by the payload.
    pub crc: u32,
    pub flags: u32,
    /// OS thread id of the thread whose events these are; 0 = process-wide.
    pub os_tid: u64,
    /// Absolute tick value the first record's timestamp delta is relative to.
    pub base_ts: u64,
    pub record_count: u32,
    /// Length of the records once decompressed.
    pub records_len: u32,
    /// The block's number in its writer's sequence (format 2); `None` for a format 1
    /// block, which has none (and a 40-byte header).
    pub seq: Option<u64>,
}

impl BlockHeader {
    /// Whether the payload is LZ4-compressed.
    pub fn compressed(&self) -> bool {
        self.flags & FLAG_LZ4 != 0
    }

    /// Whether the payload is ring units rather than records.
    pub fn units(&self) -> bool {
        self.flags & FLAG_UNITS != 0
    }

    /// Whether the payload is compact ring words (1.3) rather than records.
    pub fn compact(&self) -> bool {
        self.flags & FLAG_COMPACT != 0
    }

    /// The length of this header on disk: 48 bytes, or 40 for a format 1 block.
    pub fn header_len(&self) -> usize {
        if self.seq.is_some() {
            BLOCK_HEADER_LEN
        } else {
            BLOCK_HEADER_LEN_V1
        }
    }

    /// The header's bytes (the first [`header_len`](Self::header_len) of them), CRC field included as
    /// stored in `self.crc`.
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        match self.seq {
            Some(seq) => {
                b[0..4].copy_from_slice(&BLOCK_MAGIC);
                b[40..48].copy_from_slice(&seq.to_le_bytes());
            }
            None => b[0..4].copy_from_slice(&BLOCK_MAGIC_V1),
        }
        b[4..8].copy_from_slice(&self.payload_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.crc.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.os_tid.to_le_bytes());
        b[24..32].copy_from_slice(&self.base_ts.to_le_bytes());
        b[32..36].copy_from_slice(&self.record_count.to_le_bytes());
        b[36..40].copy_from_slice(&self.records_len.to_le_bytes());
        b
    }

    /// Reads a header from the start of `bytes`, of either format (the magic says which):
    /// `None` when the magic is neither or fewer bytes than the header are given.
    /// Plausibility and CRC are checked separately.
    pub fn parse(bytes: &[u8]) -> Option<BlockHeader> {
        let magic = bytes.get(..4)?;
        let v2 = if magic == BLOCK_MAGIC {
            true
        } else if magic == BLOCK_MAGIC_V1 {
            false
        } else {
            return None;
        };
        let b = bytes.get(
            ..if v2 {
                BLOCK_HEADER_LEN
            } else {
                BLOCK_HEADER_LEN_V1
            },
        )?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(v)
        };
        Some(BlockHeader {
            payload_len: u32_at(4),
            crc: u32_at(8),
            flags: u32_at(12),
            os_tid: u64_at(16),
            base_ts: u64_at(24),
            record_count: u32_at(32),
            records_len: u32_at(36),
            seq: v2.then(|| u64_at(40)),
        })
    }

    /// Whether the lengths can be those of a block this format writes: at most 64 MiB
    /// each, equal when not compressed, and when compressed no more records than the
    /// writer makes of the payload ([`MAX_LZ4_RATIO_WRITTEN`]; for a format 1 block, what
    /// LZ4 can make of it, [`MAX_LZ4_RATIO`]), so a reader never inflates a small block
    /// into a huge buffer.
    pub fn is_plausible(&self) -> bool {
        let (len, records) = (self.payload_len as usize, self.records_len as usize);
        let ratio = if self.seq.is_some() {
            MAX_LZ4_RATIO_WRITTEN
        } else {
            MAX_LZ4_RATIO
        };
        len <= MAX_BLOCK_PAYLOAD
            && records <= MAX_BLOCK_PAYLOAD
            && if self.compressed() {
                records <= len.saturating_mul(ratio)
            } else {
                len == records
            }
    }

    /// The CRC this header and `payload` should carry.
    pub fn compute_crc(&self, payload: &[u8]) -> u32 {
        let mut bytes = self.to_bytes();
        bytes[8..12].fill(0);
        let mut h = crc32fast::Hasher::new();
        h.update(&bytes[..self.header_len()]);
        h.update(payload);
        h.finalize()
    }

    /// Whether `payload` (and this header) match the stored CRC.
    pub fn crc_matches(&self, payload: &[u8]) -> bool {
        self.compute_crc(payload) == self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks() {
        let mut h = BlockHeader {
            payload_len: 3,
            crc: 0,
            flags: 0,
            os_tid: 0x1122_3344_5566_7788,
            base_ts: 0x99,
            record_count: 1,
            records_len: 3,
            seq: None,
        };
        h.crc = h.compute_crc(b"abc");
        let bytes = h.to_bytes();
        assert_eq!(BlockHeader::parse(&bytes), Some(h));
        assert!(h.crc_matches(b"abc"));
        assert!(!h.crc_matches(b"abd"));
        // The CRC covers header fields too.
        let other_tid = BlockHeader { os_tid: 1, ..h };
        assert!(!other_tid.crc_matches(b"abc"));
        assert!(!BlockHeader { base_ts: 0x98, ..h }.crc_matches(b"abc"));
        assert!(h.is_plausible());
        assert!(
            !BlockHeader {
                records_len: 4,
                ..h
            }
            .is_plausible()
        );
        assert!(BlockHeader::parse(&bytes[..39]).is_none());

        // Format 2: 48 bytes, the sequence number covered by the CRC.
        let mut h2 = BlockHeader { seq: Some(7), ..h };
        h2.crc = h2.compute_crc(b"abc");
        assert_ne!(h2.crc, h.crc);
        let bytes = h2.to_bytes();
        assert_eq!(&bytes[..4], b"BLK2");
        assert_eq!(BlockHeader::parse(&bytes), Some(h2));
        assert!(BlockHeader::parse(&bytes[..47]).is_none());
        assert!(!BlockHeader { seq: Some(8), ..h2 }.crc_matches(b"abc"));
        // A compressed block cannot claim more than LZ4 can make of its payload.
        let lz = BlockHeader {
            flags: FLAG_LZ4,
            payload_len: 1000,
            records_len: 32_000,
            ..h2
        };
        assert!(lz.is_plausible());
        assert!(
            !BlockHeader {
                records_len: 32_001,
                ..lz
            }
            .is_plausible()
        );
        let lz1 = BlockHeader {
            seq: None,
            records_len: 256_000,
            ..lz
        };
        assert!(lz1.is_plausible());
        assert!(
            !BlockHeader {
                records_len: 256_001,
                ..lz1
            }
            .is_plausible()
        );
    }
}
