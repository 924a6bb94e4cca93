//! Call records are not kept on the timeline: the report rebuilds the call trees from a
//! second pass over the file. The result must be what a build over every event in memory
//! gives, with two threads' blocks interleaved in the file.

use std::borrow::Cow;

use clrprof_analysis::calltree;
use clrprof_analysis::names::Names;
use clrprof_analysis::threads::ThreadNames;
use clrprof_analysis::{Trace, build};
use clrprof_format::{
    Event, ExceptionPhase, Header, TraceMeta, encode, write_block, write_file_header,
};

/// One thread's stream: (ticks, event), absolute (MonotonicNs clock: ticks are ns).
type Stream = Vec<(u64, Event<'static>)>;

/// Main calls A 50 times, A calls B; every tenth B throws and A catches (no Leave for B).
fn thread_stream(base: u64, sp_base: u64) -> Stream {
    let enter = |function, sp| Event::Enter { function, sp };
    let leave = |function, sp| Event::Leave { function, sp };
    let mut v = vec![(base, enter(1, sp_base))];
    let mut t = base;
    for i in 0..50 {
        t += 10;
        v.push((t, enter(2, sp_base - 100)));
        t += 5;
        v.push((t, enter(3, sp_base - 200)));
        t += 3;
        if i % 10 == 0 {
            let catch = Event::ExceptionPhase {
                phase: ExceptionPhase::CatcherEnter,
                function: 2,
            };
            v.push((t, catch));
        } else {
            v.push((t, leave(3, sp_base - 200)));
        }
        t += 2;
        v.push((t, leave(2, sp_base - 100)));
    }
    t += 7;
    v.push((t, leave(1, sp_base)));
    v
}

fn block(
    out: &mut Vec<u8>,
    seq: &mut u64,
    os_tid: u64,
    base_ts: u64,
    events: &[(u64, Event<'static>)],
) {
    let mut records = Vec::new();
    let mut prev = base_ts;
    for (ts, e) in events {
        encode(&mut records, ts - prev, e);
        prev = *ts;
    }
    write_block(
        out,
        *seq,
        os_tid,
        base_ts,
        events.len() as u32,
        &records,
        false,
    )
    .unwrap();
    *seq += 1;
}

fn file() -> Vec<u8> {
    let mut out = Vec::new();
    write_file_header(&mut out, &Header::new(TraceMeta::default())).unwrap();
    let names: Stream = [(1, "Main"), (2, "A"), (3, "B")]
        .into_iter()
        .map(|(f, n)| {
            let info = Event::FunctionInfo {
                function: f,
                module: 0,
                class: 0,
                token: 0,
                name: Cow::Borrowed(n),
                signature: Cow::Borrowed(""),
            };
            (1, info)
        })
        .collect();
    let mut seq = 0;
    block(&mut out, &mut seq, 0, 0, &names);
    // Two threads, each stream in blocks of 40 records, interleaved in the file.
    let (a, b) = (thread_stream(100, 10_000), thread_stream(105, 20_000));
    let (mut pa, mut pb) = (0u64, 0u64);
    for (ca, cb) in a.chunks(40).zip(b.chunks(40)) {
        block(&mut out, &mut seq, 11, pa, ca);
        pa = ca.last().unwrap().0;
        block(&mut out, &mut seq, 22, pb, cb);
        pb = cb.last().unwrap().0;
    }
    out
}

#[test]
fn the_streamed_call_trees_equal_the_in_memory_build() {
    let bytes = file();
    let trace = Trace::load(&bytes).unwrap();
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    // The timeline holds no call records, and no exception records (the catches): both
    // are streamed from the file.
    assert!(trace.events.iter().all(|e| !matches!(
        e.event,
        Event::Enter { .. }
            | Event::Leave { .. }
            | Event::Tailcall { .. }
            | Event::ExceptionPhase { .. }
    )));
    // Per thread: Main's two, 50 × (A's two + B's Enter) and 45 Leaves of B.
    assert_eq!(trace.call_records, 2 * (2 + 50 * 3 + 45));
    assert_eq!(trace.exception_records, 2 * 5);
    assert_eq!(trace.events.len(), 3);

    // Everything in memory, the way the report built it before.
    let mut all = Vec::new();
    trace.for_each_call(|e| all.push(e.clone()));
    assert_eq!(all.len() as u64, trace.call_records + 10);
    let names = Names::collect(&trace.events);
    let in_memory = calltree::build(&all, &names, &ThreadNames::default(), 64);

    let report = serde_json::to_value(build(&trace)).unwrap();
    assert_eq!(
        report["functions"],
        serde_json::to_value(&in_memory.functions).unwrap()
    );
    assert_eq!(
        report["call_tree"],
        serde_json::to_value(&in_memory.merged).unwrap()
    );
    let functions = report["functions"].as_array().unwrap();
    let b = functions.iter().find(|f| f["name"] == "B").unwrap();
    assert_eq!(b["calls"], 100);
    // 45 calls of 3 ns each per thread, 5 cut at the catch (3 ns too).
    assert_eq!(b["inclusive_ns"], 2 * 50 * 3);
    // The catches are counted from the same pass as the calls.
    assert_eq!(report["events"]["exception_catches"], 10);
    let stats = &report["trace_stats"];
    assert_eq!(stats["unwound_frames"], 10);
    assert_eq!(stats["unmatched_leaves"], 0);
    assert_eq!(stats["open_at_end"], 0);
    // The duration counts the calls: from the names (tick 1) to thread 22's last Leave.
    let last = thread_stream(105, 20_000).last().unwrap().0;
    assert_eq!(report["trace"]["duration_ns"], last - 1);
}
