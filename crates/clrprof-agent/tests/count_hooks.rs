//! The `--counts` hooks called the way the JIT calls them: every register the JIT's
//! convention says must survive does survive, on the slow path (a thread's first call,
//! frames to close, a new edge) and on the assembly fast path, and the thread's table
//! holds exactly the calls made, edge by edge. Its own process: it turns on the agent's
//! process-wide buffers.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use clrprof_profiler::for_tests::{buffers, clock, elt_x64, tpmap};

mod common;
use common::{ARGS, FARGS, call_leave};

/// The enter hook under test, called as the JIT calls it.
fn call_enter(id: u64, sp: u64) -> ([u64; 6], [f64; 8]) {
    common::call_enter(elt_x64::clrprof_count_enter, id, sp)
}

#[test]
fn count_hooks_keep_the_jit_registers_and_count_every_edge() {
    let _ = clock::init();
    // No writer runs here: the doorbell rings nothing.
    assert!(buffers::init(64 * 1024, false, || {}));
    tpmap::enable();
    buffers::set_accepting(true);
    let leave = elt_x64::clrprof_count_leave as unsafe extern "C" fn();
    let tailcall = elt_x64::clrprof_count_tailcall as unsafe extern "C" fn();
    let ok = (0xAAAA, 0xDDDD, 2.5, -7.75);
    let (main, a, b, c) = (1u64, 2u64, 3u64, 4u64);
    let top = 0x7ffd_1000u64;
    assert_eq!(call_enter(main, top), (ARGS, FARGS));
    for i in 0..1000u64 {
        assert_eq!(call_enter(a, top - 0x100), (ARGS, FARGS), "enter A, {i}");
        assert_eq!(call_enter(b, top - 0x200), (ARGS, FARGS), "enter B, {i}");
        assert_eq!(call_leave(leave, b, top - 0x200), ok, "leave B, {i}");
        if i % 10 == 3 {
            // B throws: A and B unwound without a leave; Main calls C at A's SP.
            call_enter(b, top - 0x200);
            assert_eq!(call_enter(c, top - 0x100), (ARGS, FARGS), "enter C, {i}");
            assert_eq!(call_leave(leave, c, top - 0x100), ok);
        } else if i % 10 == 7 {
            // A tail-calls C, which takes A's place.
            assert_eq!(call_leave(tailcall, a, top - 0x100), ok);
            call_enter(c, top - 0x100);
            call_leave(leave, c, top - 0x100);
        } else {
            assert_eq!(call_leave(leave, a, top - 0x100), ok, "leave A, {i}");
        }
    }
    call_leave(leave, main, top);

    // SAFETY: (A3) the entry's slot stays alive while this thread runs (the table holds a
    // reference).
    let slot = unsafe { &*tpmap::lookup() };
    // The fast path finds the thread's table beside its map entry.
    let table = slot.counts.get().expect("a table");
    assert_eq!(
        tpmap::COUNTS[tpmap::index(tpmap::thread_pointer())]
            .table
            .load(std::sync::atomic::Ordering::Relaxed) as *const u8,
        &**table as *const _ as *const u8
    );
    let mut v = Vec::new();
    let (missed, deep) = slot.counts.get().expect("a table").snapshot(&mut v);
    let mut edges: Vec<(u64, u64, u64)> = v.chunks(3).map(|e| (e[0], e[1], e[2])).collect();
    edges.sort();
    assert_eq!(
        edges,
        [(0, main, 1), (main, a, 1000), (main, c, 200), (a, b, 1100),]
    );
    assert_eq!((missed, deep), (0, 0));
}
