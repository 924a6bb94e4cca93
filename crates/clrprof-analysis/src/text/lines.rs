//! "CPU by source line" (sample mode, traces with positions): the hottest lines of the
//! app, and the modules whose lines could not be read.

use std::fmt::Write;

use super::units::{ns, truncate};
use crate::lines::{LineSamples, MissingPdb};
use crate::samples::{SampleTotals, View};

/// Modules without lines named in full, at most.
const MISSING_NAMED: usize = 4;

pub fn render(
    o: &mut String,
    st: &SampleTotals,
    lines: &[LineSamples],
    missing: &[MissingPdb],
    top: usize,
) {
    let rows: Vec<&LineSamples> = lines
        .iter()
        .filter(|l| l.self_samples > 0)
        .take(top)
        .collect();
    match st.view {
        View::Cpu => {
            let total = st.attributed_cpu_ns.max(1) as f64;
            let _ = writeln!(o, "  CPU by source line, self:");
            let _ = writeln!(
                o,
                "  {:>10} {:>6} {:>10} {:>7}  line  (method)",
                "self cpu", "self%", "total cpu", "samples"
            );
            for l in rows {
                let _ = writeln!(
                    o,
                    "  {:>10} {:>5.1}% {:>10} {:>7}  {}  ({})",
                    ns(l.self_cpu_ns),
                    100.0 * l.self_cpu_ns as f64 / total,
                    ns(l.total_cpu_ns),
                    l.self_samples,
                    location(l),
                    truncate(&l.function, 80)
                );
            }
        }
        View::Wall => {
            let total = st.total.max(1) as f64;
            let _ = writeln!(o, "  Samples by source line, self:");
            let _ = writeln!(
                o,
                "  {:>7} {:>6} {:>7}  line  (method)",
                "self", "self%", "total"
            );
            for l in rows {
                let _ = writeln!(
                    o,
                    "  {:>7} {:>5.1}% {:>7}  {}  ({})",
                    l.self_samples,
                    100.0 * l.self_samples as f64 / total,
                    l.total_samples,
                    location(l),
                    truncate(&l.function, 80)
                );
            }
        }
    }
    if !missing.is_empty() {
        let _ = writeln!(
            o,
            "  no source lines for {} module(s) (no readable PDB; `--pdb-dir DIR` adds a folder to look in):",
            missing.len()
        );
        for m in missing.iter().take(MISSING_NAMED) {
            let _ = writeln!(o, "    {}", m.reason);
        }
        if missing.len() > MISSING_NAMED {
            let rest: Vec<&str> = missing[MISSING_NAMED..]
                .iter()
                .map(|m| m.module.rsplit('/').next().unwrap_or(&m.module))
                .collect();
            let _ = writeln!(o, "    and {}", rest.join(", "));
        }
    }
}

/// `File.cs:42`: the document's file name and the line.
pub fn location(l: &LineSamples) -> String {
    let name = l.file.rsplit(['/', '\\']).next().unwrap_or(&l.file);
    format!("{name}:{}", l.line)
}
