//! Writing blocks: header, CRC and (optionally) LZ4 compression, handed to the writer in
//! one vectored write so a killed process leaves whole blocks behind (bar the last).

use std::io::{self, IoSlice, Write};

use crate::block::{
    BLOCK_HEADER_LEN, BlockHeader, FLAG_COMPACT, FLAG_LZ4, FLAG_UNITS, MAX_BLOCK_PAYLOAD,
    MAX_LZ4_RATIO_WRITTEN,
};

/// Writes one block holding `records` (whole encoded records, `record_count` of them) for
/// thread `os_tid` (0 = process-wide). `seq` is the block's number in the writer's
/// sequence (0 for its first block, then one more for each block); the reader checks it
/// to find lost and duplicated blocks. `base_ts` is the tick value the first record's
/// timestamp delta is relative to (the absolute timestamp of the record before it in
/// the thread's stream; 0 for a stream's first block). With `compress`, the payload is
/// LZ4-compressed unless that does not make it smaller (or makes it more than
/// [`MAX_LZ4_RATIO_WRITTEN`] times smaller, which a reader refuses). Uncompressed blocks are
/// written without allocating; compressed ones allocate a buffer (use [`BlockWriter`] to
/// reuse one).
#[allow(clippy::too_many_arguments)]
pub fn write_block<W: Write + ?Sized>(
    w: &mut W,
    seq: u64,
    os_tid: u64,
    base_ts: u64,
    record_count: u32,
    records: &[u8],
    compress: bool,
) -> io::Result<()> {
    let mut scratch = Vec::new();
    let head = BlockStart {
        seq,
        os_tid,
        base_ts,
        record_count,
    };
    write_block_with_scratch(w, &mut scratch, head, records, compress).map(|_| ())
}

/// The header fields a writer chooses (the rest are computed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStart {
    /// The block's number in the writer's sequence: 0, 1, 2 … one per block written or
    /// attempted (a block that could not be written leaves a gap the reader reports).
    pub seq: u64,
    /// OS thread id of the thread whose events these are; 0 = process-wide.
    pub os_tid: u64,
    /// Tick value the first record's timestamp delta is relative to.
    pub base_ts: u64,
    pub record_count: u32,
}

/// [`write_block`] with a caller-owned compression buffer (kept between calls, so steady
/// state does not allocate). Returns the bytes written (header included).
pub fn write_block_with_scratch<W: Write + ?Sized>(
    w: &mut W,
    scratch: &mut Vec<u8>,
    start: BlockStart,
    records: &[u8],
    compress: bool,
) -> io::Result<usize> {
    write_flagged(w, scratch, start, records, compress, 0)
}

/// Writes one block of ring units ([`units`](crate::units)) for thread `os_tid`: the
/// agent's fast path in trace mode, where the reader, not the writer, encodes records.
/// `units.len()` must be a multiple of 16; the block's record count is the unit count.
pub fn write_units_block<W: Write + ?Sized>(
    w: &mut W,
    scratch: &mut Vec<u8>,
    seq: u64,
    os_tid: u64,
    units: &[u8],
    compress: bool,
) -> io::Result<usize> {
    if !units.len().is_multiple_of(crate::units::UNIT) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a unit block must hold whole 16-byte units",
        ));
    }
    let start = BlockStart {
        seq,
        os_tid,
        base_ts: 0,
        record_count: (units.len() / crate::units::UNIT) as u32,
    };
    write_flagged(w, scratch, start, units, compress, FLAG_UNITS)
}

/// Writes one block of compact ring words ([`compact`](crate::compact), format 1.3) for
/// thread `os_tid`: trace mode's ring memory as it is. `words.len()` must be a multiple
/// of 8; the block's record count is the word count.
pub fn write_compact_block<W: Write + ?Sized>(
    w: &mut W,
    scratch: &mut Vec<u8>,
    seq: u64,
    os_tid: u64,
    words: &[u8],
    compress: bool,
) -> io::Result<usize> {
    if !words.len().is_multiple_of(crate::compact::WORD) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a compact block must hold whole 8-byte words",
        ));
    }
    let start = BlockStart {
        seq,
        os_tid,
        base_ts: 0,
        record_count: (words.len() / crate::compact::WORD) as u32,
    };
    write_flagged(w, scratch, start, words, compress, FLAG_COMPACT)
}

fn write_flagged<W: Write + ?Sized>(
    w: &mut W,
    scratch: &mut Vec<u8>,
    start: BlockStart,
    records: &[u8],
    compress: bool,
    flags: u32,
) -> io::Result<usize> {
    if records.len() > MAX_BLOCK_PAYLOAD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "block of {} bytes exceeds the {MAX_BLOCK_PAYLOAD}-byte limit; write smaller blocks",
                records.len()
            ),
        ));
    }
    let records_len = records.len() as u32;
    let mut header = BlockHeader {
        payload_len: records_len,
        crc: 0,
        flags,
        os_tid: start.os_tid,
        base_ts: start.base_ts,
        record_count: start.record_count,
        records_len,
        seq: Some(start.seq),
    };
    let mut payload = records;
    if compress && !records.is_empty() {
        scratch.clear();
        scratch.resize(lz4_flex::block::get_maximum_output_size(records.len()), 0);
        if let Ok(n) = lz4_flex::block::compress_into(records, scratch)
            && n < records.len()
            && n * MAX_LZ4_RATIO_WRITTEN >= records.len()
        {
            header.flags |= FLAG_LZ4;
            header.payload_len = n as u32;
            payload = &scratch[..n];
        }
    }
    header.crc = header.compute_crc(payload);
    let head = header.to_bytes();
    let mut bufs = [IoSlice::new(&head), IoSlice::new(payload)];
    write_all_vectored(w, &mut bufs)?;
    Ok(BLOCK_HEADER_LEN + payload.len())
}

/// `Write::write_all_vectored` (unstable in std): a single `writev` for files in the
/// common case.
fn write_all_vectored<W: Write + ?Sized>(
    w: &mut W,
    mut bufs: &mut [IoSlice<'_>],
) -> io::Result<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A sink of blocks that keeps its compression buffer between blocks and numbers them.
#[derive(Debug)]
pub struct BlockWriter<W> {
    inner: W,
    scratch: Vec<u8>,
    blocks: u64,
    bytes: u64,
}

impl<W: Write> BlockWriter<W> {
    pub fn new(inner: W) -> BlockWriter<W> {
        BlockWriter {
            inner,
            scratch: Vec::new(),
            blocks: 0,
            bytes: 0,
        }
    }

    /// Writes one block, numbered with the count of blocks before it; see
    /// [`write_block`]. Returns the bytes written.
    pub fn write_block(
        &mut self,
        os_tid: u64,
        base_ts: u64,
        record_count: u32,
        records: &[u8],
        compress: bool,
    ) -> io::Result<usize> {
        let start = BlockStart {
            seq: self.blocks,
            os_tid,
            base_ts,
            record_count,
        };
        let n =
            write_block_with_scratch(&mut self.inner, &mut self.scratch, start, records, compress)?;
        self.blocks += 1;
        self.bytes += n as u64;
        Ok(n)
    }

    /// Blocks written so far.
    pub fn blocks_written(&self) -> u64 {
        self.blocks
    }

    /// Bytes written so far (headers included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts at most 5 bytes per call, to exercise partial vectored writes.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(5);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_writes_complete_the_block() {
        let mut t = Trickle(Vec::new());
        write_block(&mut t, 0, 7, 3, 0, b"0123456789", false).unwrap();
        let mut v = Vec::new();
        write_block(&mut v, 0, 7, 3, 0, b"0123456789", false).unwrap();
        assert_eq!(t.0, v);
        assert_eq!(v.len(), BLOCK_HEADER_LEN + 10);
        let h = BlockHeader::parse(&v).unwrap();
        assert!(h.crc_matches(&v[BLOCK_HEADER_LEN..]));
    }

    #[test]
    fn compresses_only_when_smaller() {
        let mut w = BlockWriter::new(Vec::new());
        // 256 pseudo-random bytes, 16 times: about 16 times smaller compressed.
        let mut x = 12345u32;
        let chunk: Vec<u8> = (0..256)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let repetitive = chunk.repeat(16);
        let n = w.write_block(1, 0, 0, &repetitive, true).unwrap();
        assert!(n < 4096 / 4, "{n}");
        let h = BlockHeader::parse(w.get_ref()).unwrap();
        assert!(h.compressed());
        assert_eq!((h.records_len, h.seq), (4096, Some(0)));
        // Compressed beyond the ratio a reader accepts: written as it is.
        let mut w = BlockWriter::new(Vec::new());
        w.write_block(1, 0, 0, &[7u8; 4096], true).unwrap();
        w.write_block(1, 0, 0, &[7u8; 4096], true).unwrap();
        let h = BlockHeader::parse(w.get_ref()).unwrap();
        assert!(!h.compressed());
        let second = BlockHeader::parse(&w.get_ref()[BLOCK_HEADER_LEN + 4096..]).unwrap();
        assert_eq!(second.seq, Some(1));

        let mut w = BlockWriter::new(Vec::new());
        w.write_block(1, 0, 0, b"xyz", true).unwrap();
        let h = BlockHeader::parse(w.get_ref()).unwrap();
        assert!(!h.compressed());
        assert_eq!(w.blocks_written(), 1);
    }
}
