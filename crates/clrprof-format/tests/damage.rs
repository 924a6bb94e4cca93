//! Damaged, truncated and future files: the reader never panics, reads every intact
//! block and says what it skipped.

mod common;

use clrprof_format::*;
use common::*;
use proptest::prelude::*;

fn read(file: &[u8]) -> (Vec<DecodedEvent<'static>>, Vec<Warning>) {
    let (_, events, warnings) = read_all(file).unwrap();
    (owned(events), warnings)
}

#[test]
fn truncation_at_every_offset() {
    let blocks = sample_blocks();
    let (file, ranges) = build_file(&fixed_header(), &blocks);
    let body = ranges[0].start;
    for cut in 0..=file.len() {
        let bytes = &file[..cut];
        let reader = TraceReader::new(bytes);
        if cut < body {
            let err = reader.err().expect("a cut header is an error");
            let expected = match cut {
                0 => matches!(err, FormatError::Empty),
                1..20 => matches!(err, FormatError::HeaderTruncated { .. }),
                _ => matches!(err, FormatError::HeaderJsonTruncated { .. }),
            };
            assert!(expected, "cut {cut}: {err}");
            continue;
        }
        let complete: Vec<&TestBlock> = blocks
            .iter()
            .zip(&ranges)
            .filter(|(_, r)| r.end <= cut)
            .map(|(b, _)| b)
            .collect();
        let (events, warnings) = read(bytes);
        assert_eq!(events, expected(&complete), "cut {cut}");
        let partial = ranges.iter().find(|r| r.start < cut && cut < r.end);
        match partial {
            None => assert!(warnings.is_empty(), "cut {cut}: {warnings:?}"),
            Some(r) => {
                assert_eq!(warnings.len(), 1, "cut {cut}: {warnings:?}");
                assert!(
                    matches!(warnings[0], Warning::TruncatedBlock { offset, present, .. }
                        if offset == r.start as u64 && present == (cut - r.start) as u64),
                    "cut {cut}: {:?}",
                    warnings[0]
                );
                assert!(
                    warnings[0]
                        .to_string()
                        .starts_with(&format!("trace ends inside a block at byte {}", r.start))
                );
            }
        }
    }
}

#[test]
fn damaged_payload_skips_only_that_block() {
    let blocks = sample_blocks();
    let (mut file, ranges) = build_file(&fixed_header(), &blocks);
    file[ranges[1].start + 45] ^= 0x10;
    let (events, warnings) = read(&file);
    assert_eq!(events, expected(&[&blocks[0], &blocks[2], &blocks[3]]));
    assert_eq!(
        warnings,
        [
            Warning::CrcMismatch {
                offset: ranges[1].start as u64,
                len: ranges[1].len() as u64
            },
            // The next block's number says one is missing.
            Warning::BlocksMissing {
                offset: ranges[2].start as u64,
                first: 1,
                last: 1,
                count: 1
            }
        ]
    );
    assert_eq!(
        warnings[0].to_string(),
        format!(
            "CRC mismatch in block at byte {} ({} bytes): the block is damaged and was skipped",
            ranges[1].start,
            ranges[1].len()
        )
    );
    let mut reader = TraceReader::new(&file).unwrap();
    let items: Vec<_> = reader.blocks().collect();
    assert_eq!(items.len(), 4);
    assert!(items[1].is_err());
    assert_eq!(reader.stats().blocks_skipped, 1);
    assert_eq!(reader.stats().bytes_skipped, ranges[1].len() as u64);
}

#[test]
fn damaged_length_resynchronises() {
    let blocks = sample_blocks();
    for (byte, mask) in [(7, 0x40), (5, 0x01), (4, 0xff)] {
        let (mut file, ranges) = build_file(&fixed_header(), &blocks);
        file[ranges[0].start + byte] ^= mask;
        let (events, warnings) = read(&file);
        assert_eq!(
            events,
            expected(&[&blocks[1], &blocks[2], &blocks[3]]),
            "byte {byte}"
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            matches!(
                warnings[1],
                Warning::BlocksMissing {
                    first: 0,
                    count: 1,
                    ..
                }
            ),
            "{warnings:?}"
        );
        match &warnings[0] {
            Warning::Resynchronized {
                offset, resumed_at, ..
            } => {
                assert_eq!(*offset, ranges[0].start as u64);
                assert_eq!(*resumed_at, ranges[1].start as u64);
            }
            w => panic!("byte {byte}: {w:?}"),
        }
        assert!(warnings[0].to_string().contains(&format!(
            "resynchronised at byte {} by scanning for the next block magic whose CRC checks out",
            ranges[1].start
        )));
    }
}

#[test]
fn implausible_length_is_reported_as_such() {
    let blocks = sample_blocks();
    let (mut file, ranges) = build_file(&fixed_header(), &blocks);
    file[ranges[2].start + 7] = 0x7f; // length ≈ 2 GiB
    let (events, warnings) = read(&file);
    assert_eq!(events, expected(&[&blocks[0], &blocks[1], &blocks[3]]));
    assert!(
        warnings[0]
            .to_string()
            .starts_with("implausible block length"),
        "{}",
        warnings[0]
    );
}

#[test]
fn garbage_between_blocks_is_skipped() {
    let blocks = sample_blocks();
    let (file, ranges) = build_file(&fixed_header(), &blocks);
    let mut damaged = file[..ranges[2].start].to_vec();
    damaged.extend_from_slice(b"BLK1 this is not a block, BLK1 neither");
    damaged.extend_from_slice(&file[ranges[2].start..]);
    let (events, warnings) = read(&damaged);
    assert_eq!(events, expected(&blocks.iter().collect::<Vec<_>>()));
    assert_eq!(warnings.len(), 1);
    assert!(matches!(
        warnings[0],
        Warning::Resynchronized { skipped: 38, .. }
    ));

    let mut tail = file.clone();
    tail.extend_from_slice(&[0u8; 100]);
    let (events, warnings) = read(&tail);
    assert_eq!(
        events.len(),
        expected(&blocks.iter().collect::<Vec<_>>()).len()
    );
    assert_eq!(
        warnings[0].to_string(),
        format!(
            "data that is not a block (no \"BLK1\" magic) at byte {}: no intact block follows, \
             so the last 100 bytes of the file were ignored",
            file.len()
        )
    );
}

#[test]
fn unknown_kinds_are_skipped_and_named() {
    let mut header = fixed_header();
    header.minor = FORMAT_MINOR + 1;
    header.meta.event_kinds.push(EventKindDesc {
        id: 99,
        name: "FutureThing".into(),
        fields: vec![FieldDesc {
            name: "x".into(),
            ty: "u64".into(),
        }],
    });
    let mut records = Vec::new();
    encode(&mut records, 1, &Event::ThreadCreated { thread: 1 });
    for _ in 0..3 {
        records.extend_from_slice(&[99, 2, 5, 7]);
    }
    records.extend_from_slice(&[120, 1, 0]); // unknown and unnamed, just a timestamp
    encode(&mut records, 2, &Event::ThreadDestroyed { thread: 1 });
    let mut file = Vec::new();
    write_file_header(&mut file, &header).unwrap();
    write_block(&mut file, 0, 5, 0, count_records(&records), &records, false).unwrap();

    let (events, warnings) = read(&file);
    assert_eq!(events.len(), 2);
    // The skipped records' timestamp deltas still count.
    assert_eq!((events[0].ts, events[1].ts), (1, 1 + 3 * 5 + 2));
    let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            format!(
                "trace format {FORMAT_MAJOR}.{} is newer than this reader's \
                 {FORMAT_MAJOR}.{FORMAT_MINOR}: event kinds and fields added since are skipped; a \
                 newer clrprof reads them",
                FORMAT_MINOR + 1
            ),
            "unknown event kind 99 \"FutureThing\" (3 records skipped): written by a newer \
             clrprof, which can read them"
                .to_string(),
            "unknown event kind 120 (1 records skipped): written by a newer clrprof, which can \
             read them"
                .to_string(),
        ]
    );
    let mut reader = TraceReader::new(&file).unwrap();
    reader.events().for_each(drop);
    assert_eq!(reader.stats().records_skipped, 4);
    assert_eq!(reader.stats().events, 2);
}

#[test]
fn record_level_problems_are_warnings() {
    let mut records = Vec::new();
    encode(&mut records, 1, &Event::ThreadCreated { thread: 1 });
    records.extend_from_slice(&[19, 4, 1, 1, 1, 0xff]); // ThreadName with invalid UTF-8
    records.extend_from_slice(&[21, 2, 1, 200]); // ExceptionPhase 200
    records.extend_from_slice(&[16, 9, 1]); // truncated record
    let mut file = Vec::new();
    write_file_header(&mut file, &fixed_header()).unwrap();
    let offset = file.len();
    write_block(&mut file, 0, 5, 0, 4, &records, true).unwrap();
    let (events, warnings) = read(&file);
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[1].event,
        Event::ThreadName {
            thread: 1,
            name: "\u{fffd}".into()
        }
    );
    let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            format!(
                "invalid UTF-8 in 1 string(s), the first in the block at byte {offset}: \
                 replaced lossily"
            ),
            format!(
                "1 malformed ExceptionPhase record(s) (kind 21) skipped; the first, in the block \
                 at byte {offset}: field `phase`: unknown ExceptionPhase value 200 (written by a \
                 newer version?)"
            ),
            format!(
                "record truncated inside block at byte {offset} (record at payload byte 14): the \
                 last 3 bytes of the block were skipped"
            ),
        ]
    );
}

#[test]
fn a_record_without_timestamp_ends_its_block_only() {
    let mut bad = Vec::new();
    encode(&mut bad, 7, &Event::ThreadCreated { thread: 1 });
    bad.extend_from_slice(&[3, 1, 0x80]); // Shutdown whose delta is cut
    encode(&mut bad, 1, &Event::ThreadDestroyed { thread: 1 });
    let mut good = Vec::new();
    encode(&mut good, 5, &Event::Shutdown {});
    let mut file = Vec::new();
    write_file_header(&mut file, &fixed_header()).unwrap();
    let offset = file.len();
    write_block(&mut file, 0, 5, 100, 3, &bad, false).unwrap();
    write_block(&mut file, 1, 5, 200, 1, &good, false).unwrap();
    let (events, warnings) = read(&file);
    let ts: Vec<u64> = events.iter().map(|e| e.ts).collect();
    assert_eq!(ts, [107, 205]);
    assert_eq!(
        warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [format!(
            "record without a valid timestamp inside block at byte {offset} (record at payload \
             byte 4): the timestamps after it cannot be recovered, so the last 7 bytes of the \
             block were skipped"
        )]
    );
}

#[test]
fn miscounted_and_undecodable_blocks() {
    let mut records = Vec::new();
    encode(&mut records, 1, &Event::Shutdown {});
    let mut file = Vec::new();
    write_file_header(&mut file, &fixed_header()).unwrap();
    let first = file.len();
    write_block(&mut file, 0, 5, 0, 2, &records, false).unwrap();
    // A block with a flag this version does not know (but a valid CRC).
    let second = file.len();
    let mut h = BlockHeader {
        payload_len: records.len() as u32,
        crc: 0,
        flags: 0b1000,
        os_tid: 5,
        base_ts: 0,
        record_count: 1,
        records_len: records.len() as u32,
        seq: Some(1),
    };
    h.crc = h.compute_crc(&records);
    file.extend_from_slice(&h.to_bytes());
    file.extend_from_slice(&records);
    write_block(&mut file, 2, 5, 0, 1, &records, false).unwrap();

    let (events, warnings) = read(&file);
    assert_eq!(events.len(), 2);
    let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            format!(
                "block at byte {first} declares 2 records but holds 1: the writer miscounted; all \
                 records were read"
            ),
            format!(
                "block at byte {second} cannot be decoded (unknown flags 0x8: written by a newer \
                 clrprof, which can read it) and was skipped"
            ),
        ]
    );
}

/// Flips `mask` into a byte after the header for each flip; returns the indexes of the
/// blocks that changed.
fn flip(file: &mut [u8], ranges: &[std::ops::Range<usize>], flips: &[(usize, u8)]) -> Vec<usize> {
    let original = file.to_vec();
    let body = ranges[0].start;
    for &(at, mask) in flips {
        file[body + at % (file.len() - body)] ^= mask;
    }
    (0..ranges.len())
        .filter(|&i| file[ranges[i].clone()] != original[ranges[i].clone()])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Damage anywhere (header included) never panics.
    #[test]
    fn random_damage_never_panics(
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 1..20),
        cut in any::<usize>(),
    ) {
        let blocks = sample_blocks();
        let (mut file, _) = build_file(&fixed_header(), &blocks);
        for (at, mask) in flips {
            let n = file.len();
            file[at % n] ^= mask;
        }
        file.truncate(file.len() - cut % 64);
        if let Ok(mut reader) = TraceReader::new(&file) {
            let n = reader.events().count();
            let s = reader.stats();
            prop_assert_eq!(s.events, n as u64);
            for w in reader.warnings() {
                prop_assert!(!w.to_string().is_empty());
            }
            for b in reader.blocks().flatten() {
                for r in b.records().flatten() {
                    let _ = r.event.into_owned();
                }
            }
        }
    }

    /// Damage inside blocks loses exactly the damaged blocks.
    #[test]
    fn damaged_blocks_are_skipped_and_the_rest_read(
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 1..4),
    ) {
        let blocks = sample_blocks();
        let (mut file, ranges) = build_file(&fixed_header(), &blocks);
        let hit = flip(&mut file, &ranges, &flips);
        let intact: Vec<&TestBlock> = blocks
            .iter()
            .enumerate()
            .filter(|(i, _)| !hit.contains(i))
            .map(|(_, b)| b)
            .collect();
        let (events, warnings) = read(&file);
        prop_assert_eq!(events, expected(&intact));
        prop_assert!(!warnings.is_empty());
    }

    /// Arbitrary bytes after a valid header never panic.
    #[test]
    fn arbitrary_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..2000)) {
        let mut file = Vec::new();
        write_file_header(&mut file, &fixed_header()).unwrap();
        file.extend_from_slice(b"BLK1");
        file.extend_from_slice(&body);
        let mut reader = TraceReader::new(&file).unwrap();
        reader.events().for_each(drop);
        prop_assert!(!reader.warnings().is_empty());
    }
}
