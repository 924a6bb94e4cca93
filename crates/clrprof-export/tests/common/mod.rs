//! The hand-built profile every export test uses.
//!
//! Three threads: `Main Thread` (nested sampled stacks, a native frame, a gap and an
//! empty stack), `Worker` (a runtime frame and a name with `;` and a line break) and
//! `.NET TP Worker` (calls only, given out of order, nested three deep).

#![allow(dead_code)]

use clrprof_export::{
    Call, Frame, FrameId, FrameKind, Module, ModuleId, Profile, Sample, ThreadProfile,
};

pub const MS: u64 = 1_000_000;
pub const US: u64 = 1_000;

/// Module handles: the fixture's `modules`, in order.
pub const DEMO_DLL: ModuleId = ModuleId(0);
pub const CORELIB: ModuleId = ModuleId(1);
pub const CORECLR: ModuleId = ModuleId(2);

fn managed(name: &str, module: ModuleId) -> Frame {
    Frame {
        name: name.into(),
        module: Some(module),
        kind: FrameKind::Managed,
    }
}

/// A sample of `stack` (root first), interned into `profile`'s stack table.
fn sample(profile: &mut Profile, time_ns: u64, stack: &[FrameId], cpu_ns: u64) -> Sample {
    Sample {
        time_ns,
        stack: profile.intern_stack_frames(stack.iter().copied()),
        wall_ns: MS,
        cpu_ns,
    }
}

fn call(frame: FrameId, start_ns: u64, end_ns: u64, depth: u32) -> Call {
    Call {
        frame,
        start_ns,
        end_ns,
        depth,
        values: None,
    }
}

/// Frame handles, for readable assertions.
pub const MAIN: FrameId = FrameId(0);
pub const RUN: FrameId = FrameId(1);
pub const LIST_ADD: FrameId = FrameId(2);
pub const NATIVE: FrameId = FrameId(3);
pub const COMPUTE: FrameId = FrameId(4);
pub const GC: FrameId = FrameId(5);
pub const WEIRD: FrameId = FrameId(6);
pub const OUTER: FrameId = FrameId(7);
pub const INNER: FrameId = FrameId(8);

pub fn fixture() -> Profile {
    let mut p = Profile {
        name: "dotnet Demo.dll \"a&b\" <in.txt>".into(),
        start_unix_ns: 1_700_000_000_123_456_789,
        interval_ns: MS,
        duration_ns: 0,
        frames: vec![
            managed("Demo.Program.Main", DEMO_DLL),
            managed("Demo.Worker.Run", DEMO_DLL),
            managed("System.Collections.Generic.List<int>.Add", CORELIB),
            Frame {
                name: "[native]".into(),
                module: None,
                kind: FrameKind::Native,
            },
            managed("Demo.Worker.Compute", DEMO_DLL),
            Frame {
                name: "[gc]".into(),
                module: Some(CORECLR),
                kind: FrameKind::Runtime,
            },
            managed("Demo.Weird;Name\nWith breaks", DEMO_DLL),
            managed("Demo.Traced.Outer", DEMO_DLL),
            managed("Demo.Traced.Inner", DEMO_DLL),
        ],
        stacks: vec![],
        modules: vec![
            Module {
                name: "Demo.dll".into(),
                path: None,
            },
            Module {
                name: "System.Private.CoreLib.dll".into(),
                path: Some("/dotnet/shared/System.Private.CoreLib.dll".into()),
            },
            Module {
                name: "libcoreclr.so".into(),
                path: Some("/dotnet/shared/libcoreclr.so".into()),
            },
        ],
        threads: vec![],
        sources: Vec::new(),
        markers: vec![],
    };
    let main = vec![
        sample(&mut p, 0, &[MAIN, RUN, COMPUTE], MS),
        sample(&mut p, MS, &[MAIN, RUN, COMPUTE], 900 * US),
        sample(&mut p, 2 * MS, &[MAIN, RUN, LIST_ADD], MS),
        sample(&mut p, 3 * MS, &[MAIN, NATIVE], 200 * US),
        // A gap of one interval: nothing was sampled at 4 ms.
        sample(&mut p, 6 * MS, &[MAIN, RUN, COMPUTE], MS),
        sample(&mut p, 7 * MS, &[], 0),
    ];
    let worker = vec![
        sample(&mut p, 500 * US, &[RUN, GC], 0),
        sample(&mut p, 1500 * US, &[RUN, WEIRD], 700 * US),
    ];
    p.threads = vec![
        ThreadProfile {
            name: "Main Thread".into(),
            os_tid: 100,
            samples: main,
            calls: vec![],
            call_values: vec![],
            call_paths: vec![],
            allocations: vec![],
            waits: vec![],
        },
        ThreadProfile {
            name: "Worker".into(),
            os_tid: 101,
            samples: worker,
            calls: vec![],
            call_values: vec![],
            call_paths: vec![],
            allocations: vec![],
            waits: vec![],
        },
        ThreadProfile {
            name: ".NET TP Worker".into(),
            os_tid: 102,
            samples: vec![],
            calls: vec![
                call(INNER, 10 * US, 40 * US, 1),
                call(OUTER, 0, 100 * US, 0),
                call(LIST_ADD, 52 * US, 55 * US, 2),
                call(INNER, 50 * US, 60 * US, 1),
                call(OUTER, 200 * US, 300 * US, 0),
                call(NATIVE, 210 * US, 220 * US, 1),
            ],
            call_values: vec![],
            call_paths: vec![],
            allocations: vec![],
            waits: vec![],
        },
    ];
    p
}

/// A profile of one traced thread only (trace mode).
pub fn traced_only() -> Profile {
    let mut p = fixture();
    p.threads.drain(..2);
    p.interval_ns = 0;
    p
}
