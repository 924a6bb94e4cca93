//! The text of `clrprof diff` of two `--alloc` traces.

use std::fmt::Write;

use super::units::bytes;
use crate::diff::alloc::AllocDiff;

fn signed(v: i64) -> String {
    let s = bytes(v.unsigned_abs());
    if v < 0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

fn percent(before: u64, after: u64) -> String {
    if before == 0 {
        "new".to_string()
    } else {
        format!(
            "{:+.0} %",
            100.0 * (after as f64 - before as f64) / before as f64
        )
    }
}

/// The text of `clrprof diff` for allocations.
pub fn render(d: &AllocDiff, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "allocations diff (estimates from {} and {} samples): ~{} → ~{} ({}, {})",
        d.samples_before,
        d.samples_after,
        bytes(d.bytes_before),
        bytes(d.bytes_after),
        signed(d.bytes_delta),
        percent(d.bytes_before, d.bytes_after)
    );
    for (title, what, list) in [
        ("by type", "type", &d.types),
        (
            "by the app's own methods (self: with the framework code they call)",
            "method",
            &d.app_functions,
        ),
    ] {
        let _ = writeln!(o, "  {title}:");
        let _ = writeln!(
            o,
            "  {:>13} {:>7} {:>12} {:>12}  {what}",
            "change", "", "before", "after"
        );
        for r in list.iter().take(top) {
            let _ = writeln!(
                o,
                "  {:>13} {:>7} {:>12} {:>12}  {}",
                signed(r.bytes_delta),
                percent(r.bytes_before, r.bytes_after),
                bytes(r.bytes_before),
                bytes(r.bytes_after),
                r.name
            );
        }
    }
    o
}
