//! Tracing mode: ELT3 fast-path hooks. The JIT calls the hooks in `x64.rs` on every
//! entry, return and tail call of every hooked method. Their assembly fast path records
//! the event itself (a table lookup by thread pointer, a TSC read, one 8-byte store: no
//! call, lock, allocation or syscall); their slow path calls the `on_*` functions of
//! `hooks.rs`. The ring and the thread-pointer table they write belong to `output`.
//!
//! Functions get compact indices from the FunctionIDMapper2 callback, which also applies
//! the include/exclude filters: a filtered-out function is never hooked at all. The
//! shadow stack is rebuilt out of process from the event stream; every event carries the
//! caller's SP, which identifies the frame, so frames that an exception unwound without a
//! Leave are recognised and closed (see clrprof-analysis `calltree`).
//!
//! The files: `install` (the FunctionIDMapper and the hooks' installation), `filter`
//! (include/exclude patterns), `x64` (the assembly trampolines), `hooks` (their Rust
//! half: the slow path), `counts` (`--counts`: the Rust half of the counting hooks,
//! which update the thread's call-count table instead of recording), `args` (`--args`: the
//! Rust half of trampolines that read argument and return values from the registers, and
//! with `CLRPROF_ARGS_FAST=0` the runtime's slow-path hooks that read them instead)
//! and `arg_slots` (where those values lie, learned from the runtime's first answers or
//! placed by the SysV rules). After attach, where the runtime refuses ELT hooks, `probes`
//! records the same events from IL probes installed through ReJIT.

mod arg_slots;
pub(crate) mod args;
pub(crate) mod counts;
mod filter;
mod hooks;
mod install;
pub(crate) mod probes;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(crate) mod x64;

pub(crate) use filter::Filter;
pub(crate) use hooks::EltKind;
pub(crate) use install::install;

/// At a session's start: no probed body of an earlier session is handed out again.
/// (`args::STATE` and `install::MAPPER` are not reset: they exist only in a recording
/// started with the process, whose ELT hooks the runtime never lets go, so no later
/// session follows one in this process; an attach refuses `--args` and `--counts`.)
pub fn reset_for_session() {
    probes::release_at_detach();
}

/// Between sessions: the probed bodies go.
pub fn release_at_detach() {
    probes::release_at_detach();
}
