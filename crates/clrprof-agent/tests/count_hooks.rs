//! The `--counts` hooks called the way the JIT calls them: every register the JIT's
//! convention says must survive does survive, on the slow path (a thread's first call,
//! frames to close, a new edge) and on the assembly fast path, and the thread's table
//! holds exactly the calls made, edge by edge. Its own process: it turns on the agent's
//! process-wide buffers.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::arch::asm;

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
            hook = in(reg) elt_x64::clrprof_count_enter as *const () as usize,
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
fn count_hooks_keep_the_jit_registers_and_count_every_edge() {
    let _ = clock::init();
    assert!(buffers::init(64 * 1024, false));
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
