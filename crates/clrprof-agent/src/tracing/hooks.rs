//! The Rust half of the ELT trampolines (`x64.rs`): the slow path they call with
//! (FunctionIDOrClientID, caller SP) when the assembly cannot record the event itself.

use crate::output::buffers;

/// Kinds of ELT events: the trace format's own (a ring unit's tag says which).
pub use clrprof_format::EltKind;

/// The slow paths (a thread's first event, a full ring…): rare, so they can afford to
/// catch a panic rather than let it abort the target.
fn slow(kind: EltKind, id: usize, caller_sp: usize) {
    let _ = std::panic::catch_unwind(|| buffers::emit_elt(kind, id as u64, caller_sp as u64));
}

pub extern "C" fn on_enter(id: usize, caller_sp: usize) {
    slow(EltKind::Enter, id, caller_sp);
}

pub extern "C" fn on_leave(id: usize, caller_sp: usize) {
    slow(EltKind::Leave, id, caller_sp);
}

pub extern "C" fn on_tailcall(id: usize, caller_sp: usize) {
    slow(EltKind::Tailcall, id, caller_sp);
}
