//! Walking the blocks of a file: CRC checks, truncation, and resynchronisation after
//! damage by scanning for the next block magic whose CRC checks out.

use crate::block::{
    BLOCK_HEADER_LEN, BLOCK_HEADER_LEN_V1, BLOCK_MAGIC, BLOCK_MAGIC_V1, BlockHeader,
    MAX_BLOCK_PAYLOAD,
};
use crate::crc_range::CrcRanges;
use crate::warning::{DamageCause, Warning};

/// One step through the file.
pub(crate) enum Step<'a> {
    /// An intact block (CRC checked).
    Block {
        offset: usize,
        header: BlockHeader,
        payload: &'a [u8],
    },
    /// Bytes that could not be read as blocks.
    Damage {
        warning: Warning,
        bytes_skipped: u64,
        /// Whether this was one identifiable block (rather than unstructured bytes).
        block_skipped: bool,
    },
    End,
}

pub(crate) struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The file's blocks: format 2 (`BLK2`, 48-byte headers with a sequence number) or
    /// format 1 (`BLK1`, 40 bytes). A block of the other format is not one of this file.
    magic: [u8; 4],
    header_len: usize,
    done: bool,
    /// The last search: no intact block starts in `from..` before `found` (or at all, for
    /// `None`). Keeps repeated searches through a badly damaged file linear.
    searched: Option<(usize, Option<usize>)>,
    /// Payload bytes hashed to check CRCs; past twice the file's size (only a file with
    /// many overlapping block candidates gets there), CRCs of long payloads come from
    /// `ranges`, built once, in time independent of their length.
    hashed: u64,
    ranges: Option<CrcRanges>,
    /// The bytes are what has been written of a file so far: a block the bytes end inside
    /// is not damage but the next read's (see [`partial`](Self::partial)).
    partial: bool,
    /// Blocks an earlier pass over the same bytes found intact: their CRCs are not
    /// computed again ([`trusting`](Self::trusting)).
    trusted: crate::checked::CheckedBlocks,
}

/// Payloads shorter than this are always hashed directly.
const SHORT_PAYLOAD: usize = 512;

impl<'a> Scanner<'a> {
    pub fn new(bytes: &'a [u8], start: usize, major: u16) -> Scanner<'a> {
        let (magic, header_len) = if major >= 2 {
            (BLOCK_MAGIC, BLOCK_HEADER_LEN)
        } else {
            (BLOCK_MAGIC_V1, BLOCK_HEADER_LEN_V1)
        };
        Scanner {
            bytes,
            pos: start.min(bytes.len()),
            magic,
            header_len,
            done: false,
            searched: None,
            hashed: 0,
            ranges: None,
            partial: false,
            trusted: crate::checked::CheckedBlocks::default(),
        }
    }

    /// Takes `blocks`, which an earlier pass over these same bytes found intact, as
    /// intact: their CRCs are not computed again.
    pub fn trusting(mut self, blocks: crate::checked::CheckedBlocks) -> Scanner<'a> {
        self.trusted = blocks;
        self
    }

    /// Reads what has been written of a growing file: where the bytes end inside a block
    /// (or inside a block header), the scan ends there instead of reporting a truncated
    /// block, and [`position`](Self::position) is where the next read starts. Damage
    /// skipped before such a block is reported as usual, up to its start.
    pub fn partial(mut self) -> Scanner<'a> {
        self.partial = true;
        self
    }

    /// Whether this scan reads a growing file's bytes (see [`partial`](Self::partial)).
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// The offset the scan has reached: after an `End` of a [`partial`](Self::partial)
    /// scan, the start of the block the bytes end inside (or their end).
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn next_step(&mut self) -> Step<'a> {
        let (bytes, pos) = (self.bytes, self.pos);
        let rest = &bytes[pos..];
        if self.done || rest.is_empty() {
            self.done = true;
            return Step::End;
        }
        let (magic, header_len) = (self.magic, self.header_len);
        if rest.len() < header_len && self.partial {
            // The rest of this header (or whatever these bytes are) is still to come.
            self.done = true;
            return Step::End;
        }
        if rest.len() < header_len {
            self.done = true;
            self.pos = bytes.len();
            let magic_len = rest.len().min(magic.len());
            let warning = if rest[..magic_len] == magic[..magic_len] {
                Warning::TruncatedBlock {
                    offset: pos as u64,
                    present: rest.len() as u64,
                    needed: header_len as u64,
                }
            } else {
                Warning::Unrecoverable {
                    offset: pos as u64,
                    skipped: rest.len() as u64,
                    cause: DamageCause::NoMagic,
                }
            };
            return Step::Damage {
                warning,
                bytes_skipped: rest.len() as u64,
                block_skipped: magic_len == magic.len(),
            };
        }
        let Some(header) = self.parse(rest) else {
            return self.resync(DamageCause::NoMagic);
        };
        let len = u64::from(header.payload_len);
        if !header.is_plausible() {
            let records = u64::from(header.records_len);
            let lengths_fit = (len as usize).max(records as usize) <= MAX_BLOCK_PAYLOAD;
            return self.resync(if header.compressed() && lengths_fit {
                DamageCause::Inflated { len, records }
            } else {
                DamageCause::ImplausibleLength { len }
            });
        }
        let end = pos + header_len + header.payload_len as usize;
        if end > bytes.len() {
            // Either the file was cut inside this block or its length is damaged: only a
            // later intact block tells them apart.
            if let Some(next) = self.find_block(pos + 1) {
                return self.resync_to(Some(next), DamageCause::PastEnd { len });
            }
            self.done = true;
            if self.partial {
                // The rest of this block is still to come.
                return Step::End;
            }
            self.pos = bytes.len();
            return Step::Damage {
                warning: Warning::TruncatedBlock {
                    offset: pos as u64,
                    present: rest.len() as u64,
                    needed: header_len as u64 + len,
                },
                bytes_skipped: rest.len() as u64,
                block_skipped: true,
            };
        }
        let payload = &bytes[pos + header_len..end];
        if !self.crc_ok(pos, &header) {
            return self.skip_damaged_block(end);
        }
        self.pos = end;
        Step::Block {
            offset: pos,
            header,
            payload,
        }
    }

    /// After a CRC mismatch in the block at the current position ending (by its length) at
    /// `end`: skips just that block when its length leads to the end of the file or to
    /// another block, unless an intact block starts inside it (then the length is what is
    /// damaged, and reading resumes there).
    fn skip_damaged_block(&mut self, end: usize) -> Step<'a> {
        let pos = self.pos;
        let next = self.find_block(pos + 1);
        let after = &self.bytes[end..];
        let length_trusted = after.is_empty() || after.starts_with(&self.magic);
        if next.is_some_and(|n| n < end) || !length_trusted {
            return self.resync_to(next, DamageCause::CrcMismatch);
        }
        self.pos = end;
        Step::Damage {
            warning: Warning::CrcMismatch {
                offset: pos as u64,
                len: (end - pos) as u64,
            },
            bytes_skipped: (end - pos) as u64,
            block_skipped: true,
        }
    }

    /// Whether the block at `at` with header `h` (its payload within the file) matches
    /// its CRC.
    fn crc_ok(&mut self, at: usize, h: &BlockHeader) -> bool {
        if !self.trusted.0.is_empty()
            && self
                .trusted
                .0
                .binary_search_by_key(&(at as u64), |b| b.0)
                .is_ok()
        {
            return true;
        }
        let bytes = self.bytes;
        let len = h.payload_len as usize;
        let (start, end) = (at + self.header_len, at + self.header_len + len);
        let budget = 2 * bytes.len() as u64;
        if len < SHORT_PAYLOAD || (self.ranges.is_none() && self.hashed + len as u64 <= budget) {
            self.hashed += len as u64;
            return h.crc_matches(&bytes[start..end]);
        }
        let table = self.ranges.get_or_insert_with(|| CrcRanges::new(bytes));
        let mut head = h.to_bytes();
        head[8..12].fill(0);
        let head_crc = crc32fast::hash(&head[..self.header_len]);
        table.combine(head_crc, table.range(bytes, start, end), len) == h.crc
    }

    /// A block header of this file's format at the start of `bytes`.
    fn parse(&self, bytes: &[u8]) -> Option<BlockHeader> {
        BlockHeader::parse(bytes).filter(|h| h.header_len() == self.header_len)
    }

    /// Skips from the current position to the next intact block, or to the end.
    fn resync(&mut self, cause: DamageCause) -> Step<'a> {
        let next = self.find_block(self.pos + 1);
        self.resync_to(next, cause)
    }

    /// Skips to `next` (the next intact block, if any) or to the end.
    fn resync_to(&mut self, next: Option<usize>, cause: DamageCause) -> Step<'a> {
        let pos = self.pos;
        // A growing file whose bytes end inside what may be a block: the next read
        // starts there.
        let next = next.or_else(|| self.partial_start(pos + 1));
        let (warning, next) = match next {
            Some(next) => (
                Warning::Resynchronized {
                    offset: pos as u64,
                    resumed_at: next as u64,
                    skipped: (next - pos) as u64,
                    cause,
                },
                next,
            ),
            None => {
                self.done = true;
                let end = self.bytes.len();
                let skipped = (end - pos) as u64;
                (
                    Warning::Unrecoverable {
                        offset: pos as u64,
                        skipped,
                        cause,
                    },
                    end,
                )
            }
        };
        self.pos = next;
        Step::Damage {
            warning,
            bytes_skipped: (next - pos) as u64,
            block_skipped: false,
        }
    }

    /// In a [`partial`](Self::partial) scan, where the next read starts after damage with
    /// no intact block after it: the first offset at or after `from` where a block the
    /// bytes end inside may start (a prefix of a block header, or a plausible header whose
    /// payload goes past the end), else the end of the bytes.
    fn partial_start(&self, from: usize) -> Option<usize> {
        if !self.partial {
            return None;
        }
        let (bytes, header_len, magic) = (self.bytes, self.header_len, self.magic);
        let start = (from..bytes.len()).find(|&i| {
            let rest = &bytes[i..];
            if rest.len() < header_len {
                let n = rest.len().min(magic.len());
                return rest[..n] == magic[..n];
            }
            self.parse(rest).is_some_and(|h| {
                h.is_plausible() && i + header_len + h.payload_len as usize > bytes.len()
            })
        });
        Some(start.unwrap_or(bytes.len()))
    }

    /// Offset of the first intact block (magic, plausible lengths, CRC) at or after `from`.
    fn find_block(&mut self, from: usize) -> Option<usize> {
        if let Some((start, found)) = self.searched
            && start <= from
            && found.is_none_or(|f| from <= f)
        {
            return found;
        }
        let found = self.search(from);
        self.searched = Some((from, found));
        found
    }

    fn search(&mut self, from: usize) -> Option<usize> {
        let (bytes, header_len) = (self.bytes, self.header_len);
        let mut i = from;
        while i + header_len <= bytes.len() {
            i += bytes[i..].iter().position(|&b| b == self.magic[0])?;
            if let Some(h) = self.parse(&bytes[i..])
                && h.is_plausible()
            {
                let end = i + header_len + h.payload_len as usize;
                if end <= bytes.len() && self.crc_ok(i, &h) {
                    return Some(i);
                }
            }
            i += 1;
        }
        None
    }
}
