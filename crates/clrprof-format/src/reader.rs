//! The sans-IO trace reader: works on the file's bytes, never panics, and turns every
//! problem after the header into a [`Warning`] while reading on.

use crate::checked::CheckedBlocks;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::block::{BlockHeader, KNOWN_FLAGS};
use crate::decoded::DecodedEvent;
use crate::error::FormatError;
use crate::events::kind_name;
use crate::header::{FORMAT_1_LAST_MINOR, FORMAT_MAJOR, FORMAT_MINOR, Header};
use crate::records::Records;
use crate::scan::{Scanner, Step};
use crate::warning::{Warning, Warnings};

mod ahead;
mod events;
mod incremental;
pub use ahead::{READ_THREADS_ENV, decode_ahead, read_workers};
pub use events::{Events, SplitSink};

pub use incremental::{IncrementalReader, SEEN_WINDOW};

/// Reads a trace held in memory (e.g. a memory-mapped file).
pub struct TraceReader<'a> {
    pub(crate) bytes: &'a [u8],
    header: Header,
    body_offset: usize,
    /// Names of kinds this version does not know, from the header's self-description.
    pub(crate) foreign_kinds: HashMap<u8, String>,
    pub(crate) warnings: Warnings,
    pub(crate) stats: ReadStats,
    /// Each thread's compact-word chain (1.3), carried from one of its blocks to the next.
    pub(crate) chains: HashMap<u64, crate::compact::Chain>,
    /// Whether the header's CRC matched (format 1 has none: true).
    header_crc_ok: bool,
    /// Format 2: the block number expected next, and every number read (to tell a
    /// duplicate from a late block).
    next_seq: u64,
    seen_seqs: HashSet<u64>,
    /// What the end-of-file check has seen so far.
    pub(crate) end: EndCheck,
    /// Where the last pass's scan stopped (the end of the bytes, or in a partial pass the
    /// start of the block they end inside).
    pub(crate) stopped_at: usize,
    /// The compact blocks whose structure the last pass checked, and those an earlier
    /// pass over the same bytes did ([`trust`](Self::trust)), which are not checked again.
    checked: CheckedBlocks,
    trusted: CheckedBlocks,
}

/// For the end-of-file check: a `TraceEnd` was read; the last timestamp read; the first
/// and the latest clock sync point (ticks, mono ns).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EndCheck {
    pub end_seen: bool,
    pub last_ts: Option<u64>,
    pub first_sync: Option<(u64, u64)>,
    pub last_sync: Option<(u64, u64)>,
}

/// An intact block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    /// File offset of the block header.
    pub offset: u64,
    pub header: BlockHeader,
    /// The records, decompressed (borrowed from the file when stored uncompressed).
    pub payload: Cow<'a, [u8]>,
}

impl Block<'_> {
    pub fn os_tid(&self) -> u64 {
        self.header.os_tid
    }

    /// Decodes the records one by one (timestamps resolved from `header.base_ts`).
    pub fn records(&self) -> Records<'_> {
        Records::new(&self.payload, self.header.base_ts)
    }
}

/// Counters for the last pass over the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub file_bytes: u64,
    pub header_bytes: u64,
    /// Intact blocks.
    pub blocks_read: u64,
    /// Blocks that were damaged, truncated or undecodable.
    pub blocks_skipped: u64,
    /// Times the reader lost the block structure and scanned for the next block.
    pub resyncs: u64,
    /// Bytes after the header that were not part of an intact block.
    pub bytes_skipped: u64,
    pub compressed_blocks: u64,
    /// Record bytes of intact blocks, decompressed.
    pub record_bytes: u64,
    /// Records decoded into events (`events()` only).
    pub events: u64,
    /// Records skipped: unknown kinds, malformed or truncated (`events()` only).
    pub records_skipped: u64,
    /// Call units counted but not returned (`events_without_calls()` only), and the
    /// first and last of their timestamps (`u64::MAX` and 0 when there were none).
    pub skipped_calls: u64,
    pub calls_first_ts: u64,
    pub calls_last_ts: u64,
}

impl<'a> TraceReader<'a> {
    /// Parses the header. Fails only when `bytes` is not a readable trace at all.
    pub fn new(bytes: &'a [u8]) -> Result<TraceReader<'a>, FormatError> {
        let (header, body_offset, header_crc_ok) = Header::parse_checked(bytes)?;
        Ok(TraceReader::with_header(
            bytes,
            header,
            body_offset,
            header_crc_ok,
        ))
    }

    /// A reader of `bytes` whose header [`Header::parse_checked`] has read already.
    pub(crate) fn with_header(
        bytes: &'a [u8],
        header: Header,
        body_offset: usize,
        header_crc_ok: bool,
    ) -> TraceReader<'a> {
        let foreign_kinds = header
            .meta
            .event_kinds
            .iter()
            .filter(|k| kind_name(k.id).is_none())
            .map(|k| (k.id, k.name.clone()))
            .collect();
        let mut reader = TraceReader {
            bytes,
            header,
            body_offset,
            foreign_kinds,
            warnings: Warnings::default(),
            stats: ReadStats::default(),
            chains: HashMap::new(),
            header_crc_ok,
            next_seq: 0,
            seen_seqs: HashSet::new(),
            end: EndCheck::default(),
            stopped_at: body_offset,
            checked: CheckedBlocks::default(),
            trusted: CheckedBlocks::default(),
        };
        reader.reset();
        reader
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// File offset of the first block.
    pub fn body_offset(&self) -> usize {
        self.body_offset
    }

    /// The intact blocks in file order; damage comes as `Err` items (also kept in
    /// [`warnings`](Self::warnings)). Starts a new pass: warnings and stats restart.
    pub fn blocks(&mut self) -> Blocks<'_, 'a> {
        self.reset();
        Blocks {
            scanner: Scanner::new(self.bytes, self.body_offset, self.header.major),
            reader: self,
        }
    }

    /// Every event of every intact block, in file order. Problems are collected in
    /// [`warnings`](Self::warnings). Starts a new pass: warnings and stats restart.
    pub fn events(&mut self) -> Events<'_, 'a> {
        self.reset();
        let major = self.header.major;
        let scanner =
            Scanner::new(self.bytes, self.body_offset, major).trusting(self.trusted.clone());
        Events::new(scanner, self)
    }

    /// [`events`](Self::events) without the Enter, Leave and Tailcall units of trace
    /// mode's unit and compact blocks, which are only counted (with their first and last
    /// timestamps, in [`stats`](Self::stats)): a pass that needs everything but the calls
    /// does not build tens of millions of events it would drop.
    pub fn events_without_calls(&mut self) -> Events<'_, 'a> {
        self.events().skipping_calls()
    }

    /// The compact blocks the last pass found well-formed (but for those it
    /// [trusted](Self::trust)).
    pub fn checked_blocks(&self) -> &CheckedBlocks {
        &self.checked
    }

    /// Takes `blocks`, what [`checked_blocks`](Self::checked_blocks) said after a pass
    /// over these same bytes, as checked: a later pass does not walk their words twice
    /// (trace mode's second pass over tens of millions of calls), nor compute their
    /// CRCs again.
    pub fn trust(&mut self, blocks: CheckedBlocks) {
        self.trusted = blocks;
    }

    /// Problems met during the last pass (complete once its iterator has finished).
    pub fn warnings(&self) -> &[Warning] {
        self.warnings.list()
    }

    /// Counters of the last pass.
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// The header and the warnings of the last pass.
    pub fn finish(self) -> (Header, Vec<Warning>) {
        (self.header, self.warnings.into_vec())
    }

    fn reset(&mut self) {
        self.warnings = Warnings::default();
        self.chains.clear();
        self.next_seq = 0;
        self.seen_seqs.clear();
        self.end = EndCheck::default();
        self.stopped_at = self.body_offset;
        self.checked = CheckedBlocks::default();
        let known = if self.header.major == FORMAT_MAJOR {
            FORMAT_MINOR
        } else {
            FORMAT_1_LAST_MINOR
        };
        if self.header.minor > known {
            self.warnings.push(Warning::NewerMinorVersion {
                major: self.header.major,
                minor: self.header.minor,
                known,
            });
        }
        if !self.header_crc_ok {
            self.warnings.push(Warning::HeaderCrcMismatch);
        }
        self.stats = ReadStats {
            file_bytes: self.bytes.len() as u64,
            header_bytes: self.body_offset as u64,
            calls_first_ts: u64::MAX,
            ..ReadStats::default()
        };
    }

    /// Accounts for a scanner step that is not an intact block; returns its warning.
    pub(crate) fn damage(&mut self, warning: Warning, bytes: u64, block: bool) -> Warning {
        self.stats.bytes_skipped += bytes;
        self.stats.blocks_skipped += u64::from(block);
        if matches!(warning, Warning::Resynchronized { .. }) {
            self.stats.resyncs += 1;
        }
        self.warnings.push(warning.clone());
        warning
    }

    /// Opens an intact block: checks flags, decompresses into `buf` when needed and turns
    /// ring units into records (after which `header` describes the records: no flags,
    /// their count and length). `Ok(true)` means the records are now in `buf`; `Ok(false)`
    /// that they are `payload` itself. With `keep_units`, a unit payload is only checked
    /// (as the conversion would) and stays units; `header.units()` then still says so and
    /// `record_count` is its record count.
    pub(crate) fn open_block(
        &mut self,
        offset: usize,
        header: &mut BlockHeader,
        payload: &[u8],
        buf: &mut Vec<u8>,
        keep_units: bool,
    ) -> Result<bool, Warning> {
        if let Some(seq) = header.seq {
            let len = (header.header_len() + payload.len()) as u64;
            if !self.seen_seqs.insert(seq) {
                let w = Warning::DuplicateBlock {
                    offset: offset as u64,
                    seq,
                };
                return Err(self.damage(w, len, true));
            }
            if seq > self.next_seq {
                self.warnings.push(Warning::BlocksMissing {
                    offset: offset as u64,
                    first: self.next_seq,
                    last: seq - 1,
                    count: seq - self.next_seq,
                });
            }
            self.next_seq = self.next_seq.max(seq.saturating_add(1));
        }
        let compressed = header.compressed();
        let result = decompress(header, payload, buf).and_then(|inflated| {
            if header.compact() {
                let words = if inflated { &buf[..] } else { payload };
                if keep_units {
                    let at = offset as u64;
                    // A block an earlier pass checked is not listed again.
                    header.record_count = match self.trusted.count_at(at) {
                        Some(count) => count,
                        None => {
                            let count = crate::compact::validate(words)?;
                            std::sync::Arc::make_mut(&mut self.checked.0).push((
                                at,
                                count,
                                header.os_tid,
                            ));
                            count
                        }
                    };
                    header.records_len = words.len() as u32;
                    return Ok(inflated);
                }
                let mut records = Vec::new();
                let chain = self.chains.entry(header.os_tid).or_default();
                let mut ts = header.base_ts;
                let count = crate::compact::to_records(words, chain, &mut ts, &mut records)?;
                header.flags = 0;
                header.record_count = count;
                header.records_len = records.len() as u32;
                *buf = records;
                return Ok(true);
            }
            if !header.units() {
                return Ok(inflated);
            }
            if keep_units {
                let units = if inflated { &buf[..] } else { payload };
                header.record_count = crate::units::validate(units)?;
                header.records_len = units.len() as u32;
                return Ok(inflated);
            }
            let mut records = Vec::new();
            let units = if inflated { &buf[..] } else { payload };
            let mut ts = header.base_ts;
            let count = crate::units::units_to_records(units, &mut ts, &mut records)?;
            header.flags = 0;
            header.record_count = count;
            header.records_len = records.len() as u32;
            *buf = records;
            Ok(true)
        });
        match result {
            Ok(inflated) => {
                self.stats.blocks_read += 1;
                self.stats.compressed_blocks += u64::from(compressed);
                self.stats.record_bytes += u64::from(header.records_len);
                Ok(inflated)
            }
            Err(reason) => {
                let w = Warning::UndecodableBlock {
                    offset: offset as u64,
                    reason,
                };
                let len = header.header_len() + payload.len();
                Err(self.damage(w, len as u64, true))
            }
        }
    }
}

fn decompress(header: &BlockHeader, payload: &[u8], buf: &mut Vec<u8>) -> Result<bool, String> {
    let unknown = header.flags & !KNOWN_FLAGS;
    if unknown != 0 {
        return Err(format!(
            "unknown flags {unknown:#x}: written by a newer clrprof, which can read it"
        ));
    }
    if !header.compressed() {
        return Ok(false);
    }
    let want = header.records_len as usize;
    buf.clear();
    buf.resize(want, 0);
    match lz4_flex::block::decompress_into(payload, buf) {
        Ok(n) if n == want => Ok(true),
        Ok(n) => Err(format!(
            "LZ4 data decompresses to {n} bytes, the header says {want}"
        )),
        Err(e) => Err(format!("invalid LZ4 data: {e}")),
    }
}

/// Iterator over the intact blocks; see [`TraceReader::blocks`].
pub struct Blocks<'r, 'a> {
    reader: &'r mut TraceReader<'a>,
    scanner: Scanner<'a>,
}

impl<'a> Iterator for Blocks<'_, 'a> {
    type Item = Result<Block<'a>, Warning>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.scanner.next_step() {
            Step::End => None,
            Step::Damage {
                warning,
                bytes_skipped,
                block_skipped,
            } => Some(Err(self.reader.damage(
                warning,
                bytes_skipped,
                block_skipped,
            ))),
            Step::Block {
                offset,
                mut header,
                payload,
            } => {
                let mut buf = Vec::new();
                Some(
                    match self
                        .reader
                        .open_block(offset, &mut header, payload, &mut buf, false)
                    {
                        Ok(inflated) => Ok(Block {
                            offset: offset as u64,
                            header,
                            payload: if inflated {
                                Cow::Owned(buf)
                            } else {
                                Cow::Borrowed(payload)
                            },
                        }),
                        Err(w) => Err(w),
                    },
                )
            }
        }
    }
}

/// Reads a whole trace: header, every event, and the warnings.
#[allow(clippy::type_complexity)]
pub fn read_all(
    bytes: &[u8],
) -> Result<(Header, Vec<DecodedEvent<'_>>, Vec<Warning>), FormatError> {
    let mut reader = TraceReader::new(bytes)?;
    let events = reader.events().collect();
    let (header, warnings) = reader.finish();
    Ok((header, events, warnings))
}
