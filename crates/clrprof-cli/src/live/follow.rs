//! Following a trace file while the agent writes it (`top`, `dump`, `record --push`): the
//! agent's writer appends whole CRC-checked blocks every `flush_ms` (20 ms by default), each
//! with one `write`. Each poll reads what was appended and hands it to the format's
//! [`IncrementalReader`], which yields the events of the blocks completed so far (each
//! thread's compact call chain carried from one poll to the next) and keeps a partly
//! written block for the next poll.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use clrprof_analysis::timeline::TimedEvent;
use clrprof_format::{DecodedEvent, Header, IncrementalReader};

/// A trace file being written.
pub struct Follow {
    file: File,
    reader: IncrementalReader,
    /// Read from the file, then fed to `reader` (reused).
    scratch: Vec<u8>,
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
            reader: IncrementalReader::new(),
            scratch: Vec::new(),
            skipped_bytes: 0,
            read_bytes: 0,
        })
    }

    /// The events of the blocks completed since the last poll, in file order; `ns` holds
    /// the raw timestamp (ticks), which the live views do not need converted.
    pub fn poll(&mut self) -> Result<Vec<TimedEvent<'static>>> {
        let mut events = Vec::new();
        self.poll_at_most(u64::MAX, |e| {
            events.push(TimedEvent {
                ns: e.ts,
                os_tid: e.os_tid,
                event: e.event.into_owned(),
            })
        })?;
        Ok(events)
    }

    /// Calls `f` with each event of the blocks completed since the last poll, in file
    /// order, reading at most `max` more bytes of the file (nothing is collected: a reader
    /// that only samples a fast-growing trace keeps its memory and time bounded).
    pub fn poll_at_most(&mut self, max: u64, f: impl FnMut(DecodedEvent<'_>)) -> Result<u64> {
        self.scratch.clear();
        let read = (&mut self.file)
            .take(max)
            .read_to_end(&mut self.scratch)
            .context("reading the trace")?;
        self.read_bytes += read as u64;
        self.reader.feed(&self.scratch);
        let n = self.reader.poll_with(f).context("the trace header")?;
        self.skipped_bytes = self.reader.stats().bytes_skipped;
        Ok(n)
    }

    /// The trace's header, once written.
    pub fn header(&self) -> Option<&Header> {
        self.reader.header()
    }
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
        assert!(follow.reader.header().is_none());
        f.write_all(&header[header.len() / 2..]).unwrap();
        let (b1, b2) = (block(0, 11, 1), block(1, 22, 2));
        f.write_all(&b1).unwrap();
        f.write_all(&b2[..b2.len() - 3]).unwrap();
        let got = follow.poll().unwrap();
        assert!(follow.reader.header().is_some());
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

    /// A trace-mode file (the 2.2 golden file ends with two compact blocks of one thread,
    /// the second continuing the first's call chain) written in two parts, cut between
    /// those blocks: the calls read in the second poll are those of a whole-file read
    /// (a reader built per poll restarted the chain and got them wrong).
    #[test]
    fn a_call_chain_carries_from_one_poll_to_the_next() {
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../clrprof-format/tests/fixtures/golden-v2.2.bin");
        let bytes = std::fs::read(&golden).unwrap();
        let (_, whole, _) = clrprof_format::read_all(&bytes).unwrap();
        let last_block = clrprof_format::TraceReader::new(&bytes)
            .unwrap()
            .blocks()
            .map(|b| b.unwrap().offset as usize)
            .last()
            .unwrap();
        let dir = std::env::temp_dir().join(format!("clrprof-follow-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.clrprof");
        let mut f = File::create(&path).unwrap();
        f.write_all(&bytes[..last_block]).unwrap();
        let mut follow = Follow::open(&path).unwrap();
        let mut got = follow.poll().unwrap();
        f.write_all(&bytes[last_block..]).unwrap();
        let second = follow.poll().unwrap();
        assert!(
            second
                .iter()
                .any(|e| matches!(e.event, Event::Leave { .. })),
            "{second:?}"
        );
        got.extend(second);
        let got: Vec<(u64, u64, Event<'static>)> =
            got.into_iter().map(|e| (e.os_tid, e.ns, e.event)).collect();
        let want: Vec<(u64, u64, Event<'static>)> = whole
            .into_iter()
            .map(|e| (e.os_tid, e.ts, e.event.into_owned()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(follow.skipped_bytes, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
