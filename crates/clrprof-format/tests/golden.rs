//! Golden files: small traces committed under tests/fixtures/. The encoder must still
//! produce `golden-v2.6.bin` byte for byte (so any format change is deliberate), and the
//! reader must still read every file, 1.0 included (so old traces stay readable).
//!
//! After a deliberate format change, regenerate with
//! `CLRPROF_UPDATE_GOLDEN=1 cargo test -p clrprof-format --test golden`, bump the version
//! as docs/trace-format.md says, and keep the old files as `golden-v<old>.bin` with a
//! decode test. (Fixtures are `.bin`: the repository ignores `*.clrprof`.)

mod common;

use std::path::PathBuf;

use clrprof_format::*;
use common::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Whether version `major.minor` has kind `id`: older golden files hold only those.
fn has_kind(id: u8, major: u16, minor: u16) -> bool {
    if matches!(id, 44 | 45) && (major, minor) < (2, 5) {
        return false;
    }
    if id == 46 && (major, minor) < (2, 6) {
        return false;
    }
    match (major, minor) {
        (1, 0 | 1) => id <= 34,
        (1, 2) => id <= 71 && id != 37 && id != 38,
        (1, _) => id != 37 && id != 38 && id < 100,
        (2, 0) => id != 38 && id < 100,
        (2, 1) => id != 38 && id != 102 && id != 103 && id < 116,
        (2, 2) => id != 38 && id != 103 && id < 116,
        (2, 3) => id != 118,
        _ => true,
    }
}

/// The golden trace's blocks: every kind (of that version) once, in three blocks,
/// optionally compressed.
fn golden_blocks(compress: bool, major: u16, minor: u16) -> Vec<TestBlock> {
    let mut blocks = sample_blocks();
    blocks.truncate(3);
    for b in &mut blocks {
        b.compress = compress;
        b.events.retain(|(_, e)| has_kind(e.kind(), major, minor));
    }
    blocks
}

/// The header the golden file of `major.minor` was written with.
fn golden_header(major: u16, minor: u16) -> Header {
    let mut h = fixed_header();
    h.meta.event_kinds.retain(|k| has_kind(k.id, major, minor));
    h
}

/// Version 1.1 added unit blocks (trace mode's ring memory): the golden file ends with one,
/// holding these events of thread 77.
fn golden_units() -> (Vec<u8>, Vec<DecodedEvent<'static>>) {
    let mut units = Vec::new();
    let mut events = Vec::new();
    for (i, tag) in [
        units::TAG_ENTER,
        units::TAG_ENTER,
        units::TAG_LEAVE,
        units::TAG_TAILCALL,
    ]
    .into_iter()
    .enumerate()
    {
        let (ts, function, sp) = (
            5_000_000 + i as u64 * 40,
            i as u32 + 1,
            0x7ffd_1230 - i as u32 * 64,
        );
        units.extend_from_slice(&ts.to_le_bytes());
        units.extend_from_slice(&(tag | function).to_le_bytes());
        units.extend_from_slice(&sp.to_le_bytes());
        let (function, sp) = (u64::from(function), u64::from(sp));
        let event = match tag {
            units::TAG_ENTER => Event::Enter { function, sp },
            units::TAG_LEAVE => Event::Leave { function, sp },
            _ => Event::Tailcall { function, sp },
        };
        events.push(DecodedEvent {
            os_tid: 77,
            ts,
            event,
        });
    }
    (units, events)
}

/// Version 1.3 added compact blocks (8-byte words): the golden file ends with two of
/// thread 78, the second continuing the first's chain (timestamp high half, last SP).
fn golden_compact() -> (Vec<Vec<u8>>, Vec<DecodedEvent<'static>>) {
    let mut events = Vec::new();
    let mut parts = Vec::new();
    let mut w = compact::CompactWriter::new();
    let calls = [
        (0x1_0000_0100u64, EltKind::Enter, 1u32, 0x7ffd_1230u32),
        (0x1_0000_0140, EltKind::Enter, 2, 0x7ffd_1200),
        (0x1_0000_0180, EltKind::Leave, 2, 0x7ffd_1200),
        (0x1_0000_01c0, EltKind::Tailcall, 1, 0x7ffd_1230),
        (0x1_0000_0200, EltKind::Enter, 300_000, 0x7ffd_1230), // long: index
        (0x2_0000_0010, EltKind::Leave, 300_000, 0x7ffd_1230), // new high half
    ];
    for (i, &(ts, kind, f, sp)) in calls.iter().enumerate() {
        if i == 3 {
            parts.push(std::mem::take(&mut w.bytes));
        }
        w.elt(ts, kind, f, sp);
        let (function, sp) = (u64::from(f), u64::from(sp));
        let event = match kind {
            EltKind::Enter => Event::Enter { function, sp },
            EltKind::Leave => Event::Leave { function, sp },
            EltKind::Tailcall => Event::Tailcall { function, sp },
        };
        events.push(DecodedEvent {
            os_tid: 78,
            ts,
            event,
        });
        if i == 1 {
            let name = Event::ThreadName {
                thread: 78,
                name: "compact".into(),
            };
            let mut rec = Vec::new();
            encode(&mut rec, 0, &name);
            w.record(0x1_0000_0150, &rec);
            events.push(DecodedEvent {
                os_tid: 78,
                ts: 0x1_0000_0150,
                event: name,
            });
        }
    }
    parts.push(w.bytes);
    (parts, events)
}

fn golden_bytes(compress: bool) -> Vec<u8> {
    let blocks = golden_blocks(compress, FORMAT_MAJOR, FORMAT_MINOR);
    let mut file = build_file(&fixed_header(), &blocks).0;
    let mut seq = blocks.len() as u64;
    write_units_block(
        &mut file,
        &mut Vec::new(),
        seq,
        77,
        &golden_units().0,
        compress,
    )
    .unwrap();
    for part in golden_compact().0 {
        seq += 1;
        write_compact_block(&mut file, &mut Vec::new(), seq, 78, &part, compress).unwrap();
    }
    file
}

fn check_or_update(name: &str, bytes: &[u8], compare: bool) {
    let path = fixture(name);
    if std::env::var_os("CLRPROF_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        return;
    }
    let on_disk = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; generate it with CLRPROF_UPDATE_GOLDEN=1",
            path.display()
        )
    });
    if compare && on_disk != bytes {
        let first = on_disk
            .iter()
            .zip(bytes)
            .position(|(a, b)| a != b)
            .unwrap_or(on_disk.len().min(bytes.len()));
        panic!(
            "the encoder no longer reproduces {} (first difference at byte {first}; {} bytes on \
             disk, {} now). If the format change is deliberate, follow the steps at the top of \
             tests/golden.rs.",
            path.display(),
            on_disk.len(),
            bytes.len()
        );
    }
}

#[test]
fn encoder_reproduces_the_golden_file() {
    check_or_update("golden-v2.6.bin", &golden_bytes(false), true);
    // Compressed output depends on the LZ4 implementation: only its decoding is checked.
    check_or_update("golden-v2.6-lz4.bin", &golden_bytes(true), false);
}

#[test]
fn golden_files_still_decode() {
    for (name, compress, major, minor) in [
        ("golden-v1.0.bin", false, 1, 0),
        ("golden-v1.0-lz4.bin", true, 1, 0),
        ("golden-v1.1.bin", false, 1, 1),
        ("golden-v1.1-lz4.bin", true, 1, 1),
        ("golden-v1.2.bin", false, 1, 2),
        ("golden-v1.2-lz4.bin", true, 1, 2),
        ("golden-v1.3.bin", false, 1, 3),
        ("golden-v1.3-lz4.bin", true, 1, 3),
        ("golden-v2.0.bin", false, 2, 0),
        ("golden-v2.0-lz4.bin", true, 2, 0),
        ("golden-v2.1.bin", false, 2, 1),
        ("golden-v2.1-lz4.bin", true, 2, 1),
        ("golden-v2.2.bin", false, 2, 2),
        ("golden-v2.2-lz4.bin", true, 2, 2),
        ("golden-v2.3.bin", false, 2, 3),
        ("golden-v2.3-lz4.bin", true, 2, 3),
        ("golden-v2.4.bin", false, 2, 4),
        ("golden-v2.4-lz4.bin", true, 2, 4),
        ("golden-v2.5.bin", false, 2, 5),
        ("golden-v2.5-lz4.bin", true, 2, 5),
        ("golden-v2.6.bin", false, 2, 6),
        ("golden-v2.6-lz4.bin", true, 2, 6),
    ] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let (header, events, warnings) = read_all(&bytes).unwrap();
        assert_eq!((header.major, header.minor), (major, minor), "{name}");
        assert_eq!(header.meta, golden_header(major, minor).meta, "{name}");
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
        let blocks = golden_blocks(compress, major, minor);
        let mut want = expected(&blocks.iter().collect::<Vec<_>>());
        if (major, minor) >= (1, 1) {
            want.extend(golden_units().1);
        }
        if (major, minor) >= (1, 3) {
            want.extend(golden_compact().1);
        }
        // A file holds only the kinds its writer knew.
        want.retain(|d| {
            header
                .meta
                .event_kinds
                .iter()
                .any(|k| k.id == d.event.kind())
        });
        assert_eq!(owned(events), want, "{name}");
        let mut reader = TraceReader::new(&bytes).unwrap();
        let compressed = reader
            .blocks()
            .filter(|b| b.as_ref().unwrap().header.compressed())
            .count();
        assert_eq!(compressed > 0, compress, "{name}");
    }
}
