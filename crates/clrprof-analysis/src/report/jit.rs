//! The JIT section: compilations, the time spent compiling, the slowest functions.

use std::collections::HashMap;

use serde::Serialize;

use clrprof_format::Event;

use crate::names::Names;
use crate::timeline::TimedEvent;

/// Functions listed in [`JitSummary::slowest`].
const SLOWEST: usize = 20;

#[derive(Debug, Default, Serialize)]
pub struct JitSummary {
    pub compilations: u64,
    /// Time spent between JITCompilationStarted and Finished, summed over functions.
    pub total_ns: u64,
    /// The functions that took longest to compile.
    pub slowest: Vec<JitEntry>,
}

#[derive(Debug, Serialize)]
pub struct JitEntry {
    pub name: String,
    pub ns: u64,
}

#[derive(Debug, Default)]
pub struct Jit {
    compilations: u64,
    /// (OS thread, function) → when its compilation started.
    open: HashMap<(u64, u64), u64>,
    /// Function → time spent compiling it.
    times: HashMap<u64, u64>,
}

impl Jit {
    pub fn observe(&mut self, e: &TimedEvent<'_>) {
        match &e.event {
            Event::JitStarted { function, .. } => {
                self.compilations += 1;
                self.open.insert((e.os_tid, *function), e.ns);
            }
            Event::JitFinished { function, .. } => {
                if let Some(start) = self.open.remove(&(e.os_tid, *function)) {
                    *self.times.entry(*function).or_default() += e.ns.saturating_sub(start);
                }
            }
            _ => {}
        }
    }

    pub fn finish(self, names: &Names) -> JitSummary {
        let mut slowest: Vec<JitEntry> = self
            .times
            .iter()
            .map(|(f, ns)| JitEntry {
                name: names.function(*f),
                ns: *ns,
            })
            .collect();
        slowest.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
        let total_ns = slowest.iter().map(|j| j.ns).sum();
        slowest.truncate(SLOWEST);
        JitSummary {
            compilations: self.compilations,
            total_ns,
            slowest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{at, names};

    fn started(ns: u64, os_tid: u64, function: u64) -> TimedEvent<'static> {
        let event = Event::JitStarted {
            function,
            safe_to_block: true,
        };
        at(ns, os_tid, event)
    }

    fn finished(ns: u64, os_tid: u64, function: u64) -> TimedEvent<'static> {
        at(ns, os_tid, Event::JitFinished { function, hr: 0 })
    }

    #[test]
    fn times_pair_start_and_finish_per_thread() {
        let mut j = Jit::default();
        for e in [
            started(10, 1, 100),
            started(12, 2, 200),
            // Thread 2 finishes 100 without having started it: not timed.
            finished(15, 2, 100),
            finished(40, 1, 100),
            finished(20, 2, 200),
            // Compiled again: the times add up.
            started(50, 1, 200),
            finished(80, 1, 200),
            // Never finished: counted, not timed.
            started(90, 1, 300),
        ] {
            j.observe(&e);
        }
        let s = j.finish(&names(&[(100, "A"), (200, "B")]));
        assert_eq!(s.compilations, 4);
        assert_eq!(s.total_ns, 68);
        let slowest: Vec<_> = s.slowest.iter().map(|e| (e.name.as_str(), e.ns)).collect();
        assert_eq!(slowest, [("B", 38), ("A", 30)]);
    }

    #[test]
    fn the_total_counts_the_functions_left_off_the_list() {
        let mut j = Jit::default();
        for f in 0..25 {
            j.observe(&started(0, 1, f));
            j.observe(&finished(f + 1, 1, f));
        }
        let s = j.finish(&Names::default());
        assert_eq!(s.slowest.len(), 20);
        assert_eq!(s.slowest[0].ns, 25);
        assert_eq!(s.total_ns, (1..=25).sum::<u64>());
    }
}
