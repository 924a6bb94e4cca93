//! The Garbage collections section: totals and pauses, then one row per GC.

use std::fmt::Write;

use super::units::{bytes, ns};
use crate::gc::Gc;
use crate::report::GcSummary;

/// `pauses_recorded`: whether the trace has the runtime suspensions that give the pauses.
/// Without them the rows say little the totals do not, so only `all` lists them.
pub fn render(
    o: &mut String,
    gcs: &[Gc],
    s: &GcSummary,
    pauses_recorded: bool,
    top: usize,
    all: bool,
) {
    if gcs.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nGarbage collections");
    let pauses = if pauses_recorded {
        format!(
            "pauses total {}, max {}",
            ns(s.total_pause_ns),
            ns(s.max_pause_ns)
        )
    } else {
        "pauses not recorded (add the `suspends` event group)".to_string()
    };
    let _ = writeln!(
        o,
        "  {} GCs (gen0 {}, gen1 {}, gen2 {}; {} induced); {pauses}",
        s.count, s.by_generation[0], s.by_generation[1], s.by_generation[2], s.induced
    );
    if !pauses_recorded && !all {
        let _ = writeln!(o, "  (each GC's heap sizes: `report --all`)");
        return;
    }
    let _ = writeln!(
        o,
        "  {:>4} {:>4} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "#", "gen", "reason", "pause", "gen0", "gen2", "loh"
    );
    for g in gcs.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>4} {:>4} {:>8} {:>10} {:>10} {:>10} {:>10}",
            g.index,
            g.generation,
            g.reason,
            if pauses_recorded {
                ns(g.pause_ns)
            } else {
                "-".to_string()
            },
            bytes(g.heap_after.gen0),
            bytes(g.heap_after.gen2),
            bytes(g.heap_after.loh)
        );
    }
    if gcs.len() > top {
        let _ = writeln!(o, "  … {} more", gcs.len() - top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::HeapSizes;

    fn gcs() -> Vec<Gc> {
        let gc = |index, generation, reason, pause_ns, gen0| Gc {
            index,
            generation,
            generations: vec![generation],
            reason,
            start_ns: 0,
            duration_ns: 0,
            pause_ns,
            heap_after: HeapSizes {
                gen0,
                gen2: 20_480,
                ..Default::default()
            },
        };
        vec![
            gc(0, 0, "other", 1_500, 100),
            gc(1, 2, "induced", 20_000, 0),
        ]
    }

    #[test]
    fn totals_and_rows() {
        let gcs = gcs();
        let s = GcSummary::of(&gcs);
        let mut o = String::new();
        render(&mut o, &gcs, &s, true, 1, false);
        assert_eq!(
            o,
            "\nGarbage collections\n\
             \x20 2 GCs (gen0 1, gen1 0, gen2 1; 1 induced); pauses total 21.5 µs, max 20.0 µs\n\
             \x20    #  gen   reason      pause       gen0       gen2        loh\n\
             \x20    0    0    other    1500 ns      100 B   20.0 KiB        0 B\n\
             \x20 … 1 more\n"
        );
    }

    #[test]
    fn no_pauses_without_suspensions() {
        let gcs = gcs();
        let mut o = String::new();
        render(&mut o, &[], &GcSummary::default(), true, 10, false);
        assert_eq!(o, "");
        render(&mut o, &gcs, &GcSummary::of(&gcs), false, 10, false);
        assert_eq!(
            o.lines().collect::<Vec<_>>()[2..],
            [
                "  2 GCs (gen0 1, gen1 0, gen2 1; 1 induced); pauses not recorded (add the \
                 `suspends` event group)",
                "  (each GC's heap sizes: `report --all`)"
            ]
        );
        o.clear();
        render(&mut o, &gcs, &GcSummary::of(&gcs), false, 10, true);
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(
            lines[2],
            "  2 GCs (gen0 1, gen1 0, gen2 1; 1 induced); pauses not recorded (add the `suspends` \
             event group)"
        );
        assert_eq!(
            lines[5],
            "     1    2  induced          -        0 B   20.0 KiB        0 B"
        );
    }
}
