//! The Calls sections (trace mode): the functions by self time, then the call tree of
//! all threads.

use std::fmt::Write;

use super::units::{ns, truncate};
use crate::calltree::{FunctionStats, TraceStats, TreeNode};

/// The exact per-function figures, with the call-tree reconstruction's figures first.
pub fn functions(
    o: &mut String,
    functions: &[FunctionStats],
    stats: Option<&TraceStats>,
    top: usize,
) {
    if let Some(ts) = stats {
        let _ = writeln!(
            o,
            "\nCalls: {} ({} frames closed by exceptions, {} unmatched leaves, {} open at the end)",
            ts.calls, ts.unwound_frames, ts.unmatched_leaves, ts.open_at_end
        );
    }
    let _ = writeln!(
        o,
        "  {:>10} {:>11} {:>11}  function (top by self time)",
        "calls", "inclusive", "self"
    );
    for f in functions.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>10} {:>11} {:>11}  {}",
            f.calls,
            ns(f.inclusive_ns),
            ns(f.self_ns),
            truncate(&f.name, 90)
        );
    }
}

/// `--counts`: what counting knows, calls per function and per caller→callee edge, most
/// calls first (no time: nothing was timed).
pub fn counts(o: &mut String, functions: &[FunctionStats], stats: Option<&TraceStats>, top: usize) {
    if let Some(ts) = stats {
        let _ = writeln!(
            o,
            "\nCalls (counted, --counts): {}{}{}",
            ts.calls,
            if ts.counts_missed > 0 {
                format!(
                    "; {} not counted (a thread's table was full)",
                    ts.counts_missed
                )
            } else {
                String::new()
            },
            if ts.counts_deep > 0 {
                format!(
                    "; {} below the shadow stack (their caller may be a deeper frame)",
                    ts.counts_deep
                )
            } else {
                String::new()
            }
        );
    }
    let mut by_calls: Vec<&FunctionStats> = functions.iter().collect();
    by_calls.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
    let _ = writeln!(o, "  {:>10}  function (by calls)", "calls");
    for f in by_calls.iter().take(top) {
        let _ = writeln!(o, "  {:>10}  {}", f.calls, truncate(&f.name, 100));
    }
    if by_calls.len() > top {
        let _ = writeln!(o, "  … {} more", by_calls.len() - top);
    }
    let mut edges: Vec<(&str, &str, u64)> = functions
        .iter()
        .flat_map(|f| {
            f.callees
                .iter()
                .map(move |(callee, n)| (f.name.as_str(), callee.as_str(), *n))
        })
        .collect();
    if edges.is_empty() {
        return;
    }
    edges.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
    let _ = writeln!(o, "  {:>10}  caller -> callee (by calls)", "calls");
    for (caller, callee, n) in edges.iter().take(top) {
        let _ = writeln!(
            o,
            "  {n:>10}  {} -> {}",
            truncate(caller, 60),
            truncate(callee, 60)
        );
    }
    if edges.len() > top {
        let _ = writeln!(o, "  … {} more", edges.len() - top);
    }
}

/// The merged call tree, `top` children per node at most.
pub fn tree(o: &mut String, tree: &TreeNode, top: usize) {
    let _ = writeln!(o, "\nCall tree (all threads; inclusive, calls)");
    for c in &tree.children {
        tree_lines(o, c, "  ", top);
    }
}

fn tree_lines(o: &mut String, n: &TreeNode, indent: &str, top: usize) {
    let _ = writeln!(
        o,
        "{indent}{} {}  ×{}",
        truncate(&n.name, 80),
        ns(n.inclusive_ns),
        n.calls
    );
    let child_indent = format!("{indent}  ");
    for c in n.children.iter().take(top) {
        tree_lines(o, c, &child_indent, top);
    }
    if n.children.len() > top {
        let _ = writeln!(o, "{child_indent}… {} more", n.children.len() - top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn node(name: &str, inclusive_ns: u64, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            name: name.into(),
            calls: 1,
            inclusive_ns,
            self_ns: 0,
            children,
        }
    }

    #[test]
    fn functions_with_the_stats() {
        let f = FunctionStats {
            name: "A".into(),
            signature: String::new(),
            calls: 2,
            inclusive_ns: 35,
            self_ns: 25,
            callers: BTreeMap::new(),
            callees: BTreeMap::new(),
        };
        let stats = TraceStats {
            calls: 4,
            unwound_frames: 1,
            unmatched_leaves: 0,
            open_at_end: 2,
            ..TraceStats::default()
        };
        let mut o = String::new();
        functions(&mut o, &[f], Some(&stats), 5);
        assert_eq!(
            o,
            "\nCalls: 4 (1 frames closed by exceptions, 0 unmatched leaves, 2 open at the end)\n\
             \x20      calls   inclusive        self  function (top by self time)\n\
             \x20          2       35 ns       25 ns  A\n"
        );
    }

    #[test]
    fn the_tree_indents_and_cuts_children() {
        let root = node(
            "(all)",
            100,
            vec![node(
                "Main",
                100,
                vec![node("A", 60, vec![]), node("B", 30, vec![])],
            )],
        );
        let mut o = String::new();
        tree(&mut o, &root, 1);
        assert_eq!(
            o,
            "\nCall tree (all threads; inclusive, calls)\n\
             \x20 Main 100 ns  ×1\n\
             \x20   A 60 ns  ×1\n\
             \x20   … 1 more\n"
        );
    }
}

#[cfg(test)]
mod counts_tests {
    use super::*;
    use std::collections::BTreeMap;

    fn f(name: &str, calls: u64, callees: &[(&str, u64)]) -> FunctionStats {
        FunctionStats {
            name: name.into(),
            signature: String::new(),
            calls,
            inclusive_ns: 0,
            self_ns: 0,
            callers: BTreeMap::new(),
            callees: callees.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
        }
    }

    #[test]
    fn counts_are_by_calls_without_time_columns() {
        let fs = [
            f("App.Main", 1, &[("App.Fib", 1), ("App.Log", 2)]),
            f("App.Fib", 177, &[("App.Fib", 176)]),
            f("App.Log", 2, &[]),
        ];
        let stats = TraceStats {
            calls: 180,
            ..Default::default()
        };
        let mut o = String::new();
        counts(&mut o, &fs, Some(&stats), 2);
        assert_eq!(
            o,
            "\nCalls (counted, --counts): 180\n\
             \x20      calls  function (by calls)\n\
             \x20        177  App.Fib\n\
             \x20          2  App.Log\n\
             \x20 … 1 more\n\
             \x20      calls  caller -> callee (by calls)\n\
             \x20        176  App.Fib -> App.Fib\n\
             \x20          2  App.Main -> App.Log\n\
             \x20 … 1 more\n"
        );
    }
}
