//! Reading on two cores (#35 item 3): `report` and `convert` build each trace thread's
//! calls on one of the machine's CPUs (by default; `CLRPROF_READ_THREADS=1` reads on one
//! thread, `=2` also decodes ahead on a second thread where the work cannot be shared out
//! by thread). What they print must not change: every golden trace and a trace of many
//! blocks from three threads (compact call chains carried from block to block, some blocks
//! compressed, one damaged) read the same every way. No app runs: about a second in all.

use crate::common;

use std::path::PathBuf;

use clrprof_format::compact::CompactWriter;
use clrprof_format::*;
use common::*;

#[test]
fn golden_traces_read_the_same_on_one_and_two_threads() {
    let dir = scratch("read-ahead-golden");
    let fixtures =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clrprof-format/tests/fixtures");
    let mut n = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("golden-") {
            continue;
        }
        let trace = dir.join(name.replace(".bin", ".clrprof"));
        std::fs::copy(&path, &trace).unwrap();
        reads_the_same_on_one_and_two_threads(&trace);
        n += 1;
    }
    assert!(n >= 16, "{n} golden traces");
}

#[test]
fn a_trace_of_many_blocks_reads_the_same_on_one_and_two_threads() {
    let dir = scratch("read-ahead-blocks");
    let mut file = Vec::new();
    let meta = TraceMeta {
        pid: 1,
        settings: clrprof_settings::Settings {
            mode: serde_json::from_value(serde_json::Value::String("trace".into())).unwrap(),
            ..clrprof_settings::Settings::unrecorded()
        },
        event_kinds: event_kind_table(),
        ..TraceMeta::default()
    };
    write_file_header(&mut file, &Header::new(meta)).unwrap();
    // Three threads, each a recursion 6 deep repeated; 30 blocks each, every other one
    // compressed; the timestamps cross 2^32 (the chain's high half changes).
    let mut writers: Vec<CompactWriter> = (0..3).map(|_| CompactWriter::new()).collect();
    let mut ts = [(1u64 << 32) - 2_000_000; 3];
    let mut depth = [0u32; 3];
    let mut scratch_buf = Vec::new();
    let mut starts = Vec::new();
    for block in 0..90u64 {
        let t = (block % 3) as usize;
        let w = &mut writers[t];
        w.bytes.clear();
        for i in 0..3_000u32 {
            ts[t] += 40 + u64::from(i % 3);
            let deeper = depth[t] == 0 || (depth[t] < 6 && (i / 6) % 2 == 0);
            if deeper {
                depth[t] += 1;
                w.elt(
                    ts[t],
                    EltKind::Enter,
                    1 + depth[t] + 10 * t as u32,
                    0x7ffd_0000 - depth[t] * 64,
                );
            } else {
                w.elt(
                    ts[t],
                    EltKind::Leave,
                    1 + depth[t] + 10 * t as u32,
                    0x7ffd_0000 - depth[t] * 64,
                );
                depth[t] -= 1;
            }
        }
        starts.push(file.len());
        write_compact_block(
            &mut file,
            &mut scratch_buf,
            block,
            100 + t as u64,
            &w.bytes,
            block % 2 == 0,
        )
        .unwrap();
    }
    // One block damaged (its CRC no longer matches).
    file[starts[45] + 60] ^= 0x5a;
    let trace = dir.join("blocks.clrprof");
    std::fs::write(&trace, &file).unwrap();
    let r = reads_the_same_on_one_and_two_threads(&trace);
    let calls: u64 = r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["calls"].as_u64())
        .sum();
    assert!(calls > 100_000, "{calls} calls: {r:#}");
    assert!(
        r["warnings"].to_string().contains("CRC") || r.to_string().contains("CRC"),
        "the damaged block is named: {r:#}"
    );
}
