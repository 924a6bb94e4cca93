//! Garbage collections: each GcStarted/GcFinished pair, with the runtime suspension
//! that encloses it giving the pause.

use serde::Serialize;

use clrprof_format::{Event, SuspendPhase};

use crate::timeline::TimedEvent;

/// COR_PRF_SUSPEND_REASON values that mean "for a GC".
const SUSPEND_FOR_GC: u8 = 1;
const SUSPEND_FOR_GC_PREP: u8 = 7;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Gc {
    pub index: usize,
    /// Highest generation collected (0, 1 or 2).
    pub generation: u8,
    /// Every generation collected; 3 = large object heap, 4 = pinned object heap.
    pub generations: Vec<u8>,
    /// `induced` (GC.Collect and friends) or `other`.
    pub reason: &'static str,
    pub start_ns: u64,
    /// From GarbageCollectionStarted to GarbageCollectionFinished.
    pub duration_ns: u64,
    /// The enclosing execution-engine suspension: the time managed threads were stopped.
    pub pause_ns: u64,
    /// Bytes per generation after the GC: gen0, gen1, gen2, loh, poh.
    pub heap_after: HeapSizes,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HeapSizes {
    pub gen0: u64,
    pub gen1: u64,
    pub gen2: u64,
    pub loh: u64,
    pub poh: u64,
}

struct Window {
    start: u64,
    end: u64,
}

/// Finds every GC and its pause.
pub fn collect(events: &[TimedEvent<'_>]) -> Vec<Gc> {
    // Suspension windows for GCs, from SuspendStarted to ResumeFinished.
    let mut windows = Vec::new();
    let mut open: Option<u64> = None;
    for e in events {
        if let Event::RuntimeSuspend { phase, reason } = &e.event {
            match phase {
                SuspendPhase::SuspendStarted
                    if *reason == SUSPEND_FOR_GC || *reason == SUSPEND_FOR_GC_PREP =>
                {
                    open.get_or_insert(e.ns);
                }
                SuspendPhase::SuspendAborted => open = None,
                SuspendPhase::ResumeFinished => {
                    if let Some(start) = open.take() {
                        windows.push(Window { start, end: e.ns });
                    }
                }
                _ => {}
            }
        }
    }
    let mut gcs: Vec<Gc> = Vec::new();
    let mut pending: Option<usize> = None;
    for e in events {
        match &e.event {
            Event::GcStarted {
                generations,
                reason,
            } => {
                let gens: Vec<u8> = (0..8).filter(|i| generations & (1 << i) != 0).collect();
                let generation = gens.iter().copied().filter(|g| *g <= 2).max().unwrap_or(0);
                let pause_ns = windows
                    .iter()
                    .find(|w| w.start <= e.ns && e.ns <= w.end)
                    .map(|w| w.end - w.start)
                    .unwrap_or(0);
                gcs.push(Gc {
                    index: gcs.len(),
                    generation,
                    generations: gens,
                    reason: if *reason == 1 { "induced" } else { "other" },
                    start_ns: e.ns,
                    duration_ns: 0,
                    pause_ns,
                    heap_after: HeapSizes::default(),
                });
                pending = Some(gcs.len() - 1);
            }
            Event::GcFinished { generation_sizes } => {
                if let Some(i) = pending.take() {
                    let g = &mut gcs[i];
                    g.duration_ns = e.ns.saturating_sub(g.start_ns);
                    let s = |k: usize| generation_sizes.get(k).copied().unwrap_or(0);
                    g.heap_after = HeapSizes {
                        gen0: s(0),
                        gen1: s(1),
                        gen2: s(2),
                        loh: s(3),
                        poh: s(4),
                    };
                }
            }
            _ => {}
        }
    }
    gcs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn ev(ns: u64, event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent {
            ns,
            os_tid: 1,
            event,
        }
    }

    #[test]
    fn pause_is_the_enclosing_gc_suspension() {
        let events = vec![
            // A profiler suspension (reason 9) is not a GC pause.
            ev(
                0,
                Event::RuntimeSuspend {
                    phase: SuspendPhase::SuspendStarted,
                    reason: 9,
                },
            ),
            ev(
                5,
                Event::RuntimeSuspend {
                    phase: SuspendPhase::ResumeFinished,
                    reason: 0,
                },
            ),
            ev(
                100,
                Event::RuntimeSuspend {
                    phase: SuspendPhase::SuspendStarted,
                    reason: SUSPEND_FOR_GC,
                },
            ),
            ev(
                110,
                Event::GcStarted {
                    generations: 0b111,
                    reason: 1,
                },
            ),
            ev(
                150,
                Event::GcFinished {
                    generation_sizes: Cow::Owned(vec![1, 2, 3, 4, 5]),
                },
            ),
            ev(
                160,
                Event::RuntimeSuspend {
                    phase: SuspendPhase::ResumeFinished,
                    reason: 0,
                },
            ),
            ev(
                300,
                Event::GcStarted {
                    generations: 0b1,
                    reason: 0,
                },
            ),
            ev(
                310,
                Event::GcFinished {
                    generation_sizes: Cow::Owned(vec![9]),
                },
            ),
        ];
        let gcs = collect(&events);
        assert_eq!(gcs.len(), 2);
        assert_eq!(
            (
                gcs[0].generation,
                gcs[0].reason,
                gcs[0].pause_ns,
                gcs[0].duration_ns
            ),
            (2, "induced", 60, 40)
        );
        assert_eq!(
            gcs[0].heap_after,
            HeapSizes {
                gen0: 1,
                gen1: 2,
                gen2: 3,
                loh: 4,
                poh: 5
            }
        );
        assert_eq!(
            (gcs[1].generation, gcs[1].reason, gcs[1].pause_ns),
            (0, "other", 0)
        );
        assert_eq!(gcs[1].heap_after.gen0, 9);
    }
}
