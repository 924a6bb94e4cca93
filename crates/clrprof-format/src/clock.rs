//! Converting record timestamps (raw ticks) to nanoseconds, from the trace's `ClockSync`
//! points: each pairs a tick reading with CLOCK_MONOTONIC read at the same instant.

use crate::decoded::DecodedEvent;
use crate::events::Event;
use crate::header::{ClockInfo, ClockKind};

/// Maps ticks to nanoseconds: `ns = (ticks - origin) × ns_per_tick`, the rate fitted by
/// least squares over the sync points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockConverter {
    kind: ClockKind,
    ns_per_tick: f64,
    /// A point on the line: (ticks, CLOCK_MONOTONIC ns).
    anchor_ticks: u64,
    anchor_ns: u64,
    origin_ticks: u64,
    rate_known: bool,
}

impl ClockConverter {
    /// Builds a converter from `(ticks, mono_ns)` sync points (the record timestamp and
    /// `mono_ns` of each `ClockSync`), in any order.
    ///
    /// `MonotonicNs` ticks are nanoseconds already. For `Tsc`, two or more points with
    /// distinct ticks give a least-squares rate; with fewer, 1 tick = 1 ns is assumed (see
    /// [`from_clock_info`](Self::from_clock_info) to supply the rate, and
    /// [`rate_known`](Self::rate_known)). The origin (ns 0) is the earliest sync point;
    /// move it with [`with_origin_ticks`](Self::with_origin_ticks).
    pub fn new(kind: ClockKind, syncs: &[(u64, u64)]) -> ClockConverter {
        ClockConverter::build(kind, syncs, None)
    }

    /// Like [`new`](Self::new), using the header's `ticks_per_second` when the sync points
    /// cannot give a rate.
    pub fn from_clock_info(clock: &ClockInfo, syncs: &[(u64, u64)]) -> ClockConverter {
        ClockConverter::build(clock.kind, syncs, clock.ticks_per_second)
    }

    /// Collects the `ClockSync` events of `events` and builds a converter.
    pub fn from_events(clock: &ClockInfo, events: &[DecodedEvent<'_>]) -> ClockConverter {
        let syncs: Vec<(u64, u64)> = events
            .iter()
            .filter_map(|e| match e.event {
                Event::ClockSync { mono_ns, .. } => Some((e.ts, mono_ns)),
                _ => None,
            })
            .collect();
        ClockConverter::from_clock_info(clock, &syncs)
    }

    fn build(
        kind: ClockKind,
        syncs: &[(u64, u64)],
        ticks_per_second: Option<f64>,
    ) -> ClockConverter {
        let first = syncs.iter().copied().min_by_key(|s| s.0);
        let origin_ticks = first.map_or(0, |s| s.0);
        let identity = ClockConverter {
            kind,
            ns_per_tick: 1.0,
            anchor_ticks: 0,
            anchor_ns: 0,
            origin_ticks,
            rate_known: true,
        };
        if kind == ClockKind::MonotonicNs {
            return identity;
        }
        let hinted = ticks_per_second
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(|r| 1e9 / r);
        let (anchor_ticks, anchor_ns, ns_per_tick, rate_known) = match fit(syncs) {
            Some(f) => (f.x0, f.y0, f.slope, true),
            None => {
                let (t, ns) = first.unwrap_or((0, 0));
                (t, ns, hinted.unwrap_or(1.0), hinted.is_some())
            }
        };
        ClockConverter {
            ns_per_tick,
            anchor_ticks,
            anchor_ns,
            rate_known,
            ..identity
        }
    }

    /// Moves ns 0 to `ticks` (e.g. the earliest event, so nothing clamps to 0).
    pub fn with_origin_ticks(self, ticks: u64) -> ClockConverter {
        ClockConverter {
            origin_ticks: ticks,
            ..self
        }
    }

    /// Nanoseconds since the origin; ticks before the origin give 0.
    pub fn to_ns(&self, ticks: u64) -> u64 {
        // Called once per record: u64 → f64 is an instruction, i128 → f64 a library call.
        match ticks.checked_sub(self.origin_ticks) {
            Some(d) => to_u64(d as f64 * self.ns_per_tick),
            None => 0,
        }
    }

    /// The CLOCK_MONOTONIC reading (ns) at `ticks`.
    pub fn to_mono_ns(&self, ticks: u64) -> u64 {
        let d = i128::from(ticks) - i128::from(self.anchor_ticks);
        to_u64(self.anchor_ns as f64 + d as f64 * self.ns_per_tick)
    }

    pub fn kind(&self) -> ClockKind {
        self.kind
    }

    pub fn ns_per_tick(&self) -> f64 {
        self.ns_per_tick
    }

    pub fn origin_ticks(&self) -> u64 {
        self.origin_ticks
    }

    /// False when the tick rate was assumed (a `Tsc` trace with fewer than two usable
    /// sync points and no rate in the header).
    pub fn rate_known(&self) -> bool {
        self.rate_known
    }
}

/// A fitted line through the sync points: (x0, y0) on it, and its slope (ns per tick).
struct Fit {
    x0: u64,
    y0: u64,
    slope: f64,
}

/// Least-squares line through `(ticks, ns)` points, computed on offsets from the first
/// point for precision. `None` without two distinct tick values or for a non-positive
/// slope (damaged sync points).
fn fit(points: &[(u64, u64)]) -> Option<Fit> {
    let &(bx, by) = points.iter().min_by_key(|p| p.0)?;
    let n = points.len() as f64;
    let rel = |&(x, y): &(u64, u64)| ((x - bx) as f64, (i128::from(y) - i128::from(by)) as f64);
    let (sx, sy) = points
        .iter()
        .map(rel)
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = points.iter().map(rel).fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    let slope = sxy / sxx;
    if sxx <= 0.0 || !slope.is_finite() || slope <= 0.0 {
        return None;
    }
    // The line's value at the first point's ticks.
    let y_at_bx = my - slope * mx;
    Some(Fit {
        x0: bx,
        y0: to_u64(by as f64 + y_at_bx),
        slope,
    })
}

fn to_u64(v: f64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        // `as` saturates at u64::MAX. `v + 0.5` truncated is `round` for positive values,
        // without the libm call `round` is on x86-64 without SSE4.1 (once per record).
        (v + 0.5) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_ticks_are_nanoseconds() {
        let c = ClockConverter::new(ClockKind::MonotonicNs, &[(1_000, 1_000), (9_000, 9_000)]);
        assert_eq!(c.to_ns(1_000), 0);
        assert_eq!(c.to_ns(5_500), 4_500);
        assert_eq!(c.to_ns(10), 0);
        assert_eq!(c.to_mono_ns(5_500), 5_500);
        let c = c.with_origin_ticks(0);
        assert_eq!(c.to_ns(10), 10);
        // No sync points at all.
        assert_eq!(
            ClockConverter::new(ClockKind::MonotonicNs, &[]).to_ns(77),
            77
        );
    }

    #[test]
    fn tsc_rate_is_fitted() {
        // 3 GHz TSC starting at a large value, monotonic clock at 5 s.
        let t0 = 987_654_321_000_000u64;
        let m0 = 5_000_000_000u64;
        let syncs: Vec<(u64, u64)> = (0..10)
            .map(|i| (t0 + i * 3_000_000_000, m0 + i * 1_000_000_000))
            .collect();
        let c = ClockConverter::new(ClockKind::Tsc, &syncs);
        assert!(c.rate_known());
        assert!((c.ns_per_tick() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(c.to_ns(t0), 0);
        assert_eq!(c.to_ns(t0 + 3_000), 1_000);
        assert_eq!(c.to_ns(t0 + 27_000_000_000), 9_000_000_000);
        assert_eq!(c.to_mono_ns(t0 + 3_000_000_000), m0 + 1_000_000_000);
    }

    #[test]
    fn least_squares_averages_jitter() {
        // Points jittered by ±100 ns around 2 ticks/ns.
        let syncs = [
            (0, 100),
            (2_000_000, 999_900),
            (4_000_000, 2_000_100),
            (6_000_000, 2_999_900),
        ];
        let c = ClockConverter::new(ClockKind::Tsc, &syncs);
        assert!((c.ns_per_tick() - 0.5).abs() < 1e-4);
        let mid = c.to_mono_ns(3_000_000);
        assert!(mid.abs_diff(1_500_000) < 200, "{mid}");
    }

    #[test]
    fn single_tsc_point_uses_the_header_rate_or_assumes() {
        let info = ClockInfo {
            kind: ClockKind::Tsc,
            ticks_per_second: Some(2e9),
        };
        let c = ClockConverter::from_clock_info(&info, &[(1000, 50)]);
        assert!(c.rate_known());
        assert_eq!(c.to_ns(3000), 1000);
        let c = ClockConverter::new(ClockKind::Tsc, &[(1000, 50)]);
        assert!(!c.rate_known());
        assert_eq!(c.to_ns(3000), 2000);
        // Degenerate: same ticks twice, or time going backwards.
        let c = ClockConverter::new(ClockKind::Tsc, &[(1000, 50), (1000, 60)]);
        assert!(!c.rate_known());
        let c = ClockConverter::new(ClockKind::Tsc, &[(1000, 500), (2000, 60)]);
        assert!(!c.rate_known());
        assert_eq!(c.to_ns(u64::MAX), u64::MAX);
    }

    #[test]
    fn from_events_picks_the_clock_syncs() {
        let ev = |ts, event| DecodedEvent {
            os_tid: 0,
            ts,
            event,
        };
        let events = [
            ev(
                10,
                Event::ClockSync {
                    mono_ns: 100,
                    unix_ns: 0,
                },
            ),
            ev(15, Event::Shutdown {}),
            ev(
                20,
                Event::ClockSync {
                    mono_ns: 105,
                    unix_ns: 0,
                },
            ),
        ];
        let info = ClockInfo {
            kind: ClockKind::Tsc,
            ticks_per_second: None,
        };
        let c = ClockConverter::from_events(&info, &events);
        assert_eq!(c.to_ns(15), 3); // 2.5 rounds to 3 (half away from zero)
        assert_eq!(c.to_ns(20), 5);
    }
}
