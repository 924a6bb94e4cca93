//! One followed trace's samples since the last cut, and the name tables read so far:
//! each cut is a gzip'd pprof profile of just those samples (the report's rules: GC-poll
//! frames folded, CPU only for samples not parked in a wait), with `--alloc` a second
//! one of the allocations since the last cut and the live sampled heap now, and with
//! `--waits` one of the lock waits that ended since the last cut (and on .NET 9 and later
//! one of the wait-handle waits).

use std::collections::{HashMap, HashSet};

use clrprof_analysis::allocs::{AllocPoint, Config};
use clrprof_analysis::names::Names;
use clrprof_analysis::report::{WaitInterval, WaitPairs};
use clrprof_analysis::runtime_frames::Windows;
use clrprof_analysis::samples::{StackSample, prepare, stack_sample};
use clrprof_analysis::threads::ThreadNames;
use clrprof_analysis::timeline::TimedEvent;
use clrprof_export::{Options, Weight, pprof};
use clrprof_format::Event;

/// Samples kept for one cut at most (about 20 MB of stacks); more are dropped and
/// counted, so a burst of threads cannot grow the CLI without bound. The same bound holds
/// for one cut's allocation samples, and for the followed ones not yet collected.
pub const MAX_SAMPLES: usize = 200_000;

/// The pprof sample types of each pushed profile family, as Grafana Pyroscope names them.
pub const CPU_TYPES: [&str; 2] = ["samples", "cpu"];
pub const MEMORY_TYPES: [&str; 4] = [
    "alloc_objects",
    "alloc_space",
    "inuse_objects",
    "inuse_space",
];

/// `--waits`: the sample types of the wait families, as Go's mutex and block profiles name
/// them (built as the `samples` and `wall` of [`clrprof_analysis::profile::of_waits`]).
pub const WAIT_TYPES: [(&str, &str); 2] = [("contentions", "count"), ("delay", "nanoseconds")];

/// A family of waits pushed with `--waits`, each a pprof of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFamily {
    /// Contended locks (`Monitor`, `lock`): Pyroscope's `mutex`.
    Mutex,
    /// Wait handles (.NET 9 and later): Pyroscope's `block`.
    Block,
}

impl WaitFamily {
    /// The `sample_type_config` part sent with the profile: Pyroscope's ingest picks the
    /// family from the display names (`mutex_*` files it under `mutex`, `block_*` under
    /// `block`; `contentions` and `delay` alone name neither for sure); the units are
    /// those Go's client sends (docs/exports.md).
    pub fn sample_type_config(self) -> &'static str {
        match self {
            WaitFamily::Mutex => {
                r#"{"contentions":{"units":"lock_samples","display-name":"mutex_count"},"delay":{"units":"lock_nanoseconds","display-name":"mutex_duration"}}"#
            }
            WaitFamily::Block => {
                r#"{"contentions":{"units":"lock_samples","display-name":"block_count"},"delay":{"units":"lock_nanoseconds","display-name":"block_duration"}}"#
            }
        }
    }

    /// Whether the wait belongs to this family.
    fn holds(self, w: &WaitInterval) -> bool {
        w.lock == (self == WaitFamily::Mutex)
    }
}

#[derive(Default)]
pub struct Cut {
    names: Names,
    threads: ThreadNames,
    windows: Windows,
    /// (managed thread, OS thread) pairs seen in samples: the first of each names the
    /// OS thread.
    pairs: HashSet<(u64, u64)>,
    samples: Vec<StackSample>,
    /// `--alloc`: how the agent samples allocations (its `AllocConfig` record); the
    /// memory profile is pushed once it is known.
    alloc: Option<Config>,
    /// The allocation samples since the last cut.
    allocated: Vec<AllocPoint>,
    /// Followed allocation samples no GC has collected yet (the live sampled heap), by id.
    live: HashMap<u64, AllocPoint>,
    /// `--waits`: the waits still open (at most one per thread and kind), and those that
    /// ended since the last cut.
    wait_pairs: WaitPairs,
    waits: Vec<WaitInterval>,
    /// Samples not kept because a cut held [`MAX_SAMPLES`] already (allocation samples
    /// and waits included).
    pub dropped: u64,
    /// Events the agent could not record (its `Lost` records).
    pub lost: u64,
    /// The earliest sample of the previous cut: runtime windows that ended before it are
    /// forgotten (one cut of margin for blocks flushed late).
    previous_start: Option<u64>,
}

/// One cut's profiles, gzip'd pprof.
pub struct Profiles {
    pub cpu: Vec<u8>,
    /// With `--alloc`.
    pub memory: Option<Vec<u8>>,
    /// With `--waits`: one per family asked for (each sent as a form's part).
    pub waits: Vec<(WaitFamily, Vec<u8>)>,
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
                continue;
            }
            match &e.event {
                Event::Lost { count, .. } => self.lost += count,
                Event::AllocConfig { .. } => self.alloc = Config::from_event(&e.event),
                Event::AllocSample { .. } => self.allocation(&e),
                Event::AllocFreed { ids } => {
                    for id in ids.iter() {
                        self.live.remove(id);
                    }
                }
                Event::WaitStart { .. } | Event::WaitStop { .. } => {
                    if let Some(w) = self.wait_pairs.push(&e) {
                        if self.waits.len() < MAX_SAMPLES {
                            self.waits.push(w);
                        } else {
                            self.dropped += 1;
                        }
                    }
                }
                _ => {
                    self.names.add(&e);
                    self.threads.add(&e);
                    self.windows.add(&e);
                }
            }
        }
    }

    fn allocation(&mut self, e: &TimedEvent<'static>) {
        // As `allocs::collect`: the agent's default when its configuration was not read.
        let config = *self.alloc.get_or_insert(Config {
            source: clrprof_format::ALLOC_SOURCE_SAMPLED,
            mean_bytes: 100 * 1024,
            interval_bytes: 100 * 1024,
            tracked_max: 0,
        });
        let Some((id, p)) = AllocPoint::from_sample(&config, e) else {
            return;
        };
        if p.tracked {
            if self.live.len() < MAX_SAMPLES {
                self.live.insert(id, p.clone());
            } else {
                self.dropped += 1;
            }
        }
        if self.allocated.len() < MAX_SAMPLES {
            self.allocated.push(p);
        } else {
            self.dropped += 1;
        }
    }

    /// The samples since the last cut as gzip'd pprof profiles covering
    /// `from_s..until_s` (Unix seconds), sampled every `interval_ns`, and the waits that
    /// ended since as one profile per family of `families`; empties the cut.
    pub fn cut(
        &mut self,
        from_s: u64,
        until_s: u64,
        interval_ns: u64,
        name: &str,
        families: &[WaitFamily],
    ) -> Profiles {
        let mut samples = std::mem::take(&mut self.samples);
        prepare(&mut samples, &self.names, &self.windows);
        if let Some(ns) = self.previous_start {
            self.windows.forget_before(ns);
        }
        if let Some(first) = samples.iter().map(|s| s.ns).min() {
            self.previous_start = Some(first);
        }
        let profile = clrprof_analysis::profile::of_samples(
            &samples,
            &self.names,
            &self.threads,
            interval_ns,
        );
        let period_ns = i64::try_from(interval_ns).unwrap_or(i64::MAX);
        let cpu = self
            .encode(profile, from_s, until_s, name)
            .map(|p| pprof::only(p, &CPU_TYPES, ("cpu", "nanoseconds", period_ns)));
        let allocated = std::mem::take(&mut self.allocated);
        let memory = self.alloc.and_then(|config| {
            let profile = clrprof_analysis::profile::of_allocations(
                &allocated,
                self.live.values(),
                &self.names,
                &self.threads,
            );
            // As Go's heap profiles: the period is the mean bytes between samples.
            let period = i64::try_from(config.mean_bytes).unwrap_or(i64::MAX);
            self.encode(profile, from_s, until_s, name)
                .map(|p| pprof::only(p, &MEMORY_TYPES, ("space", "bytes", period)))
        });
        // A wait is in the cut in which it ended, with all its time (as a Go mutex
        // profile counts a contention when the lock is released).
        let ended = std::mem::take(&mut self.waits);
        let waits = families
            .iter()
            .filter_map(|&family| {
                let of: Vec<WaitInterval> =
                    ended.iter().filter(|w| family.holds(w)).cloned().collect();
                let profile = clrprof_analysis::profile::of_waits(&of, &self.names, &self.threads);
                let mut p = self.encode(profile, from_s, until_s, name)?;
                // (the longest wait would be taken for the length)
                p.duration_nanos =
                    i64::try_from(until_s.saturating_sub(from_s).saturating_mul(1_000_000_000))
                        .unwrap_or(i64::MAX);
                let p = pprof::only(p, &["samples", "wall"], ("contentions", "count", 1));
                Some((family, pprof::gzip(&pprof::renamed(p, &WAIT_TYPES))))
            })
            .collect();
        Profiles {
            cpu: cpu.map(|p| pprof::gzip(&p)).unwrap_or_default(),
            memory: memory.map(|p| pprof::gzip(&p)),
            waits,
        }
    }

    fn encode(
        &self,
        mut profile: clrprof_export::Profile,
        from_s: u64,
        until_s: u64,
        name: &str,
    ) -> Option<pprof::proto::Profile> {
        profile.name = name.to_string();
        profile.start_unix_ns = from_s.saturating_mul(1_000_000_000);
        profile.duration_ns = until_s.saturating_sub(from_s).saturating_mul(1_000_000_000);
        let opts = Options {
            weight: Weight::Cpu,
            ..Default::default()
        };
        // The model is built from the trace's own tables (always valid).
        pprof::build(&profile, &opts).ok()
    }
}
