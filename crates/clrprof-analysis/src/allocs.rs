//! `--alloc`'s allocation samples (docs/allocations.md): each sample scaled to the bytes
//! and objects it stands for, and followed to the GC that collected it.
//!
//! Scaling. `AllocationSampled` (.NET 10) samples bytes by a Poisson process of mean `m`
//! (100 KiB): an object of `s` bytes is sampled with probability `p = 1 - e^(-s/m)`, so
//! counting each sample as `1/p` objects and `s/p` bytes is unbiased (the method of Go's
//! and pprof's heap profiles). `GCAllocationTick` (.NET 8/9) fires each time ~100 KB were
//! allocated, and carries those bytes: a sample counts them, and `bytes / s` objects. That
//! total is exact, but it is charged to the object that crossed the threshold, which favours
//! objects that refill the thread's allocation context (large ones). A sample thinned by
//! `--alloc-interval` (kept with probability `m / interval`) counts `interval / m` times.

use std::collections::HashMap;

use clrprof_format::Event;

use crate::timeline::TimedEvent;

/// `AllocConfig`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    pub source: u8,
    pub mean_bytes: u64,
    pub interval_bytes: u64,
    pub tracked_max: u64,
}

impl Config {
    /// The configuration an `AllocConfig` record carries; `None` for any other record.
    pub fn from_event(e: &Event<'_>) -> Option<Config> {
        match e {
            Event::AllocConfig {
                source,
                mean_bytes,
                interval_bytes,
                tracked_max,
            } => Some(Config {
                source: *source,
                mean_bytes: *mean_bytes,
                interval_bytes: *interval_bytes,
                tracked_max: *tracked_max,
            }),
            _ => None,
        }
    }

    /// `AllocationSampled` or `AllocationTick`.
    pub fn source_name(&self) -> &'static str {
        match self.source {
            clrprof_format::ALLOC_SOURCE_SAMPLED => "AllocationSampled",
            clrprof_format::ALLOC_SOURCE_TICK => "AllocationTick",
            _ => "unknown",
        }
    }

    /// The (bytes, objects) one sample of an object of `size` bytes stands for.
    pub fn estimate(&self, size: u64, amount: u64) -> (f64, f64) {
        let mean = self.mean_bytes.max(1) as f64;
        let thin = (self.interval_bytes as f64 / mean).max(1.0);
        let size = size.max(1) as f64;
        if self.source == clrprof_format::ALLOC_SOURCE_TICK {
            let bytes = amount as f64 * thin;
            return (bytes, bytes / size);
        }
        let p = -(-size / mean).exp_m1();
        let objects = if p > 0.0 { 1.0 / p } else { 1.0 } * thin;
        (size * objects, objects)
    }
}

/// One sampled allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocPoint {
    pub ns: u64,
    pub os_tid: u64,
    pub class: u64,
    /// Leaf first.
    pub frames: Vec<u64>,
    /// Where in its method each frame was (`AllocPositions`, one `SamplePositions` item
    /// per frame); empty when the trace says nothing.
    pub positions: Vec<u64>,
    /// The bytes and objects it stands for.
    pub bytes: f64,
    pub objects: f64,
    /// Followed for the live heap.
    pub tracked: bool,
    /// When a GC found it collected.
    pub freed_ns: Option<u64>,
}

impl AllocPoint {
    /// An `AllocSample` record as its id and the point it is, scaled by `config`; `None`
    /// for any other record.
    pub fn from_sample(config: &Config, e: &TimedEvent<'_>) -> Option<(u64, AllocPoint)> {
        let Event::AllocSample {
            id,
            class,
            size,
            amount,
            tracked,
            frames,
            ..
        } = &e.event
        else {
            return None;
        };
        let (bytes, objects) = config.estimate(*size, *amount);
        Some((
            *id,
            AllocPoint {
                ns: e.ns,
                os_tid: e.os_tid,
                class: *class,
                frames: frames.to_vec(),
                positions: Vec::new(),
                bytes,
                objects,
                tracked: *tracked != 0,
                freed_ns: None,
            },
        ))
    }

    /// Whether it stands for objects of the large object heap (85 000 bytes or more),
    /// which start in gen2.
    pub fn is_large(&self) -> bool {
        self.objects > 0.0 && self.bytes / self.objects >= 85_000.0
    }

    /// Followed and not collected by the end.
    pub fn alive_at_end(&self) -> bool {
        self.tracked && self.freed_ns.is_none()
    }
}

/// `AllocStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub delivered: u64,
    pub recorded: u64,
    pub untracked: u64,
    pub alive_at_end: u64,
}

/// `AllocPositionStats` (.NET 8 and 9): the samples whose positions the agent's own
/// thread maps, and those it could not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PositionStats {
    /// Queued for the agent's mapping thread.
    pub queued: u64,
    /// Mapped there (their positions recorded).
    pub mapped: u64,
    /// Kept without positions: the queue was full (or busy) when they came.
    pub queue_full: u64,
    /// Kept without positions: queued after the thread's last round.
    pub left_at_end: u64,
}

/// Every allocation sample of a trace.
#[derive(Debug, Default)]
pub struct AllocSamples {
    pub config: Option<Config>,
    pub points: Vec<AllocPoint>,
    pub stats: Option<Stats>,
    /// `AllocPositionStats`: absent on .NET 10 and in traces before format 2.4.
    pub position_stats: Option<PositionStats>,
    /// The estimated live bytes after each GC that collected followed samples.
    pub live_over_time: Vec<(u64, f64)>,
    /// `AllocUnavailable`: why `--alloc` could not start.
    pub unavailable: Option<String>,
    /// Every GC's start and the oldest generation it collected (0-2; the LOH's and POH's
    /// with generation 2), in time order: which GCs looked at a sampled object.
    pub gcs: Vec<(u64, u8)>,
}

/// What the GCs knew of an object still followed at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Examined {
    /// No GC of its generation ran since it was allocated: alive or not, no one knows.
    Not,
    /// Alive at the last GC that looked at it, which collected up to this generation.
    AsOf(u8),
}

/// Which GC last examined an object allocated at `ns` that no GC collected. It starts in
/// gen0 (gen2 for `large`, the LOH), each GC collecting its generation examines it and,
/// below gen2, promotes it. `gcs` as [`AllocSamples::gcs`].
pub fn examined(gcs: &[(u64, u8)], ns: u64, large: bool) -> Examined {
    let mut generation = if large { 2 } else { 0 };
    let mut last = Examined::Not;
    let from = gcs.partition_point(|(t, _)| *t < ns);
    for &(_, collected) in &gcs[from..] {
        if collected >= generation {
            last = Examined::AsOf(collected);
            generation = (generation + 1).min(2);
        }
    }
    last
}

/// The oldest generation a `GcStarted`'s bits collected (LOH and POH are gen2's).
fn collected_generation(bits: u8) -> u8 {
    if bits & 0b1_1100 != 0 {
        2
    } else if bits & 0b10 != 0 {
        1
    } else {
        0
    }
}

/// Collects the allocation samples of a timeline (in time order).
pub fn collect(events: &[TimedEvent<'_>]) -> AllocSamples {
    let mut out = AllocSamples::default();
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut live = 0.0f64;
    for e in events {
        if let Some(c) = Config::from_event(&e.event) {
            out.config = Some(c);
            continue;
        }
        if let Event::AllocSample { .. } = e.event {
            let config = *out.config.get_or_insert(Config {
                source: clrprof_format::ALLOC_SOURCE_SAMPLED,
                mean_bytes: 100 * 1024,
                interval_bytes: 100 * 1024,
                tracked_max: 0,
            });
            if let Some((id, p)) = AllocPoint::from_sample(&config, e) {
                if p.tracked {
                    live += p.bytes;
                }
                by_id.insert(id, out.points.len());
                out.points.push(p);
            }
            continue;
        }
        match &e.event {
            Event::AllocPositions { id, positions } => {
                if let Some(p) = by_id.get(id).and_then(|&i| out.points.get_mut(i))
                    && p.frames.len() == positions.len()
                {
                    p.positions = positions.to_vec();
                }
            }
            Event::AllocFreed { ids } => {
                for id in ids.iter() {
                    if let Some(p) = by_id.get(id).and_then(|&i| out.points.get_mut(i))
                        && p.tracked
                        && p.freed_ns.is_none()
                    {
                        p.freed_ns = Some(e.ns);
                        live -= p.bytes;
                    }
                }
                match out.live_over_time.last_mut() {
                    Some(last) if last.0 == e.ns => last.1 = live.max(0.0),
                    _ => out.live_over_time.push((e.ns, live.max(0.0))),
                }
            }
            Event::GcStarted { generations, .. } => {
                out.gcs.push((e.ns, collected_generation(*generations)));
            }
            Event::AllocUnavailable { reason, .. } => {
                out.unavailable = Some(reason.to_string());
            }
            Event::AllocPositionStats {
                queued,
                mapped,
                queue_full,
                left_at_end,
            } => {
                out.position_stats = Some(PositionStats {
                    queued: *queued,
                    mapped: *mapped,
                    queue_full: *queue_full,
                    left_at_end: *left_at_end,
                })
            }
            Event::AllocStats {
                delivered,
                recorded,
                untracked,
                alive_at_end,
            } => {
                out.stats = Some(Stats {
                    delivered: *delivered,
                    recorded: *recorded,
                    untracked: *untracked,
                    alive_at_end: *alive_at_end,
                })
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_object_is_live_as_of_the_last_gc_that_looked_at_it() {
        // GCs at 10 (gen0), 20 (gen0), 30 (gen1), 40 (gen0).
        let gcs = [(10, 0), (20, 0), (30, 1), (40, 0)];
        // Allocated after every GC: nobody looked.
        assert_eq!(examined(&gcs, 45, false), Examined::Not);
        // Allocated at 35: the gen0 GC at 40 saw it alive.
        assert_eq!(examined(&gcs, 35, false), Examined::AsOf(0));
        // Allocated at 5: promoted at 10 to gen1, which the gen0 GC at 20 does not look
        // at; the gen1 GC at 30 does (and promotes it to gen2, which 40 does not collect).
        assert_eq!(examined(&gcs, 5, false), Examined::AsOf(1));
        // A large object starts in gen2: only a gen2 GC looks at it.
        assert_eq!(examined(&gcs, 5, true), Examined::Not);
        assert_eq!(examined(&[(10, 2)], 5, true), Examined::AsOf(2));
        assert_eq!(collected_generation(0b1), 0);
        assert_eq!(collected_generation(0b11), 1);
        assert_eq!(collected_generation(0b1_0111), 2);
    }

    use super::*;

    fn sampled() -> Config {
        Config {
            source: clrprof_format::ALLOC_SOURCE_SAMPLED,
            mean_bytes: 102_400,
            interval_bytes: 102_400,
            tracked_max: 16,
        }
    }

    #[test]
    fn poisson_scaling_is_size_over_probability() {
        let c = sampled();
        let (b, o) = c.estimate(1024, 0);
        let p = 1.0 - (-1024.0f64 / 102_400.0).exp();
        assert!((o - 1.0 / p).abs() < 1e-9);
        assert!((b - 1024.0 / p).abs() < 1e-6);
        // About the mean for small objects.
        assert!((b - 102_400.0).abs() < 600.0, "{b}");
        // Huge objects are always sampled: themselves.
        let (b, o) = c.estimate(10 << 20, 0);
        assert!((o - 1.0).abs() < 1e-9 && (b - (10 << 20) as f64).abs() < 1.0);
        // Thinned to one in four.
        let thin = Config {
            interval_bytes: 4 * 102_400,
            ..c
        };
        assert!((thin.estimate(1024, 0).1 - 4.0 / p).abs() < 1e-9);
    }

    #[test]
    fn ticks_count_their_amount() {
        let c = Config {
            source: clrprof_format::ALLOC_SOURCE_TICK,
            ..sampled()
        };
        assert_eq!(c.estimate(1000, 103_000), (103_000.0, 103.0));
    }

    #[test]
    fn freed_samples_leave_the_live_heap() {
        let at = |ns, event| TimedEvent {
            ns,
            os_tid: 1,
            event,
        };
        let sample = |id, tracked| Event::AllocSample {
            id,
            thread: 0,
            class: 5,
            size: 1 << 20,
            amount: 0,
            tracked,
            frames: vec![7, 8].into(),
        };
        let events = [
            at(
                0,
                Event::AllocConfig {
                    source: 1,
                    mean_bytes: 102_400,
                    interval_bytes: 102_400,
                    tracked_max: 16,
                },
            ),
            at(1, sample(1, 1)),
            at(2, sample(2, 1)),
            at(3, sample(3, 0)),
            at(
                4,
                Event::AllocFreed {
                    ids: vec![2, 99].into(),
                },
            ),
        ];
        let mut events = events.to_vec();
        // Sample 1's positions; a record of another length is ignored.
        events.insert(
            2,
            at(
                1,
                Event::AllocPositions {
                    id: 1,
                    positions: vec![0x10 + 4, 0].into(),
                },
            ),
        );
        events.push(at(
            5,
            Event::AllocPositions {
                id: 2,
                positions: vec![5].into(),
            },
        ));
        let a = collect(&events);
        assert_eq!(a.points.len(), 3);
        assert_eq!(a.points[0].positions, [0x14, 0]);
        assert!(a.points[1].positions.is_empty());
        let alive: Vec<bool> = a.points.iter().map(AllocPoint::alive_at_end).collect();
        assert_eq!(alive, [true, false, false]);
        assert_eq!(a.points[1].freed_ns, Some(4));
        assert_eq!(a.live_over_time.len(), 1);
        assert!((a.live_over_time[0].1 - a.points[0].bytes).abs() < 1e-6);
    }
}
