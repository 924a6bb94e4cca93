//! The JIT section: compilations, time compiling, the slowest functions.

use std::fmt::Write;

use super::units::{ns, truncate};
use crate::report::JitSummary;

/// Functions listed at most, whatever `top`.
const AT_MOST: usize = 10;

pub fn render(o: &mut String, jit: &JitSummary, top: usize) {
    if jit.compilations == 0 {
        return;
    }
    let _ = writeln!(
        o,
        "\nJIT: {} compilations, {} compiling",
        jit.compilations,
        ns(jit.total_ns)
    );
    for j in jit.slowest.iter().take(top.min(AT_MOST)) {
        let _ = writeln!(o, "  {:>10}  {}", ns(j.ns), truncate(&j.name, 100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::JitEntry;

    #[test]
    fn total_and_slowest() {
        let mut o = String::new();
        render(&mut o, &JitSummary::default(), 5);
        assert_eq!(o, "");
        let jit = JitSummary {
            compilations: 3,
            total_ns: 12_345,
            slowest: vec![
                JitEntry {
                    name: "A".into(),
                    ns: 10_000,
                },
                JitEntry {
                    name: "B".into(),
                    ns: 2_345,
                },
            ],
        };
        render(&mut o, &jit, 1);
        assert_eq!(
            o,
            "\nJIT: 3 compilations, 12.3 µs compiling\n     10.0 µs  A\n"
        );
    }
}
