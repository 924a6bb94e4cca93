//! Reading a trace while it is written (`top`, `dump`, `record --push`, the broad-trace
//! notice): the agent's writer appends whole blocks, each with one `write`, so the file is
//! a header and a growing run of blocks. The reader is fed the bytes as they come and
//! yields the events of the blocks completed so far; a block the bytes end inside waits
//! for the next feed. What a pass over the whole file carries from block to block (each
//! thread's compact call chain, the block numbers seen, the end-of-file check, the
//! warnings) carries from one feed to the next, so the events are exactly those of a
//! whole-file read, however the bytes were cut.

use std::collections::{HashMap, HashSet};

use super::events::Events;
use super::{EndCheck, TraceReader};
use crate::compact::Chain;
use crate::decoded::DecodedEvent;
use crate::error::FormatError;
use crate::header::Header;
use crate::reader::ReadStats;
use crate::scan::Scanner;
use crate::warning::{Warning, Warnings};

/// How many block numbers below the next expected one are remembered: a copy of a block
/// further back than that (which a writer appending in order never makes) would be read
/// as a late block rather than refused as a duplicate.
pub const SEEN_WINDOW: u64 = 1 << 16;

/// A trace read as it grows; sans-IO: [`feed`](Self::feed) it what was appended to the
/// file, then [`poll`](Self::poll) for the events of the blocks it completed.
///
/// Memory: the header and the bytes of the one block being written; per thread its
/// chain; the numbers of the last [`SEEN_WINDOW`] blocks or so (to tell a duplicate block
/// from a late one); at most a thousand warnings. A follower that runs for days stays
/// bounded.
#[derive(Debug, Default)]
pub struct IncrementalReader {
    /// The header's bytes (once complete), then the bytes fed and not yet read.
    buf: Vec<u8>,
    /// The parsed header, its length and whether its CRC matched.
    header: Option<(Header, usize, bool)>,
    /// Bytes of blocks read and dropped from `buf`: the file offset of `buf[header len]`
    /// is the header's length plus this.
    dropped: u64,
    fed: u64,
    passes: u64,
    chains: HashMap<u64, Chain>,
    next_seq: u64,
    seen_seqs: HashSet<u64>,
    end: EndCheck,
    warnings: Warnings,
    stats: ReadStats,
}

impl IncrementalReader {
    pub fn new() -> IncrementalReader {
        IncrementalReader::default()
    }

    /// Appends bytes the file grew by.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.fed += bytes.len() as u64;
        self.buf.extend_from_slice(bytes);
    }

    /// The header, once its bytes are all fed.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref().map(|(h, _, _)| h)
    }

    /// Bytes fed but not read yet (a block being written, or the header).
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() - self.header.as_ref().map_or(0, |(_, len, _)| *len)
    }

    /// The problems met so far, with file offsets (merged and capped as in a whole-file
    /// read). A truncated last block and a missing end record are only known at
    /// [`finish`](Self::finish).
    pub fn warnings(&self) -> &[Warning] {
        self.warnings.list()
    }

    /// How many block numbers are remembered (at most about twice [`SEEN_WINDOW`]).
    pub fn remembered_blocks(&self) -> usize {
        self.seen_seqs.len()
    }

    /// Counters over everything read so far (`file_bytes`: the bytes fed).
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// Calls `f` with each event of the blocks completed since the last poll, in file
    /// order; returns how many. `Ok(0)` while the header is still incomplete; an error
    /// when the bytes cannot be a trace (wrong magic, unsupported version, damaged
    /// header).
    pub fn poll_with<F: FnMut(DecodedEvent<'_>)>(&mut self, f: F) -> Result<u64, FormatError> {
        if !self.parse_header()? {
            return Ok(0);
        }
        Ok(self.pass(true, f))
    }

    /// [`poll_with`](Self::poll_with), collecting the events.
    pub fn poll(&mut self) -> Result<Vec<DecodedEvent<'static>>, FormatError> {
        let mut events = Vec::new();
        self.poll_with(|e| {
            events.push(DecodedEvent {
                os_tid: e.os_tid,
                ts: e.ts,
                event: e.event.into_owned(),
            })
        })?;
        Ok(events)
    }

    /// The file is complete: calls `f` with the events of its last blocks, and returns
    /// the header and every warning, as a whole-file read would (a block cut short, a
    /// missing end record). An error when the header never came whole.
    pub fn finish<F: FnMut(DecodedEvent<'_>)>(
        mut self,
        f: F,
    ) -> Result<(Header, Vec<Warning>), FormatError> {
        if !self.parse_header()? {
            // Says what is wrong with the bytes there are.
            return Err(Header::parse_checked(&self.buf)
                .err()
                .unwrap_or(FormatError::Empty));
        }
        self.pass(false, f);
        let (header, _, _) = self.header.take().ok_or(FormatError::Empty)?;
        Ok((header, self.warnings.into_vec()))
    }

    /// Parses the header once all of it is fed: false while it is not.
    fn parse_header(&mut self) -> Result<bool, FormatError> {
        if self.header.is_some() {
            return Ok(true);
        }
        match Header::parse_checked(&self.buf) {
            Ok(parsed) => {
                self.header = Some(parsed);
                Ok(true)
            }
            Err(
                FormatError::Empty
                | FormatError::HeaderTruncated { .. }
                | FormatError::HeaderJsonTruncated { .. },
            ) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads the blocks in `buf` (`partial`: up to the one the bytes end inside), drops
    /// their bytes, and carries the reader's state on.
    fn pass<F: FnMut(DecodedEvent<'_>)>(&mut self, partial: bool, mut f: F) -> u64 {
        let Some((header, body, crc_ok)) = &self.header else {
            return 0;
        };
        let body = *body;
        let mut reader = TraceReader::with_header(&self.buf, header.clone(), body, *crc_ok);
        reader.reset();
        if self.passes > 0 {
            // The header's own warnings were given by the first pass.
            reader.warnings = std::mem::take(&mut self.warnings);
        }
        reader.chains = std::mem::take(&mut self.chains);
        reader.next_seq = self.next_seq;
        reader.seen_seqs = std::mem::take(&mut self.seen_seqs);
        reader.end = self.end;
        let listed = reader.warnings.len();
        let mut scanner = Scanner::new(&self.buf, body, header.major);
        if partial {
            scanner = scanner.partial();
        }
        let mut n = 0u64;
        Events::new(scanner, &mut reader).for_each(|e| {
            n += 1;
            f(e)
        });
        reader.warnings.shift_from(listed, self.dropped);
        self.warnings = std::mem::take(&mut reader.warnings);
        self.chains = std::mem::take(&mut reader.chains);
        self.next_seq = reader.next_seq;
        self.seen_seqs = std::mem::take(&mut reader.seen_seqs);
        if self.seen_seqs.len() as u64 > 2 * SEEN_WINDOW {
            let floor = self.next_seq.saturating_sub(SEEN_WINDOW);
            self.seen_seqs.retain(|&s| s >= floor);
        }
        self.end = reader.end;
        self.passes += 1;
        let (read, stats) = (reader.stopped_at.max(body), reader.stats);
        drop(reader);
        self.add_stats(stats, body);
        self.buf.drain(body..read);
        self.dropped += (read - body) as u64;
        n
    }

    fn add_stats(&mut self, pass: ReadStats, body: usize) {
        let s = &mut self.stats;
        s.file_bytes = self.fed;
        s.header_bytes = body as u64;
        s.blocks_read += pass.blocks_read;
        s.blocks_skipped += pass.blocks_skipped;
        s.resyncs += pass.resyncs;
        s.bytes_skipped += pass.bytes_skipped;
        s.compressed_blocks += pass.compressed_blocks;
        s.record_bytes += pass.record_bytes;
        s.events += pass.events;
        s.records_skipped += pass.records_skipped;
        s.skipped_calls += pass.skipped_calls;
        s.calls_first_ts = if self.passes == 1 {
            pass.calls_first_ts
        } else {
            s.calls_first_ts.min(pass.calls_first_ts)
        };
        s.calls_last_ts = s.calls_last_ts.max(pass.calls_last_ts);
    }
}
