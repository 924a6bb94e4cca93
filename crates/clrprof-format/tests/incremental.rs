//! The incremental reader (a trace read while it is written): fed a file in pieces of any
//! size, it yields exactly the events of a whole-file read, with the same warnings, for
//! every golden file (1.3's compact blocks carry a call chain from one block to the next).

mod common;

use std::path::PathBuf;

use clrprof_format::*;
use common::*;

fn fixtures() -> Vec<(String, Vec<u8>)> {
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
    assert!(files.len() >= 14, "the golden files: {files:?}");
    files
}

/// xorshift64*: reproducible piece sizes without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// Feeds `bytes` in pieces of 1 to `max_piece` bytes, polling after each; then finishes.
fn read_in_pieces(
    bytes: &[u8],
    seed: u64,
    max_piece: usize,
) -> (Vec<DecodedEvent<'static>>, Vec<Warning>, ReadStats) {
    let mut rng = Rng(seed | 1);
    let mut reader = IncrementalReader::new();
    let mut events = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = (1 + rng.below(max_piece)).min(bytes.len() - at);
        reader.feed(&bytes[at..at + n]);
        at += n;
        events.extend(reader.poll().unwrap());
    }
    let stats = reader.stats();
    let mut last = Vec::new();
    let (_, warnings) = reader
        .finish(|e| last.push(owned(vec![e]).remove(0)))
        .unwrap();
    events.extend(last);
    (events, warnings, stats)
}

#[test]
fn pieces_of_any_size_give_the_events_of_a_whole_file_read() {
    for (name, bytes) in fixtures() {
        let (header, whole, whole_warnings) = read_all(&bytes).unwrap();
        let whole = owned(whole);
        if (header.major, header.minor) == (1, 3) || header.major == 2 {
            assert!(
                whole.iter().any(|e| matches!(e.event, Event::Enter { .. })),
                "{name}: the golden files from 1.3 end with compact call blocks"
            );
        }
        for (seed, max_piece) in [(1, 1), (2, 7), (3, 64), (4, 300), (5, 5000), (6, 1 << 20)] {
            let (events, warnings, stats) = read_in_pieces(&bytes, seed, max_piece);
            assert_eq!(events, whole, "{name}, pieces of up to {max_piece} bytes");
            assert_eq!(
                warnings, whole_warnings,
                "{name}, pieces of up to {max_piece} bytes"
            );
            let mut reader = TraceReader::new(&bytes).unwrap();
            reader.events().for_each(drop);
            let whole_stats = reader.stats();
            assert_eq!(
                (stats.blocks_read, stats.events, stats.bytes_skipped),
                (whole_stats.blocks_read, whole_stats.events, 0),
                "{name}"
            );
        }
    }
}

#[test]
fn a_block_being_written_waits_for_its_last_byte_and_the_chain_carries_over() {
    // The 1.3 file's last two blocks are compact and the second continues the first's
    // chain (timestamp high half, last stack pointer): read apart, it must still decode.
    let bytes = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden-v2.2.bin"),
    )
    .unwrap();
    let (_, whole, _) = read_all(&bytes).unwrap();
    let whole = owned(whole);
    let mut reader = TraceReader::new(&bytes).unwrap();
    let offsets: Vec<usize> = reader
        .blocks()
        .map(|b| b.unwrap().offset as usize)
        .collect();
    let last = *offsets.last().unwrap();
    let mut inc = IncrementalReader::new();
    // Everything but the last block's last byte: its events wait.
    inc.feed(&bytes[..bytes.len() - 1]);
    let first = inc.poll().unwrap();
    assert_eq!(inc.pending_bytes(), bytes.len() - 1 - last);
    assert!(inc.warnings().is_empty(), "{:?}", inc.warnings());
    inc.feed(&bytes[bytes.len() - 1..]);
    let rest = inc.poll().unwrap();
    assert!(!rest.is_empty());
    assert_eq!(inc.pending_bytes(), 0);
    let got: Vec<_> = first.into_iter().chain(rest).collect();
    assert_eq!(got, whole);
}

#[test]
fn a_file_that_ends_inside_a_block_says_so_at_the_finish() {
    let bytes = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden-v2.2.bin"),
    )
    .unwrap();
    let cut = &bytes[..bytes.len() - 10];
    let (_, whole, whole_warnings) = read_all(cut).unwrap();
    assert!(
        whole_warnings
            .iter()
            .any(|w| matches!(w, Warning::TruncatedBlock { .. })),
        "{whole_warnings:?}"
    );
    let (events, warnings, _) = read_in_pieces(cut, 9, 100);
    assert_eq!(events, owned(whole));
    assert_eq!(warnings, whole_warnings);
}

#[test]
fn damage_between_blocks_loses_only_the_damage() {
    let blocks = sample_blocks();
    let (file, ranges) = build_file(&fixed_header(), &blocks);
    // Garbage between the first and the second block.
    let at = ranges[1].start;
    let mut damaged = file[..at].to_vec();
    damaged.extend(std::iter::repeat_n(0xa5u8, 333));
    damaged.extend_from_slice(&file[at..]);
    let (_, whole, _) = read_all(&damaged).unwrap();
    let whole = owned(whole);
    assert_eq!(whole, expected(&blocks.iter().collect::<Vec<_>>()));
    for (seed, max_piece) in [(11, 3), (12, 50), (13, 400), (14, 1 << 20)] {
        let (events, warnings, stats) = read_in_pieces(&damaged, seed, max_piece);
        assert_eq!(events, whole, "pieces of up to {max_piece} bytes");
        assert_eq!(stats.bytes_skipped, 333, "{warnings:?}");
        // Offsets are the file's, whatever was dropped before.
        assert!(
            warnings.iter().all(|w| match w {
                Warning::Resynchronized {
                    offset, resumed_at, ..
                } => *offset >= at as u64 && *resumed_at <= (at + 333) as u64,
                Warning::CutShort { .. } => true,
                other => panic!("{other:?}"),
            }),
            "{warnings:?}"
        );
    }
}

#[test]
fn a_header_still_being_written_waits_and_a_foreign_file_is_refused() {
    let mut inc = IncrementalReader::new();
    assert!(inc.poll().unwrap().is_empty());
    let bytes = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden-v2.2.bin"),
    )
    .unwrap();
    inc.feed(&bytes[..20]);
    assert!(inc.poll().unwrap().is_empty());
    assert!(inc.header().is_none());
    let mut other = IncrementalReader::new();
    other.feed(b"\x7fELF\x02\x01\x01\0");
    assert!(matches!(other.poll(), Err(FormatError::NotATrace { .. })));
    let mut short = IncrementalReader::new();
    short.feed(&bytes[..20]);
    assert!(matches!(
        short.finish(|_| {}),
        Err(FormatError::HeaderTruncated { .. } | FormatError::HeaderJsonTruncated { .. })
    ));
}

#[test]
fn a_long_follow_remembers_a_bounded_number_of_blocks() {
    let mut file = Vec::new();
    write_file_header(&mut file, &fixed_header()).unwrap();
    let mut inc = IncrementalReader::new();
    inc.feed(&file);
    let blocks = 3 * SEEN_WINDOW;
    let mut records = Vec::new();
    encode(&mut records, 1, &Event::ThreadCreated { thread: 1 });
    let mut events = 0usize;
    let mut chunk = Vec::new();
    for seq in 0..blocks {
        write_block(&mut chunk, seq, 7, seq, 1, &records, false).unwrap();
        if chunk.len() > 1 << 20 || seq + 1 == blocks {
            inc.feed(&chunk);
            chunk.clear();
            events += inc.poll_with(|_| {}).unwrap() as usize;
            assert!(inc.remembered_blocks() as u64 <= 2 * SEEN_WINDOW);
        }
    }
    assert_eq!(events as u64, blocks);
    assert!(inc.warnings().is_empty(), "{:?}", inc.warnings());
    // A copy of a recent block is still a duplicate.
    let mut again = Vec::new();
    write_block(&mut again, blocks - 1, 7, 0, 1, &records, false).unwrap();
    inc.feed(&again);
    assert_eq!(inc.poll_with(|_| {}).unwrap(), 0);
    assert!(
        inc.warnings()
            .iter()
            .any(|w| matches!(w, Warning::DuplicateBlock { seq, .. } if *seq == blocks - 1)),
        "{:?}",
        inc.warnings()
    );
}
