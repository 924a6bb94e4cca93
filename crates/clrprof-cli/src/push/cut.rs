//! One followed trace's samples since the last cut, and the name tables read so far:
//! each cut is a gzip'd pprof profile of just those samples (the report's rules: GC-poll
//! frames folded, CPU only for samples not parked in a wait).

use std::collections::HashSet;

use clrprof_analysis::names::Names;
use clrprof_analysis::runtime_frames::Windows;
use clrprof_analysis::samples::{StackSample, prepare, stack_sample};
use clrprof_analysis::threads::ThreadNames;
use clrprof_analysis::timeline::TimedEvent;
use clrprof_export::{Options, Weight, pprof};
use clrprof_format::Event;

/// Samples kept for one cut at most (about 20 MB of stacks); more are dropped and
/// counted, so a burst of threads cannot grow the CLI without bound.
pub const MAX_SAMPLES: usize = 200_000;

#[derive(Default)]
pub struct Cut {
    names: Names,
    threads: ThreadNames,
    windows: Windows,
    /// (managed thread, OS thread) pairs seen in samples: the first of each names the
    /// OS thread.
    pairs: HashSet<(u64, u64)>,
    samples: Vec<StackSample>,
    /// Samples not kept because a cut held [`MAX_SAMPLES`] already.
    pub dropped: u64,
    /// Events the agent could not record (its `Lost` records).
    pub lost: u64,
    /// The earliest sample of the previous cut: runtime windows that ended before it are
    /// forgotten (one cut of margin for blocks flushed late).
    previous_start: Option<u64>,
}

impl Cut {
    pub fn add(&mut self, events: Vec<TimedEvent<'static>>) {
        for e in events {
            if let Some(s) = stack_sample(&e) {
                if let Event::Sample { os_tid, thread, .. } = e.event
                    && self.pairs.insert((thread, os_tid))
                {
                    self.threads.add(&e);
                }
                if self.samples.len() < MAX_SAMPLES {
                    self.samples.push(s);
                } else {
                    self.dropped += 1;
                }
            } else if let Event::Lost { count, .. } = e.event {
                self.lost += count;
            } else {
                self.names.add(&e);
                self.threads.add(&e);
                self.windows.add(&e);
            }
        }
    }

    /// The samples since the last cut as a gzip'd pprof profile covering
    /// `from_s..until_s` (Unix seconds), sampled every `interval_ns`; empties the cut.
    pub fn cut(&mut self, from_s: u64, until_s: u64, interval_ns: u64, name: &str) -> Vec<u8> {
        let mut samples = std::mem::take(&mut self.samples);
        prepare(&mut samples, &self.names, &self.windows);
        if let Some(ns) = self.previous_start {
            self.windows.forget_before(ns);
        }
        if let Some(first) = samples.iter().map(|s| s.ns).min() {
            self.previous_start = Some(first);
        }
        let mut profile = clrprof_analysis::profile::of_samples(
            &samples,
            &self.names,
            &self.threads,
            interval_ns,
        );
        profile.name = name.to_string();
        profile.start_unix_ns = from_s.saturating_mul(1_000_000_000);
        profile.duration_ns = until_s.saturating_sub(from_s).saturating_mul(1_000_000_000);
        let opts = Options {
            weight: Weight::Cpu,
            ..Default::default()
        };
        // The model is built from the trace's own tables (always valid) and written to
        // memory (cannot fail).
        let mut out = Vec::new();
        let _ = pprof::write(&profile, &opts, &mut out);
        out
    }
}
