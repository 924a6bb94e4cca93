//! `--counts`: the Rust half of the counting hooks (`x64.rs`'s `clrprof_count_*`): each
//! call updates the thread's call-count table (`output/counts.rs`); nothing is written per
//! call.

use crate::output::buffers;

// The hooks' FunctionIDs are the mapper's indices (`install.rs`; the session refuses
// --counts with --args, whose client ids are pointers), at most `ring::MAX_INDEX`, a
// `u32`: they fit the 32-bit halves of an edge key, so `id as u32` below loses nothing
// and the assembly fast path does not check.

pub extern "C" fn on_enter(id: usize, caller_sp: usize) {
    let _ = std::panic::catch_unwind(|| {
        buffers::with_counts(|t| t.enter(id as u32, caller_sp as u64));
    });
}

pub extern "C" fn on_leave(id: usize, caller_sp: usize) {
    let _ = std::panic::catch_unwind(|| {
        buffers::with_counts(|t| t.leave(id as u32, caller_sp as u64));
    });
}
