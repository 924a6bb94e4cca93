//! Everything written is read back unchanged.

mod common;

use std::collections::BTreeSet;

use clrprof_format::*;
use common::*;
use proptest::prelude::*;

#[test]
fn every_kind_is_covered_by_the_samples() {
    let kinds: BTreeSet<u8> = every_kind().iter().map(Event::kind).collect();
    let table: BTreeSet<u8> = event_kind_table().iter().map(|k| k.id).collect();
    assert_eq!(kinds, table);
    for ev in every_kind() {
        assert_eq!(kind_name(ev.kind()), Some(ev.name()));
    }
}

#[test]
fn every_kind_round_trips_through_records() {
    for (i, ev) in every_kind().into_iter().enumerate() {
        let mut buf = Vec::new();
        encode(&mut buf, i as u64 * 1_000_003, &ev);
        let recs: Vec<_> = Records::new(&buf, 0).collect();
        assert_eq!(recs.len(), 1, "{ev:?}");
        let rec = recs[0].as_ref().unwrap();
        assert_eq!(rec.ts, i as u64 * 1_000_003);
        assert_eq!(rec.event, ev);
        assert_eq!(rec.lossy_strings, 0);
    }
}

#[test]
fn multi_block_file_round_trips() {
    let blocks = sample_blocks();
    let (file, ranges) = build_file(&fixed_header(), &blocks);
    let (header, events, warnings) = read_all(&file).unwrap();
    assert_eq!(header, fixed_header());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(owned(events), expected(&blocks.iter().collect::<Vec<_>>()));

    let mut reader = TraceReader::new(&file).unwrap();
    let read: Vec<Block<'_>> = reader.blocks().map(|b| b.unwrap()).collect();
    assert_eq!(read.len(), 4);
    for ((b, t), r) in read.iter().zip(&blocks).zip(&ranges) {
        assert_eq!(b.offset, r.start as u64);
        assert_eq!(b.os_tid(), t.os_tid);
        assert_eq!(b.header.record_count as usize, t.events.len());
        assert_eq!(b.records().count(), t.events.len());
    }
    // The repetitive ELT block compresses.
    assert!(read[3].header.compressed());
    let stats = reader.stats();
    assert_eq!(stats.blocks_read, 4);
    assert_eq!(stats.blocks_skipped, 0);
    assert_eq!(stats.bytes_skipped, 0);
    assert_eq!(stats.file_bytes, file.len() as u64);

    // A second pass gives the same events and counts them.
    let n = reader.events().count();
    // Each record that holds two events (EnterArgs, ReturnLeave) reads as two.
    let pairs = every_kind().iter().filter(|e| e.is_pair()).count();
    assert_eq!(pairs, 2);
    assert_eq!(n, every_kind().len() + pairs + 40);
    assert_eq!(reader.stats().events, n as u64);
    assert!(reader.warnings().is_empty());
}

#[test]
fn uncompressed_strings_borrow_from_the_file() {
    let blocks = sample_blocks();
    let (file, _) = build_file(&fixed_header(), &blocks);
    let mut reader = TraceReader::new(&file).unwrap();
    let borrowed = reader
        .events()
        .filter_map(|d| match d.event {
            Event::FunctionInfo { name, .. } => Some(matches!(name, std::borrow::Cow::Borrowed(_))),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(borrowed, [true]);
}

#[test]
fn empty_trace_has_no_events() {
    let (file, _) = build_file(&fixed_header(), &[]);
    let (_, events, warnings) = read_all(&file).unwrap();
    assert!(events.is_empty());
    assert!(warnings.is_empty());
}

#[test]
fn block_writer_matches_write_block() {
    let mut records = Vec::new();
    for ev in every_kind() {
        encode(&mut records, 1, &ev);
    }
    let n = count_records(&records);
    for compress in [false, true] {
        let mut a = Vec::new();
        write_block(&mut a, 0, 9, 77, n, &records, compress).unwrap();
        let mut w = BlockWriter::new(Vec::new());
        w.write_block(9, 77, n, &records, compress).unwrap();
        w.write_block(9, 77, n, &records, compress).unwrap();
        assert_eq!(w.get_ref()[..a.len()], a[..]);
        assert_eq!(w.bytes_written(), 2 * a.len() as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_event_round_trips(ev in arb_event(), ts in any::<u64>()) {
        let mut buf = vec![0xAA; 3]; // records may follow other bytes
        encode(&mut buf, ts, &ev);
        let rec = Records::new(&buf[3..], 0).next().unwrap().unwrap();
        prop_assert_eq!(rec.ts, ts);
        prop_assert_eq!(&rec.event, &ev);
        prop_assert_eq!(count_records(&buf[3..]), 1);
    }

    #[test]
    fn any_block_sequence_round_trips(
        blocks in prop::collection::vec(
            (
                any::<u64>(),
                prop::collection::vec((any::<u64>(), arb_event()), 0..12),
                any::<bool>(),
            ),
            0..5,
        )
    ) {
        let blocks: Vec<TestBlock> = blocks
            .into_iter()
            .map(|(os_tid, events, compress)| TestBlock { os_tid, events, compress })
            .collect();
        let (file, _) = build_file(&fixed_header(), &blocks);
        let (_, events, warnings) = read_all(&file).unwrap();
        prop_assert!(warnings.is_empty(), "{:?}", warnings);
        prop_assert_eq!(owned(events), expected(&blocks.iter().collect::<Vec<_>>()));
    }
}

#[test]
fn unit_blocks_read_as_records_compressed_or_not() {
    let mut units = Vec::new();
    let mut want = Vec::new();
    for i in 0..500u64 {
        let (ts, function, sp) = (10_000 + i * 37, i % 9 + 1, 0x7ff0_0000 + (i % 50) * 16);
        let (tag, ev) = match i % 3 {
            0 => (units::TAG_ENTER, Event::Enter { function, sp }),
            1 => (units::TAG_LEAVE, Event::Leave { function, sp }),
            _ => (units::TAG_TAILCALL, Event::Tailcall { function, sp }),
        };
        units.extend_from_slice(&ts.to_le_bytes());
        units.extend_from_slice(&(tag | function as u32).to_le_bytes());
        units.extend_from_slice(&(sp as u32).to_le_bytes());
        want.push((ts, ev));
    }
    for compress in [false, true] {
        let mut file = Vec::new();
        write_file_header(&mut file, &fixed_header()).unwrap();
        let mut scratch = Vec::new();
        write_units_block(&mut file, &mut scratch, 0, 42, &units, compress).unwrap();
        let mut reader = TraceReader::new(&file).unwrap();
        let got: Vec<_> = reader
            .events()
            .map(|e| {
                assert_eq!(e.os_tid, 42);
                (e.ts, e.event.into_owned())
            })
            .collect();
        assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
        assert_eq!(got, want, "compress {compress}");
        assert_eq!(reader.stats().compressed_blocks, u64::from(compress));
        let blocks: Vec<_> = reader.blocks().map(|b| b.unwrap()).collect();
        assert_eq!(blocks[0].header.record_count, 500);
        assert_eq!(blocks[0].records().count(), 500);
    }
    let mut scratch = Vec::new();
    assert!(write_units_block(&mut Vec::new(), &mut scratch, 0, 1, &[0; 20], false).is_err());
}

/// Readers take unit payloads as they are (no conversion to records): records framed by
/// units, pads, and a damaged unit block, which is skipped whole as before.
#[test]
fn unit_blocks_with_framed_records_pads_and_damage() {
    let unit = |ts: u64, tag: u32, sp: u32| {
        let mut u = ts.to_le_bytes().to_vec();
        u.extend_from_slice(&tag.to_le_bytes());
        u.extend_from_slice(&sp.to_le_bytes());
        u
    };
    let framed = |ts: u64, ev: &Event<'_>| {
        let mut rec = Vec::new();
        encode(&mut rec, 0, ev);
        let mut u = unit(ts, units::TAG_OTHER | rec.len() as u32, 0);
        rec.resize(rec.len().div_ceil(units::UNIT) * units::UNIT, 0);
        u.extend_from_slice(&rec);
        u
    };
    let name = Event::ThreadName {
        thread: 7,
        name: "unit-framed name".into(),
    };
    let mut good = unit(100, units::TAG_ENTER | 3, 0x1000);
    good.extend(framed(105, &name));
    good.extend(unit(110, units::TAG_LEAVE | 3, 0x1000));
    good.extend(unit(0, units::TAG_OTHER | units::PAD, 0));
    good.extend(unit(999, units::TAG_ENTER | 9, 9)); // after the pad: not an event
    // A framed record that runs past the payload.
    let mut bad = unit(200, units::TAG_ENTER | 4, 0x2000);
    bad.extend(unit(210, units::TAG_OTHER | 64, 0));
    for compress in [false, true] {
        let mut file = Vec::new();
        write_file_header(&mut file, &fixed_header()).unwrap();
        let mut scratch = Vec::new();
        write_units_block(&mut file, &mut scratch, 0, 1, &bad, compress).unwrap();
        write_units_block(&mut file, &mut scratch, 1, 2, &good, compress).unwrap();
        let mut reader = TraceReader::new(&file).unwrap();
        let got: Vec<_> = reader
            .events()
            .map(|e| (e.os_tid, e.ts, e.event.into_owned()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    2,
                    100,
                    Event::Enter {
                        function: 3,
                        sp: 0x1000
                    }
                ),
                (2, 105, name.clone().into_owned()),
                (
                    2,
                    110,
                    Event::Leave {
                        function: 3,
                        sp: 0x1000
                    }
                ),
            ],
            "compress {compress}"
        );
        let w = reader.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].to_string().contains("past the payload"), "{}", w[0]);
    }
}

/// `--args` writes a call's Enter and values (`EnterArgs`) and its return value and Leave
/// (`ReturnLeave`) as one record each, between compact call words: every way of reading
/// gives the two events of each in place, in order (the tight call loop of `for_each`
/// included), counts the record once in its block, and a reader without the calls
/// counts their Enter and Leave as skipped calls.
#[test]
fn paired_call_records_read_as_two_events_in_place() {
    let (function, sp) = (7u64, 0x7ffd_1200u64);
    let values: &[u8] = &[0x40, 1, b'n', 3, b'i', b'n', b't', 3, 50];
    let mut w = compact::CompactWriter::new();
    let mut want = Vec::new();
    let call = |kind, f: u32, ts: u64| {
        let (function, sp) = (u64::from(f), sp + 64);
        let event = match kind {
            EltKind::Enter => Event::Enter { function, sp },
            _ => Event::Leave { function, sp },
        };
        (ts, event)
    };
    for (ts, kind, f) in [(1_000u64, EltKind::Enter, 1u32), (1_010, EltKind::Enter, 2)] {
        w.elt(ts, kind, f, sp as u32 + 64);
        want.push(call(kind, f, ts));
    }
    for (ts, pair) in [
        (
            1_020u64,
            Event::EnterArgs {
                function,
                sp,
                values: values.into(),
            },
        ),
        (
            1_030,
            Event::ReturnLeave {
                function,
                sp,
                values: values[..4].into(),
            },
        ),
    ] {
        let mut rec = Vec::new();
        encode(&mut rec, 0, &pair);
        w.record(ts, &rec);
        let (a, b) = pair.split_call().unwrap();
        want.push((ts, a));
        want.push((ts, b));
    }
    for (ts, kind, f) in [(1_040u64, EltKind::Leave, 2u32), (1_050, EltKind::Leave, 1)] {
        w.elt(ts, kind, f, sp as u32 + 64);
        want.push(call(kind, f, ts));
    }
    let mut file = Vec::new();
    write_file_header(&mut file, &fixed_header()).unwrap();
    write_compact_block(&mut file, &mut Vec::new(), 0, 42, &w.bytes, false).unwrap();
    let mut reader = TraceReader::new(&file).unwrap();
    let by_next: Vec<_> = reader
        .events()
        .map(|e| (e.ts, e.event.into_owned()))
        .collect();
    assert_eq!(by_next, want);
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    assert_eq!(reader.stats().events, want.len() as u64);
    let mut by_for_each = Vec::new();
    reader
        .events()
        .for_each(|e| by_for_each.push((e.ts, e.event.into_owned())));
    assert_eq!(by_for_each, want);
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    let without: Vec<_> = reader
        .events_without_calls()
        .map(|e| (e.ts, e.event.into_owned()))
        .collect();
    let values_only: Vec<_> = want
        .iter()
        .filter(|(_, e)| matches!(e, Event::CallArgs { .. } | Event::CallReturn { .. }))
        .cloned()
        .collect();
    assert_eq!(without, values_only);
    assert_eq!(reader.stats().skipped_calls, 6);
    assert_eq!(
        (reader.stats().calls_first_ts, reader.stats().calls_last_ts),
        (1_000, 1_050)
    );
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
}
