//! Crafted traces (#27 item 6): small files built to make analysis slow or large. Each is
//! read by `clrprof report` within a time bound generous enough for a busy machine and a
//! peak-memory bound (the child's own maxrss, from `wait4`).

use crate::common;

use std::path::Path;
use std::time::Duration;

use clrprof_format::*;
use common::*;

fn header_bytes(mode: &str) -> Vec<u8> {
    let mut file = Vec::new();
    let meta = TraceMeta {
        pid: 1,
        settings: clrprof_settings::Settings {
            mode: serde_json::from_value(serde_json::Value::String(mode.into())).unwrap(),
            ..clrprof_settings::Settings::unrecorded()
        },
        event_kinds: event_kind_table(),
        ..TraceMeta::default()
    };
    write_file_header(&mut file, &Header::new(meta)).unwrap();
    file
}

/// A compressed block with any claimed lengths, its CRC right.
fn raw_lz4_block(file: &mut Vec<u8>, seq: u64, payload: &[u8], records_len: u32, count: u32) {
    let mut h = BlockHeader {
        payload_len: payload.len() as u32,
        crc: 0,
        flags: FLAG_LZ4,
        os_tid: 0,
        base_ts: 0,
        record_count: count,
        records_len,
        seq: Some(seq),
    };
    h.crc = h.compute_crc(payload);
    file.extend_from_slice(&h.to_bytes());
    file.extend_from_slice(payload);
}

/// An LZ4 bomb: blocks of minimal records (`Shutdown`, 3 bytes) compressed as far as LZ4
/// goes (~250:1), ~270 KB of file for 64 MiB of records.
fn lz4_bomb() -> Vec<u8> {
    let mut file = header_bytes("events");
    let records: Vec<u8> = [3u8, 1, 0].repeat((64 << 20) / 3);
    let packed = lz4_flex::block::compress(&records);
    raw_lz4_block(
        &mut file,
        0,
        &packed,
        records.len() as u32,
        (records.len() / 3) as u32,
    );
    file
}

#[test]
fn an_lz4_bomb_is_refused() {
    let dir = scratch("crafted-lz4-bomb");
    let path = dir.join("bomb.clrprof");
    let bomb = lz4_bomb();
    std::fs::write(&path, &bomb).unwrap();
    let r = measure(&["report", path.to_str().unwrap()], &dir);
    eprintln!(
        "LZ4 bomb, {} KB: report exit {}, {:.2} s, peak RSS {:.0} MiB",
        bomb.len() / 1000,
        r.status,
        r.wall.as_secs_f64(),
        r.max_rss_mib
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stderr.contains("an LZ4 bomb, refused"), "{}", r.stderr);
    assert!(r.max_rss_mib < 200.0, "{:.0} MiB", r.max_rss_mib);
    assert!(r.wall < Duration::from_secs(30), "{:?}", r.wall);
    let _ = r.stdout;
}

#[test]
#[ignore = "measurement only"]
fn measure_v1_bomb_and_baseline() {
    let dir = scratch("crafted-v1-bomb");
    let v2 = lz4_bomb();
    // The same bomb as a format 1 file: 16-byte header without CRC, BLK1 blocks.
    let json_len = u32::from_le_bytes(v2[12..16].try_into().unwrap()) as usize;
    let mut v1 = v2[..16].to_vec();
    v1[8] = 1;
    v1.extend_from_slice(&v2[20..20 + json_len]);
    let body = &v2[20 + json_len..];
    let mut h = BlockHeader::parse(body).unwrap();
    h.seq = None;
    let payload = &body[48..];
    h.crc = h.compute_crc(payload);
    v1.extend_from_slice(&h.to_bytes()[..40]);
    v1.extend_from_slice(payload);
    let path = dir.join("v1.clrprof");
    std::fs::write(&path, &v1).unwrap();
    let r = measure(&["report", path.to_str().unwrap()], &dir);
    eprintln!(
        "v1 bomb: exit {} {:.2} s {:.0} MiB",
        r.status,
        r.wall.as_secs_f64(),
        r.max_rss_mib
    );
    let tiny = dir.join("tiny.clrprof");
    std::fs::write(&tiny, header_bytes("events")).unwrap();
    let r = measure(&["report", tiny.to_str().unwrap()], &dir);
    eprintln!(
        "empty trace: exit {} {:.2} s {:.0} MiB",
        r.status,
        r.wall.as_secs_f64(),
        r.max_rss_mib
    );
}

/// `mb` MiB of fake block headers, one every 48 bytes, each claiming the rest of the file
/// as its payload (a plausible length, a wrong CRC), then one intact block: every fake
/// is a candidate for the reader's resynchronisation.
fn fake_magic(mb: usize) -> Vec<u8> {
    let mut file = header_bytes("events");
    let body = mb << 20;
    let mut records = Vec::new();
    encode(
        &mut records,
        0,
        &Event::ThreadName {
            thread: 1,
            name: "after the fakes".into(),
        },
    );
    let real_len = BLOCK_HEADER_LEN + records.len();
    let start = file.len();
    while file.len() - start + BLOCK_HEADER_LEN <= body {
        let rest = (body - (file.len() - start) - BLOCK_HEADER_LEN + real_len) as u32;
        let h = BlockHeader {
            payload_len: rest,
            crc: 0x1234_5678,
            flags: 0,
            os_tid: 7,
            base_ts: 0,
            record_count: 1,
            records_len: rest,
            seq: Some(0),
        };
        file.extend_from_slice(&h.to_bytes());
    }
    file.resize(start + body, 0);
    write_block(&mut file, 1, 9, 0, 1, &records, false).unwrap();
    file
}

#[test]
fn resynchronising_through_fake_block_headers_is_linear() {
    let dir = scratch("crafted-fake-magic");
    let path = dir.join("fakes.clrprof");
    let file = fake_magic(16);
    std::fs::write(&path, &file).unwrap();
    let r = measure(&["report", "--json", path.to_str().unwrap()], &dir);
    eprintln!(
        "16 MiB of fake block headers: report exit {}, {:.2} s, peak RSS {:.0} MiB",
        r.status,
        r.wall.as_secs_f64(),
        r.max_rss_mib
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    // The intact block after the fakes is found.
    assert!(
        r.stdout.contains("after the fakes"),
        "{}",
        &r.stdout[..r.stdout.len().min(2000)]
    );
    assert!(r.wall < Duration::from_secs(30), "{:?}", r.wall);
    assert!(r.max_rss_mib < 400.0, "{:.0} MiB", r.max_rss_mib);
}

#[test]
#[ignore = "measurement only"]
fn measure_fake_magic() {
    let dir = scratch("crafted-fake-magic-sizes");
    for mb in [1, 2, 4] {
        let path = dir.join(format!("fakes-{mb}.clrprof"));
        std::fs::write(&path, fake_magic(mb)).unwrap();
        let r = measure(&["report", path.to_str().unwrap()], &dir);
        eprintln!(
            "{mb} MiB of fakes: exit {} {:.2} s {:.0} MiB",
            r.status,
            r.wall.as_secs_f64(),
            r.max_rss_mib
        );
    }
}

/// One sample `frames` deep, frame `i` being `shape(i)`, with 64 named functions (ids
/// 1–64); `samples` copies of it.
fn deep_shaped(frames: usize, samples: usize, shape: impl Fn(u64) -> u64) -> Vec<u8> {
    let mut file = header_bytes("sample");
    let mut records = Vec::new();
    let mut count = 0;
    encode(
        &mut records,
        0,
        &Event::ClockSync {
            mono_ns: 1,
            unix_ns: 1,
        },
    );
    count += 1;
    for f in 1..=64u64 {
        encode(
            &mut records,
            1,
            &Event::FunctionInfo {
                function: f,
                module: 0,
                class: 0,
                token: 0,
                name: format!("App.Deep.F{f}").into(),
                signature: "".into(),
            },
        );
        count += 1;
    }
    let stack: Vec<u64> = (0..frames as u64).map(shape).collect();
    let mut seq = 0;
    write_block(&mut file, seq, 0, 0, count, &records, false).unwrap();
    for _ in 0..samples {
        seq += 1;
        records.clear();
        encode(
            &mut records,
            1_000_000,
            &Event::Sample {
                os_tid: 5,
                thread: 5,
                cpu_ns: 1_000_000,
                state: 1,
                frames: stack.as_slice().into(),
            },
        );
        write_block(&mut file, seq, 5, 0, 1, &records, true).unwrap();
    }
    file
}

#[test]
#[ignore = "measurement only"]
fn measure_deep() {
    let dir = scratch("crafted-deep-sizes");
    type Shape = (&'static str, fn(u64) -> u64);
    let shapes: [Shape; 4] = [
        ("zeros", |_| 0),
        ("one fn", |_| 1),
        ("distinct", |i| 1000 + i),
        ("native module", |_| NATIVE_MODULE_FRAME | 1),
    ];
    let sizes: Vec<usize> = std::env::var("CLRPROF_DEEP_SIZES")
        .map(|v| v.split(',').map(|n| n.parse().unwrap()).collect())
        .unwrap_or(vec![16_384]);
    let only = std::env::var("CLRPROF_DEEP_SHAPE").unwrap_or_default();
    for (shape, f) in shapes {
        if !only.is_empty() && shape != only {
            continue;
        }
        for &frames in &sizes {
            eprintln!("{shape}:");
            let path = dir.join(format!("deep-{}-{frames}.clrprof", shape.replace(' ', "-")));
            std::fs::write(&path, deep_shaped(frames, 1, f)).unwrap();
            for args in [
                &["report"][..],
                &["report", "--json"],
                &["convert", "-f", "folded", "-o"],
            ] {
                let mut a: Vec<&str> = args.to_vec();
                let out = dir.join("out");
                if a[0] == "convert" {
                    a.push(out.to_str().unwrap());
                }
                a.push(path.to_str().unwrap());
                let r = measure(&a, &dir);
                eprintln!(
                    "{frames} frames, {args:?}: exit {} {:.2} s {:.0} MiB",
                    r.status,
                    r.wall.as_secs_f64(),
                    r.max_rss_mib
                );
            }
        }
    }
}

/// A sample 262,144 frames deep is read within two minutes: linear time. The shape that
/// made the app-code table quadratic took 31 s at 65,536 frames, so ~8 minutes at this
/// depth; a million frames (`measure_deep`, `CLRPROF_DEEP_SIZES=1048576`) took four times
/// this test's time, which a CI run on a loaded 2-core host could not spare.
#[test]
fn a_deep_sample_is_read_in_linear_time() {
    let _timing = timing_lock();
    let dir = scratch("crafted-deep");
    let path = dir.join("deep.clrprof");
    // Distinct function ids, no two frames alike: the shape that made the app-code table
    // quadratic (65,536 frames took 31 s).
    let file = deep_shaped(1 << 18, 1, |i| 0x10_0000 + i * 16);
    std::fs::write(&path, &file).unwrap();
    let folded = dir.join("deep.folded");
    for args in [
        vec!["report", path.to_str().unwrap()],
        vec![
            "convert",
            "-f",
            "folded",
            "-o",
            folded.to_str().unwrap(),
            path.to_str().unwrap(),
        ],
    ] {
        let r = measure(&args, &dir);
        eprintln!(
            "262,144-frame sample, {} KB, {args:?}: exit {}, {:.2} s, peak RSS {:.0} MiB",
            file.len() / 1000,
            r.status,
            r.wall.as_secs_f64(),
            r.max_rss_mib
        );
        assert_eq!(r.status, 0, "{}", r.stderr);
        assert!(r.wall < Duration::from_secs(120), "{args:?}: {:?}", r.wall);
        assert!(r.max_rss_mib < 2048.0, "{args:?}: {:.0} MiB", r.max_rss_mib);
    }
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One structural mutation of `file` (whose blocks span `blocks`): every one damages the
/// trace, so the reader must say so.
fn mutate(
    file: &[u8],
    body: usize,
    blocks: &[std::ops::Range<usize>],
    rng: &mut Rng,
) -> (String, Vec<u8>) {
    let b = &blocks[rng.below(blocks.len())];
    match rng.below(6) {
        0 => {
            let cut = body + rng.below(file.len() - body);
            (format!("cut at {cut}"), file[..cut].to_vec())
        }
        1 => {
            let at = body + rng.below(file.len() - body);
            let mut m = file.to_vec();
            m[at] ^= 1 << rng.below(8);
            (format!("bit flipped at {at}"), m)
        }
        2 => {
            let at = rng.below(body);
            let mut m = file.to_vec();
            m[at] ^= 1 << rng.below(8);
            (format!("header bit flipped at {at}"), m)
        }
        3 => {
            let mut m = file[..b.end].to_vec();
            m.extend_from_slice(&file[b.clone()]);
            m.extend_from_slice(&file[b.end..]);
            (format!("block at {} repeated", b.start), m)
        }
        4 => {
            let mut m = file[..b.start].to_vec();
            m.extend_from_slice(&file[b.end..]);
            (format!("block at {} removed", b.start), m)
        }
        _ => {
            let at = body + rng.below(file.len() - body);
            let n = 1 + rng.below(100);
            let mut m = file[..at].to_vec();
            m.extend((0..n).map(|_| rng.next() as u8));
            m.extend_from_slice(&file[at..]);
            (format!("{n} random bytes inserted at {at}"), m)
        }
    }
}

#[test]
fn mutants_of_a_real_trace_never_crash_and_always_warn() {
    let dir = scratch("crafted-fuzz");
    let trace = dir.join("real.clrprof");
    // As the agent wrote it: the line table `record` appends after the agent's end record
    // is a cache of what the PDBs say, and a trace without it is whole (docs/trace-format.md).
    record(
        &trace,
        &["--mode", "events", "--no-lines"],
        &["exceptions", "7"],
    );
    let file = std::fs::read(&trace).unwrap();
    let mut reader = TraceReader::new(&file).unwrap();
    let body = reader.body_offset();
    let blocks: Vec<std::ops::Range<usize>> = reader
        .blocks()
        .map(|b| {
            let b = b.unwrap();
            let start = b.offset as usize;
            let len = file[start + 4..start + 8]
                .try_into()
                .map(u32::from_le_bytes)
                .unwrap();
            start..start + BLOCK_HEADER_LEN + len as usize
        })
        .collect();
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    // The mutants, drawn in order from one seed, then checked by a few workers at once
    // (each in a folder of its own): the checks are independent processes.
    let mut rng = Rng(0x5eed_2027);
    let mutants: Vec<(usize, String, Vec<u8>)> = (0..300)
        .map(|i| {
            let (what, bytes) = mutate(&file, body, &blocks, &mut rng);
            (i, what, bytes)
        })
        .collect();
    const WORKERS: usize = 3;
    let t = trace.to_str().unwrap();
    let (refused, warned) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let dir = dir.join(format!("worker-{w}"));
                let mine: Vec<&(usize, String, Vec<u8>)> =
                    mutants.iter().skip(w).step_by(WORKERS).collect();
                scope.spawn(move || check_mutants(&dir, t, &mine))
            })
            .collect();
        workers
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |(r, w), (r2, w2)| (r + r2, w + w2))
    });
    assert_eq!(refused + warned, 300);
    eprintln!("300 mutants: {warned} read with warnings, {refused} refused (header)");
}

/// Checks `mutants` in `dir`: `report --json` never crashes, stays under 512 MiB and warns
/// (or refuses the header), and one more command per mutant (each `convert` format and
/// `diff` both ways, in turn) exits cleanly. Returns (refused, warned).
fn check_mutants(dir: &Path, trace: &str, mutants: &[&(usize, String, Vec<u8>)]) -> (u32, u32) {
    std::fs::create_dir_all(dir).unwrap();
    let mutant = dir.join("mutant.clrprof");
    let other = dir.join("out");
    let (m, o, t) = (mutant.to_str().unwrap(), other.to_str().unwrap(), trace);
    let commands: [Vec<&str>; 9] = [
        vec!["report", m],
        vec!["convert", "-f", "svg", "-o", o, m],
        vec!["convert", "-f", "folded", "-o", o, m],
        vec!["convert", "-f", "speedscope", "-o", o, m],
        vec!["convert", "-f", "firefox", "-o", o, m],
        vec!["convert", "-f", "chrome", "-o", o, m],
        vec!["convert", "-f", "pprof", "-o", o, m],
        vec!["diff", t, m],
        vec!["diff", m, t],
    ];
    let (mut refused, mut warned) = (0, 0);
    for (i, what, bytes) in mutants.iter().map(|m| (m.0, &m.1, &m.2)) {
        std::fs::write(&mutant, bytes).unwrap();
        let r = measure(&["report", "--json", m], dir);
        assert!(r.max_rss_mib < 512.0, "{what}: {:.0} MiB", r.max_rss_mib);
        // A signal or a panic (exit 101) is a crash.
        assert!(
            libc::WIFEXITED(r.status),
            "{what}: killed by a signal ({})",
            r.status
        );
        match libc::WEXITSTATUS(r.status) {
            0 => {
                let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
                let w = j["warnings"].as_array().unwrap();
                assert!(!w.is_empty(), "{what}: read as whole");
                warned += 1;
            }
            2 => {
                assert!(
                    r.stderr.contains("not a readable clrprof trace"),
                    "{what}: {}",
                    r.stderr
                );
                refused += 1;
            }
            code => panic!("{what}: exit {code}: {}", r.stderr),
        }
        let args = &commands[i % commands.len()];
        let r = measure(args, dir);
        assert!(
            r.max_rss_mib < 512.0,
            "{what}, {args:?}: {:.0} MiB",
            r.max_rss_mib
        );
        assert!(
            libc::WIFEXITED(r.status) && matches!(libc::WEXITSTATUS(r.status), 0..=2),
            "{what}, {args:?}: status {}: {}",
            r.status,
            r.stderr
        );
    }
    (refused, warned)
}
