//! Calls into the agent's assembly hooks the way the JIT does (x86_64 SysV, the ELT
//! conventions of corprof.idl): shared by the ELT and `--counts` hook tests.

use std::arch::asm;

pub const ARGS: [u64; 6] = [
    0x1111_0000_0000_0001,
    0x2222_0000_0000_0002,
    0x3333_0000_0000_0003,
    0x4444_0000_0000_0004,
    0x5555_0000_0000_0005,
    0x6666_0000_0000_0006,
];
pub const FARGS: [f64; 8] = [
    1.5,
    -2.25,
    3.125,
    1e300,
    -0.0,
    6.02e23,
    7.0,
    f64::MIN_POSITIVE,
];

/// Calls the enter hook `hook` with id in R14, SP in R15 and every argument register set;
/// returns the argument registers afterwards.
pub fn call_enter(hook: unsafe extern "C" fn(), id: u64, sp: u64) -> ([u64; 6], [f64; 8]) {
    let mut g = ARGS;
    let mut f = FARGS;
    // SAFETY: (A2) the hook keeps every argument register and may trash only RAX, R10, R11,
    // XMM8–15 and the flags (declared); R14/R15 are inputs it does not write.
    unsafe {
        asm!(
            "call {hook}",
            hook = in(reg) hook as usize,
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
pub fn call_leave(hook: unsafe extern "C" fn(), id: u64, sp: u64) -> (u64, u64, f64, f64) {
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
