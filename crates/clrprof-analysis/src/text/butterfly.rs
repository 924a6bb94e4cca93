//! The butterfly of `report --function`: each matching function between its callers
//! (above) and its callees (below).

use std::fmt::Write;

use super::units::{ns, truncate};
use crate::butterfly::{Butterfly, Edge, Figures};

fn figures(f: &Figures) -> String {
    match (f.calls, f.samples) {
        (Some(calls), _) => format!(
            "{:>10} calls {:>10}",
            calls,
            f.time_ns.map(ns).unwrap_or_default()
        ),
        (None, Some(samples)) => format!(
            "{:>7} samples {:>10} cpu",
            samples,
            ns(f.cpu_ns.unwrap_or(0))
        ),
        (None, None) => String::new(),
    }
}

pub fn render(o: &mut String, b: &Butterfly, top: usize) {
    if b.functions.is_empty() {
        let _ = writeln!(
            o,
            "No function matches `{}` in the {} looked at.",
            b.pattern, b.source
        );
        return;
    }
    for f in &b.functions {
        let _ = writeln!(o, "\ncallers:");
        for e in f.callers.iter().take(top) {
            let _ = writeln!(
                o,
                "  {}  {}{}",
                figures(&e.figures),
                truncate(&e.name, 90),
                site(e)
            );
        }
        more(o, f.callers.len(), top);
        let own = match (f.figures.self_ns, f.figures.self_samples) {
            (Some(self_ns), _) => format!("{}  (self {})", figures(&f.figures), ns(self_ns)),
            (None, Some(n)) => format!(
                "{}  (self: {n} samples, {} cpu)",
                figures(&f.figures),
                ns(f.figures.self_cpu_ns.unwrap_or(0))
            ),
            _ => figures(&f.figures),
        };
        let _ = writeln!(o, "▶ {}\n  {own}", f.name);
        let _ = writeln!(o, "callees:");
        for e in f.callees.iter().take(top) {
            let _ = writeln!(
                o,
                "  {}  {}{}",
                figures(&e.figures),
                truncate(&e.name, 90),
                site(e)
            );
        }
        more(o, f.callees.len(), top);
    }
}

/// ` (at File.cs:42)`: where the call is made, when known.
fn site(e: &Edge) -> String {
    e.call_site
        .as_ref()
        .map(|c| format!("  (at {c})"))
        .unwrap_or_default()
}

fn more(o: &mut String, n: usize, top: usize) {
    if n == 0 {
        let _ = writeln!(o, "  (none)");
    } else if n > top {
        let _ = writeln!(o, "  … {} more (--top)", n - top);
    }
}
