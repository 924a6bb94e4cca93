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
            "  no readable PDB for {} module(s) (`--pdb-dir DIR` adds a folder to look in; lines the trace carries are shown):",
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

/// `report --source`: each matching method's lines with self and total CPU and samples
/// beside them (like `pprof list`); line numbers alone when the file is unreadable.
pub fn render_listings(listings: &[crate::lines::Listing]) -> String {
    let mut o = String::new();
    for l in listings {
        let _ = writeln!(o, "{}  ({})", l.function, l.file);
        if l.text.is_empty() {
            let _ = writeln!(o, "  (source not readable here: line numbers only)");
        }
        let _ = writeln!(
            o,
            "  {:>10} {:>10} {:>7} {:>7}  {:>5}",
            "self cpu", "total cpu", "self", "total", "line"
        );
        for (i, &(n, self_cpu, total_cpu, self_n, total_n)) in l.lines.iter().enumerate() {
            let cell = |v: u64, s: String| if v == 0 { ".".to_string() } else { s };
            let _ = writeln!(
                o,
                "  {:>10} {:>10} {:>7} {:>7}  {:>5}  {}",
                cell(self_cpu, ns(self_cpu)),
                cell(total_cpu, ns(total_cpu)),
                cell(self_n, self_n.to_string()),
                cell(total_n, total_n.to_string()),
                n,
                l.text.get(i).map(String::as_str).unwrap_or("")
            );
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::Listing;

    #[test]
    fn a_listing_without_its_source_shows_line_numbers() {
        let l = Listing {
            function: "App.Busy".into(),
            file: "/nowhere/App.cs".into(),
            lines: vec![(10, 0, 0, 0, 0), (11, 2_000_000, 2_000_000, 2, 2)],
            text: Vec::new(),
        };
        let o = render_listings(&[l]);
        assert!(o.contains("line numbers only"), "{o}");
        let row = o.lines().find(|r| r.trim_end().ends_with("11")).unwrap();
        assert!(row.contains("2000.0 µs") || row.contains("2.0 ms"), "{row}");
        assert!(
            o.lines()
                .any(|r| r.trim_end().ends_with("10") && r.contains('.'))
        );
    }
}
