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
