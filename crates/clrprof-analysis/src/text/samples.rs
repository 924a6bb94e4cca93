//! The Samples section (sample mode): totals, the functions sampled most, and the
//! samples per thread.

use std::fmt::Write;

use super::units::{ns, truncate};
use crate::samples::{FunctionSamples, SampleTotals, View};

/// Threads listed at least, whatever `top`.
const THREADS_AT_LEAST: usize = 16;

pub fn render(
    o: &mut String,
    st: &SampleTotals,
    app: Option<&[FunctionSamples]>,
    functions: Option<&[FunctionSamples]>,
    top: usize,
) {
    let _ = writeln!(
        o,
        "\nSamples: {} ({:.1} Hz achieved{}; {} on CPU, {} CPU)",
        st.total,
        st.rate_hz,
        st.requested_rate_hz
            .map(|r| format!(", {r} Hz asked"))
            .unwrap_or_default(),
        st.on_cpu,
        ns(st.cpu_ns)
    );
    if st.gc_poll_folded > 0 {
        let _ = writeln!(
            o,
            "  {} samples stopped at the GC poll are counted in the method that polled",
            st.gc_poll_folded
        );
    }
    if let (View::Cpu, Some(app)) = (st.view, app)
        && !app.is_empty()
    {
        app_table(o, st, app, top);
    }
    if let Some(fs) = functions {
        match st.view {
            View::Cpu => cpu_table(o, st, fs, top),
            View::Wall => wall_table(o, st, fs, top),
        }
    }
    let _ = writeln!(
        o,
        "  per thread:\n  {:>8}  {:<28} {:>10} {:>6} {:>8}  state (samples off CPU by wait)",
        "os tid", "name", "cpu", "cpu%", "samples"
    );
    for t in st.threads.iter().take(top.max(THREADS_AT_LEAST)) {
        let waits: Vec<String> = {
            let mut w: Vec<_> = t.waits.iter().collect();
            w.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            w.iter().map(|(k, n)| format!("{k} {n}")).collect()
        };
        let _ = writeln!(
            o,
            "  {:>8}  {:<28} {:>10} {:>5.1}% {:>8}  {}{}",
            t.os_tid,
            truncate(
                &match (&t.name, &t.role) {
                    (Some(n), _) => n.clone(),
                    (None, Some(role)) => format!("(unnamed: {role})"),
                    (None, None) => "(unnamed)".to_string(),
                },
                28
            ),
            ns(t.cpu_ns),
            t.cpu_percent,
            t.samples,
            t.state,
            if waits.is_empty() {
                String::new()
            } else {
                format!(" ({})", waits.join(", "))
            }
        );
    }
}

/// The app's own methods first: each with the CPU of the samples it is the nearest app
/// frame of (the framework and runtime code it called included).
fn app_table(o: &mut String, st: &SampleTotals, app: &[FunctionSamples], top: usize) {
    let total = st.attributed_cpu_ns.max(1) as f64;
    let _ = writeln!(
        o,
        "  CPU by the app's own methods (with the framework, runtime and native code they call):"
    );
    let _ = writeln!(
        o,
        "  {:>10} {:>6} {:>10} {:>6} {:>7}  method",
        "cpu", "cpu%", "total cpu", "total%", "samples"
    );
    for f in app.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>10} {:>5.1}% {:>10} {:>5.1}% {:>7}  {}",
            ns(f.self_cpu_ns),
            100.0 * f.self_cpu_ns as f64 / total,
            ns(f.total_cpu_ns),
            100.0 * f.total_cpu_ns as f64 / total,
            f.self_samples,
            truncate(&f.name, 90)
        );
    }
    if st.outside_app_cpu_ns > 0 {
        let _ = writeln!(
            o,
            "  {:>10} {:>5.1}%  in threads of the runtime and framework only (no app frame)",
            ns(st.outside_app_cpu_ns),
            100.0 * st.outside_app_cpu_ns as f64 / total,
        );
    }
}

/// Where the CPU went: on-CPU samples weighted by CPU time, most first.
fn cpu_table(o: &mut String, st: &SampleTotals, fs: &[FunctionSamples], top: usize) {
    let total = st.attributed_cpu_ns.max(1) as f64;
    let _ = writeln!(
        o,
        "  CPU by function, self ({} of CPU in samples taken while the thread ran; `--wall` counts every sample):",
        ns(st.attributed_cpu_ns)
    );
    let _ = writeln!(
        o,
        "  {:>10} {:>6} {:>10} {:>6} {:>7}  function",
        "self cpu", "self%", "total cpu", "total%", "samples"
    );
    for f in fs.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>10} {:>5.1}% {:>10} {:>5.1}% {:>7}  {}",
            ns(f.self_cpu_ns),
            100.0 * f.self_cpu_ns as f64 / total,
            ns(f.total_cpu_ns),
            100.0 * f.total_cpu_ns as f64 / total,
            f.self_samples,
            truncate(&f.name, 90)
        );
    }
}

/// Today's wall-clock view: every sample of every thread, running or not.
fn wall_table(o: &mut String, st: &SampleTotals, fs: &[FunctionSamples], top: usize) {
    let total = st.total.max(1) as f64;
    let _ = writeln!(
        o,
        "  {:>7} {:>7} {:>7} {:>7} {:>10}  function",
        "self", "self%", "total", "total%", "self cpu"
    );
    for f in fs.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>7} {:>6.1}% {:>7} {:>6.1}% {:>10}  {}",
            f.self_samples,
            100.0 * f.self_samples as f64 / total,
            f.total_samples,
            100.0 * f.total_samples as f64 / total,
            ns(f.self_cpu_ns),
            truncate(&f.name, 90)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::ThreadSamples;

    fn totals(view: View) -> SampleTotals {
        SampleTotals {
            view,
            total: 4,
            on_cpu: 3,
            cpu_ns: 30_000_000,
            attributed_cpu_ns: 25_000_000,
            rate_hz: 99.04,
            requested_rate_hz: Some(100.0),
            threads: vec![ThreadSamples {
                os_tid: 7,
                name: None,
                samples: 4,
                on_cpu: 3,
                cpu_ns: 30_000_000,
                cpu_percent: 75.0,
                state: crate::waits::ThreadState::Running,
                waits: [(
                    crate::waits::ThreadState::Waiting(crate::waits::WaitKind::Lock),
                    1,
                )]
                .into(),
                role: None,
            }],
            ..Default::default()
        }
    }

    fn functions() -> [FunctionSamples; 2] {
        [
            FunctionSamples {
                name: "Hot".into(),
                self_samples: 3,
                total_samples: 3,
                self_cpu_ns: 20_000_000,
                total_cpu_ns: 20_000_000,
                file: None,
                line: None,
            },
            FunctionSamples {
                name: "Main".into(),
                self_samples: 1,
                total_samples: 4,
                self_cpu_ns: 0,
                total_cpu_ns: 30_000_000,
                file: None,
                line: None,
            },
        ]
    }

    #[test]
    fn the_cpu_view_leads_with_cpu_and_threads_show_their_state() {
        let mut o = String::new();
        render(&mut o, &totals(View::Cpu), None, Some(&functions()), 1);
        assert_eq!(
            o,
            "\nSamples: 4 (99.0 Hz achieved, 100 Hz asked; 3 on CPU, 30.0 ms CPU)\n\
             \x20 CPU by function, self (25.0 ms of CPU in samples taken while the thread ran; `--wall` counts every sample):\n\
             \x20   self cpu  self%  total cpu total% samples  function\n\
             \x20    20.0 ms  80.0%    20.0 ms  80.0%       3  Hot\n\
             \x20 per thread:\n\
             \x20   os tid  name                                cpu   cpu%  samples  state (samples off CPU by wait)\n\
             \x20        7  (unnamed)                       30.0 ms  75.0%        4  running (lock 1)\n"
        );
    }

    #[test]
    fn the_wall_view_counts_samples() {
        let mut o = String::new();
        render(&mut o, &totals(View::Wall), None, Some(&functions()), 1);
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(
            lines[2],
            "     self   self%   total  total%   self cpu  function"
        );
        assert_eq!(
            lines[3],
            "        3   75.0%       3   75.0%    20.0 ms  Hot"
        );
    }
}
