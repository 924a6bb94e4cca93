//! The Waits section of `record --waits`: time blocked by kind, the locks with their
//! waiters and owners, the thread pool's starvation episodes.

use std::fmt::Write;

use super::units::ns;
use crate::report::Report;

pub fn render(o: &mut String, r: &Report, top: usize) {
    let Some(kinds) = &r.waits else {
        return;
    };
    let _ = writeln!(o, "\nWaits (record --waits)");
    for n in &r.waits_notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(
        o,
        "  {:<22} {:>10} {:>8}  app methods",
        "kind", "blocked", "count"
    );
    for k in kinds {
        let fns: Vec<String> = k
            .functions
            .iter()
            .take(3)
            .map(|f| format!("{} {}", f.name, ns(f.wait_ns)))
            .collect();
        let _ = writeln!(
            o,
            "  {:<22} {:>10} {:>8}  {}",
            k.kind,
            ns(k.wait_ns),
            k.count,
            fns.join(", ")
        );
    }
    if let Some(c) = &r.contention
        && c.count > 0
    {
        let _ = writeln!(
            o,
            "\n  Locks: {} contended acquisitions, {} waited{}",
            c.count,
            ns(c.wait_ns),
            if c.owner_unknown > 0 {
                format!(" ({} with the owner not seen)", c.owner_unknown)
            } else {
                String::new()
            }
        );
        if let Some(s) = &c.owner_stacks {
            let _ = writeln!(
                o,
                "  owners' stacks on demand: {} of {} taken; not taken: {} owner unknown, {} owner exited, {} queue full, {} walk failed, {} no signal sampler",
                s.taken,
                s.requested,
                s.owner_unknown,
                s.owner_exited,
                s.queue_full,
                s.walk_failed,
                s.no_sampler
            );
        }
        for l in c.locks.iter().take(top) {
            let _ = writeln!(
                o,
                "  {}: {} waits, {} total, max {}",
                l.type_name,
                l.count,
                ns(l.wait_ns),
                ns(l.max_wait_ns)
            );
            for w in l.waiters.iter().take(top) {
                let _ = writeln!(
                    o,
                    "    waited in {} ({}×, {})",
                    w.function,
                    w.count,
                    ns(w.wait_ns)
                );
            }
            for h in l.owners.iter().take(top) {
                let _ = writeln!(
                    o,
                    "    held by   {} ({} on-demand stacks, {} samples)",
                    h.function, h.on_demand, h.samples
                );
            }
        }
    }
    if let Some(tp) = &r.threadpool
        && !tp.starvation.is_empty()
    {
        let _ = writeln!(o, "\n  Thread-pool starvation");
        for e in tp.starvation.iter().take(top) {
            let _ = writeln!(
                o,
                "  at {}: pool threads {} → {} over {}",
                ns(e.at_ns),
                e.threads_before,
                e.threads_after,
                ns(e.duration_ns)
            );
        }
        for b in tp.blocking.iter().take(top) {
            let _ = writeln!(
                o,
                "    blocking pool threads: {} ({} samples, {})",
                b.function,
                b.samples,
                ns(b.wait_ns)
            );
        }
    }
}
