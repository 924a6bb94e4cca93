//! Decoding on a second thread (`Events::for_each_decoded_ahead`), and the calls handed
//! over apart (`Events::for_each_split`, on one thread or two), give exactly what a
//! single-threaded pass gives, and `for_each` what `next` gives: the same events in the
//! same order, the same warnings and counters, for every golden file and for a trace of
//! many compact blocks whose call chains carry from block to block on three threads,
//! with damage in it; so does a pass that trusts the blocks an earlier pass checked.

mod common;

use std::path::PathBuf;

use clrprof_format::compact::CompactWriter;
use clrprof_format::*;
use common::*;

fn golden_files() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("golden-")
        })
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 16, "the golden files: {files:?}");
    files
}

/// How a pass takes the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `for_each` on this thread.
    Plain,
    /// `next`, one by one.
    Next,
    /// `for_each_decoded_ahead`.
    Ahead,
    /// `for_each_split`.
    Split,
    /// `for_each_split_decoded_ahead`.
    SplitAhead,
    /// `for_each_split` by a reader that trusts the blocks an earlier pass checked.
    SplitTrusted,
}

/// Collects a split pass's events, the calls turned back into events.
struct Collect<'g>(&'g mut Vec<DecodedEvent<'static>>);

impl<'a> SplitSink<'a> for Collect<'_> {
    fn call(&mut self, c: DecodedCall) {
        self.0.push(c.event());
    }
    fn event(&mut self, e: DecodedEvent<'a>) {
        assert!(e.call().is_none(), "a call among the other events: {e:?}");
        self.0.push(DecodedEvent {
            os_tid: e.os_tid,
            ts: e.ts,
            event: e.event.into_owned(),
        });
    }
}

/// One pass: the events, the warnings and the counters.
fn pass(
    bytes: &[u8],
    skip_calls: bool,
    mode: Mode,
) -> (Vec<DecodedEvent<'static>>, Vec<String>, ReadStats) {
    let mut reader = TraceReader::new(bytes).unwrap();
    if mode == Mode::SplitTrusted {
        reader.events_without_calls().for_each(drop);
        let checked = reader.checked_blocks().clone();
        reader.trust(checked);
    }
    let mut got = Vec::new();
    {
        let events = if skip_calls {
            reader.events_without_calls()
        } else {
            reader.events()
        };
        let mut each = |d: DecodedEvent<'_>| {
            got.push(DecodedEvent {
                os_tid: d.os_tid,
                ts: d.ts,
                event: d.event.into_owned(),
            })
        };
        match mode {
            Mode::Plain => events.for_each(each),
            Mode::Next => {
                for d in events {
                    each(d);
                }
            }
            Mode::Ahead => events.for_each_decoded_ahead(each),
            Mode::Split | Mode::SplitTrusted => events.for_each_split(&mut Collect(&mut got)),
            Mode::SplitAhead => events.for_each_split_decoded_ahead(&mut Collect(&mut got)),
        }
    }
    let warnings = reader.warnings().iter().map(|w| w.to_string()).collect();
    (got, warnings, reader.stats())
}

fn same_both_ways(name: &str, bytes: &[u8]) -> usize {
    let mut n = 0;
    for skip_calls in [false, true] {
        let one = pass(bytes, skip_calls, Mode::Plain);
        for mode in [
            Mode::Next,
            Mode::Ahead,
            Mode::Split,
            Mode::SplitAhead,
            Mode::SplitTrusted,
        ] {
            let two = pass(bytes, skip_calls, mode);
            assert_eq!(
                one.1, two.1,
                "{name} (skip calls {skip_calls}, {mode:?}): warnings"
            );
            assert_eq!(
                one.2, two.2,
                "{name} (skip calls {skip_calls}, {mode:?}): counters"
            );
            assert!(
                one.0 == two.0,
                "{name} (skip calls {skip_calls}, {mode:?}): events differ"
            );
        }
        n = n.max(one.0.len());
    }
    n
}

#[test]
fn every_golden_file_reads_the_same_decoded_ahead() {
    for (name, bytes) in golden_files() {
        assert!(same_both_ways(&name, &bytes) > 0, "{name}");
    }
}

/// Three threads, 30 compact blocks each (every other one compressed), each thread's
/// writer carrying its chain (timestamp high half, last stack pointer) from one block to
/// the next, timestamps crossing 2^32; a framed record now and then.
fn many_compact_blocks() -> (Vec<u8>, Vec<std::ops::Range<usize>>) {
    let mut file = Vec::new();
    write_file_header(&mut file, &fixed_header()).unwrap();
    let mut writers: Vec<CompactWriter> = (0..3).map(|_| CompactWriter::new()).collect();
    let mut ts = [(1u64 << 32) - 500_000; 3];
    let mut scratch = Vec::new();
    let mut ranges = Vec::new();
    let mut record = Vec::new();
    for block in 0..90u64 {
        let t = (block % 3) as usize;
        let w = &mut writers[t];
        w.bytes.clear();
        for i in 0..2_000u32 {
            let depth = i % 7;
            ts[t] += 37 + u64::from(i % 5);
            let sp = 0x7ffd_0000 - depth * 64;
            let kind = if i % 2 == 0 {
                EltKind::Enter
            } else {
                EltKind::Leave
            };
            // Now and then a function id too large for a short word.
            let function = if i % 97 == 0 { 1 << 20 } else { 1 + i % 11 };
            w.elt(ts[t], kind, function, sp);
            if i % 500 == 0 {
                record.clear();
                encode(&mut record, 0, &Event::ThreadCreated { thread: block });
                w.record(ts[t], &record);
            }
        }
        let start = file.len();
        write_compact_block(
            &mut file,
            &mut scratch,
            block,
            100 + t as u64,
            &w.bytes,
            block % 2 == 0,
        )
        .unwrap();
        ranges.push(start..file.len());
    }
    (file, ranges)
}

#[test]
fn many_compact_blocks_with_damage_read_the_same_decoded_ahead() {
    let (clean, ranges) = many_compact_blocks();
    let n = same_both_ways("clean", &clean);
    assert!(n > 40 * 4096, "{n} events: many batches");
    // A block damaged (CRC), one duplicated, the file cut inside the last.
    let mut damaged = clean.clone();
    let mid = ranges[40].start + 40;
    damaged[mid] ^= 0x55;
    let dup = clean[ranges[60].clone()].to_vec();
    damaged.splice(ranges[61].start..ranges[61].start, dup);
    damaged.truncate(damaged.len() - 100);
    let (_, warnings, _) = pass(&damaged, false, Mode::Plain);
    assert!(warnings.len() >= 3, "{warnings:?}");
    same_both_ways("damaged", &damaged);
}

#[test]
fn a_consumer_that_stops_early_ends_the_pass() {
    // The caller's thread panicking mid-pass: the decoding thread stops sending and the
    // scope ends (no hang), the panic comes through.
    let (clean, _) = many_compact_blocks();
    let mut reader = TraceReader::new(&clean).unwrap();
    let events = reader.events();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut n = 0;
        events.for_each_decoded_ahead(|_| {
            n += 1;
            if n == 10_000 {
                panic!("stop");
            }
        });
    }));
    assert!(result.is_err());
}
