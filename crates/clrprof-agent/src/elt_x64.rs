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

/// The leave and tailcall trampolines are the same code around a different target: keep
/// RAX, RDX, XMM0, XMM1 (the return registers), call `target(id in RDI, caller SP in RSI)`.
macro_rules! leave_like {
    ($name:literal, $target:literal) => {
        concat!(
            ".p2align 4\n",
            ".globl ",
            $name,
            "\n",
            ".type ",
            $name,
            ",@function\n",
            $name,
            ":\n",
            ".cfi_startproc\n",
            "push rbp\n",
            ".cfi_def_cfa_offset 16\n",
            ".cfi_offset rbp, -16\n",
            "mov rbp, rsp\n",
            ".cfi_def_cfa_register rbp\n",
            "and rsp, -16\n",
            "sub rsp, 48\n",
            "mov [rsp + 0], rax\n",
            "mov [rsp + 8], rdx\n",
            "movdqa [rsp + 16], xmm0\n",
            "movdqa [rsp + 32], xmm1\n",
            "call ",
            $target,
            "\n",
            "mov rax, [rsp + 0]\n",
            "mov rdx, [rsp + 8]\n",
            "movdqa xmm0, [rsp + 16]\n",
            "movdqa xmm1, [rsp + 32]\n",
            "mov rsp, rbp\n",
            "pop rbp\n",
            ".cfi_def_cfa rsp, 8\n",
            "ret\n",
            ".cfi_endproc\n",
            ".size ",
            $name,
            ", .-",
            $name,
            "\n"
        )
    };
}

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
    leave_like!("clrprof_elt_leave", "{leave}"),
    leave_like!("clrprof_elt_tailcall", "{tailcall}"),
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
