//! The Samples section (sample mode): totals, the functions sampled most, and the
//! samples per thread.

use std::fmt::Write;

use super::units::{ns, truncate};
use crate::samples::{FunctionSamples, SampleTotals};

/// Threads listed at least, whatever `top`.
const THREADS_AT_LEAST: usize = 16;

pub fn render(
    o: &mut String,
    st: &SampleTotals,
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
    if let Some(fs) = functions {
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
    let _ = writeln!(o, "  per thread:");
    for t in st.threads.iter().take(top.max(THREADS_AT_LEAST)) {
        let _ = writeln!(
            o,
            "  {:>8}  {:<28} {:>7} samples {:>7} on CPU {:>10}",
            t.os_tid,
            t.name.as_deref().unwrap_or("(unnamed)"),
            t.samples,
            t.on_cpu,
            ns(t.cpu_ns)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::ThreadSamples;

    fn totals() -> SampleTotals {
        SampleTotals {
            total: 4,
            on_cpu: 3,
            cpu_ns: 30_000_000,
            rate_hz: 99.04,
            requested_rate_hz: Some(100.0),
            threads: vec![ThreadSamples {
                os_tid: 7,
                name: None,
                samples: 4,
                on_cpu: 3,
                cpu_ns: 30_000_000,
            }],
        }
    }

    #[test]
    fn totals_functions_and_threads() {
        let functions = [
            FunctionSamples {
                name: "Hot".into(),
                self_samples: 3,
                total_samples: 3,
                self_cpu_ns: 20_000_000,
                total_cpu_ns: 20_000_000,
            },
            FunctionSamples {
                name: "Main".into(),
                self_samples: 1,
                total_samples: 4,
                self_cpu_ns: 0,
                total_cpu_ns: 30_000_000,
            },
        ];
        let mut o = String::new();
        render(&mut o, &totals(), Some(&functions), 1);
        assert_eq!(
            o,
            "\nSamples: 4 (99.0 Hz achieved, 100 Hz asked; 3 on CPU, 30.0 ms CPU)\n\
             \x20    self   self%   total  total%   self cpu  function\n\
             \x20       3   75.0%       3   75.0%    20.0 ms  Hot\n\
             \x20 per thread:\n\
             \x20        7  (unnamed)                          4 samples       3 on CPU    30.0 ms\n"
        );
    }

    #[test]
    fn without_functions_or_rate_asked() {
        let mut st = totals();
        st.requested_rate_hz = None;
        let mut o = String::new();
        render(&mut o, &st, None, 5);
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(
            lines[1],
            "Samples: 4 (99.0 Hz achieved; 3 on CPU, 30.0 ms CPU)"
        );
        assert_eq!(lines[2], "  per thread:");
    }
}
