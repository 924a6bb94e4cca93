//! Problems met while reading a trace whose header is valid. Reading carries on past
//! each of them; every message says what was lost.

use std::collections::HashMap;

use thiserror::Error;

/// Something was wrong in the file; what could be read was read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Warning {
    #[error(
        "trace format {major}.{minor} is newer than this reader's {major}.{known}: event \
         kinds and fields added since are skipped; a newer clrprof reads them"
    )]
    NewerMinorVersion { major: u16, minor: u16, known: u16 },

    #[error(
        "the trace header's CRC does not match: the header was damaged after it was written, \
         so its metadata (command line, settings, clock) may be wrong"
    )]
    HeaderCrcMismatch,

    #[error(
        "the trace was cut short: it has no end record, so the recording process stopped \
         without finishing it (killed, crashed, or the file was truncated); {}",
        match .last_ns {
            Some(ns) => format!(
                "its last event is {:.3} s after the start, nothing after that was recorded",
                *ns as f64 / 1e9
            ),
            None => "it holds no events".to_string(),
        }
    )]
    CutShort {
        /// Time of the last event read, in ns since the first clock sync point.
        last_ns: Option<u64>,
    },

    #[error(
        "{count} block(s) missing before the block at byte {offset} (numbers {first} to \
         {last}): damaged, cut out or never written; their events are lost"
    )]
    BlocksMissing {
        offset: u64,
        first: u64,
        last: u64,
        count: u64,
    },

    #[error(
        "block at byte {offset} repeats block number {seq}, read already: the copy was skipped"
    )]
    DuplicateBlock { offset: u64, seq: u64 },

    #[error(
        "trace ends inside a block at byte {offset} ({present} of {needed} bytes present): the \
         recording process probably stopped abruptly; events up to the last complete block \
         were read"
    )]
    TruncatedBlock {
        offset: u64,
        present: u64,
        /// Bytes the block needs (40, the header, when even that is incomplete).
        needed: u64,
    },

    #[error(
        "CRC mismatch in block at byte {offset} ({len} bytes): the block is damaged and was \
         skipped"
    )]
    CrcMismatch { offset: u64, len: u64 },

    #[error(
        "{cause} at byte {offset}: resynchronised at byte {resumed_at} by scanning for the next \
         block magic whose CRC checks out ({skipped} bytes skipped)"
    )]
    Resynchronized {
        offset: u64,
        resumed_at: u64,
        skipped: u64,
        cause: DamageCause,
    },

    #[error(
        "{cause} at byte {offset}: no intact block follows, so the last {skipped} bytes of the \
         file were ignored"
    )]
    Unrecoverable {
        offset: u64,
        skipped: u64,
        cause: DamageCause,
    },

    #[error("block at byte {offset} cannot be decoded ({reason}) and was skipped")]
    UndecodableBlock { offset: u64, reason: String },

    #[error(
        "record truncated inside block at byte {block_offset} (record at payload byte \
         {record_offset}): the last {skipped} bytes of the block were skipped"
    )]
    RecordTruncated {
        block_offset: u64,
        record_offset: u64,
        skipped: u64,
    },

    #[error(
        "record without a valid timestamp inside block at byte {block_offset} (record at \
         payload byte {record_offset}): the timestamps after it cannot be recovered, so the last \
         {skipped} bytes of the block were skipped"
    )]
    BadTimestamp {
        block_offset: u64,
        record_offset: u64,
        skipped: u64,
    },

    #[error(
        "{count} malformed {name} record(s) (kind {kind}) skipped; the first, in the block at \
         byte {first_block_offset}: {reason}"
    )]
    MalformedRecords {
        kind: u8,
        name: String,
        count: u64,
        first_block_offset: u64,
        reason: String,
    },

    #[error(
        "unknown event kind {kind}{} ({count} records skipped): written by a newer clrprof, \
         which can read them",
        .name.as_ref().map(|n| format!(" \"{n}\"")).unwrap_or_default()
    )]
    UnknownKind {
        kind: u8,
        /// The kind's name from the header's self-description, when it has one.
        name: Option<String>,
        count: u64,
    },

    #[error(
        "invalid UTF-8 in {count} string(s), the first in the block at byte \
         {first_block_offset}: replaced lossily"
    )]
    InvalidUtf8 { count: u64, first_block_offset: u64 },

    #[error(
        "block at byte {offset} declares {declared} records but holds {found}: the writer \
         miscounted; all records were read"
    )]
    RecordCountMismatch {
        offset: u64,
        declared: u32,
        found: u32,
    },

    #[error("{suppressed} further warnings were suppressed")]
    TooManyWarnings { suppressed: u64 },
}

impl Warning {
    /// Moves the file offsets this warning names by `delta` (offsets within a block's
    /// payload stay).
    fn shift(&mut self, delta: u64) {
        match self {
            Warning::BlocksMissing { offset, .. }
            | Warning::DuplicateBlock { offset, .. }
            | Warning::TruncatedBlock { offset, .. }
            | Warning::CrcMismatch { offset, .. }
            | Warning::Unrecoverable { offset, .. }
            | Warning::UndecodableBlock { offset, .. }
            | Warning::RecordCountMismatch { offset, .. } => *offset += delta,
            Warning::Resynchronized {
                offset, resumed_at, ..
            } => {
                *offset += delta;
                *resumed_at += delta;
            }
            Warning::RecordTruncated { block_offset, .. }
            | Warning::BadTimestamp { block_offset, .. } => *block_offset += delta,
            Warning::MalformedRecords {
                first_block_offset, ..
            }
            | Warning::InvalidUtf8 {
                first_block_offset, ..
            } => *first_block_offset += delta,
            Warning::NewerMinorVersion { .. }
            | Warning::HeaderCrcMismatch
            | Warning::CutShort { .. }
            | Warning::UnknownKind { .. }
            | Warning::TooManyWarnings { .. } => {}
        }
    }
}

/// What was wrong where the reader lost the block structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DamageCause {
    #[error("data that is not a block (no \"BLK1\" magic)")]
    NoMagic,
    #[error("implausible block length ({len} bytes)")]
    ImplausibleLength { len: u64 },
    #[error(
        "compressed block claiming {records} bytes of records from {len} bytes (more than the \
         writer's ratio: an LZ4 bomb, refused)"
    )]
    Inflated { len: u64, records: u64 },
    #[error("block length {len} runs past the end of the file")]
    PastEnd { len: u64 },
    #[error("CRC mismatch with an unreliable block length")]
    CrcMismatch,
}

/// Distinct warnings kept before the rest are only counted.
const MAX_WARNINGS: usize = 1000;

/// Collects warnings, merging the per-record ones (one entry per kind, with a count).
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    list: Vec<Warning>,
    merged: HashMap<(u8, u8), usize>,
    suppressed: Option<usize>,
}

const UNKNOWN: u8 = 0;
const MALFORMED: u8 = 1;
const UTF8: u8 = 2;

impl Warnings {
    pub fn list(&self) -> &[Warning] {
        &self.list
    }

    pub fn into_vec(self) -> Vec<Warning> {
        self.list
    }

    pub fn push(&mut self, w: Warning) {
        if self.list.len() < MAX_WARNINGS {
            self.list.push(w);
            return;
        }
        match self.suppressed {
            Some(i) => {
                if let Some(Warning::TooManyWarnings { suppressed }) = self.list.get_mut(i) {
                    *suppressed += 1;
                }
            }
            None => {
                self.suppressed = Some(self.list.len());
                self.list.push(Warning::TooManyWarnings { suppressed: 1 });
            }
        }
    }

    /// How many warnings are listed (an index for [`shift_from`](Self::shift_from)).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Moves the byte offsets of the warnings listed from index `from` on by `delta`: a
    /// pass over a window of a file reports offsets within the window.
    pub fn shift_from(&mut self, from: usize, delta: u64) {
        for w in self.list.iter_mut().skip(from) {
            w.shift(delta);
        }
    }

    /// Adds one to the merged warning `key`, creating it with `first` if new.
    fn bump(&mut self, key: (u8, u8), first: impl FnOnce() -> Warning) {
        if let Some(&i) = self.merged.get(&key) {
            if let Some(
                Warning::UnknownKind { count, .. }
                | Warning::MalformedRecords { count, .. }
                | Warning::InvalidUtf8 { count, .. },
            ) = self.list.get_mut(i)
            {
                *count += 1;
            }
            return;
        }
        if self.list.len() < MAX_WARNINGS {
            self.merged.insert(key, self.list.len());
        }
        self.push(first());
    }

    pub fn unknown_kind(&mut self, kind: u8, name: Option<&str>) {
        self.bump((UNKNOWN, kind), || Warning::UnknownKind {
            kind,
            name: name.map(str::to_owned),
            count: 1,
        });
    }

    pub fn malformed(&mut self, kind: u8, name: &str, block_offset: u64, reason: String) {
        self.bump((MALFORMED, kind), || Warning::MalformedRecords {
            kind,
            name: name.to_owned(),
            count: 1,
            first_block_offset: block_offset,
            reason,
        });
    }

    pub fn invalid_utf8(&mut self, strings: u32, block_offset: u64) {
        for _ in 0..strings {
            self.bump((UTF8, 0), || Warning::InvalidUtf8 {
                count: 1,
                first_block_offset: block_offset,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_per_kind_and_caps() {
        let mut w = Warnings::default();
        w.unknown_kind(40, Some("Future"));
        w.unknown_kind(40, Some("Future"));
        w.unknown_kind(41, None);
        w.invalid_utf8(3, 100);
        assert_eq!(w.list().len(), 3);
        assert_eq!(
            w.list()[0].to_string(),
            "unknown event kind 40 \"Future\" (2 records skipped): written by a newer clrprof, \
             which can read them"
        );
        assert!(
            w.list()[1]
                .to_string()
                .starts_with("unknown event kind 41 (1 records")
        );
        assert!(
            w.list()[2]
                .to_string()
                .starts_with("invalid UTF-8 in 3 string(s)")
        );
        for i in 0..2000 {
            w.push(Warning::CrcMismatch { offset: i, len: 1 });
        }
        assert_eq!(w.list().len(), MAX_WARNINGS + 1);
        assert_eq!(
            w.list().last(),
            Some(&Warning::TooManyWarnings { suppressed: 1003 })
        );
    }
}
