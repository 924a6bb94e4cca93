//! The ELT hooks called the way the JIT calls them: every register the JIT's convention
//! says must survive does survive, on the slow path (a thread's first event) and on the
//! assembly fast path, and the ring receives exactly the events made, in 8-byte words
//! except where a short word cannot hold the event. This runs in its
//! own process: it turns on the agent's process-wide buffers.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use clrprof_format::{Event, Records};
use clrprof_profiler::for_tests::{buffers, clock, elt_x64, tpmap};

mod common;
use common::{ARGS, FARGS, call_leave};

/// The enter hook under test, called as the JIT calls it.
fn call_enter(id: u64, sp: u64) -> ([u64; 6], [f64; 8]) {
    common::call_enter(elt_x64::clrprof_elt_enter, id, sp)
}

#[test]
fn hooks_keep_the_jit_registers_and_record_every_event() {
    assert!(
        clock::init(),
        "this test needs an invariant TSC (the fast path)"
    );
    // No writer runs here: the doorbell rings nothing.
    assert!(buffers::init(64 * 1024, false, || {}));
    tpmap::enable();
    buffers::set_accepting(true);

    assert!(tpmap::lookup().is_null(), "no entry before the first event");
    let mut want = Vec::new();
    for i in 0..1000u64 {
        let (mut function, mut sp) = (i % 7 + 1, 0x7ffd_0000 + i * 16);
        // Events a short word cannot hold go to the slow path as long words: an index
        // above 18 bits, an SP far from the last one or not 8-aligned.
        match i % 100 {
            17 => function = 300_000,
            41 => sp += 1 << 20,
            63 => sp += 4,
            _ => {}
        }
        assert_eq!(call_enter(function, sp), (ARGS, FARGS), "enter, event {i}");
        want.push(Event::Enter { function, sp });
        if i == 0 {
            assert!(
                !tpmap::lookup().is_null(),
                "the slow path published the slot"
            );
        }
        let (hook, ev) = if i % 5 == 4 {
            (
                elt_x64::clrprof_elt_tailcall as unsafe extern "C" fn(),
                Event::Tailcall { function, sp },
            )
        } else {
            (
                elt_x64::clrprof_elt_leave as unsafe extern "C" fn(),
                Event::Leave { function, sp },
            )
        };
        assert_eq!(
            call_leave(hook, function, sp),
            (0xAAAA, 0xDDDD, 2.5, -7.75),
            "leave, event {i}"
        );
        want.push(ev);
    }

    // SAFETY: (A3) the entry's slot stays alive while this thread runs (the table holds a
    // reference).
    let slot = unsafe { &*tpmap::lookup() };
    let bytes = slot
        .ring
        .head
        .wpos
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        bytes <= 2000 * 8 + 60 * 24 + 64,
        "{bytes} bytes of ring for 2000 events: the fast path wrote 8-byte words"
    );
    let (mut out, mut ts) = (Vec::new(), 0);
    let n = slot.ring.drain(&mut out, &mut ts);
    let got: Vec<_> = Records::new(&out, 0).map(|r| r.unwrap()).collect();
    assert_eq!(n as usize, got.len());
    let got_events: Vec<_> = got.iter().map(|r| r.event.clone()).collect();
    assert_eq!(got_events.len(), want.len(), "event count");
    assert!(got_events == want, "events differ");
    assert!(
        got.windows(2).all(|w| w[0].ts <= w[1].ts),
        "timestamps in order"
    );
    assert_eq!(slot.lost.load(std::sync::atomic::Ordering::Relaxed), 0);
}
