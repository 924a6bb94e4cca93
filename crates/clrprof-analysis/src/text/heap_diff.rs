//! `clrprof diff` of two heap snapshots: the change in objects and bytes, then the types
//! that changed most.

use std::fmt::Write;

use crate::diff::heap::HeapDiff;

pub fn render(d: &HeapDiff, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "heap diff: {:+} objects, {:+} bytes",
        d.objects_delta, d.bytes_delta
    );
    let _ = writeln!(
        o,
        "  {:>10} {:>10} {:>10} {:>14} {:>14}  type",
        "before", "after", "Δcount", "Δbytes", "Δretained"
    );
    for t in d.types.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>10} {:>10} {:>+10} {:>+14} {:>+14}  {}",
            t.count_before, t.count_after, t.count_delta, t.bytes_delta, t.retained_delta, t.name
        );
    }
    o
}
