//! The Allocations (sampled) section (`record --alloc`): estimated bytes and objects by
//! type and by function, and the live heap at the end.

use std::fmt::Write;

use super::units::bytes;
use crate::report::AllocationSamples;

pub fn render(o: &mut String, a: Option<&AllocationSamples>, top: usize) {
    let Some(a) = a else {
        return;
    };
    let _ = writeln!(
        o,
        "\nAllocations (sampled: estimates from {} {} samples, about one per {})",
        a.samples,
        a.source,
        bytes(a.interval_bytes)
    );
    let _ = writeln!(
        o,
        "  ~{} in ~{} objects",
        bytes(a.estimated_bytes),
        a.estimated_objects
    );
    let _ = writeln!(o, "  by type:");
    for t in a.types.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>12}  {:>10} obj  {}",
            bytes(t.bytes),
            t.objects,
            t.name
        );
    }
    let _ = writeln!(o, "  by function (self / total):");
    for f in a.functions.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>12}  {:>12}  {}",
            bytes(f.self_bytes),
            bytes(f.total_bytes),
            f.name
        );
    }
    let l = &a.live;
    let _ = writeln!(
        o,
        "  live at the last GC: ~{} in ~{} objects ({} followed samples{})",
        bytes(l.bytes),
        l.objects,
        l.samples,
        if l.untracked > 0 {
            format!(
                "; {} samples not followed, over the bound of {}",
                l.untracked, l.tracked_max
            )
        } else {
            String::new()
        }
    );
    for t in l.types.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>12}  {:>10} obj  {}",
            bytes(t.bytes),
            t.objects,
            t.name
        );
    }
}
