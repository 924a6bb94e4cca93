//! The sampler's own figures (sample mode): ticks, missed ticks, truncated stacks.

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
}

/// The sum of the trace's `SamplerStats` records, none if it has none.
#[derive(Debug, Default)]
pub struct Sampler(Option<SamplerStats>);

impl Sampler {
    pub fn observe(&mut self, event: &Event<'_>) {
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
    }

    pub fn finish(self) -> Option<SamplerStats> {
        self.0
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
    }
}
