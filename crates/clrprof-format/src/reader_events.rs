//! The event iterator: every record of every intact block, in file order.

use crate::events::kind_name;
use crate::reader::{DecodedEvent, TraceReader};
use crate::records::{Record, RecordError, Records};
use crate::scan::{Scanner, Step};
use crate::warning::Warning;

/// Iterator over the events of a trace; see [`TraceReader::events`].
pub struct Events<'r, 'a> {
    reader: &'r mut TraceReader<'a>,
    scanner: Scanner<'a>,
    block: Option<OpenBlock<'a>>,
    /// Decompressed records of the current block, when it is compressed (reused).
    buf: Vec<u8>,
}

struct OpenBlock<'a> {
    offset: u64,
    os_tid: u64,
    declared: u32,
    found: u32,
    truncated: bool,
    pos: usize,
    /// Absolute timestamp of the last record read.
    ts: u64,
    /// The records, when stored uncompressed (else they are in `Events::buf`).
    borrowed: Option<&'a [u8]>,
}

impl<'r, 'a> Events<'r, 'a> {
    pub(crate) fn new(scanner: Scanner<'a>, reader: &'r mut TraceReader<'a>) -> Events<'r, 'a> {
        Events {
            reader,
            scanner,
            block: None,
            buf: Vec::new(),
        }
    }

    /// Opens the next intact block; false at the end of the file.
    fn next_block(&mut self) -> bool {
        loop {
            match self.scanner.next_step() {
                Step::End => return false,
                Step::Damage {
                    warning,
                    bytes_skipped,
                    block_skipped,
                } => {
                    self.reader.damage(warning, bytes_skipped, block_skipped);
                }
                Step::Block {
                    offset,
                    mut header,
                    payload,
                } => {
                    if let Ok(inflated) =
                        self.reader
                            .open_block(offset, &mut header, payload, &mut self.buf)
                    {
                        self.block = Some(OpenBlock {
                            offset: offset as u64,
                            os_tid: header.os_tid,
                            declared: header.record_count,
                            found: 0,
                            truncated: false,
                            pos: 0,
                            ts: header.base_ts,
                            borrowed: (!inflated).then_some(payload),
                        });
                        return true;
                    }
                }
            }
        }
    }

    /// Ends the current block, checking its record count.
    fn close_block(&mut self) {
        if let Some(b) = self.block.take()
            && !b.truncated
            && b.found != b.declared
        {
            self.reader.warnings.push(Warning::RecordCountMismatch {
                offset: b.offset,
                declared: b.declared,
                found: b.found,
            });
        }
    }
}

impl<'a> Iterator for Events<'_, 'a> {
    type Item = DecodedEvent<'a>;

    fn next(&mut self) -> Option<DecodedEvent<'a>> {
        loop {
            let Some(block) = self.block.as_mut() else {
                if !self.next_block() {
                    return None;
                }
                continue;
            };
            let item: Option<Result<Record<'a>, RecordError>> = match block.borrowed {
                Some(payload) => {
                    let mut records = Records::resume(payload, block.pos, block.ts);
                    let item = records.next();
                    (block.pos, block.ts) = (records.position(), records.last_ts());
                    item
                }
                None => {
                    let mut records = Records::resume(&self.buf, block.pos, block.ts);
                    let item = records.next().map(|r| {
                        r.map(|rec| Record {
                            offset: rec.offset,
                            ts: rec.ts,
                            event: rec.event.into_owned(),
                            lossy_strings: rec.lossy_strings,
                        })
                    });
                    (block.pos, block.ts) = (records.position(), records.last_ts());
                    item
                }
            };
            let Some(item) = item else {
                self.close_block();
                continue;
            };
            let (offset, os_tid) = (block.offset, block.os_tid);
            let stats = &mut self.reader.stats;
            let warnings = &mut self.reader.warnings;
            match item {
                Ok(rec) => {
                    block.found = block.found.saturating_add(1);
                    stats.events += 1;
                    if rec.lossy_strings > 0 {
                        warnings.invalid_utf8(rec.lossy_strings, offset);
                    }
                    return Some(DecodedEvent {
                        os_tid,
                        ts: rec.ts,
                        event: rec.event,
                    });
                }
                Err(RecordError::Truncated {
                    offset: at,
                    remaining,
                }) => {
                    block.truncated = true;
                    stats.records_skipped += 1;
                    warnings.push(Warning::RecordTruncated {
                        block_offset: offset,
                        record_offset: at as u64,
                        skipped: remaining as u64,
                    });
                }
                Err(RecordError::BadTimestamp {
                    offset: at,
                    remaining,
                }) => {
                    block.truncated = true;
                    stats.records_skipped += 1;
                    warnings.push(Warning::BadTimestamp {
                        block_offset: offset,
                        record_offset: at as u64,
                        skipped: remaining as u64,
                    });
                }
                Err(RecordError::UnknownKind { kind, .. }) => {
                    block.found = block.found.saturating_add(1);
                    stats.records_skipped += 1;
                    let name = self.reader.foreign_kinds.get(&kind).map(String::as_str);
                    warnings.unknown_kind(kind, name);
                }
                Err(RecordError::Malformed {
                    kind,
                    field,
                    reason,
                    ..
                }) => {
                    block.found = block.found.saturating_add(1);
                    stats.records_skipped += 1;
                    let name = kind_name(kind).unwrap_or("?");
                    warnings.malformed(kind, name, offset, format!("field `{field}`: {reason}"));
                }
            }
        }
    }
}
