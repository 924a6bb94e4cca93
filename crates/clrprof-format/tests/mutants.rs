//! Structural mutants of a whole trace (one the way the agent writes it: `end_record` in
//! the header, numbered blocks, a last block holding only `TraceEnd`): every one is
//! reported, none reads as whole, and a repeated block is not counted twice.

mod common;

use clrprof_format::*;
use common::*;

/// The sample blocks, then the end block; the ranges of all of them.
fn whole_trace() -> (Vec<u8>, Vec<std::ops::Range<usize>>, Vec<TestBlock>) {
    let mut header = fixed_header();
    header.meta.end_record = true;
    let mut blocks = sample_blocks();
    for b in &mut blocks {
        b.events
            .retain(|(_, e)| !matches!(e, Event::TraceEnd { .. }));
    }
    let (mut file, mut ranges) = build_file(&header, &blocks);
    let mut records = Vec::new();
    encode(
        &mut records,
        0,
        &Event::TraceEnd {
            blocks: blocks.len() as u64,
        },
    );
    let start = file.len();
    write_block(&mut file, blocks.len() as u64, 0, 0, 1, &records, false).unwrap();
    ranges.push(start..file.len());
    (file, ranges, blocks)
}

fn read(file: &[u8]) -> (Vec<DecodedEvent<'static>>, Vec<Warning>) {
    let (_, events, warnings) = read_all(file).unwrap();
    (owned(events), warnings)
}

fn without_end(events: Vec<DecodedEvent<'static>>) -> Vec<DecodedEvent<'static>> {
    events
        .into_iter()
        .filter(|e| !matches!(e.event, Event::TraceEnd { .. }))
        .collect()
}

#[test]
fn the_whole_trace_reads_without_warnings() {
    let (file, _, blocks) = whole_trace();
    let (events, warnings) = read(&file);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        without_end(events),
        expected(&blocks.iter().collect::<Vec<_>>())
    );
}

#[test]
fn truncation_at_every_block_boundary_is_cut_short() {
    let (file, ranges, blocks) = whole_trace();
    for (i, r) in ranges.iter().enumerate() {
        let (events, warnings) = read(&file[..r.start]);
        assert_eq!(
            events,
            expected(&blocks[..i].iter().collect::<Vec<_>>()),
            "cut before block {i}"
        );
        assert!(
            matches!(warnings.as_slice(), [Warning::CutShort { .. }]),
            "cut before block {i}: {warnings:?}"
        );
    }
    // The time of the last event read: the sample blocks' clock is 3 GHz ticks with one
    // sync point, so ns = ticks / 3 after the first sync point (1,000,000 ticks).
    let cut = ranges[2].start;
    let (events, warnings) = read(&file[..cut]);
    let last = events.iter().map(|e| e.ts).max().unwrap();
    let want = ((last - 1_000_000) as f64 / 3.0).round() as u64;
    match &warnings[0] {
        Warning::CutShort { last_ns: Some(ns) } => assert!(ns.abs_diff(want) <= 1, "{ns}"),
        w => panic!("{w:?}"),
    }
    let (_, warnings) = read(&file[..ranges[0].start]);
    assert_eq!(warnings, [Warning::CutShort { last_ns: None }]);
    assert!(
        warnings[0]
            .to_string()
            .starts_with("the trace was cut short: it has no end record")
    );
}

#[test]
fn a_removed_block_is_reported_missing() {
    let (file, ranges, blocks) = whole_trace();
    for i in 0..blocks.len() {
        let mut mutant = file[..ranges[i].start].to_vec();
        mutant.extend_from_slice(&file[ranges[i].end..]);
        let (events, warnings) = read(&mutant);
        let kept: Vec<&TestBlock> = (0..blocks.len())
            .filter(|&j| j != i)
            .map(|j| &blocks[j])
            .collect();
        assert_eq!(without_end(events), expected(&kept), "block {i}");
        assert_eq!(
            warnings,
            [Warning::BlocksMissing {
                offset: ranges[i].start as u64,
                first: i as u64,
                last: i as u64,
                count: 1
            }],
            "block {i}"
        );
    }
}

#[test]
fn a_duplicated_block_is_reported_and_counted_once() {
    let (file, ranges, blocks) = whole_trace();
    let all = expected(&blocks.iter().collect::<Vec<_>>());
    for (i, r) in ranges.iter().enumerate() {
        // Right after itself, and at the end of the file.
        for at in [r.end, file.len()] {
            let mut mutant = file[..at].to_vec();
            mutant.extend_from_slice(&file[r.clone()]);
            mutant.extend_from_slice(&file[at..]);
            let (events, warnings) = read(&mutant);
            assert_eq!(without_end(events), all, "block {i} copied to {at}");
            assert_eq!(
                warnings,
                [Warning::DuplicateBlock {
                    offset: at as u64,
                    seq: i as u64
                }],
                "block {i} copied to {at}"
            );
            let mut reader = TraceReader::new(&mutant).unwrap();
            assert_eq!(reader.blocks().filter(Result::is_ok).count(), ranges.len());
            assert_eq!(reader.stats().blocks_skipped, 1);
        }
    }
}

#[test]
fn every_flipped_header_bit_is_an_error_or_a_warning() {
    let (file, ranges, _) = whole_trace();
    let body = ranges[0].start;
    let mut read_on = 0;
    for i in 0..body {
        // Every bit of the fixed part, one bit (in turn) of each JSON byte.
        let bits = if i < FILE_HEADER_FIXED_LEN {
            0..8
        } else {
            i % 8..i % 8 + 1
        };
        for bit in bits {
            let mut mutant = file.clone();
            mutant[i] ^= 1 << bit;
            let Ok(mut reader) = TraceReader::new(&mutant) else {
                continue;
            };
            reader.events().for_each(drop);
            assert!(
                reader
                    .warnings()
                    .iter()
                    .any(|w| matches!(w, Warning::HeaderCrcMismatch)),
                "byte {i} bit {bit}: {:?}",
                reader.warnings()
            );
            read_on += 1;
        }
    }
    // Most flips inside the JSON's strings leave it valid: those are the ones the CRC
    // catches.
    assert!(read_on > 100, "{read_on}");
}
