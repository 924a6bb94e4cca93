//! The GC section's totals, from the GCs [`crate::gc::collect`] found.

use serde::Serialize;

use crate::gc::Gc;

#[derive(Debug, Default, Serialize)]
pub struct GcSummary {
    pub count: u64,
    pub induced: u64,
    pub by_generation: [u64; 3],
    pub total_pause_ns: u64,
    pub max_pause_ns: u64,
}

impl GcSummary {
    pub fn of(gcs: &[Gc]) -> GcSummary {
        let mut s = GcSummary {
            count: gcs.len() as u64,
            ..Default::default()
        };
        for g in gcs {
            s.by_generation[g.generation.min(2) as usize] += 1;
            if g.reason == "induced" {
                s.induced += 1;
            }
            s.total_pause_ns += g.pause_ns;
            s.max_pause_ns = s.max_pause_ns.max(g.pause_ns);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::HeapSizes;

    fn gc(generation: u8, reason: &'static str, pause_ns: u64) -> Gc {
        Gc {
            index: 0,
            generation,
            generations: vec![generation],
            reason,
            start_ns: 0,
            duration_ns: 0,
            pause_ns,
            heap_after: HeapSizes::default(),
        }
    }

    #[test]
    fn counts_and_pauses() {
        let s = GcSummary::of(&[gc(0, "other", 10), gc(2, "induced", 30), gc(0, "other", 5)]);
        assert_eq!(
            (
                s.count,
                s.induced,
                s.by_generation,
                s.total_pause_ns,
                s.max_pause_ns
            ),
            (3, 1, [2, 0, 1], 45, 30)
        );
    }
}
