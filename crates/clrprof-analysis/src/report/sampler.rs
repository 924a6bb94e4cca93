//! The sampler's own figures (sample mode): ticks, missed ticks, truncated stacks, and
//! (format 2.3) its timing: the rate it kept and why it missed or delayed ticks.

use serde::Serialize;

use clrprof_format::Event;

#[derive(Debug, Default, Serialize)]
pub struct SamplerStats {
    pub ticks: u64,
    pub samples: u64,
    pub missed_ticks: u64,
    pub signal_timeouts: u64,
    /// Stacks deeper than `max_depth` (cut; their root-most frame is `[truncated: …]`).
    pub truncated_stacks: u64,
    pub max_depth: u64,
    /// Signal mode (format 2.3 on): walks that met a frame record whose return address no
    /// call instruction precedes; that frame was not taken for managed code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_walks: Option<u64>,
    /// Traces of format 2.3 on: the rate kept and why ticks were missed or late.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<SamplerTiming>,
    /// Signal mode (the `sampler_skips` Meta record): threads left out of a tick, by reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<SamplerSkips>,
}

/// The `Meta` key of the signal sampler's skips.
pub const SKIPS_KEY: &str = "sampler_skips";

/// Threads the signal sampler left out of a tick, by reason (summed over its runs).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SamplerSkips {
    /// The thread's previous signal was still outstanding: its handler had not run (no
    /// free core since, or SIGPROF blocked); that capture came when it ran.
    pub handler_pending: u64,
    /// Every capture slot was outstanding.
    pub no_free_slot: u64,
    /// Signals that could no longer arrive (the thread exited first, or the signal was
    /// merged into another SIGPROF): their slots were taken back (also in
    /// `signal_timeouts`).
    pub signals_lost: u64,
}

impl SamplerSkips {
    pub fn any(&self) -> bool {
        self.handler_pending + self.no_free_slot + self.signals_lost > 0
    }
}

/// The sampler's timing (`SamplerTiming` records, summed over its runs).
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct SamplerTiming {
    /// The rate asked for (the last run's), and the one kept: ticks taken per second run.
    pub asked_hz: f64,
    pub achieved_hz: f64,
    /// Ticks the schedule held over the runs, and the share of them taken.
    pub due_ticks: u64,
    pub achieved_ratio: f64,
    /// Missed ticks by reason: the ticks' own work ran past the next deadlines, or the
    /// sampler thread was free but not scheduled in time (the cores were busy).
    pub missed_own_work: u64,
    pub missed_not_scheduled: u64,
    /// Ticks taken more than an interval late (then at once), by the same reasons.
    pub late_own_work: u64,
    pub late_not_scheduled: u64,
    pub longest_tick_ns: u64,
    pub longest_wake_delay_ns: u64,
    /// Per tick taken: its work, and the part stopping threads and copying their stacks
    /// (signal mode: signalling the threads and collecting the captures that came).
    pub tick_ns: u64,
    pub capture_ns: u64,
}

#[derive(Debug, Default)]
struct TimingSum {
    interval_ns: u64,
    run_ns: u64,
    missed_busy: u64,
    missed_sched: u64,
    late_busy: u64,
    late_sched: u64,
    max_tick_ns: u64,
    max_wake_delay_ns: u64,
    busy_ns: u64,
    capture_ns: u64,
    rejected_walks: u64,
    /// Whether any record was seen.
    seen: bool,
    /// Ticks due over all runs (each run's length over its interval).
    due: u64,
}

/// The sum of the trace's `SamplerStats` (and `SamplerTiming`) records, none if it has none.
#[derive(Debug, Default)]
pub struct Sampler(Option<SamplerStats>, TimingSum, Option<SamplerSkips>);

impl Sampler {
    pub fn observe(&mut self, event: &Event<'_>) {
        if let Event::Meta { key, json } = event
            && key == SKIPS_KEY
            && let Ok(k) = serde_json::from_str::<SamplerSkips>(json)
        {
            let s = self.2.get_or_insert_with(SamplerSkips::default);
            s.handler_pending += k.handler_pending;
            s.no_free_slot += k.no_free_slot;
            s.signals_lost += k.signals_lost;
        }
        if let Event::SamplerStats {
            ticks,
            samples,
            missed_ticks,
            signal_timeouts,
            truncated,
            max_depth,
        } = event
        {
            // One per sampler run (an attach may start more than one): add them up.
            let s = self.0.get_or_insert_with(SamplerStats::default);
            s.ticks += ticks;
            s.samples += samples;
            s.missed_ticks += missed_ticks;
            s.signal_timeouts += signal_timeouts;
            s.truncated_stacks += truncated;
            s.max_depth = *max_depth;
        }
        if let Event::SamplerTiming {
            interval_ns,
            run_ns,
            missed_busy,
            missed_sched,
            late_busy,
            late_sched,
            max_tick_ns,
            max_wake_delay_ns,
            busy_ns,
            capture_ns,
            rejected_walks,
        } = event
        {
            let t = &mut self.1;
            t.seen = true;
            t.interval_ns = *interval_ns;
            t.run_ns = t.run_ns.saturating_add(*run_ns);
            t.due = t.due.saturating_add(run_ns / (*interval_ns).max(1));
            t.missed_busy = t.missed_busy.saturating_add(*missed_busy);
            t.missed_sched = t.missed_sched.saturating_add(*missed_sched);
            t.late_busy = t.late_busy.saturating_add(*late_busy);
            t.late_sched = t.late_sched.saturating_add(*late_sched);
            t.max_tick_ns = t.max_tick_ns.max(*max_tick_ns);
            t.max_wake_delay_ns = t.max_wake_delay_ns.max(*max_wake_delay_ns);
            t.busy_ns = t.busy_ns.saturating_add(*busy_ns);
            t.capture_ns = t.capture_ns.saturating_add(*capture_ns);
            t.rejected_walks = t.rejected_walks.saturating_add(*rejected_walks);
        }
    }

    pub fn finish(self) -> Option<SamplerStats> {
        let Sampler(mut stats, t, skips) = self;
        if let Some(s) = stats.as_mut() {
            s.skipped = skips;
        }
        if let Some(s) = stats.as_mut()
            && t.seen
            && t.interval_ns > 0
            && t.run_ns > 0
        {
            let taken = s.ticks.max(1);
            s.rejected_walks = Some(t.rejected_walks);
            s.timing = Some(SamplerTiming {
                asked_hz: 1e9 / t.interval_ns as f64,
                achieved_hz: s.ticks as f64 * 1e9 / t.run_ns as f64,
                due_ticks: t.due,
                achieved_ratio: if t.due == 0 {
                    1.0
                } else {
                    (s.ticks as f64 / t.due as f64).min(1.0)
                },
                missed_own_work: t.missed_busy,
                missed_not_scheduled: t.missed_sched,
                late_own_work: t.late_busy,
                late_not_scheduled: t.late_sched,
                longest_tick_ns: t.max_tick_ns,
                longest_wake_delay_ns: t.max_wake_delay_ns,
                tick_ns: t.busy_ns / taken,
                capture_ns: t.capture_ns / taken,
            });
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ticks: u64, max_depth: u64) -> Event<'static> {
        Event::SamplerStats {
            ticks,
            samples: 2 * ticks,
            missed_ticks: 1,
            signal_timeouts: 0,
            truncated: 3,
            max_depth,
        }
    }

    #[test]
    fn runs_add_up_and_the_last_depth_stands() {
        assert!(Sampler::default().finish().is_none());
        let mut s = Sampler::default();
        s.observe(&run(10, 64));
        s.observe(&Event::Shutdown {});
        s.observe(&run(5, 128));
        let st = s.finish().unwrap();
        assert_eq!(
            (
                st.ticks,
                st.samples,
                st.missed_ticks,
                st.signal_timeouts,
                st.truncated_stacks,
                st.max_depth
            ),
            (15, 30, 2, 0, 6, 128)
        );
        assert!(st.timing.is_none(), "no SamplerTiming record: no timing");
    }

    #[test]
    fn the_signal_samplers_skips_add_up_over_runs() {
        let skips = |p: u64, n: u64, l: u64| Event::Meta {
            key: SKIPS_KEY.into(),
            json: format!(r#"{{"handler_pending":{p},"no_free_slot":{n},"signals_lost":{l}}}"#)
                .into(),
        };
        let mut s = Sampler::default();
        s.observe(&run(10, 64));
        s.observe(&skips(5, 1, 0));
        s.observe(&run(5, 64));
        s.observe(&skips(2, 0, 3));
        let k = s.finish().unwrap().skipped.unwrap();
        assert_eq!(
            (k.handler_pending, k.no_free_slot, k.signals_lost),
            (7, 1, 3)
        );
        let mut s = Sampler::default();
        s.observe(&run(10, 64));
        assert!(s.finish().unwrap().skipped.is_none());
    }

    #[test]
    fn timing_adds_up_over_runs_and_names_each_missed_ticks_reason() {
        let mut s = Sampler::default();
        s.observe(&run(900, 64));
        s.observe(&Event::SamplerTiming {
            interval_ns: 1_000_000,
            run_ns: 1_000_000_000,
            missed_busy: 60,
            missed_sched: 40,
            late_busy: 5,
            late_sched: 7,
            max_tick_ns: 4_000_000,
            max_wake_delay_ns: 9_000_000,
            busy_ns: 450_000_000,
            capture_ns: 300_000_000,
            rejected_walks: 4,
        });
        let st = s.finish().unwrap();
        let t = st.timing.unwrap();
        assert_eq!((t.asked_hz, t.due_ticks), (1000.0, 1000));
        assert!((t.achieved_hz - 900.0).abs() < 1e-9);
        assert!((t.achieved_ratio - 0.9).abs() < 1e-9);
        assert_eq!((t.missed_own_work, t.missed_not_scheduled), (60, 40));
        assert_eq!((t.tick_ns, t.capture_ns), (500_000, 333_333));
        assert_eq!(
            (t.longest_tick_ns, t.longest_wake_delay_ns),
            (4_000_000, 9_000_000)
        );
        assert_eq!(st.rejected_walks, Some(4));
    }
}
