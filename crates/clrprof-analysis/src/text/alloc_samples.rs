//! The Allocations (sampled) section (`record --alloc`): estimated bytes and objects by
//! type, by the app's own methods and by function, and the live heap at the end.

use std::fmt::Write;

use super::units::{bytes, truncate};
use crate::report::{AllocationSamples, FunctionBytes, LineBytes, Outside};

/// `--alloc` was asked for and could not start: says why there are no samples.
pub fn render_unavailable(o: &mut String, why: Option<&str>) {
    if let Some(why) = why {
        let _ = writeln!(
            o,
            "\nAllocations (sampled): none, --alloc could not start: {why}"
        );
    }
}

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
    app_table(
        o,
        "by the app's own methods (with the framework and runtime code they call)",
        &a.app_functions,
        Some(&a.outside_app),
        a.estimated_bytes,
        top,
    );
    let _ = writeln!(o, "  by function (self / total bytes, total objects):");
    for f in a.functions.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>12}  {:>12}  {:>10} obj  {}",
            bytes(f.self_bytes),
            bytes(f.total_bytes),
            f.total_objects,
            f.name
        );
    }
    line_table(o, &a.lines, a.estimated_bytes, top);
    if let Some(p) = &a.positions_mapped_later {
        for (n, why) in [
            (p.queue_full, "queue full"),
            (p.left_at_end, "queued after the last mapping round"),
        ] {
            if n > 0 {
                let _ = writeln!(o, "  {n} allocation samples without lines ({why})");
            }
        }
    }
    let l = &a.live;
    if l.tracked_max == 0 {
        let _ = writeln!(
            o,
            "  live heap: not followed with {} (docs/allocations.md)",
            a.source
        );
        return;
    }
    let _ = writeln!(
        o,
        "  not collected by the end: ~{} in ~{} objects ({} followed samples{})",
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
    // What the GCs know of it: live as of the last GC that looked at each object, and
    // what no GC has looked at yet (a young heap between GCs is mostly that).
    let seen: u64 = l.examined_bytes.iter().sum();
    if seen + l.unexamined_bytes > 0 {
        let [g0, g1, g2] = l.examined_bytes;
        let _ = writeln!(
            o,
            "    ~{} live as of the last GC that examined it (~{} as of gen0 GCs, ~{} gen1, ~{} gen2)",
            bytes(seen),
            bytes(g0),
            bytes(g1),
            bytes(g2)
        );
        let _ = writeln!(
            o,
            "    ~{} in ~{} objects allocated since the last GC of their generation, not yet examined",
            bytes(l.unexamined_bytes),
            l.unexamined_objects
        );
    }
    if let Some(line) = over_time(&l.over_time) {
        let _ = writeln!(o, "{line}");
    }
    for t in l.types.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>12}  {:>10} obj  {}",
            bytes(t.bytes),
            t.objects,
            t.name
        );
    }
    app_table(
        o,
        "live, by the app's own methods that allocated it",
        &l.app_functions,
        None,
        l.bytes,
        top,
    );
}

/// The live estimate after the GCs that collected followed samples, at most eight of
/// them evenly spread, and its peak: whether the heap grows, at a glance.
fn over_time(points: &[(f64, u64)]) -> Option<String> {
    if points.len() < 2 {
        return None;
    }
    const SHOWN: usize = 8;
    let n = points.len();
    let mut at: Vec<usize> = (0..SHOWN.min(n))
        .map(|i| i * (n - 1) / (SHOWN.min(n) - 1))
        .collect();
    at.dedup();
    let series: Vec<String> = at
        .iter()
        .map(|&i| format!("{} {}", at_ms(points[i].0), bytes(points[i].1)))
        .collect();
    let peak = points.iter().max_by_key(|p| p.1)?;
    Some(format!(
        "  after {} GCs: {}; peak ~{} at {}",
        n,
        series.join(" · "),
        bytes(peak.1),
        at_ms(peak.0)
    ))
}

/// A time since the trace began, given in ms: ms under a second, else seconds.
fn at_ms(ms: f64) -> String {
    if ms < 1e3 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

/// By source line: each line of the app's code with the bytes the samples whose nearest
/// app frame is on it stand for (and of those with any frame on it), as
/// `File.cs:42 (Method)`.
fn line_table(o: &mut String, rows: &[LineBytes], all: u64, top: usize) {
    let rows: Vec<&LineBytes> = rows
        .iter()
        .filter(|l| l.self_samples > 0)
        .take(top)
        .collect();
    if rows.is_empty() {
        return;
    }
    let all = all.max(1) as f64;
    let _ = writeln!(
        o,
        "  by source line of the app's code (self: the nearest app frame's line; total: any frame's):"
    );
    let _ = writeln!(
        o,
        "  {:>12} {:>6} {:>12} {:>10}  line  (method)",
        "bytes", "bytes%", "total", "objects"
    );
    for l in rows {
        let name = l.file.rsplit(['/', '\\']).next().unwrap_or(&l.file);
        let _ = writeln!(
            o,
            "  {:>12} {:>5.1}% {:>12} {:>10}  {name}:{}  ({})",
            bytes(l.self_bytes),
            100.0 * l.self_bytes as f64 / all,
            bytes(l.total_bytes),
            l.self_objects,
            l.line,
            truncate(&l.function, 80)
        );
    }
}

/// The app's own methods, most self bytes first: each with the share of `all` bytes
/// that the samples whose nearest app frame it is stand for.
fn app_table(
    o: &mut String,
    title: &str,
    rows: &[FunctionBytes],
    outside: Option<&Outside>,
    all: u64,
    top: usize,
) {
    if rows.is_empty() {
        return;
    }
    let all = all.max(1) as f64;
    let _ = writeln!(o, "  {title}:");
    let _ = writeln!(
        o,
        "  {:>12} {:>6} {:>12} {:>6} {:>10}  method",
        "bytes", "bytes%", "total", "total%", "objects"
    );
    for f in rows.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>12} {:>5.1}% {:>12} {:>5.1}% {:>10}  {}",
            bytes(f.self_bytes),
            100.0 * f.self_bytes as f64 / all,
            bytes(f.total_bytes),
            100.0 * f.total_bytes as f64 / all,
            f.self_objects,
            truncate(&f.name, 90)
        );
    }
    if let Some(out) = outside.filter(|out| out.bytes > 0) {
        let _ = writeln!(
            o,
            "  {:>12} {:>5.1}%  in the runtime's and the framework's own code only (no app frame)",
            bytes(out.bytes),
            100.0 * out.bytes as f64 / all,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{LiveHeap, TypeBytes};

    fn section(tracked_max: u64, untracked: u64) -> AllocationSamples {
        AllocationSamples {
            source: "AllocationSampled".into(),
            samples: 2,
            runtime_samples: Some(2),
            interval_bytes: 102_400,
            estimated: true,
            estimated_bytes: 204_800,
            estimated_objects: 200,
            types: vec![TypeBytes {
                name: "System.Byte[]".into(),
                bytes: 204_800,
                objects: 200,
            }],
            app_functions: vec![FunctionBytes {
                name: "App.Run".into(),
                self_bytes: 102_400,
                total_bytes: 204_800,
                self_objects: 100,
                total_objects: 200,
            }],
            outside_app: Outside {
                bytes: 102_400,
                objects: 100,
            },
            functions: vec![FunctionBytes {
                name: "App.Make".into(),
                self_bytes: 204_800,
                total_bytes: 204_800,
                self_objects: 200,
                total_objects: 200,
            }],
            lines: vec![LineBytes {
                function: "App.Make".into(),
                file: "/src/App/Make.cs".into(),
                line: 42,
                self_bytes: 102_400,
                self_objects: 100,
                self_samples: 1,
                total_bytes: 204_800,
                total_objects: 200,
            }],
            positions_mapped_later: None,
            live: LiveHeap {
                bytes: 102_400,
                objects: 100,
                samples: 1,
                types: vec![TypeBytes {
                    name: "System.Byte[]".into(),
                    bytes: 102_400,
                    objects: 100,
                }],
                app_functions: vec![],
                functions: vec![],
                over_time: vec![(1.0, 102_400)],
                tracked_max,
                untracked,
                examined_bytes: [0, 0, 61_440],
                unexamined_bytes: 40_960,
                unexamined_objects: 40,
            },
        }
    }

    #[test]
    fn says_estimates_and_the_live_heap() {
        let mut o = String::new();
        render(&mut o, None, 5);
        assert_eq!(o, "");
        render(&mut o, Some(&section(4096, 3)), 5);
        let expected = [
            "",
            "Allocations (sampled: estimates from 2 AllocationSampled samples, about one per 100.0 KiB)",
            "  ~200.0 KiB in ~200 objects",
            "  by type:",
            "     200.0 KiB         200 obj  System.Byte[]",
            "  by the app's own methods (with the framework and runtime code they call):",
            "         bytes bytes%        total total%    objects  method",
            "     100.0 KiB  50.0%    200.0 KiB 100.0%        100  App.Run",
            "     100.0 KiB  50.0%  in the runtime's and the framework's own code only (no app frame)",
            "  by function (self / total bytes, total objects):",
            "     200.0 KiB     200.0 KiB         200 obj  App.Make",
            "  by source line of the app's code (self: the nearest app frame's line; total: any frame's):",
            "         bytes bytes%        total    objects  line  (method)",
            "     100.0 KiB  50.0%    200.0 KiB        100  Make.cs:42  (App.Make)",
            "  not collected by the end: ~100.0 KiB in ~100 objects (1 followed samples; 3 samples not followed, over the bound of 4096)",
            "    ~60.0 KiB live as of the last GC that examined it (~0 B as of gen0 GCs, ~0 B gen1, ~60.0 KiB gen2)",
            "    ~40.0 KiB in ~40 objects allocated since the last GC of their generation, not yet examined",
            "     100.0 KiB         100 obj  System.Byte[]",
            "",
        ]
        .join("\n");
        assert_eq!(o, expected);
    }

    #[test]
    fn the_live_heap_over_time_in_at_most_eight_points_and_its_peak() {
        assert_eq!(over_time(&[(5.0, 1)]), None);
        let points: Vec<(f64, u64)> = (0..20u32)
            .map(|i| {
                (
                    f64::from(i) * 100.0,
                    if i == 13 {
                        50 << 20
                    } else {
                        u64::from(i) << 20
                    },
                )
            })
            .collect();
        let line = over_time(&points).unwrap();
        assert_eq!(
            line,
            "  after 20 GCs: 0 ms 0 B · 200 ms 2048.0 KiB · 500 ms 5120.0 KiB · 800 ms 8192.0 KiB · \
             1.00 s 10.0 MiB · 1.30 s 50.0 MiB · 1.60 s 16.0 MiB · 1.90 s 19.0 MiB; peak ~50.0 MiB at 1.30 s"
        );
    }

    #[test]
    fn no_live_heap_where_it_is_not_followed() {
        let mut s = section(0, 0);
        s.source = "AllocationTick".into();
        let mut o = String::new();
        render(&mut o, Some(&s), 5);
        assert!(
            o.ends_with("  live heap: not followed with AllocationTick (docs/allocations.md)\n"),
            "{o}"
        );
    }

    #[test]
    fn samples_left_without_lines_are_said_only_when_there_are_some() {
        let mut s = section(0, 0);
        s.source = "AllocationTick".into();
        let stats = |queue_full, left_at_end| crate::allocs::PositionStats {
            queued: 90,
            mapped: 90,
            queue_full,
            left_at_end,
        };
        s.positions_mapped_later = Some(stats(0, 0));
        let mut quiet = String::new();
        render(&mut quiet, Some(&s), 5);
        assert!(!quiet.contains("without lines"), "{quiet}");
        s.positions_mapped_later = Some(stats(12, 0));
        let mut o = String::new();
        render(&mut o, Some(&s), 5);
        assert!(
            o.contains("\n  12 allocation samples without lines (queue full)\n"),
            "{o}"
        );
        assert!(!o.contains("last mapping round"), "{o}");
        s.positions_mapped_later = Some(stats(0, 2));
        let mut o = String::new();
        render(&mut o, Some(&s), 5);
        assert!(
            o.contains(
                "\n  2 allocation samples without lines (queued after the last mapping round)\n"
            ),
            "{o}"
        );
    }
}
