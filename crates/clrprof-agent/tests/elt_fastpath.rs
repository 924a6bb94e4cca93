//! The ELT hooks called the way the JIT calls them: every register the JIT's convention
//! says must survive does survive, on the slow path (a thread's first event) and on the
//! assembly fast path, and the ring receives exactly the events made, in 8-byte words
//! except where a short word cannot hold the event. This runs in its
//! own process: it turns on the agent's process-wide buffers.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::arch::asm;

use clrprof_format::{Event, Records};
use clrprof_profiler::for_tests::{buffers, clock, elt_x64, tpmap};

const ARGS: [u64; 6] = [
    0x1111_0000_0000_0001,
    0x2222_0000_0000_0002,
    0x3333_0000_0000_0003,
    0x4444_0000_0000_0004,
    0x5555_0000_0000_0005,
    0x6666_0000_0000_0006,
];
const FARGS: [f64; 8] = [
    1.5,
    -2.25,
    3.125,
    1e300,
    -0.0,
    6.02e23,
    7.0,
    f64::MIN_POSITIVE,
];

/// Calls the enter hook with id in R14, SP in R15 and every argument register set;
/// returns the argument registers afterwards.
fn call_enter(id: u64, sp: u64) -> ([u64; 6], [f64; 8]) {
    let mut g = ARGS;
    let mut f = FARGS;
    // SAFETY: (A2) the hook keeps every argument register and may trash only RAX, R10, R11,
    // XMM8–15 and the flags (declared); R14/R15 are inputs it does not write.
    unsafe {
        asm!(
            "call {hook}",
            hook = in(reg) elt_x64::clrprof_elt_enter as *const () as usize,
            in("r14") id,
            in("r15") sp,
            inout("rdi") g[0], inout("rsi") g[1], inout("rdx") g[2],
            inout("rcx") g[3], inout("r8") g[4], inout("r9") g[5],
            inout("xmm0") f[0], inout("xmm1") f[1], inout("xmm2") f[2], inout("xmm3") f[3],
            inout("xmm4") f[4], inout("xmm5") f[5], inout("xmm6") f[6], inout("xmm7") f[7],
            out("rax") _, out("r10") _, out("r11") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
    (g, f)
}

/// Calls a leave-like hook (id in RDI, SP in RSI) with a return value in RAX, RDX, XMM0
/// and XMM1; returns those afterwards.
fn call_leave(hook: unsafe extern "C" fn(), id: u64, sp: u64) -> (u64, u64, f64, f64) {
    let (mut a, mut d, mut x0, mut x1) = (0xAAAA_u64, 0xDDDD_u64, 2.5_f64, -7.75_f64);
    // SAFETY: (A2) leave and tailcall keep RAX, RDX, XMM0 and XMM1 and may trash the other
    // caller-saved registers (declared).
    unsafe {
        asm!(
            "call {hook}",
            hook = in(reg) hook as usize,
            inout("rdi") id => _, inout("rsi") sp => _,
            inout("rax") a, inout("rdx") d, inout("xmm0") x0, inout("xmm1") x1,
            out("rcx") _, out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("xmm2") _, out("xmm3") _, out("xmm4") _, out("xmm5") _, out("xmm6") _,
            out("xmm7") _, out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
    (a, d, x0, x1)
}

#[test]
fn hooks_keep_the_jit_registers_and_record_every_event() {
    assert!(
        clock::init(),
        "this test needs an invariant TSC (the fast path)"
    );
    assert!(buffers::init(64 * 1024, false));
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
