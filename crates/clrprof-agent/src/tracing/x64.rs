//! ELT3 fast-path hooks for Linux x86_64.
//!
//! The JIT calls these with a private convention, not the C ABI (dotnet/runtime
//! `src/coreclr/jit/targetamd64.h`, UNIX_AMD64_ABI):
//! - **Enter**: FunctionIDOrClientID in R14, the caller's SP in R15. The method's incoming
//!   arguments are live in RDI, RSI, RDX, RCX, R8, R9 and XMM0–XMM7 and must survive
//!   (`RBM_PROFILER_ENTER_TRASH` = callee-trash minus argument registers: only RAX, R10,
//!   R11, XMM8–XMM15 and the flags may change).
//! - **Leave / Tailcall**: FunctionIDOrClientID in RDI, caller SP in RSI (ordinary helper
//!   argument registers). The return value is live in RAX, RDX, XMM0, XMM1 and must
//!   survive (`RBM_PROFILER_LEAVE_TRASH` = callee-trash minus the four return registers).
//!
//! Each hook has two halves:
//! - **the fast path** (`clrprof_elt_enter` …), about thirty instructions with no call
//!   and no XMM register touched: `rdtsc` first, then find the thread's slot in
//!   [`tpmap`](crate::output::tpmap) by the thread pointer, check the ring has room, build
//!   the tag (function index, caller-SP delta from the thread's chain), store one 8-byte
//!   word (see [`ring`](crate::output::ring)), publish the new write position. The TSC is
//!   read before the lookup, not after it, because `rdtsc` is slow (about 9 ns on the
//!   hosts measured) and the lookup's dependent loads do not need its result: issued
//!   first, its latency overlaps theirs instead of adding to them (`clrprof-bench trace`:
//!   the record's share fell from about 11 to about 5 ns per call on a slow host). Enter saves the two
//!   argument registers it needs (RDX for `rdtsc`, RCX) on the stack; leave parks RAX and
//!   RDX in R8/R9, which it may trash.
//! - **the slow path** (`clrprof_elt_enter_slow` …), taken when recording is off, the
//!   thread has no entry yet (its first event registers it), its entry collided, its
//!   ring is full or busy, or the event does not fit a short word (a new high half of the
//!   timestamp, an SP far from the last one, an index above 18 bits): save everything that must survive, align the stack, call the
//!   Rust `hooks::on_*` with (id, caller SP), restore. Callee-saved registers are kept by
//!   the C ABI of the Rust function itself. Without an invariant TSC only the slow path is
//!   installed.

use core::arch::global_asm;

/// A trampoline's start: aligned, global, typed as a function, with unwind info opened.
macro_rules! begin {
    ($name:literal) => {
        concat!(
            ".p2align 4\n.globl ",
            $name,
            "\n.type ",
            $name,
            ",@function\n",
            $name,
            ":\n.cfi_startproc\n"
        )
    };
}

/// A frame on RBP with the stack aligned to 16 bytes below it (for `movdqa` and calls).
macro_rules! frame {
    () => {
        concat!(
            "push rbp\n",
            ".cfi_def_cfa_offset 16\n",
            ".cfi_offset rbp, -16\n",
            "mov rbp, rsp\n",
            ".cfi_def_cfa_register rbp\n",
            "and rsp, -16\n"
        )
    };
}

/// A trampoline's end: unwind info closed and its symbol's size.
macro_rules! end {
    ($name:literal) => {
        concat!(".cfi_endproc\n.size ", $name, ", .-", $name, "\n")
    };
}

/// Leaves a [`frame!`] and returns, then [`end!`]: every trampoline that calls Rust.
macro_rules! epilogue {
    ($name:literal) => {
        concat!(
            "mov rsp, rbp\n",
            "pop rbp\n",
            ".cfi_def_cfa rsp, 8\n",
            "ret\n",
            end!($name)
        )
    };
}

/// The leave and tailcall trampolines are the same code around a different target: keep
/// RAX, RDX, XMM0, XMM1 (the return registers), call `target(id in RDI, caller SP in RSI)`.
macro_rules! leave_like {
    ($name:literal, $target:literal) => {
        concat!(
            begin!($name),
            frame!(),
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
            epilogue!($name)
        )
    };
}

/// The leave and tailcall fast paths: the same code with a different tag and slow path.
macro_rules! leave_like_fast {
    ($name:literal, $tag:literal, $slow:literal) => {
        concat!(
            begin!($name),
            "cmp byte ptr [rip + {accepting}], 0\n",
            "je 9f\n",
            // RAX and RDX hold the return value; R8 and R9 may be trashed. RDI and RSI
            // stay as they came until the event is stored: the slow path needs them.
            "mov r8, rax\n",
            "mov r9, rdx\n",
            "rdtsc\n",
            "mov r10, qword ptr fs:[0]\n",
            "imul rcx, r10, -1640531535\n",
            "shr rcx, 48\n",
            "shl rcx, 4\n",
            "lea r11, [rip + {table}]\n",
            "cmp qword ptr [r11 + rcx], r10\n",
            "jne 8f\n",
            "mov r10, qword ptr [r11 + rcx + 8]\n",
            // A new high half of the timestamp needs a TIME word: slow path.
            "cmp edx, dword ptr [r10 + 32]\n",
            "jne 8f\n",
            "mov rcx, qword ptr [r10]\n",
            "lea r11, [rcx + 8]\n",
            "cmp r11, qword ptr [r10 + 8]\n",
            "ja 8f\n",
            "and rcx, qword ptr [r10 + 16]\n",
            "add rcx, qword ptr [r10 + 24]\n",
            "mov dword ptr [rcx], eax\n",
            // The SP delta from the chain, in 8-byte steps, biased into 12 bits.
            "mov eax, esi\n",
            "sub eax, dword ptr [r10 + 36]\n",
            "test al, 7\n",
            "jnz 8f\n",
            "sar eax, 3\n",
            "add eax, 2048\n",
            "cmp eax, 4095\n",
            "ja 8f\n",
            // The function index must fit 18 bits.
            "cmp rdi, 0x3ffff\n",
            "ja 8f\n",
            "mov edx, edi\n",
            "shl edx, 12\n",
            "or eax, edx\n",
            "or eax, ",
            $tag,
            "\n",
            "mov dword ptr [rcx + 4], eax\n",
            "mov dword ptr [r10 + 36], esi\n",
            "mov qword ptr [r10], r11\n",
            "mov rax, r8\n",
            "mov rdx, r9\n",
            "ret\n",
            "8:\n",
            "mov rax, r8\n",
            "mov rdx, r9\n",
            "9:\n",
            "jmp ",
            $slow,
            "\n",
            end!($name)
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
    "cmp byte ptr [rip + {accepting}], 0",
    "je 9f",
    // RDX (clobbered by rdtsc) and RCX are argument registers: keep them on the stack.
    "push rdx",
    ".cfi_adjust_cfa_offset 8",
    "push rcx",
    ".cfi_adjust_cfa_offset 8",
    "rdtsc",
    "mov r10, qword ptr fs:[0]",
    "imul rcx, r10, -1640531535",
    "shr rcx, 48",
    "shl rcx, 4",
    "lea r11, [rip + {table}]",
    "cmp qword ptr [r11 + rcx], r10",
    "jne 8f",
    "mov r10, qword ptr [r11 + rcx + 8]",
    // A new high half of the timestamp needs a TIME word: slow path.
    "cmp edx, dword ptr [r10 + 32]",
    "jne 8f",
    "mov rcx, qword ptr [r10]",
    "lea r11, [rcx + 8]",
    "cmp r11, qword ptr [r10 + 8]",
    "ja 8f",
    "and rcx, qword ptr [r10 + 16]",
    "add rcx, qword ptr [r10 + 24]",
    "mov dword ptr [rcx], eax",
    // The SP delta from the chain, in 8-byte steps, biased into 12 bits.
    "mov eax, r15d",
    "sub eax, dword ptr [r10 + 36]",
    "test al, 7",
    "jnz 8f",
    "sar eax, 3",
    "add eax, 2048",
    "cmp eax, 4095",
    "ja 8f",
    // The function index must fit 18 bits (the Enter tag kind is 0).
    "cmp r14, 0x3ffff",
    "ja 8f",
    "mov edx, r14d",
    "shl edx, 12",
    "or eax, edx",
    "mov dword ptr [rcx + 4], eax",
    "mov dword ptr [r10 + 36], r15d",
    "mov qword ptr [r10], r11",
    "pop rcx",
    ".cfi_adjust_cfa_offset -8",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "ret",
    ".cfi_adjust_cfa_offset 16",
    "8:",
    "pop rcx",
    ".cfi_adjust_cfa_offset -8",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "9:",
    "jmp clrprof_elt_enter_slow",
    ".cfi_endproc",
    ".size clrprof_elt_enter, .-clrprof_elt_enter",
    "",
    leave_like_fast!("clrprof_elt_leave", "0x40000000", "clrprof_elt_leave_slow"),
    leave_like_fast!("clrprof_elt_tailcall", "0x80000000", "clrprof_elt_tailcall_slow"),
    table = sym crate::output::tpmap::TABLE,
    accepting = sym crate::output::buffers::ACCEPTING,
);

/// The enter slow path and the `--counts` enter hook: keep every argument register
/// (RDI…R9, XMM0–7), call `target(id from R14, caller SP from R15)`.
macro_rules! enter_like {
    ($name:literal, $target:literal) => {
        concat!(
            begin!($name),
            frame!(),
            "sub rsp, 176\n",
            "mov [rsp + 0], rdi\n",
            "mov [rsp + 8], rsi\n",
            "mov [rsp + 16], rdx\n",
            "mov [rsp + 24], rcx\n",
            "mov [rsp + 32], r8\n",
            "mov [rsp + 40], r9\n",
            "movdqa [rsp + 48], xmm0\n",
            "movdqa [rsp + 64], xmm1\n",
            "movdqa [rsp + 80], xmm2\n",
            "movdqa [rsp + 96], xmm3\n",
            "movdqa [rsp + 112], xmm4\n",
            "movdqa [rsp + 128], xmm5\n",
            "movdqa [rsp + 144], xmm6\n",
            "movdqa [rsp + 160], xmm7\n",
            "mov rdi, r14\n",
            "mov rsi, r15\n",
            "call ",
            $target,
            "\n",
            "mov rdi, [rsp + 0]\n",
            "mov rsi, [rsp + 8]\n",
            "mov rdx, [rsp + 16]\n",
            "mov rcx, [rsp + 24]\n",
            "mov r8, [rsp + 32]\n",
            "mov r9, [rsp + 40]\n",
            "movdqa xmm0, [rsp + 48]\n",
            "movdqa xmm1, [rsp + 64]\n",
            "movdqa xmm2, [rsp + 80]\n",
            "movdqa xmm3, [rsp + 96]\n",
            "movdqa xmm4, [rsp + 112]\n",
            "movdqa xmm5, [rsp + 128]\n",
            "movdqa xmm6, [rsp + 144]\n",
            "movdqa xmm7, [rsp + 160]\n",
            epilogue!($name)
        )
    };
}

global_asm!(
    ".text",
    enter_like!("clrprof_elt_enter_slow", "{enter}"),
    leave_like!("clrprof_elt_leave_slow", "{leave}"),
    leave_like!("clrprof_elt_tailcall_slow", "{tailcall}"),
    enter = sym crate::tracing::hooks::on_enter,
    leave = sym crate::tracing::hooks::on_leave,
    tailcall = sym crate::tracing::hooks::on_tailcall,
);

// `--counts`: the fast paths update the thread's call-count table (`output/counts.rs`,
// loaded from `tpmap::COUNTS` at the thread's index, beside its key check) in the common
// case: an enter below
// the top frame whose edge sits in its first hash slot, a leave of the top frame.
// Anything else (the thread's first call, frames to close, a new edge, a collision)
// takes the slow path, which calls the Rust table update with every register kept (a
// tail call closes its frame like a leave).
macro_rules! count_leave_fast {
    ($name:literal) => {
        concat!(
            begin!($name),
            "cmp byte ptr [rip + {accepting}], 0\n",
            "je 9f\n",
            // RAX holds the return value: parked in R8. RDX is not touched.
            "mov r8, rax\n",
            "mov r10, qword ptr fs:[0]\n",
            "imul rcx, r10, -1640531535\n",
            "shr rcx, 48\n",
            "shl rcx, 4\n",
            "lea r11, [rip + {table}]\n",
            "cmp qword ptr [r11 + rcx], r10\n",
            "jne 8f\n",
            "lea r11, [rip + {counts}]\n",
            "mov r10, qword ptr [r11 + rcx]\n",
            "test r10, r10\n",
            "jz 8f\n",
            "mov rax, qword ptr [r10]\n",
            "test rax, rax\n",
            "jz 8f\n",
            "mov r11, qword ptr [r10 + 24]\n",
            "lea rcx, [rax - 1]\n",
            "shl rcx, 4\n",
            // The top frame must be this one (same caller SP and index).
            "cmp qword ptr [r11 + rcx], rsi\n",
            "jne 8f\n",
            "cmp qword ptr [r11 + rcx + 8], rdi\n",
            "jne 8f\n",
            "dec rax\n",
            "mov qword ptr [r10], rax\n",
            "mov rax, r8\n",
            "ret\n",
            "8:\n",
            "mov rax, r8\n",
            "9:\n",
            "jmp clrprof_count_leave_slow\n",
            end!($name)
        )
    };
}

global_asm!(
    ".text",
    ".p2align 4",
    ".globl clrprof_count_enter",
    ".type clrprof_count_enter,@function",
    "clrprof_count_enter:",
    ".cfi_startproc",
    "cmp byte ptr [rip + {accepting}], 0",
    "je 9f",
    // RDX and RCX are argument registers: keep them on the stack.
    "push rdx",
    ".cfi_adjust_cfa_offset 8",
    "push rcx",
    ".cfi_adjust_cfa_offset 8",
    "mov r10, qword ptr fs:[0]",
    "imul rcx, r10, -1640531535",
    "shr rcx, 48",
    "shl rcx, 4",
    "lea r11, [rip + {table}]",
    "cmp qword ptr [r11 + rcx], r10",
    "jne 8f",
    "lea r11, [rip + {counts}]",
    "mov r10, qword ptr [r11 + rcx]",
    "test r10, r10",
    "jz 8f",
    // 1 <= depth < DEPTH: there is a caller and room for one more frame.
    "mov rax, qword ptr [r10]",
    "lea rcx, [rax - 1]",
    "cmp rcx, {depth_max}",
    "jae 8f",
    "shl rcx, 4",
    "add rcx, qword ptr [r10 + 24]",
    // A top frame at the same or a shallower SP is over: the slow path closes it.
    "cmp qword ptr [rcx], r15",
    "jbe 8f",
    // The index fits 32 bits: the mapper's indices are at most MAX_INDEX, a u32, and
    // --counts never has --args' pointer client ids (see `tracing/counts.rs`).
    // The new frame goes above the top (harmless if the slow path takes over).
    "mov qword ptr [rcx + 16], r15",
    "mov qword ptr [rcx + 24], r14",
    // key = caller << 32 | callee: the edge counted last, or in its first hash slot.
    "mov rdx, qword ptr [rcx + 8]",
    "shl rdx, 32",
    "or rdx, r14",
    "cmp rdx, qword ptr [r10 + 32]",
    "jne 7f",
    "mov r11, qword ptr [r10 + 40]",
    "jmp 6f",
    "7:",
    "mov r11, {hash}",
    "imul r11, rdx",
    "shr r11, 32",
    "and r11d, {edge_mask}",
    "mov rcx, qword ptr [r10 + 8]",
    "cmp qword ptr [rcx + r11 * 8], rdx",
    "jne 8f",
    "shl r11, 3",
    "add r11, qword ptr [r10 + 16]",
    "mov qword ptr [r10 + 32], rdx",
    "mov qword ptr [r10 + 40], r11",
    "6:",
    "inc qword ptr [r11]",
    "inc rax",
    "mov qword ptr [r10], rax",
    "pop rcx",
    ".cfi_adjust_cfa_offset -8",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "ret",
    ".cfi_adjust_cfa_offset 16",
    "8:",
    "pop rcx",
    ".cfi_adjust_cfa_offset -8",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "9:",
    "jmp clrprof_count_enter_slow",
    ".cfi_endproc",
    ".size clrprof_count_enter, .-clrprof_count_enter",
    "",
    count_leave_fast!("clrprof_count_leave"),
    count_leave_fast!("clrprof_count_tailcall"),
    table = sym crate::output::tpmap::TABLE,
    counts = sym crate::output::tpmap::COUNTS,
    accepting = sym crate::output::buffers::ACCEPTING,
    depth_max = const crate::output::counts::DEPTH - 1,
    edge_mask = const crate::output::counts::EDGES - 1,
    hash = const crate::output::counts::HASH as i64,
);

global_asm!(
    ".text",
    enter_like!("clrprof_count_enter_slow", "{enter}"),
    leave_like!("clrprof_count_leave_slow", "{leave}"),
    enter = sym crate::tracing::counts::on_enter,
    leave = sym crate::tracing::counts::on_leave,
);

// The IL probes' fast paths (`tracing/probes.rs`): plain C functions `(index in RDI, frame
// address in RSI)`, called by a probed method's `calli` with the thread in cooperative
// mode (SuppressGCTransition) or after a GC-mode transition. They do what the ELT leave
// fast path does with the same two values, so they may clobber every caller-saved
// register; the address of the frame's local is rounded down to 8 bytes first (a 4-byte
// local may sit between two 8-byte steps; a deeper frame's local stays lower). Anything
// the fast path cannot record goes to `hooks::on_enter` / `on_leave` with the same
// arguments, by a tail jump.
macro_rules! probe_fast {
    ($name:literal, $tag:literal, $slow:literal) => {
        concat!(
            begin!($name),
            "and rsi, -8\n",
            "cmp byte ptr [rip + {accepting}], 0\n",
            "je 9f\n",
            "rdtsc\n",
            "mov r10, qword ptr fs:[0]\n",
            "imul rcx, r10, -1640531535\n",
            "shr rcx, 48\n",
            "shl rcx, 4\n",
            "lea r11, [rip + {table}]\n",
            "cmp qword ptr [r11 + rcx], r10\n",
            "jne 9f\n",
            "mov r10, qword ptr [r11 + rcx + 8]\n",
            // A new high half of the timestamp needs a TIME word: slow path.
            "cmp edx, dword ptr [r10 + 32]\n",
            "jne 9f\n",
            "mov rcx, qword ptr [r10]\n",
            "lea r11, [rcx + 8]\n",
            "cmp r11, qword ptr [r10 + 8]\n",
            "ja 9f\n",
            "and rcx, qword ptr [r10 + 16]\n",
            "add rcx, qword ptr [r10 + 24]\n",
            "mov dword ptr [rcx], eax\n",
            // The frame's delta from the chain, in 8-byte steps, biased into 12 bits.
            "mov eax, esi\n",
            "sub eax, dword ptr [r10 + 36]\n",
            "test al, 7\n",
            "jnz 9f\n",
            "sar eax, 3\n",
            "add eax, 2048\n",
            "cmp eax, 4095\n",
            "ja 9f\n",
            // The function index must fit 18 bits.
            "cmp rdi, 0x3ffff\n",
            "ja 9f\n",
            "mov edx, edi\n",
            "shl edx, 12\n",
            "or eax, edx\n",
            "or eax, ",
            $tag,
            "\n",
            "mov dword ptr [rcx + 4], eax\n",
            "mov dword ptr [r10 + 36], esi\n",
            "mov qword ptr [r10], r11\n",
            "ret\n",
            "9:\n",
            "jmp ",
            $slow,
            "\n",
            end!($name)
        )
    };
}

global_asm!(
    ".text",
    probe_fast!("clrprof_probe_enter", "0", "{enter}"),
    probe_fast!("clrprof_probe_leave", "0x40000000", "{leave}"),
    table = sym crate::output::tpmap::TABLE,
    accepting = sym crate::output::buffers::ACCEPTING,
    enter = sym crate::tracing::hooks::on_enter,
    leave = sym crate::tracing::hooks::on_leave,
);

// `--args` (docs/tracing.md): the same JIT conventions, with a client ID that is either a
// function index (hooked, no values: the plain hooks above, by a tail jump) or the
// address of the function's `args::ArgsFn` (above any index). For those, the trampoline
// saves the argument registers (enter) or the return registers (leave, tail call) into a
// block laid out as the runtime's `PROFILE_PLATFORM_SPECIFIC_DATA` (`rax` at 40, the low
// eightbyte of `xmm0`…`xmm7` at 56…112, `rdi`…`r9` at 120…160; `rdx` at 136), keeps the
// whole XMM registers above it (176…), and calls the Rust half with (client ID, caller
// SP, block address), which reads the values where the SysV convention placed them
// (`arg_slots::Placer`). Every saved register is restored; the Rust half keeps the
// callee-saved ones by its own ABI.
macro_rules! args_enter {
    ($name:literal, $plain:literal, $target:literal) => {
        concat!(
            begin!($name),
            "cmp r14, {max_index}\n",
            "ja 1f\n",
            "jmp ",
            $plain,
            "\n",
            "1:\n",
            frame!(),
            "sub rsp, 304\n",
            "mov [rsp + 120], rdi\n",
            "mov [rsp + 128], rsi\n",
            "mov [rsp + 136], rdx\n",
            "mov [rsp + 144], rcx\n",
            "mov [rsp + 152], r8\n",
            "mov [rsp + 160], r9\n",
            "movdqa [rsp + 176], xmm0\n",
            "movdqa [rsp + 192], xmm1\n",
            "movdqa [rsp + 208], xmm2\n",
            "movdqa [rsp + 224], xmm3\n",
            "movdqa [rsp + 240], xmm4\n",
            "movdqa [rsp + 256], xmm5\n",
            "movdqa [rsp + 272], xmm6\n",
            "movdqa [rsp + 288], xmm7\n",
            "movq qword ptr [rsp + 56], xmm0\n",
            "movq qword ptr [rsp + 64], xmm1\n",
            "movq qword ptr [rsp + 72], xmm2\n",
            "movq qword ptr [rsp + 80], xmm3\n",
            "movq qword ptr [rsp + 88], xmm4\n",
            "movq qword ptr [rsp + 96], xmm5\n",
            "movq qword ptr [rsp + 104], xmm6\n",
            "movq qword ptr [rsp + 112], xmm7\n",
            "mov rdi, r14\n",
            "mov rsi, r15\n",
            "mov rdx, rsp\n",
            "call ",
            $target,
            "\n",
            "mov rdi, [rsp + 120]\n",
            "mov rsi, [rsp + 128]\n",
            "mov rdx, [rsp + 136]\n",
            "mov rcx, [rsp + 144]\n",
            "mov r8, [rsp + 152]\n",
            "mov r9, [rsp + 160]\n",
            "movdqa xmm0, [rsp + 176]\n",
            "movdqa xmm1, [rsp + 192]\n",
            "movdqa xmm2, [rsp + 208]\n",
            "movdqa xmm3, [rsp + 224]\n",
            "movdqa xmm4, [rsp + 240]\n",
            "movdqa xmm5, [rsp + 256]\n",
            "movdqa xmm6, [rsp + 272]\n",
            "movdqa xmm7, [rsp + 288]\n",
            epilogue!($name)
        )
    };
}

/// The `--args` leave and tail-call trampolines: id in RDI, caller SP in RSI (as the
/// JIT passes them), the block in RDX; RAX, RDX, XMM0 and XMM1 kept.
macro_rules! args_leave {
    ($name:literal, $plain:literal, $target:literal) => {
        concat!(
            begin!($name),
            "cmp rdi, {max_index}\n",
            "ja 1f\n",
            "jmp ",
            $plain,
            "\n",
            "1:\n",
            frame!(),
            "sub rsp, 208\n",
            "mov [rsp + 40], rax\n",
            "mov [rsp + 136], rdx\n",
            "movq qword ptr [rsp + 56], xmm0\n",
            "movq qword ptr [rsp + 64], xmm1\n",
            "movdqa [rsp + 176], xmm0\n",
            "movdqa [rsp + 192], xmm1\n",
            "mov rdx, rsp\n",
            "call ",
            $target,
            "\n",
            "mov rax, [rsp + 40]\n",
            "mov rdx, [rsp + 136]\n",
            "movdqa xmm0, [rsp + 176]\n",
            "movdqa xmm1, [rsp + 192]\n",
            epilogue!($name)
        )
    };
}

/// The short path of an `--args` entry or return (`args/fast.rs`), between a
/// trampoline's saving of the registers and its call into Rust, taken when `flag` is set
/// in byte 3 of the words' `meta`: R8 holds the function's `ArgsFn` (whose `FastPrims`
/// words say what to write for each value), R9 the caller SP, RSP the saved register
/// block, whose first 56 bytes it keeps its own values in (the timestamp, the write
/// position, the ring, the record, the values' length byte; for a string, which only an
/// entry has, the word count and the string's kept length).
/// `rdtsc` first, as in the ELT hooks; then the thread's ring as they find it; room for
/// the longest record the words can produce, below the bound and before the ring's end;
/// the record the Rust hooks write (header word, timestamp word, body: kind, body
/// length, zero timestamp, function index, SP, the values' length, the values: each
/// word's constant bytes, then nothing, a primitive, or a string), published by one
/// store of the write position. Jumps to `28f` when written; to `29f` (the Rust hooks,
/// which handle every other case, the record unpublished) when not: a string that is
/// not a plausible object, is longer than `str_most` or is not ASCII, or lengths that
/// would take more than a byte. Trashes RAX, RCX, RDX, RSI, RDI, R10, R11 (the
/// trampolines restore what the JIT's convention keeps).
macro_rules! args_prims {
    ($kind:literal, $count:literal, $flag:literal, $need:literal, $first:literal) => {
        concat!(
            "rdtsc\n",
            "shl rdx, 32\n",
            "or rax, rdx\n",
            "mov [rsp], rax\n",
            "cmp byte ptr [rip + {accepting}], 0\n",
            "je 29f\n",
            "mov ecx, dword ptr [r8 + {meta}]\n",
            "test byte ptr [r8 + {meta} + 3], ",
            $flag,
            "\n",
            "jz 29f\n",
            "mov r10, qword ptr fs:[0]\n",
            "imul rdx, r10, -1640531535\n",
            "shr rdx, 48\n",
            "shl rdx, 4\n",
            "lea r11, [rip + {table}]\n",
            "cmp qword ptr [r11 + rdx], r10\n",
            "jne 29f\n",
            "mov r10, qword ptr [r11 + rdx + 8]\n",
            // Room: wpos + need within the bound (0 while Rust writes) and the ring's end.
            "mov rdi, qword ptr [r10]\n",
            "mov rax, qword ptr [r8 + ",
            $need,
            "]\n",
            "lea rdx, [rdi + rax]\n",
            "cmp rdx, qword ptr [r10 + 8]\n",
            "ja 29f\n",
            "mov rdx, qword ptr [r10 + 16]\n",
            "and rdx, rdi\n",
            "add rax, rdx\n",
            "mov r11, qword ptr [r10 + 16]\n",
            "inc r11\n",
            "cmp rax, r11\n",
            "ja 29f\n",
            "add rdx, qword ptr [r10 + 24]\n",
            "mov [rsp + 8], rdi\n",
            "mov [rsp + 16], r10\n",
            "mov [rsp + 24], rdx\n",
            // The body: kind, (length later), zero timestamp, the index's LEB128 bytes.
            "mov byte ptr [rdx + 16], ",
            $kind,
            "\n",
            "mov byte ptr [rdx + 18], 0\n",
            "mov rax, qword ptr [r8 + {leb}]\n",
            "mov qword ptr [rdx + 19], rax\n",
            "shr ecx, 16\n",
            "movzx eax, cl\n",
            "lea rdi, [rdx + rax + 19]\n",
            // The SP's low half, LEB128.
            "mov eax, r9d\n",
            "20:\n",
            "mov r11d, eax\n",
            "and r11d, 127\n",
            "shr eax, 7\n",
            "jz 21f\n",
            "or r11d, 128\n",
            "mov byte ptr [rdi], r11b\n",
            "inc rdi\n",
            "jmp 20b\n",
            "21:\n",
            "mov byte ptr [rdi], r11b\n",
            "inc rdi\n",
            "mov [rsp + 32], rdi\n",
            "inc rdi\n",
            // Each value: its three tag bytes, then its bits loaded (8 bytes) from the
            // block or the caller's stack, widened by the word's shift, encoded by form.
            "movzx edx, byte ptr [r8 + {meta} + ",
            $count,
            "]\n",
            "lea r10, [r8 + ",
            $first,
            "]\n",
            "test edx, edx\n",
            "jz 27f\n",
            "22:\n",
            "mov r11, qword ptr [r10]\n",
            "mov dword ptr [rdi], r11d\n",
            "mov rax, r11\n",
            "shr rax, 49\n",
            "and eax, 3\n",
            "add rdi, rax\n",
            "mov rcx, r11\n",
            "shr rcx, 56\n",
            "cmp ecx, 5\n",
            "je 43f\n",
            "mov rax, r11\n",
            "shr rax, 32\n",
            "movzx eax, ax\n",
            "bt r11, 48\n",
            "jc 23f\n",
            "mov rax, qword ptr [rsp + rax]\n",
            "jmp 24f\n",
            "23:\n",
            "mov rax, qword ptr [r9 + rax]\n",
            "24:\n",
            "cmp ecx, 6\n",
            "je 50f\n",
            "mov rcx, r11\n",
            "shr rcx, 24\n",
            "shl rax, cl\n",
            "shr r11, 56\n",
            "cmp r11d, 1\n",
            "jne 25f\n",
            // Signed: sign-extend, zigzag, LEB128.
            "sar rax, cl\n",
            "lea rcx, [rax + rax]\n",
            "sar rax, 63\n",
            "xor rax, rcx\n",
            "jmp 26f\n",
            "25:\n",
            "shr rax, cl\n",
            "cmp r11d, 2\n",
            "jb 26f\n",
            "ja 40f\n",
            // Bool: 1 when not 0 (one LEB128 byte).
            "test rax, rax\n",
            "setne al\n",
            "movzx eax, al\n",
            "26:\n",
            "mov rcx, rax\n",
            "and ecx, 127\n",
            "shr rax, 7\n",
            "jz 41f\n",
            "or ecx, 128\n",
            "mov byte ptr [rdi], cl\n",
            "inc rdi\n",
            "jmp 26b\n",
            "41:\n",
            "mov byte ptr [rdi], cl\n",
            "inc rdi\n",
            "jmp 43f\n",
            // Raw: four bytes (float) or eight (double).
            "40:\n",
            "mov qword ptr [rdi], rax\n",
            "add rdi, 4\n",
            "cmp r11d, 3\n",
            "je 43f\n",
            "add rdi, 4\n",
            "43:\n",
            "add r10, 8\n",
            "dec edx\n",
            "jnz 22b\n",
            "27:\n",
            // The values' length, the body's, the header and timestamp words; publish.
            "mov rdx, [rsp + 24]\n",
            "mov rax, [rsp + 32]\n",
            "mov rcx, rdi\n",
            "sub rcx, rax\n",
            "dec rcx\n",
            // Both lengths must take one LEB128 byte (else Rust writes the call).
            "cmp rcx, 127\n",
            "ja 29f\n",
            "mov byte ptr [rax], cl\n",
            "mov rax, rdi\n",
            "sub rax, rdx\n",
            "sub rax, 16\n",
            "lea ecx, [rax - 2]\n",
            "cmp ecx, 127\n",
            "ja 29f\n",
            "mov byte ptr [rdx + 17], cl\n",
            "mov ecx, eax\n",
            "or ecx, {tag_other}\n",
            "mov dword ptr [rdx], 0\n",
            "mov dword ptr [rdx + 4], ecx\n",
            "mov rcx, [rsp]\n",
            "mov qword ptr [rdx + 8], rcx\n",
            "add rax, 7\n",
            "shr rax, 3\n",
            "lea rax, [rax * 8 + 16]\n",
            "add rax, [rsp + 8]\n",
            "mov r10, [rsp + 16]\n",
            "mov qword ptr [r10], rax\n",
            "jmp 28f\n",
            // A string (RAX: the reference): null; or a plausible object (as
            // `read::plausible_object`) whose kept characters (at most `str_most`) are all
            // ASCII: STR, the full length, the length kept, a byte a character.
            "50:\n",
            "test rax, rax\n",
            "jnz 51f\n",
            "mov byte ptr [rdi], {null_tag}\n",
            "inc rdi\n",
            "jmp 43b\n",
            "51:\n",
            "test al, 7\n",
            "jnz 29f\n",
            "cmp rax, 65536\n",
            "jb 29f\n",
            "mov rcx, rax\n",
            "shr rcx, 47\n",
            "jnz 29f\n",
            "mov rsi, qword ptr [r8 + {strings}]\n",
            "movzx ecx, si\n",
            "movsxd r11, dword ptr [rax + rcx]\n",
            "test r11, r11\n",
            "jns 52f\n",
            "xor r11d, r11d\n",
            "52:\n",
            "mov rcx, rsi\n",
            "shr rcx, 32\n",
            "cmp r11, rcx\n",
            "jae 53f\n",
            "mov rcx, r11\n",
            "53:\n",
            "cmp rcx, {str_most}\n",
            "ja 29f\n",
            "mov [rsp + 48], rcx\n",
            "shr esi, 16\n",
            "add rsi, rax\n",
            "mov byte ptr [rdi], {str_tag}\n",
            "inc rdi\n",
            "mov rax, r11\n",
            "56:\n",
            "mov rcx, rax\n",
            "and ecx, 127\n",
            "shr rax, 7\n",
            "jz 57f\n",
            "or ecx, 128\n",
            "mov byte ptr [rdi], cl\n",
            "inc rdi\n",
            "jmp 56b\n",
            "57:\n",
            "mov byte ptr [rdi], cl\n",
            "inc rdi\n",
            "mov rcx, [rsp + 48]\n",
            "mov byte ptr [rdi], cl\n",
            "inc rdi\n",
            // The characters, four at a time then one at a time, a byte each (their
            // low halves), every unit OR-ed into R11 to check they were all ASCII.
            // RDX (the word count) is kept in the block meanwhile.
            "mov [rsp + 40], rdx\n",
            "xor r11d, r11d\n",
            "cmp rcx, 4\n",
            "jb 61f\n",
            "60:\n",
            "mov rax, qword ptr [rsi]\n",
            "or r11, rax\n",
            "mov rdx, rax\n",
            "shr rdx, 8\n",
            "or rax, rdx\n",
            "mov rdx, rax\n",
            "shr rdx, 16\n",
            "and edx, 0xffff0000\n",
            "movzx eax, ax\n",
            "or eax, edx\n",
            "mov dword ptr [rdi], eax\n",
            "add rsi, 8\n",
            "add rdi, 4\n",
            "sub rcx, 4\n",
            "cmp rcx, 4\n",
            "jae 60b\n",
            "61:\n",
            "test rcx, rcx\n",
            "jz 63f\n",
            "62:\n",
            "movzx eax, word ptr [rsi]\n",
            // 64-bit: a 32-bit OR would clear the units the four-at-a-time steps kept
            // in R11's upper half.
            "or r11, rax\n",
            "mov byte ptr [rdi], al\n",
            "add rsi, 2\n",
            "inc rdi\n",
            "dec rcx\n",
            "jnz 62b\n",
            "63:\n",
            "mov rax, 0xff80ff80ff80ff80\n",
            "test r11, rax\n",
            "jnz 29f\n",
            "mov rdx, [rsp + 40]\n",
            "jmp 43b\n",
        )
    };
}

/// [`args_enter!`] with the short path first (the trampolines with an invariant TSC).
macro_rules! args_enter_short {
    ($name:literal, $plain:literal, $target:literal) => {
        concat!(
            begin!($name),
            "cmp r14, {max_index}\n",
            "ja 1f\n",
            "jmp ",
            $plain,
            "\n",
            "1:\n",
            frame!(),
            "sub rsp, 304\n",
            "mov [rsp + 120], rdi\n",
            "mov [rsp + 128], rsi\n",
            "mov [rsp + 136], rdx\n",
            "mov [rsp + 144], rcx\n",
            "mov [rsp + 152], r8\n",
            "mov [rsp + 160], r9\n",
            "movq qword ptr [rsp + 56], xmm0\n",
            "movq qword ptr [rsp + 64], xmm1\n",
            "movq qword ptr [rsp + 72], xmm2\n",
            "movq qword ptr [rsp + 80], xmm3\n",
            "movq qword ptr [rsp + 88], xmm4\n",
            "movq qword ptr [rsp + 96], xmm5\n",
            "movq qword ptr [rsp + 104], xmm6\n",
            "movq qword ptr [rsp + 112], xmm7\n",
            "mov r8, r14\n",
            "mov r9, r15\n",
            args_prims!("44", "0", "{enter_on}", "{need_enter}", "{args}"),
            "28:\n",
            "mov rdi, [rsp + 120]\n",
            "mov rsi, [rsp + 128]\n",
            "mov rdx, [rsp + 136]\n",
            "mov rcx, [rsp + 144]\n",
            "mov r8, [rsp + 152]\n",
            "mov r9, [rsp + 160]\n",
            ".cfi_remember_state\n",
            "mov rsp, rbp\n",
            "pop rbp\n",
            ".cfi_def_cfa rsp, 8\n",
            "ret\n",
            ".cfi_restore_state\n",
            "29:\n",
            "movdqa [rsp + 176], xmm0\n",
            "movdqa [rsp + 192], xmm1\n",
            "movdqa [rsp + 208], xmm2\n",
            "movdqa [rsp + 224], xmm3\n",
            "movdqa [rsp + 240], xmm4\n",
            "movdqa [rsp + 256], xmm5\n",
            "movdqa [rsp + 272], xmm6\n",
            "movdqa [rsp + 288], xmm7\n",
            "mov rdi, r14\n",
            "mov rsi, r15\n",
            "mov rdx, rsp\n",
            "call ",
            $target,
            "\n",
            "mov rdi, [rsp + 120]\n",
            "mov rsi, [rsp + 128]\n",
            "mov rdx, [rsp + 136]\n",
            "mov rcx, [rsp + 144]\n",
            "mov r8, [rsp + 152]\n",
            "mov r9, [rsp + 160]\n",
            "movdqa xmm0, [rsp + 176]\n",
            "movdqa xmm1, [rsp + 192]\n",
            "movdqa xmm2, [rsp + 208]\n",
            "movdqa xmm3, [rsp + 224]\n",
            "movdqa xmm4, [rsp + 240]\n",
            "movdqa xmm5, [rsp + 256]\n",
            "movdqa xmm6, [rsp + 272]\n",
            "movdqa xmm7, [rsp + 288]\n",
            epilogue!($name)
        )
    };
}

/// [`args_leave!`] with the short path first (the leave trampoline with an invariant
/// TSC; a tail call has no return value to record and keeps the plain one).
macro_rules! args_leave_short {
    ($name:literal, $plain:literal, $target:literal) => {
        concat!(
            begin!($name),
            "cmp rdi, {max_index}\n",
            "ja 1f\n",
            "jmp ",
            $plain,
            "\n",
            "1:\n",
            frame!(),
            "sub rsp, 208\n",
            "mov [rsp + 40], rax\n",
            "mov [rsp + 136], rdx\n",
            "movq qword ptr [rsp + 56], xmm0\n",
            "movq qword ptr [rsp + 64], xmm1\n",
            "mov r8, rdi\n",
            "mov r9, rsi\n",
            args_prims!("45", "1", "{leave_on}", "{need_leave}", "{ret}"),
            "28:\n",
            "mov rax, [rsp + 40]\n",
            "mov rdx, [rsp + 136]\n",
            ".cfi_remember_state\n",
            "mov rsp, rbp\n",
            "pop rbp\n",
            ".cfi_def_cfa rsp, 8\n",
            "ret\n",
            ".cfi_restore_state\n",
            "29:\n",
            "movdqa [rsp + 176], xmm0\n",
            "movdqa [rsp + 192], xmm1\n",
            "mov rdi, r8\n",
            "mov rsi, r9\n",
            "mov rdx, rsp\n",
            "call ",
            $target,
            "\n",
            "mov rax, [rsp + 40]\n",
            "mov rdx, [rsp + 136]\n",
            "movdqa xmm0, [rsp + 176]\n",
            "movdqa xmm1, [rsp + 192]\n",
            epilogue!($name)
        )
    };
}

global_asm!(
    ".text",
    args_enter_short!("clrprof_args_enter", "clrprof_elt_enter", "{enter}"),
    args_leave_short!("clrprof_args_leave", "clrprof_elt_leave", "{leave}"),
    args_leave!("clrprof_args_tailcall", "clrprof_elt_tailcall", "{tailcall}"),
    // Without an invariant TSC the plain hooks are the slow paths.
    args_enter!("clrprof_args_enter_notsc", "clrprof_elt_enter_slow", "{enter}"),
    args_leave!("clrprof_args_leave_notsc", "clrprof_elt_leave_slow", "{leave}"),
    args_leave!("clrprof_args_tailcall_notsc", "clrprof_elt_tailcall_slow", "{tailcall}"),
    max_index = const crate::output::ring::MAX_INDEX,
    accepting = sym crate::output::buffers::ACCEPTING,
    table = sym crate::output::tpmap::TABLE,
    meta = const crate::tracing::args::fast::META,
    leb = const crate::tracing::args::fast::LEB,
    need_enter = const crate::tracing::args::fast::NEED_ENTER,
    need_leave = const crate::tracing::args::fast::NEED_LEAVE,
    args = const crate::tracing::args::fast::ARGS,
    strings = const crate::tracing::args::fast::STRINGS,
    str_most = const crate::tracing::args::fast::STR_MOST,
    str_tag = const clrprof_format::values::STR,
    null_tag = const clrprof_format::values::NULL,
    enter_on = const crate::tracing::args::fast::ENTER,
    leave_on = const crate::tracing::args::fast::LEAVE,
    ret = const crate::tracing::args::fast::RET,
    tag_other = const clrprof_format::compact::TAG_OTHER,
    enter = sym crate::tracing::args::fast_enter,
    leave = sym crate::tracing::args::fast_leave,
    tailcall = sym crate::tracing::args::fast_tailcall,
);

// Benchmark probes (`CLRPROF_TRACE_PROBE`): hooks that record nothing, to measure what
// the JIT's hook calls cost by themselves (`noop`) and with one TSC read each (`clock`).
global_asm!(
    ".text",
    ".p2align 4",
    ".globl clrprof_elt_probe_noop",
    ".type clrprof_elt_probe_noop,@function",
    "clrprof_elt_probe_noop:",
    ".cfi_startproc",
    "ret",
    ".cfi_endproc",
    ".size clrprof_elt_probe_noop, .-clrprof_elt_probe_noop",
    ".p2align 4",
    ".globl clrprof_elt_probe_clock",
    ".type clrprof_elt_probe_clock,@function",
    "clrprof_elt_probe_clock:",
    ".cfi_startproc",
    // RDX is live in all three conventions (an argument or half the return value).
    "mov r10, rdx",
    "mov r11, rax",
    "rdtsc",
    "mov rdx, r10",
    "mov rax, r11",
    "ret",
    ".cfi_endproc",
    ".size clrprof_elt_probe_clock, .-clrprof_elt_probe_clock",
);

unsafe extern "C" {
    /// Probe: returns at once.
    pub fn clrprof_elt_probe_noop();
    /// Probe: reads the TSC, keeps every register but R10, R11 and the flags.
    pub fn clrprof_elt_probe_clock();
    /// Enter fast path (JIT convention: id in R14, caller SP in R15).
    pub fn clrprof_elt_enter();
    /// Leave fast path (id in RDI, caller SP in RSI; keeps RAX, RDX, XMM0, XMM1).
    pub fn clrprof_elt_leave();
    /// Tailcall fast path (as leave).
    pub fn clrprof_elt_tailcall();
    /// Enter slow path: saves every argument register and calls `hooks::on_enter`.
    pub fn clrprof_elt_enter_slow();
    /// Leave slow path: saves the return registers and calls `hooks::on_leave`.
    pub fn clrprof_elt_leave_slow();
    /// Tailcall slow path (as leave).
    pub fn clrprof_elt_tailcall_slow();
    /// IL probe at entry (C ABI: index, frame address): the ELT fast path's recording.
    pub fn clrprof_probe_enter(index: u64, frame: usize);
    /// IL probe at every exit (as `clrprof_probe_enter`, a Leave event).
    pub fn clrprof_probe_leave(index: u64, frame: usize);
    /// `--args` enter (JIT convention): an index goes to `clrprof_elt_enter`, an
    /// `ArgsFn` address to `args::fast_enter` with the saved argument registers.
    pub fn clrprof_args_enter();
    /// `--args` leave: as `clrprof_elt_leave`, or `args::fast_leave` with the return
    /// registers.
    pub fn clrprof_args_leave();
    /// `--args` tail call (as the leave).
    pub fn clrprof_args_tailcall();
    /// `clrprof_args_enter` over the enter slow path (no invariant TSC).
    pub fn clrprof_args_enter_notsc();
    /// `clrprof_args_leave` over the leave slow path.
    pub fn clrprof_args_leave_notsc();
    /// `clrprof_args_tailcall` over the tail-call slow path.
    pub fn clrprof_args_tailcall_notsc();
    /// `--counts` enter fast path (JIT convention, as `clrprof_elt_enter`).
    pub fn clrprof_count_enter();
    /// `--counts` leave fast path (as `clrprof_elt_leave`).
    pub fn clrprof_count_leave();
    /// `--counts` tailcall fast path (closes the frame like a leave).
    pub fn clrprof_count_tailcall();
}
