//! `top --alloc`: the allocation samples of the last `window` seconds as rates — bytes
//! per second by type and by the app's own methods (the report's tables, `report
//! --alloc`, over the window) — and the sampled objects still alive. Each sample is
//! scaled as the report scales it (`allocs::Config::estimate`); the figures are
//! estimates.
//!
//! Bounded: the window keeps at most [`MAX_POINTS`] samples. A batch read when it is full
//! (a program allocating gigabytes a second gives the agent tens of thousands of samples
//! a second) keeps every k-th sample, each standing for k, so that the rates stay
//! unbiased while their precision drops.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use clrprof_analysis::allocs::{AllocPoint, Config};
use clrprof_analysis::names::Names;
use clrprof_analysis::report::{by_app_function, by_type};
use clrprof_analysis::timeline::TimedEvent;
use clrprof_format::Event;

/// Followed samples remembered at most: the agent follows 4096 at once; a trace that
/// claims more (it cannot) is not allowed to grow this process.
const LIVE_MAX: usize = 1 << 16;

/// Samples the window keeps at most (about 15 MB at 20 frames a sample).
const MAX_POINTS: usize = 100_000;
/// A batch read while the window is full keeps this many at least.
const MIN_BATCH: usize = 256;

/// One row: a type or an app method, in bytes per second.
#[derive(Debug, Clone, PartialEq)]
pub struct RateRow {
    pub name: String,
    /// Allocated by it (a type), or with it the nearest app frame (a method).
    pub self_per_s: f64,
    /// A method: allocated with it anywhere on the stack (a type: `self_per_s`).
    pub total_per_s: f64,
}

/// What one refresh shows of the allocations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllocView {
    /// Samples in the window (after the thread filter).
    pub samples: u64,
    pub bytes_per_s: f64,
    pub objects_per_s: f64,
    pub types: Vec<RateRow>,
    /// The app's own methods, most self first.
    pub methods: Vec<RateRow>,
    /// Allocated where no app frame is on the stack (the runtime's and framework's own
    /// threads).
    pub outside_per_s: f64,
    /// Estimated bytes of the followed samples not found collected by the last GC; `None`
    /// where the runtime's samples cannot be followed (`AllocationTick`, .NET 8 and 9).
    pub live_bytes: Option<f64>,
    /// `--alloc` could not start in the target, and why (the agent's message).
    pub unavailable: Option<String>,
}

#[derive(Default)]
pub struct AllocWindow {
    config: Option<Config>,
    pending: Vec<AllocPoint>,
    batches: VecDeque<(Instant, Vec<AllocPoint>)>,
    /// Samples in `batches`.
    points: usize,
    /// Followed samples not collected yet: id → estimated bytes.
    live: HashMap<u64, f64>,
    live_bytes: f64,
    unavailable: Option<String>,
}

impl AllocWindow {
    /// Takes the allocation records of `e`; false for any other record.
    pub fn observe(&mut self, e: &TimedEvent<'_>) -> bool {
        if let Some(c) = Config::from_event(&e.event) {
            self.config = Some(c);
            return true;
        }
        if let Event::AllocSample { .. } = e.event {
            // The agent writes its configuration before its first sample.
            if let Some(config) = self.config
                && let Some((id, p)) = AllocPoint::from_sample(&config, e)
            {
                if p.tracked && self.live.len() < LIVE_MAX {
                    self.live.insert(id, p.bytes);
                    self.live_bytes += p.bytes;
                }
                self.pending.push(p);
            }
            return true;
        }
        match &e.event {
            Event::AllocFreed { ids } => {
                for id in ids.iter() {
                    if let Some(b) = self.live.remove(id) {
                        self.live_bytes -= b;
                    }
                }
            }
            Event::AllocUnavailable { reason, .. } => {
                self.unavailable = Some(reason.to_string());
            }
            _ => return false,
        }
        true
    }

    /// Closes the samples observed since the last call as read at `now`, and forgets
    /// those read more than `length` ago.
    pub fn close(&mut self, now: Instant, length: Duration) {
        while self
            .batches
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > length)
        {
            if let Some((_, old)) = self.batches.pop_front() {
                self.points -= old.len();
            }
        }
        if !self.pending.is_empty() {
            let room = MAX_POINTS.saturating_sub(self.points).max(MIN_BATCH);
            let batch = thin(std::mem::take(&mut self.pending), room);
            self.points += batch.len();
            self.batches.push_back((now, batch));
        }
    }

    /// The rates over `span_s` seconds of the samples whose thread `keep` keeps; `None`
    /// when the trace has no allocation records at all (`top` without `--alloc`).
    pub fn view(
        &self,
        span_s: f64,
        names: &Names,
        mut keep: impl FnMut(u64) -> bool,
    ) -> Option<AllocView> {
        if self.config.is_none() && self.unavailable.is_none() {
            return None;
        }
        let points: Vec<&AllocPoint> = self
            .batches
            .iter()
            .flat_map(|(_, b)| b.iter())
            .filter(|p| keep(p.os_tid))
            .collect();
        let per_s = |v: f64| v / span_s.max(1e-3);
        let types = by_type(points.iter().copied(), names)
            .into_iter()
            .map(|t| RateRow {
                name: t.name,
                self_per_s: per_s(t.bytes as f64),
                total_per_s: per_s(t.bytes as f64),
            })
            .collect();
        let (app, outside) = by_app_function(points.iter().copied(), names);
        let methods = app
            .into_iter()
            .map(|f| RateRow {
                name: f.name,
                self_per_s: per_s(f.self_bytes as f64),
                total_per_s: per_s(f.total_bytes as f64),
            })
            .collect();
        let followed = self.config.is_some_and(|c| c.tracked_max > 0);
        Some(AllocView {
            samples: points.len() as u64,
            bytes_per_s: per_s(points.iter().map(|p| p.bytes).sum()),
            objects_per_s: per_s(points.iter().map(|p| p.objects).sum()),
            types,
            methods,
            outside_per_s: per_s(outside.bytes as f64),
            live_bytes: followed.then_some(self.live_bytes.max(0.0)),
            unavailable: self.unavailable.clone(),
        })
    }
}

/// At most about `room` of `points`: every k-th, each standing for what the k did.
fn thin(points: Vec<AllocPoint>, room: usize) -> Vec<AllocPoint> {
    if points.len() <= room {
        return points;
    }
    let k = points.len().div_ceil(room.max(1));
    let n = points.len() as f64;
    let mut kept: Vec<AllocPoint> = points.into_iter().step_by(k).collect();
    let scale = n / kept.len() as f64;
    for p in &mut kept {
        p.bytes *= scale;
        p.objects *= scale;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn at(os_tid: u64, event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent {
            ns: 0,
            os_tid,
            event,
        }
    }

    fn sample(id: u64, tid: u64, size: u64, frames: &[u64]) -> TimedEvent<'static> {
        at(
            tid,
            Event::AllocSample {
                id,
                thread: tid * 10,
                class: 5,
                size,
                amount: 0,
                tracked: 1,
                frames: Cow::Owned(frames.to_vec()),
            },
        )
    }

    fn names() -> Names {
        let mut n = Names::default();
        for e in [
            at(
                0,
                Event::FunctionInfo {
                    function: 1,
                    module: 0,
                    class: 0,
                    token: 0,
                    name: Cow::Borrowed("System.String.Concat"),
                    signature: Cow::Borrowed(""),
                },
            ),
            at(
                0,
                Event::FunctionInfo {
                    function: 2,
                    module: 0,
                    class: 0,
                    token: 0,
                    name: Cow::Borrowed("App.Work"),
                    signature: Cow::Borrowed(""),
                },
            ),
        ] {
            n.add(&e);
        }
        n
    }

    #[test]
    fn rates_over_the_window_by_type_and_by_the_app_method_and_the_live_bytes() {
        let names = names();
        let mut w = AllocWindow::default();
        let t0 = Instant::now();
        assert!(!w.observe(&at(1, Event::Shutdown {})));
        assert_eq!(w.view(1.0, &names, |_| true), None, "no --alloc");
        w.observe(&at(
            1,
            Event::AllocConfig {
                source: clrprof_format::ALLOC_SOURCE_SAMPLED,
                mean_bytes: 102_400,
                interval_bytes: 102_400,
                tracked_max: 4096,
            },
        ));
        // Two samples of 10 MiB objects (each sampled for sure: counts as itself), one
        // through the framework from App.Work on thread 7, one with no app frame on 8.
        let big = 10 << 20;
        w.observe(&sample(1, 7, big, &[1, 2]));
        w.observe(&sample(2, 8, big, &[1]));
        w.close(t0, Duration::from_secs(5));
        let v = w.view(2.0, &names, |_| true).unwrap();
        let mib = |b: f64| b / f64::from(1 << 20);
        assert_eq!(v.samples, 2);
        assert!((mib(v.bytes_per_s) - 10.0).abs() < 1e-6, "{v:?}");
        assert_eq!(v.methods.len(), 1);
        assert_eq!(v.methods[0].name, "App.Work");
        assert!((mib(v.methods[0].self_per_s) - 5.0).abs() < 1e-6);
        assert!((mib(v.outside_per_s) - 5.0).abs() < 1e-6);
        assert!((mib(v.live_bytes.unwrap()) - 20.0).abs() < 1e-6);
        // Only thread 7.
        let only7 = w.view(2.0, &names, |t| t == 7).unwrap();
        assert_eq!(only7.samples, 1);
        // A GC collects sample 2: the live bytes drop; the rates are of allocations.
        w.observe(&at(
            1,
            Event::AllocFreed {
                ids: Cow::Owned(vec![2, 99]),
            },
        ));
        let v = w.view(2.0, &names, |_| true).unwrap();
        assert!((mib(v.live_bytes.unwrap()) - 10.0).abs() < 1e-6);
        assert_eq!(v.samples, 2);
        // Six seconds on, the batch has left the 5 s window; the live bytes stay.
        w.close(t0 + Duration::from_secs(6), Duration::from_secs(5));
        let v = w.view(5.0, &names, |_| true).unwrap();
        assert_eq!((v.samples, v.bytes_per_s), (0, 0.0));
        assert!((mib(v.live_bytes.unwrap()) - 10.0).abs() < 1e-6);
    }

    #[test]
    fn a_full_window_thins_new_batches_and_keeps_their_bytes() {
        let names = names();
        let mut w = AllocWindow::default();
        w.observe(&at(
            1,
            Event::AllocConfig {
                source: clrprof_format::ALLOC_SOURCE_SAMPLED,
                mean_bytes: 102_400,
                interval_bytes: 102_400,
                tracked_max: 0,
            },
        ));
        let t0 = Instant::now();
        let big = 10 << 20;
        for batch in 0..3u64 {
            for i in 0..(MAX_POINTS as u64 / 2) {
                w.observe(&sample(batch << 32 | i, 7, big, &[2]));
            }
            w.close(t0, Duration::from_secs(5));
        }
        assert!(w.points <= MAX_POINTS + MIN_BATCH, "{}", w.points);
        let v = w.view(1.0, &names, |_| true).unwrap();
        // Every sample stood for 10 MiB: 1.5 × MAX_POINTS of them, thinned or not.
        let want = 1.5 * MAX_POINTS as f64 * big as f64;
        assert!(
            (v.bytes_per_s - want).abs() / want < 1e-9,
            "{}",
            v.bytes_per_s
        );
        assert!((v.methods[0].self_per_s - want).abs() / want < 1e-9);
    }

    #[test]
    fn ticks_are_not_followed_and_a_refusal_is_shown() {
        let names = names();
        let mut w = AllocWindow::default();
        w.observe(&at(
            1,
            Event::AllocConfig {
                source: clrprof_format::ALLOC_SOURCE_TICK,
                mean_bytes: 102_400,
                interval_bytes: 102_400,
                tracked_max: 0,
            },
        ));
        assert_eq!(w.view(1.0, &names, |_| true).unwrap().live_bytes, None);
        let mut refused = AllocWindow::default();
        refused.observe(&at(
            1,
            Event::AllocUnavailable {
                hresult: 0x8007_0057,
                reason: Cow::Borrowed("EventPipeStartSession failed: E_INVALIDARG (0x80070057)"),
            },
        ));
        let v = refused.view(1.0, &names, |_| true).unwrap();
        assert!(v.unavailable.unwrap().contains("E_INVALIDARG"));
    }
}
