//! The heap report as text (a diff of two: `heap_diff`).

use std::fmt::Write;

use super::units::mb;
use crate::heap::report::HeapReport;

pub fn render(r: &HeapReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "heap snapshot {}: {} objects, {}, {} references; target paused {:.1} ms{}{}",
        r.snapshot,
        r.objects,
        mb(r.bytes),
        r.references,
        r.pause_ms,
        if r.lost > 0 {
            format!("; {} objects or roots LOST", r.lost)
        } else {
            String::new()
        },
        if r.complete { "" } else { " (INCOMPLETE)" }
    );
    let g = &r.generations;
    let _ = writeln!(
        o,
        "generations: gen0 {}, gen1 {}, gen2 {}, LOH {}, POH {}, non-GC {}, other {}",
        mb(g.gen0),
        mb(g.gen1),
        mb(g.gen2),
        mb(g.loh),
        mb(g.poh),
        mb(g.nongc),
        mb(g.other)
    );
    match &r.nongc_missing {
        Some(why) => {
            let _ = writeln!(o, "non-GC heap: not in this snapshot ({why})");
        }
        None => {
            let _ = writeln!(
                o,
                "non-GC heap: {} objects, {} (string literals and other objects the runtime never collects; root `non-GC heap`)",
                r.nongc_objects,
                mb(r.nongc_bytes)
            );
        }
    }
    if r.dangling > 0 {
        let _ = writeln!(
            o,
            "{} references to objects the snapshot does not hold (dropped)",
            r.dangling
        );
    }
    let _ = writeln!(o, "\ntypes (by retained bytes):");
    let _ = writeln!(
        o,
        "  {:>10} {:>14} {:>14}  type",
        "count", "shallow", "retained"
    );
    for t in &r.types {
        let _ = writeln!(
            o,
            "  {:>10} {:>14} {:>14}  {}",
            t.count, t.shallow_bytes, t.retained_bytes, t.name
        );
    }
    let _ = writeln!(o, "\nroots (by retained bytes):");
    for g in &r.roots {
        let _ = writeln!(
            o,
            "  {:>14}  {:<13} {} ({} objects)",
            g.retained_bytes, g.kind, g.name, g.objects
        );
    }
    if !r.roots_by_reachable.is_empty() {
        let _ = writeln!(
            o,
            "\nroots (by reachable bytes: what each reaches, shared with other roots or not):"
        );
        for g in &r.roots_by_reachable {
            let _ = writeln!(
                o,
                "  {:>14}  {:<13} {} (retains {})",
                g.reachable_bytes.unwrap_or(0),
                g.kind,
                g.name,
                g.retained_bytes
            );
        }
        if r.roots_sharing > 0 {
            let _ = writeln!(
                o,
                "  {} roots share objects with others: what several roots reach is retained by none of them",
                r.roots_sharing
            );
        }
    }
    let _ = writeln!(o, "\ntop retainers (dominator tree):");
    for d in &r.dominators {
        let _ = writeln!(o, "  {:>14}  {}", d.retained_bytes, d.name);
        for c in &d.children {
            let _ = writeln!(o, "  {:>14}    └ {}", c.retained_bytes, c.name);
        }
    }
    if let Some(paths) = &r.paths {
        let _ = writeln!(o, "\npaths from roots:");
        if paths.is_empty() {
            let _ = writeln!(o, "  (no reachable object of that type)");
        }
        for p in paths {
            let mut line = format!("[{} {}]", p.root.kind, p.root.name);
            for e in &p.edges {
                let _ = write!(
                    line,
                    " → {}.{}{}",
                    e.type_name,
                    e.field,
                    if e.repeated { " (repeated)" } else { "" }
                );
            }
            let _ = writeln!(o, "  {:>8}× {line} → {}", p.count, p.target);
        }
    }
    if let Some(statics) = &r.statics {
        let _ = writeln!(o, "\nstatic fields:");
        for s in statics {
            let thread = if s.thread != 0 {
                format!(" [thread {:#x}]", s.thread)
            } else {
                String::new()
            };
            let nongc = if s.nongc { ", non-GC heap" } else { "" };
            let what = match (&s.type_name, s.retained_bytes) {
                (Some(t), Some(r)) if !s.value.is_empty() => {
                    format!("{t} {:?} (retains {r} bytes{nongc})", s.value)
                }
                (Some(t), Some(r)) => format!("{t} (retains {r} bytes{nongc})"),
                _ if !s.value.is_empty() => s.value.clone(),
                _ => "null".into(),
            };
            let _ = writeln!(o, "  {}.{}{thread} = {what}", s.class, s.field);
        }
    }
    o
}
