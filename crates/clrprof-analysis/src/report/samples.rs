//! The Samples section (sample mode): sample totals per thread and figures per
//! function.

use clrprof_format::TraceMeta;

use crate::butterfly::{self, Butterfly};
use crate::lines::{self, LineSamples, Lines, MissingPdb};
use crate::names::Names;
use crate::runtime_frames::Windows;
use crate::samples::{self, Filter, FunctionSamples, SampleTotals, StackSample, View};
use crate::threads::ThreadNames;
use crate::timeline::TimedEvent;

/// What [`Samples::finish`] found.
#[derive(Debug)]
pub struct SamplesSection {
    pub totals: SampleTotals,
    /// Most self samples first.
    pub functions: Vec<FunctionSamples>,
    /// The app's own methods by the CPU of the samples they are the nearest app frame
    /// of ([`crate::app_code`]).
    pub app_functions: Vec<FunctionSamples>,
    /// Callers and callees of the functions `--function` matched.
    pub butterfly: Option<Butterfly>,
    /// Per source line, most first; None when no sample has positions (traces before
    /// 2.1) or lines are not asked for.
    pub lines: Option<Vec<LineSamples>>,
    /// Modules of sampled frames whose lines could not be read, and why.
    pub missing_pdbs: Vec<MissingPdb>,
}

/// What the section shows.
#[derive(Debug, Clone)]
pub struct SampleView<'a> {
    pub view: View,
    pub filter: &'a Filter,
    /// `--function PATTERN`.
    pub function: Option<&'a str>,
    /// Source lines from the modules' PDBs (None: not asked for).
    pub pdb_dirs: Option<&'a [std::path::PathBuf]>,
}

static NO_FILTER: Filter = Filter {
    thread: None,
    from_ns: None,
    to_ns: None,
};

impl Default for SampleView<'_> {
    fn default() -> Self {
        SampleView {
            view: View::Cpu,
            filter: &NO_FILTER,
            function: None,
            pdb_dirs: Some(&[]),
        }
    }
}

#[derive(Debug, Default)]
pub struct Samples {
    samples: Vec<StackSample>,
}

impl Samples {
    pub fn observe(&mut self, e: &TimedEvent<'_>) {
        samples::push_sample(&mut self.samples, e);
    }

    /// None when the trace has no samples.
    pub fn finish(
        mut self,
        meta: &TraceMeta,
        names: &Names,
        threads: &ThreadNames,
        windows: &Windows,
        want: &SampleView<'_>,
    ) -> Option<SamplesSection> {
        if self.samples.is_empty() {
            return None;
        }
        self.samples.retain(|s| {
            want.filter.keeps_time(s.ns) && want.filter.keeps_thread(s.os_tid, threads)
        });
        let folded = samples::prepare(&mut self.samples, names, windows);
        let rate = Some(f64::from(meta.settings.rate_hz));
        let stubs_named = meta.settings.sampler == clrprof_settings::SamplerKind::Signal;
        let mut totals = samples::totals(
            &self.samples,
            names,
            threads,
            rate,
            want.view,
            Some(u64::from(meta.pid)),
        );
        totals.gc_poll_folded = folded;
        // From here on, each sample's CPU is its share of its thread's (the thread table
        // above keeps what each thread used).
        samples::share_cpu(&mut self.samples, names);
        let (app_functions, outside) = crate::app_code::functions(&self.samples, names);
        totals.outside_app_cpu_ns = outside;
        let mut functions = samples::functions(&self.samples, names, want.view, stubs_named);
        let mut resolver = match want.pdb_dirs {
            Some(dirs) if self.samples.iter().any(|s| !s.positions.is_empty()) => {
                Some(Lines::new(dirs.to_vec()))
            }
            _ => None,
        };
        let lines = resolver.as_mut().map(|resolver| {
            let rows = lines::by_line(&self.samples, names, want.view, resolver);
            lines::locate_functions(&mut functions, names, resolver);
            rows
        });
        let butterfly = want.function.map(|p| {
            butterfly::of_samples(
                &self.samples,
                names,
                want.view,
                stubs_named,
                p,
                resolver.as_mut(),
            )
        });
        let missing_pdbs = resolver
            .as_ref()
            .map(|r| r.missing().to_vec())
            .unwrap_or_default();
        Some(SamplesSection {
            lines,
            missing_pdbs,
            totals,
            app_functions,
            functions,
            butterfly,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{at, names};
    use clrprof_format::Event;

    fn sample(ns: u64, os_tid: u64, cpu_ns: u64, frames: &[u64]) -> TimedEvent<'static> {
        let event = Event::Sample {
            os_tid,
            thread: 0,
            cpu_ns,
            state: u8::from(cpu_ns > 0),
            frames: frames.to_vec().into(),
        };
        at(ns, os_tid, event)
    }

    #[test]
    fn no_samples_no_section() {
        let mut s = Samples::default();
        s.observe(&at(0, 1, Event::Shutdown {}));
        let none = s.finish(
            &TraceMeta::default(),
            &Names::default(),
            &Default::default(),
            &Windows::default(),
            &SampleView::default(),
        );
        assert!(none.is_none());
    }

    #[test]
    fn totals_with_the_rate_asked_and_functions() {
        let mut s = Samples::default();
        for e in [
            sample(0, 7, 100, &[1, 2]),
            sample(0, 8, 0, &[2]),
            sample(500_000_000, 7, 50, &[1, 2]),
        ] {
            s.observe(&e);
        }
        let mut meta = TraceMeta::default();
        meta.settings.rate_hz = 3;
        let section = s
            .finish(
                &meta,
                &names(&[(1, "A"), (2, "Main")]),
                &Default::default(),
                &Windows::default(),
                &SampleView {
                    view: View::Wall,
                    ..Default::default()
                },
            )
            .unwrap();
        let t = &section.totals;
        assert_eq!((t.total, t.on_cpu, t.cpu_ns), (3, 2, 150));
        assert_eq!((t.rate_hz, t.requested_rate_hz), (2.0, Some(3.0)));
        let per_thread: Vec<_> = t.threads.iter().map(|t| (t.os_tid, t.samples)).collect();
        assert_eq!(per_thread, [(7, 2), (8, 1)]);
        let functions: Vec<_> = section
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.self_samples, f.total_samples))
            .collect();
        assert_eq!(functions, [("A", 2, 2), ("Main", 1, 3)]);
    }
}
