//! The human-readable report: short sections, biggest first, numbers with units.

use std::fmt::Write;

use crate::calltree::TreeNode;
use crate::report::{Functions, Report};

/// Formats nanoseconds with a unit a person reads at a glance.
pub fn ns(v: u64) -> String {
    match v {
        0..=9_999 => format!("{v} ns"),
        10_000..=9_999_999 => format!("{:.1} µs", v as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1} ms", v as f64 / 1e6),
        _ => format!("{:.2} s", v as f64 / 1e9),
    }
}

/// Formats a byte count.
pub fn bytes(v: u64) -> String {
    match v {
        0..=9_999 => format!("{v} B"),
        10_000..=9_999_999 => format!("{:.1} KiB", v as f64 / 1024.0),
        10_000_000..=9_999_999_999 => format!("{:.1} MiB", v as f64 / 1048576.0),
        _ => format!("{:.2} GiB", v as f64 / 1073741824.0),
    }
}

/// Renders the report as text; `top` bounds every list.
pub fn render(r: &Report, top: usize) -> String {
    let mut o = String::new();
    let t = &r.trace;
    let _ = writeln!(
        o,
        "clrprof report — pid {} ({} mode{})",
        t.pid,
        t.mode,
        if t.attached { ", attached" } else { "" }
    );
    let _ = writeln!(o, "  command:  {}", t.command_line.join(" "));
    let _ = writeln!(
        o,
        "  runtime:  {}",
        t.runtime_version.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(o, "  duration: {}", ns(t.duration_ns));
    if r.lost_events > 0 {
        let why: Vec<String> = r
            .lost_by_reason
            .iter()
            .map(|(reason, n)| {
                let text = match reason.as_str() {
                    "buffer_full" => "a thread's buffer was full (--on-full drop)".to_string(),
                    "write_failed" => match r.write_failures.first() {
                        Some(w) => format!("the trace file refused writes: {}", w.error),
                        None => "the trace file refused writes".to_string(),
                    },
                    "stopping" => "they arrived while the recording was stopping".to_string(),
                    _ => "reason not recorded".to_string(),
                };
                format!("{n} because {text}")
            })
            .collect();
        let _ = writeln!(
            o,
            "  LOST:     {} events could not be recorded: {}",
            r.lost_events,
            why.join("; ")
        );
    }
    if let Some(s) = &r.sampler
        && (s.truncated_stacks > 0 || s.missed_ticks > 0 || s.signal_timeouts > 0)
    {
        let _ = writeln!(
            o,
            "  sampler:  {} ticks, {} missed (the sampler fell behind), {} threads did not answer in time, \
             {} stacks truncated at {} frames (--max-depth)",
            s.ticks, s.missed_ticks, s.signal_timeouts, s.truncated_stacks, s.max_depth
        );
    }
    for w in &r.warnings {
        let _ = writeln!(o, "  warning:  {w}");
    }

    let e = &r.events;
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

    if !r.exceptions.is_empty() {
        let _ = writeln!(o, "\nExceptions (by type)");
        let mut v: Vec<(&String, &u64)> = r.exceptions.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (ty, n) in v.into_iter().take(top) {
            let _ = writeln!(o, "  {n:>8}  {ty}");
            if let Some(msgs) = r.exception_messages.get(ty) {
                let mut m: Vec<(&String, &u64)> = msgs.iter().collect();
                m.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
                for (msg, k) in m.into_iter().take(3).filter(|(m, _)| !m.is_empty()) {
                    let _ = writeln!(o, "            {k:>6} × \"{}\"", truncate(msg, 80));
                }
            }
        }
    }

    if !r.gcs.is_empty() {
        let s = &r.gc_summary;
        let _ = writeln!(o, "\nGarbage collections");
        let pauses = if r.events.runtime_suspensions == 0 {
            "pauses not recorded (add the `suspends` event group)".to_string()
        } else {
            format!(
                "pauses total {}, max {}",
                ns(s.total_pause_ns),
                ns(s.max_pause_ns)
            )
        };
        let _ = writeln!(
            o,
            "  {} GCs (gen0 {}, gen1 {}, gen2 {}; {} induced); {pauses}",
            s.count, s.by_generation[0], s.by_generation[1], s.by_generation[2], s.induced
        );
        let _ = writeln!(
            o,
            "  {:>4} {:>4} {:>8} {:>10} {:>10} {:>10} {:>10}",
            "#", "gen", "reason", "pause", "gen0", "gen2", "loh"
        );
        let recorded = r.events.runtime_suspensions > 0;
        for g in r.gcs.iter().take(top) {
            let _ = writeln!(
                o,
                "  {:>4} {:>4} {:>8} {:>10} {:>10} {:>10} {:>10}",
                g.index,
                g.generation,
                g.reason,
                if recorded {
                    ns(g.pause_ns)
                } else {
                    "-".to_string()
                },
                bytes(g.heap_after.gen0),
                bytes(g.heap_after.gen2),
                bytes(g.heap_after.loh)
            );
        }
        if r.gcs.len() > top {
            let _ = writeln!(o, "  … {} more", r.gcs.len() - top);
        }
    }

    if !r.threads.is_empty() {
        let _ = writeln!(o, "\nThreads");
        let _ = writeln!(o, "  {:>8}  {:<32} {:>10}", "os tid", "name", "lifetime");
        for th in r.threads.iter().take(top.max(16)) {
            let life = match (th.created_ns, th.destroyed_ns) {
                (Some(a), Some(b)) => ns(b.saturating_sub(a)),
                _ => "-".into(),
            };
            let tid = th
                .os_tid
                .map(|t| t.to_string())
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                o,
                "  {tid:>8}  {:<32} {life:>10}",
                th.name.as_deref().unwrap_or("(unnamed)")
            );
        }
    }

    if r.jit.compilations > 0 {
        let _ = writeln!(
            o,
            "\nJIT: {} compilations, {} compiling",
            r.jit.compilations,
            ns(r.jit.total_ns)
        );
        for j in r.jit.slowest.iter().take(top.min(10)) {
            let _ = writeln!(o, "  {:>10}  {}", ns(j.ns), truncate(&j.name, 100));
        }
    }

    if !r.allocations.is_empty() {
        let _ = writeln!(o, "\nAllocations (objects, by class)");
        for a in r.allocations.iter().take(top) {
            let _ = writeln!(o, "  {:>10}  {}", a.count, a.class);
        }
    }

    if let Some(st) = &r.samples {
        let _ = writeln!(
            o,
            "\nSamples: {} ({:.1} Hz achieved{}; {} on CPU, {} CPU)",
            st.total,
            st.rate_hz,
            st.requested_rate_hz
                .map(|r| format!(", {r} Hz asked"))
                .unwrap_or_default(),
            st.on_cpu,
            ns(st.cpu_ns)
        );
        if let Some(Functions::Sampled(fs)) = &r.functions {
            let total = st.total.max(1) as f64;
            let _ = writeln!(
                o,
                "  {:>7} {:>7} {:>7} {:>7} {:>10}  function",
                "self", "self%", "total", "total%", "self cpu"
            );
            for f in fs.iter().take(top) {
                let _ = writeln!(
                    o,
                    "  {:>7} {:>6.1}% {:>7} {:>6.1}% {:>10}  {}",
                    f.self_samples,
                    100.0 * f.self_samples as f64 / total,
                    f.total_samples,
                    100.0 * f.total_samples as f64 / total,
                    ns(f.self_cpu_ns),
                    truncate(&f.name, 90)
                );
            }
        }
        let _ = writeln!(o, "  per thread:");
        for t in st.threads.iter().take(top.max(16)) {
            let _ = writeln!(
                o,
                "  {:>8}  {:<28} {:>7} samples {:>7} on CPU {:>10}",
                t.os_tid,
                t.name.as_deref().unwrap_or("(unnamed)"),
                t.samples,
                t.on_cpu,
                ns(t.cpu_ns)
            );
        }
    }

    if let Some(Functions::Traced(fs)) = &r.functions {
        if let Some(ts) = &r.trace_stats {
            let _ = writeln!(
                o,
                "\nCalls: {} ({} frames closed by exceptions, {} unmatched leaves, {} open at the end)",
                ts.calls, ts.unwound_frames, ts.unmatched_leaves, ts.open_at_end
            );
        }
        let _ = writeln!(
            o,
            "  {:>10} {:>11} {:>11}  function (top by self time)",
            "calls", "inclusive", "self"
        );
        for f in fs.iter().take(top) {
            let _ = writeln!(
                o,
                "  {:>10} {:>11} {:>11}  {}",
                f.calls,
                ns(f.inclusive_ns),
                ns(f.self_ns),
                truncate(&f.name, 90)
            );
        }
    }
    if let Some(tree) = &r.call_tree {
        let _ = writeln!(o, "\nCall tree (all threads; inclusive, calls)");
        for c in &tree.children {
            tree_lines(&mut o, c, "  ", top);
        }
    }

    if !r.modules.is_empty() {
        let _ = writeln!(o, "\nModules ({})", r.modules.len());
        for m in r.modules.iter().take(top) {
            let _ = writeln!(o, "  {}", m.path);
        }
        if r.modules.len() > top {
            let _ = writeln!(o, "  … {} more", r.modules.len() - top);
        }
    }
    o
}

fn tree_lines(o: &mut String, n: &TreeNode, indent: &str, top: usize) {
    let _ = writeln!(
        o,
        "{indent}{} {}  ×{}",
        truncate(&n.name, 80),
        ns(n.inclusive_ns),
        n.calls
    );
    let child_indent = format!("{indent}  ");
    for c in n.children.iter().take(top) {
        tree_lines(o, c, &child_indent, top);
    }
    if n.children.len() > top {
        let _ = writeln!(o, "{child_indent}… {} more", n.children.len() - top);
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ns(950), "950 ns");
        assert_eq!(ns(12_345), "12.3 µs");
        assert_eq!(ns(25_000_000), "25.0 ms");
        assert_eq!(ns(12_000_000_000), "12.00 s");
        assert_eq!(bytes(20_480), "20.0 KiB");
    }
}
