//! Helpers shared by the integration tests: sample events of every kind, a fixed header,
//! a file builder and a proptest strategy for events.
#![allow(dead_code)]

use std::borrow::Cow;

use clrprof_format::*;
use proptest::prelude::*;

/// One event of every kind, with values that exercise multi-byte integers, empty and
/// non-ASCII strings and lists.
pub fn every_kind() -> Vec<Event<'static>> {
    let s = |v: &'static str| Cow::Borrowed(v);
    vec![
        Event::ClockSync {
            mono_ns: 5_000_000_000,
            unix_ns: 1_700_000_000_000_000_000,
        },
        Event::Meta {
            key: s("runtime"),
            json: s(r#"{"version":"8.0.1"}"#),
        },
        Event::Shutdown {},
        Event::AppDomainCreated {
            id: 0x7f00_0000_1000,
            name: s("clrhost"),
            hr: 0,
        },
        Event::AppDomainShutdown {
            id: 0x7f00_0000_1000,
        },
        Event::AssemblyLoaded {
            id: 1,
            app_domain: 2,
            module: 3,
            name: s("System.Private.CoreLib"),
            hr: 0x8007_000Eu32 as i32,
        },
        Event::AssemblyUnloaded { id: 1 },
        Event::ModuleLoaded {
            id: 3,
            assembly: 1,
            base_address: 0x7fff_1234_0000,
            path: s(
                "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.1/System.Private.CoreLib.dll",
            ),
            hr: -1,
        },
        Event::ModuleUnloaded { id: 3 },
        Event::ClassLoaded {
            id: 10,
            module: 3,
            token: 0x0200_0001,
            name: s("System.Collections.Generic.List`1<Ünïcødé>"),
            hr: 0,
        },
        Event::ClassUnloaded { id: 10 },
        Event::JitStarted {
            function: 0x7f12_3456_789a,
            safe_to_block: true,
        },
        Event::JitFinished {
            function: 0x7f12_3456_789a,
            hr: 0,
        },
        Event::JitCacheSearch {
            function: 99,
            found: false,
        },
        Event::FunctionInfo {
            function: 0x7f12_3456_789a,
            module: 3,
            class: 10,
            token: 0x0600_0042,
            name: s("App.Program.Main"),
            signature: s("void (string[])"),
        },
        Event::ThreadCreated { thread: 0x55 },
        Event::ThreadDestroyed { thread: 0x55 },
        Event::ThreadAssigned {
            thread: 0x55,
            os_tid: 12345,
        },
        Event::ThreadName {
            thread: 0x55,
            name: s(""),
        },
        Event::ExceptionThrown {
            object: 0x7e00_0000_0010,
            class: 11,
            type_name: s("System.InvalidOperationException"),
            message: s("Operation is not valid due to the current state of the object."),
        },
        Event::ExceptionPhase {
            phase: ExceptionPhase::CatcherEnter,
            function: 77,
        },
        Event::RuntimeSuspend {
            phase: SuspendPhase::SuspendStarted,
            reason: 1,
        },
        Event::ThreadSuspended {
            thread: 0x55,
            resumed: true,
        },
        Event::GcStarted {
            generations: 0b1_0111,
            reason: 1,
        },
        Event::GcFinished {
            generation_sizes: Cow::Owned(vec![1 << 20, 2 << 20, 64 << 20, 0, 4096]),
        },
        Event::Allocations {
            class: 11,
            count: 300,
        },
        Event::Transition {
            function: 5,
            to_managed: false,
            reason: 2,
        },
        Event::Enter {
            function: 17,
            sp: 0x7ffd_5000,
        },
        Event::Leave {
            function: 17,
            sp: 0x7ffd_5000,
        },
        Event::Tailcall {
            function: 1 << 40,
            sp: 0,
        },
        Event::Sample {
            os_tid: 12345,
            thread: 0x55,
            cpu_ns: 1_234_567,
            state: 1,
            frames: Cow::Owned(vec![0x7f12_3456_789a, 0, 17, u64::MAX]),
        },
        Event::ExceptionStack {
            frames: Cow::Owned(vec![]),
        },
        Event::Lost {
            count: 1_000_000,
            reason: 3,
        },
        Event::ObjectAllocated {
            class: 11,
            size: 24,
        },
        // 1.2
        Event::SamplerStats {
            ticks: 4_999,
            samples: 19_996,
            missed_ticks: 3,
            signal_timeouts: 1,
            truncated: 250,
            max_depth: 512,
        },
        Event::WriteFailed {
            errno: 28,
            blocks: 7,
            events: 12_345,
        },
        Event::CallArgs {
            function: 3,
            sp: 0x7ffe_1230,
            values: Cow::Borrowed(&[0x40, 1, b'n', 3, b'i', b'n', b't', 3, 50]),
        },
        Event::CallReturn {
            function: 3,
            sp: 0x7ffe_1230,
            values: Cow::Borrowed(&[]),
        },
        Event::CallUnwound { function: 3 },
        Event::ArgNames {
            function: 3,
            params: 1,
            names: Cow::Borrowed(&[
                1, b'n', 3, b'i', b'n', b't', 6, b'r', b'e', b't', b'u', b'r', b'n', 3, b'i', b'n',
                b't',
            ]),
        },
        Event::ClassName {
            class: 11,
            name: s("Scenarios.Known.Allocated"),
        },
        Event::NativeModule {
            frame: clrprof_format::NATIVE_MODULE_FRAME | 1,
            path: s("/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/libcoreclr.so"),
        },
        Event::HeapStart {
            snapshot: 1,
            reason: HeapReason::Requested,
        },
        Event::HeapObjects {
            snapshot: 1,
            objects: Cow::Owned(vec![
                2000,
                0,
                24 << 3 | 2,
                1,
                48,
                8,
                48,
                u64::from(u32::MAX),
                0,
                0,
            ]),
        },
        Event::HeapRoots {
            snapshot: 1,
            roots: Cow::Owned(vec![0x7f00_0000_1000, 1 | 1 << 4, 0x7f12_0000]),
        },
        Event::HeapClass {
            snapshot: 1,
            index: 0,
            class: 0x7f00_1234,
            name: s("Scenarios.HeapNode"),
        },
        Event::HeapField {
            snapshot: 1,
            index: 0,
            offset: 8,
            name: s("Next"),
        },
        Event::HeapStatic {
            snapshot: 1,
            class: s("Scenarios.HeapHolder"),
            field: s("Text"),
            thread: 0,
            object: 0x7f00_0000_2000,
            value: s("heap-1000"),
        },
        Event::HeapEnd {
            snapshot: 1,
            objects: 2,
            references: 1,
            roots: 1,
            lost: 0,
            pause_ns: 13_000_000,
        },
        Event::AllocConfig {
            source: clrprof_format::ALLOC_SOURCE_SAMPLED,
            mean_bytes: 102_400,
            interval_bytes: 102_400,
            tracked_max: 4096,
        },
        Event::AllocSample {
            id: 1,
            thread: 0x7f00_0000_a000,
            class: 0x7f00_0000_c000,
            size: 1024,
            amount: 0,
            tracked: 1,
            frames: Cow::Owned(vec![0x7f00_0000_f000, 0x7f00_0000_f100]),
        },
        Event::AllocFreed {
            ids: Cow::Owned(vec![1]),
        },
        Event::AllocStats {
            delivered: 2,
            recorded: 1,
            untracked: 0,
            alive_at_end: 0,
        },
        Event::AllocUnavailable {
            hresult: 0x8007_0057,
            reason: Cow::Borrowed("EventPipeStartSession failed: E_INVALIDARG (0x80070057)"),
        },
        Event::CallCounts {
            os_tid: 4242,
            missed: 0,
            deep: 1,
            edges: Cow::Owned(vec![0, 1, 1, 1, 2, 7_049_154]),
        },
        // 2.0
        Event::TraceEnd { blocks: 300 },
        // 2.1
        Event::SamplePositions {
            os_tid: 4242,
            positions: Cow::Owned(vec![0x2a + 4, 2, 0, 3]),
        },
        Event::SourceLine {
            function: 0x7f00_0000_f000,
            position: 0x2a + 4,
            file: s("/src/App/Program.cs"),
            line: 42,
        },
        Event::WaitConfig {
            keywords: 0x400_0001_4000,
            wait_handles: true,
            error: Cow::Borrowed(""),
        },
        Event::WaitStart {
            thread: 0x7f00_0000_3000,
            kind: 1,
            source: 0,
            lock: 0x7f00_0000_5000,
            object: 0x7e00_0000_0040,
            owner: 4243,
            class: 0x7f00_0000_1234,
            frames: Cow::Owned(vec![0x7f00_0000_f000, 0x7f00_0000_f100]),
        },
        Event::WaitStop {
            thread: 0x7f00_0000_3000,
            kind: 1,
            duration_ns: 20_123_456,
        },
        Event::ThreadPoolAdjust {
            threads: 9,
            reason: 6,
            throughput_milli: 12_500,
        },
        Event::ThreadPoolWorker {
            started: true,
            active: 9,
            retired: 0,
        },
        Event::WaitStats {
            delivered: 7,
            recorded: 3,
            unnamed: 1,
        },
        // 2.2
        Event::ExceptionPositions {
            positions: Cow::Owned(vec![0x10 + 4, 0, 0x33 + 4]),
        },
        // 2.3
        Event::SamplerTiming {
            interval_ns: 1_001_001,
            run_ns: 5_000_000_000,
            missed_busy: 7,
            missed_sched: 2,
            late_busy: 11,
            late_sched: 5,
            max_tick_ns: 3_400_000,
            max_wake_delay_ns: 8_100_000,
            busy_ns: 1_200_000_000,
            capture_ns: 900_000_000,
            rejected_walks: 3,
        },
        Event::AllocPositions {
            id: 1,
            positions: Cow::Owned(vec![0x21 + 4, 0x08 + 4]),
        },
        Event::WaitOwnerStack {
            thread: 0x7f00_0000_3000,
            lock: 0x7f00_0000_5000,
            owner: 4243,
            frames: Cow::Owned(vec![0x7f00_0000_f100, 0x7f00_0000_f000]),
        },
        Event::WaitOwnerStats {
            requested: 9,
            taken: 6,
            owner_unknown: 1,
            owner_exited: 0,
            queue_full: 0,
            walk_failed: 1,
            no_sampler: 1,
        },
        // 2.4
        Event::AllocPositionStats {
            queued: 40,
            mapped: 37,
            queue_full: 2,
            left_at_end: 1,
        },
        // 2.5
        Event::EnterArgs {
            function: 3,
            sp: 0x7ffe_1230,
            values: Cow::Borrowed(&[0x40, 1, b'n', 3, b'i', b'n', b't', 3, 50]),
        },
        Event::ReturnLeave {
            function: 3,
            sp: 0x7ffe_1230,
            values: Cow::Borrowed(&[0x40, 2, 3, 100]),
        },
        // 2.6
        Event::ValueClass {
            class: 1,
            name: "Scenarios.ID".into(),
            fields: Cow::Borrowed(&[1, b'I', 1, b'D']),
        },
    ]
}

/// A header with fixed contents (the golden file depends on it).
pub fn fixed_header() -> Header {
    Header::new(TraceMeta {
        pid: 4242,
        command_line: vec!["dotnet".into(), "app.dll".into(), "--flag".into()],
        agent_version: "0.1.0".into(),
        runtime_version: Some("8.0.1.0 (8.0.1)".into()),
        start_unix_ns: 1_700_000_000_000_000_000,
        clock: ClockInfo {
            kind: ClockKind::Tsc,
            ticks_per_second: Some(3e9),
        },
        attached: false,
        // The same on every platform (`unrecorded`, unlike `default`, does not depend on
        // which sampler the platform has).
        settings: clrprof_settings::Settings {
            buffer_bytes: 262144,
            flush_ms: 100,
            ..clrprof_settings::Settings::unrecorded()
        },
        event_kinds: event_kind_table(),
        end_record: false,
    })
}

/// One block to write: thread, events (with timestamps), compression.
pub struct TestBlock {
    pub os_tid: u64,
    pub events: Vec<(u64, Event<'static>)>,
    pub compress: bool,
}

/// Header plus blocks, written as the agent does: each thread's records form one delta
/// chain across its blocks, each block header holding the chain's timestamp before it.
/// Also returns each block's byte range.
pub fn build_file(header: &Header, blocks: &[TestBlock]) -> (Vec<u8>, Vec<std::ops::Range<usize>>) {
    let mut file = Vec::new();
    write_file_header(&mut file, header).unwrap();
    let mut ranges = Vec::new();
    let mut chains: std::collections::HashMap<u64, u64> = Default::default();
    for b in blocks {
        let last = chains.entry(b.os_tid).or_insert(0);
        let base_ts = *last;
        let mut records = Vec::new();
        for (ts, ev) in &b.events {
            encode(&mut records, ts.wrapping_sub(*last), ev);
            *last = *ts;
        }
        let mut check = base_ts;
        let count = count_records_with_ts(&records, &mut check);
        assert_eq!((count as usize, check), (b.events.len(), *last));
        let start = file.len();
        let seq = ranges.len() as u64;
        write_block(
            &mut file, seq, b.os_tid, base_ts, count, &records, b.compress,
        )
        .unwrap();
        ranges.push(start..file.len());
    }
    (file, ranges)
}

/// What a reader should return for `blocks`.
pub fn expected(blocks: &[&TestBlock]) -> Vec<DecodedEvent<'static>> {
    blocks
        .iter()
        .flat_map(|b| {
            b.events.iter().flat_map(|(ts, ev)| {
                // A record that holds two events reads as those two.
                let events = match ev.clone().split_call() {
                    Ok((first, second)) => vec![first, second],
                    Err(one) => vec![one],
                };
                events.into_iter().map(|event| DecodedEvent {
                    os_tid: b.os_tid,
                    ts: *ts,
                    event,
                })
            })
        })
        .collect()
}

/// Owned copies of decoded events (to compare with `expected`).
pub fn owned(events: Vec<DecodedEvent<'_>>) -> Vec<DecodedEvent<'static>> {
    events
        .into_iter()
        .map(|d| DecodedEvent {
            os_tid: d.os_tid,
            ts: d.ts,
            event: d.event.into_owned(),
        })
        .collect()
}

/// Four blocks from two threads and the process, one of them compressed, every kind once.
pub fn sample_blocks() -> Vec<TestBlock> {
    let all = every_kind();
    let (a, rest) = all.split_at(10);
    let (b, c) = rest.split_at(12);
    let timed = |evs: &[Event<'static>], t0: u64| -> Vec<(u64, Event<'static>)> {
        evs.iter()
            .enumerate()
            .map(|(i, e)| (t0 + i as u64 * 1_000, e.clone()))
            .collect()
    };
    vec![
        TestBlock {
            os_tid: 0,
            events: timed(a, 1_000_000),
            compress: false,
        },
        TestBlock {
            os_tid: 101,
            events: timed(b, 2_000_000),
            compress: false,
        },
        TestBlock {
            os_tid: 102,
            events: timed(c, 3_000_000),
            compress: true,
        },
        TestBlock {
            os_tid: 101,
            events: (0..40u64)
                .map(|i| {
                    let ev = Event::Enter {
                        function: i % 3,
                        sp: 0x7ffd_0000 - i * 64,
                    };
                    (4_000_000 + i, ev)
                })
                .collect(),
            compress: true,
        },
    ]
}

// ---- proptest strategies ----

fn arb_u64() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..200, any::<u64>(), Just(u64::MAX)]
}

fn arb_str() -> impl Strategy<Value = Cow<'static, str>> {
    prop_oneof![
        "[a-zA-Z0-9 .`<>+]{0,20}",
        "\\PC{0,40}",
        "[a-z]{120,300}", // multi-byte record lengths
    ]
    .prop_map(Cow::Owned)
}

fn arb_list() -> impl Strategy<Value = Cow<'static, [u64]>> {
    prop::collection::vec(arb_u64(), 0..80).prop_map(Cow::Owned)
}

/// Any event of any kind, built from a pool of random values.
pub fn arb_event() -> impl Strategy<Value = Event<'static>> {
    (
        prop::sample::select(
            clrprof_format::event_kind_table()
                .iter()
                .map(|k| k.id)
                .collect::<Vec<u8>>(),
        ),
        prop::array::uniform6(arb_u64()),
        (arb_str(), arb_str()),
        (any::<bool>(), any::<u8>(), any::<u32>(), any::<i32>()),
        arb_list(),
        (0..ExceptionPhase::ALL.len(), 0..SuspendPhase::ALL.len()),
    )
        .prop_map(|(kind, n, (s1, s2), (b, byte, u32v, hr), list, (ep, sp))| {
            let [a, b2, c, d, _e, _f] = n;
            match kind {
                1 => Event::ClockSync {
                    mono_ns: a,
                    unix_ns: b2,
                },
                2 => Event::Meta { key: s1, json: s2 },
                3 => Event::Shutdown {},
                4 => Event::AppDomainCreated {
                    id: a,
                    name: s1,
                    hr,
                },
                5 => Event::AppDomainShutdown { id: a },
                6 => Event::AssemblyLoaded {
                    id: a,
                    app_domain: b2,
                    module: c,
                    name: s1,
                    hr,
                },
                7 => Event::AssemblyUnloaded { id: a },
                8 => Event::ModuleLoaded {
                    id: a,
                    assembly: b2,
                    base_address: c,
                    path: s1,
                    hr,
                },
                9 => Event::ModuleUnloaded { id: a },
                10 => Event::ClassLoaded {
                    id: a,
                    module: b2,
                    token: u32v,
                    name: s1,
                    hr,
                },
                11 => Event::ClassUnloaded { id: a },
                12 => Event::JitStarted {
                    function: a,
                    safe_to_block: b,
                },
                13 => Event::JitFinished { function: a, hr },
                14 => Event::JitCacheSearch {
                    function: a,
                    found: b,
                },
                15 => Event::FunctionInfo {
                    function: a,
                    module: b2,
                    class: c,
                    token: u32v,
                    name: s1,
                    signature: s2,
                },
                16 => Event::ThreadCreated { thread: a },
                17 => Event::ThreadDestroyed { thread: a },
                18 => Event::ThreadAssigned {
                    thread: a,
                    os_tid: b2,
                },
                19 => Event::ThreadName {
                    thread: a,
                    name: s1,
                },
                20 => Event::ExceptionThrown {
                    object: a,
                    class: b2,
                    type_name: s1,
                    message: s2,
                },
                21 => Event::ExceptionPhase {
                    phase: ExceptionPhase::ALL[ep],
                    function: a,
                },
                22 => Event::RuntimeSuspend {
                    phase: SuspendPhase::ALL[sp],
                    reason: byte,
                },
                23 => Event::ThreadSuspended {
                    thread: a,
                    resumed: b,
                },
                24 => Event::GcStarted {
                    generations: byte,
                    reason: (a % 256) as u8,
                },
                25 => Event::GcFinished {
                    generation_sizes: list,
                },
                26 => Event::Allocations {
                    class: a,
                    count: b2,
                },
                27 => Event::Transition {
                    function: a,
                    to_managed: b,
                    reason: byte,
                },
                28 => Event::Enter {
                    function: a,
                    sp: b2,
                },
                29 => Event::Leave {
                    function: a,
                    sp: b2,
                },
                30 => Event::Tailcall {
                    function: a,
                    sp: b2,
                },
                31 => Event::Sample {
                    os_tid: a,
                    thread: b2,
                    cpu_ns: c,
                    state: byte,
                    frames: list,
                },
                32 => Event::ExceptionStack { frames: list },
                33 => Event::Lost {
                    count: a,
                    reason: byte,
                },
                34 => Event::ObjectAllocated { class: a, size: d },
                35 => Event::SamplerStats {
                    ticks: a,
                    samples: b2,
                    missed_ticks: c,
                    signal_timeouts: d,
                    truncated: a ^ d,
                    max_depth: u64::from(byte),
                },
                36 => Event::WriteFailed {
                    errno: u64::from(byte),
                    blocks: a,
                    events: b2,
                },
                37 => Event::TraceEnd { blocks: a },
                100 => Event::SamplePositions {
                    os_tid: a,
                    positions: list,
                },
                101 => Event::SourceLine {
                    function: a,
                    position: b2,
                    file: s1,
                    line: (c % (1 << 32)) as u32,
                },
                102 => Event::ExceptionPositions { positions: list },
                38 => Event::SamplerTiming {
                    interval_ns: a,
                    run_ns: b2,
                    missed_busy: c,
                    missed_sched: d,
                    late_busy: a ^ c,
                    late_sched: b2 ^ d,
                    max_tick_ns: u64::from(byte),
                    max_wake_delay_ns: a.rotate_left(7),
                    busy_ns: c.rotate_left(3),
                    capture_ns: d.rotate_left(5),
                    rejected_walks: b2.rotate_left(9),
                },
                103 => Event::AllocPositions {
                    id: a,
                    positions: list,
                },
                40 => Event::CallArgs {
                    function: a,
                    sp: b2,
                    values: Cow::Owned(s1.as_bytes().to_vec()),
                },
                41 => Event::CallReturn {
                    function: a,
                    sp: c,
                    values: Cow::Owned(s2.as_bytes().to_vec()),
                },
                42 => Event::CallUnwound { function: d },
                43 => Event::ArgNames {
                    function: a,
                    params: b2,
                    names: Cow::Owned(s1.as_bytes().to_vec()),
                },
                50 => Event::ClassName { class: a, name: s1 },
                51 => Event::NativeModule { frame: a, path: s1 },
                65 => Event::HeapStart {
                    snapshot: a,
                    reason: HeapReason::ALL[usize::from(byte) % HeapReason::ALL.len()],
                },
                66 => Event::HeapObjects {
                    snapshot: a,
                    objects: list,
                },
                67 => Event::HeapRoots {
                    snapshot: a,
                    roots: list,
                },
                90 => Event::CallCounts {
                    os_tid: a,
                    missed: b2,
                    deep: c,
                    edges: list,
                },
                68 => Event::HeapClass {
                    snapshot: a,
                    index: b2,
                    class: c,
                    name: s1,
                },
                69 => Event::HeapField {
                    snapshot: a,
                    index: b2,
                    offset: c,
                    name: s1,
                },
                70 => Event::HeapStatic {
                    snapshot: a,
                    class: s1,
                    field: s2,
                    thread: b2,
                    object: c,
                    value: Cow::Borrowed(""),
                },
                71 => Event::HeapEnd {
                    snapshot: a,
                    objects: b2,
                    references: c,
                    roots: d,
                    lost: _e,
                    pause_ns: _f,
                },
                80 => Event::AllocConfig {
                    source: byte,
                    mean_bytes: a,
                    interval_bytes: b2,
                    tracked_max: c,
                },
                81 => Event::AllocSample {
                    id: a,
                    thread: b2,
                    class: c,
                    size: d,
                    amount: _e,
                    tracked: byte,
                    frames: list,
                },
                82 => Event::AllocFreed { ids: list },
                83 => Event::AllocStats {
                    delivered: a,
                    recorded: b2,
                    untracked: c,
                    alive_at_end: d,
                },
                84 => Event::AllocUnavailable {
                    hresult: a,
                    reason: s1,
                },
                110 => Event::WaitConfig {
                    keywords: a,
                    wait_handles: b,
                    error: s1,
                },
                111 => Event::WaitStart {
                    thread: a,
                    kind: byte,
                    source: byte ^ 1,
                    lock: b2,
                    object: c,
                    owner: d,
                    class: _e,
                    frames: list,
                },
                112 => Event::WaitStop {
                    thread: a,
                    kind: byte,
                    duration_ns: b2,
                },
                113 => Event::ThreadPoolAdjust {
                    threads: a,
                    reason: b2,
                    throughput_milli: c,
                },
                114 => Event::ThreadPoolWorker {
                    started: b,
                    active: a,
                    retired: b2,
                },
                115 => Event::WaitStats {
                    delivered: a,
                    recorded: b2,
                    unnamed: c,
                },
                116 => Event::WaitOwnerStack {
                    thread: a,
                    lock: b2,
                    owner: c,
                    frames: list,
                },
                117 => Event::WaitOwnerStats {
                    requested: a,
                    taken: b2,
                    owner_unknown: c,
                    owner_exited: d,
                    queue_full: _e,
                    walk_failed: _f,
                    no_sampler: u64::from(u32v),
                },
                118 => Event::AllocPositionStats {
                    queued: a,
                    mapped: b2,
                    queue_full: c,
                    left_at_end: d,
                },
                44 => Event::EnterArgs {
                    function: a,
                    sp: b2,
                    values: Cow::Owned(s1.as_bytes().to_vec()),
                },
                45 => Event::ReturnLeave {
                    function: a,
                    sp: c,
                    values: Cow::Owned(s2.as_bytes().to_vec()),
                },
                46 => Event::ValueClass {
                    class: a,
                    name: s1,
                    fields: Cow::Owned(s2.as_bytes().to_vec()),
                },
                _ => unreachable!(),
            }
        })
}
