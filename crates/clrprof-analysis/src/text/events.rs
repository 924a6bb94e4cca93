//! The Events section: the counts a reader cares about, those not zero.

use std::fmt::Write;

use crate::report::EventCounts;

pub fn render(o: &mut String, e: &EventCounts) {
    let _ = writeln!(o, "\nEvents");
    let rows: [(&str, u64); 14] = [
        ("threads created", e.threads_created),
        ("threads destroyed", e.threads_destroyed),
        ("app domains", e.app_domains_created),
        ("assemblies loaded", e.assemblies_loaded),
        ("modules loaded", e.modules_loaded),
        ("classes loaded", e.classes_loaded),
        ("JIT compilations", e.jit_compilations),
        ("precompiled (R2R) hits", e.jit_cache_hits),
        ("exceptions thrown", e.exceptions_thrown),
        ("exceptions caught", e.exception_catches),
        ("runtime suspensions", e.runtime_suspensions),
        ("garbage collections", e.gcs),
        ("allocation reports", e.allocation_reports),
        ("transitions", e.transitions),
    ];
    for (label, v) in rows {
        if v > 0 {
            let _ = writeln!(o, "  {label:<24}{v:>10}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_not_zero() {
        let e = EventCounts {
            threads_created: 3,
            jit_cache_hits: 12345,
            // Not shown.
            thread_renames: 9,
            ..Default::default()
        };
        let mut o = String::new();
        render(&mut o, &e);
        assert_eq!(
            o,
            "\nEvents\n  threads created                  3\n  precompiled (R2R) hits       12345\n"
        );
    }
}
