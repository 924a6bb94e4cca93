//! ELT3 fast-path hooks for Linux x86_64.
//!
//! The JIT calls these with a private convention, not the C ABI (dotnet/runtime
//! `src/coreclr/jit/targetamd64.h`, UNIX_AMD64_ABI):
//! - **Enter**: FunctionIDOrClientID in R14, the caller's SP in R15. The method's incoming
//!   arguments are live in RDI, RSI, RDX, RCX, R8, R9 and XMM0–XMM7 and must survive
//!   (`RBM_PROFILER_ENTER_TRASH` = callee-trash minus argument registers).
//! - **Leave / Tailcall**: FunctionIDOrClientID in RDI, caller SP in RSI (ordinary helper
//!   argument registers). The return value is live in RAX, RDX, XMM0, XMM1 and must
//!   survive (`RBM_PROFILER_LEAVE_TRASH` = callee-trash minus the four return registers).
//!
//! Each trampoline saves exactly what must survive, aligns the stack to 16 bytes (the
//! JIT's alignment at the call is not relied upon), calls a plain `extern "C"` Rust
//! function with (id, caller_sp), restores and returns. Callee-saved registers are kept
//! by the C ABI of the Rust function itself.

use core::arch::global_asm;

global_asm!(
    ".text",
    ".p2align 4",
    ".globl clrprof_elt_enter",
    ".type clrprof_elt_enter,@function",
    "clrprof_elt_enter:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "and rsp, -16",
    "sub rsp, 176",
    "mov [rsp + 0], rdi",
    "mov [rsp + 8], rsi",
    "mov [rsp + 16], rdx",
    "mov [rsp + 24], rcx",
    "mov [rsp + 32], r8",
    "mov [rsp + 40], r9",
    "movdqa [rsp + 48], xmm0",
    "movdqa [rsp + 64], xmm1",
    "movdqa [rsp + 80], xmm2",
    "movdqa [rsp + 96], xmm3",
    "movdqa [rsp + 112], xmm4",
    "movdqa [rsp + 128], xmm5",
    "movdqa [rsp + 144], xmm6",
    "movdqa [rsp + 160], xmm7",
    "mov rdi, r14",
    "mov rsi, r15",
    "call {enter}",
    "mov rdi, [rsp + 0]",
    "mov rsi, [rsp + 8]",
    "mov rdx, [rsp + 16]",
    "mov rcx, [rsp + 24]",
    "mov r8, [rsp + 32]",
    "mov r9, [rsp + 40]",
    "movdqa xmm0, [rsp + 48]",
    "movdqa xmm1, [rsp + 64]",
    "movdqa xmm2, [rsp + 80]",
    "movdqa xmm3, [rsp + 96]",
    "movdqa xmm4, [rsp + 112]",
    "movdqa xmm5, [rsp + 128]",
    "movdqa xmm6, [rsp + 144]",
    "movdqa xmm7, [rsp + 160]",
    "mov rsp, rbp",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size clrprof_elt_enter, .-clrprof_elt_enter",
    "",
    ".p2align 4",
    ".globl clrprof_elt_leave",
    ".type clrprof_elt_leave,@function",
    "clrprof_elt_leave:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "and rsp, -16",
    "sub rsp, 48",
    "mov [rsp + 0], rax",
    "mov [rsp + 8], rdx",
    "movdqa [rsp + 16], xmm0",
    "movdqa [rsp + 32], xmm1",
    "call {leave}",
    "mov rax, [rsp + 0]",
    "mov rdx, [rsp + 8]",
    "movdqa xmm0, [rsp + 16]",
    "movdqa xmm1, [rsp + 32]",
    "mov rsp, rbp",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size clrprof_elt_leave, .-clrprof_elt_leave",
    "",
    ".p2align 4",
    ".globl clrprof_elt_tailcall",
    ".type clrprof_elt_tailcall,@function",
    "clrprof_elt_tailcall:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "and rsp, -16",
    "sub rsp, 48",
    "mov [rsp + 0], rax",
    "mov [rsp + 8], rdx",
    "movdqa [rsp + 16], xmm0",
    "movdqa [rsp + 32], xmm1",
    "call {tailcall}",
    "mov rax, [rsp + 0]",
    "mov rdx, [rsp + 8]",
    "movdqa xmm0, [rsp + 16]",
    "movdqa xmm1, [rsp + 32]",
    "mov rsp, rbp",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size clrprof_elt_tailcall, .-clrprof_elt_tailcall",
    enter = sym crate::elt::on_enter,
    leave = sym crate::elt::on_leave,
    tailcall = sym crate::elt::on_tailcall,
);

unsafe extern "C" {
    /// Enter trampoline (JIT convention: id in R14, caller SP in R15).
    pub fn clrprof_elt_enter();
    /// Leave trampoline (id in RDI, caller SP in RSI; keeps RAX, RDX, XMM0, XMM1).
    pub fn clrprof_elt_leave();
    /// Tailcall trampoline (as leave).
    pub fn clrprof_elt_tailcall();
}
