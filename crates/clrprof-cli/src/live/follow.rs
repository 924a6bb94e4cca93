//! Following a trace file while the agent writes it (`top`, `dump`): the agent's writer
//! appends whole CRC-checked blocks every `flush_ms` (20 ms by default), each with one
//! `write`, so the file is a header and then a growing run of blocks. Each poll reads what
//! was appended, decodes the complete blocks with the format's reader and keeps a
//! partly written block for the next poll.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use clrprof_analysis::timeline::TimedEvent;
use clrprof_format::{BLOCK_HEADER_LEN, BlockHeader, Header, TraceReader};

/// A trace file being written.
pub struct Follow {
    file: File,
    /// The file's header bytes, once complete: every poll decodes `header + new blocks`.
    header: Option<Vec<u8>>,
    /// Bytes read but not decoded yet (the header before it is complete, then a partial
    /// block).
    pending: Vec<u8>,
    /// Bytes of blocks that were not readable (counted, never fatal).
    pub skipped_bytes: u64,
    /// Bytes of the file read so far.
    pub read_bytes: u64,
}

impl Follow {
    pub fn open(path: &Path) -> Result<Follow> {
        let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Follow {
            file,
            header: None,
            pending: Vec::new(),
            skipped_bytes: 0,
            read_bytes: 0,
        })
    }

    /// The events of the blocks completed since the last poll, in file order; `ns` holds
    /// the raw timestamp (ticks), which the live views do not need converted.
    pub fn poll(&mut self) -> Result<Vec<TimedEvent<'static>>> {
        self.poll_at_most(u64::MAX)
    }

    /// [`poll`](Self::poll), reading at most `max` more bytes of the file (a reader that
    /// only samples a fast-growing trace keeps its memory and time bounded).
    pub fn poll_at_most(&mut self, max: u64) -> Result<Vec<TimedEvent<'static>>> {
        let read = (&mut self.file)
            .take(max)
            .read_to_end(&mut self.pending)
            .context("reading the trace")?;
        self.read_bytes += read as u64;
        if self.header.is_none() {
            // The agent creates the file and then writes the header: wait for all of it.
            match Header::parse(&self.pending) {
                Ok((_, body)) => {
                    self.header = Some(self.pending[..body].to_vec());
                    self.pending.drain(..body);
                }
                Err(_) => return Ok(Vec::new()),
            }
        }
        let complete = complete_blocks(&self.pending);
        if complete == 0 {
            return Ok(Vec::new());
        }
        let header = self.header.as_deref().unwrap_or_default();
        let mut bytes = Vec::with_capacity(header.len() + complete);
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(&self.pending[..complete]);
        self.pending.drain(..complete);
        let mut reader = TraceReader::new(&bytes).context("the trace header")?;
        let events: Vec<TimedEvent<'static>> = reader
            .events()
            .map(|e| TimedEvent {
                ns: e.ts,
                os_tid: e.os_tid,
                event: e.event.into_owned(),
            })
            .collect();
        self.skipped_bytes += reader.stats().bytes_skipped;
        Ok(events)
    }
}

/// How many leading bytes of `body` are whole blocks (by their lengths; the reader checks
/// their CRCs). Bytes that are not a block header are handed on whole: the reader
/// resynchronises past them and counts them.
fn complete_blocks(body: &[u8]) -> usize {
    let mut pos = 0;
    while body.len() - pos >= BLOCK_HEADER_LEN {
        let Some(h) = BlockHeader::parse(&body[pos..]).filter(|h| h.is_plausible()) else {
            return body.len();
        };
        let end = pos + h.header_len() + h.payload_len as usize;
        if end > body.len() {
            break;
        }
        pos = end;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_format::{Event, TraceMeta, count_records, encode, write_block, write_file_header};
    use std::io::Write;

    fn block(seq: u64, tid: u64, thread: u64) -> Vec<u8> {
        let mut records = Vec::new();
        encode(&mut records, 1, &Event::ThreadCreated { thread });
        let mut out = Vec::new();
        write_block(
            &mut out,
            seq,
            tid,
            0,
            count_records(&records),
            &records,
            true,
        )
        .unwrap();
        out
    }

    #[test]
    fn reads_blocks_as_they_are_appended_and_waits_for_partial_ones() {
        let dir = std::env::temp_dir().join(format!("clrprof-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.clrprof");
        let _ = std::fs::remove_file(&path);
        let mut f = File::create(&path).unwrap();
        let mut header = Vec::new();
        write_file_header(&mut header, &Header::new(TraceMeta::default())).unwrap();
        // Half a header: nothing yet.
        f.write_all(&header[..header.len() / 2]).unwrap();
        let mut follow = Follow::open(&path).unwrap();
        assert!(follow.poll().unwrap().is_empty());
        assert!(follow.header.is_none());
        f.write_all(&header[header.len() / 2..]).unwrap();
        let (b1, b2) = (block(0, 11, 1), block(1, 22, 2));
        f.write_all(&b1).unwrap();
        f.write_all(&b2[..b2.len() - 3]).unwrap();
        let got = follow.poll().unwrap();
        assert!(follow.header.is_some());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].os_tid, 11);
        f.write_all(&b2[b2.len() - 3..]).unwrap();
        let got = follow.poll().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event, Event::ThreadCreated { thread: 2 });
        assert!(follow.poll().unwrap().is_empty());
        assert_eq!(follow.skipped_bytes, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
