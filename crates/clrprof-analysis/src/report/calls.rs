//! The Calls section (trace mode): per-function figures and the call trees, rebuilt
//! from the call records, which [`Trace::for_each_call`](crate::Trace::for_each_call)
//! streams from the file (they are not on the timeline).

use crate::calltree::{self, FunctionStats, ThreadTree, TraceStats, TreeNode};
use crate::names::Names;
use crate::threads::ThreadNames;
use crate::timeline::{TimedCall, TimedEvent};

/// What [`Calls::finish`] found.
#[derive(Debug)]
pub struct CallsSection {
    pub functions: Vec<FunctionStats>,
    /// All threads' calls in one tree.
    pub tree: TreeNode,
    pub thread_trees: Vec<ThreadTree>,
    pub stats: TraceStats,
}

pub struct Calls {
    builder: calltree::Builder,
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            builder: calltree::Builder::new(false),
        }
    }
}

impl Calls {
    /// Takes one call record or exception catch, in its thread's recorded order.
    pub fn observe(&mut self, e: &TimedEvent<'_>) {
        self.builder.push(e);
    }

    /// Takes one Enter, Leave or Tailcall, in its thread's recorded order.
    #[inline]
    pub fn observe_call(&mut self, e: &TimedCall) {
        self.builder.push_call(e);
    }

    /// An empty collector for another worker's threads
    /// ([`Trace::calls_on_workers`](crate::Trace::calls_on_workers)).
    pub fn fork(&self) -> Calls {
        Calls {
            builder: self
                .builder
                .fork()
                .unwrap_or_else(|| calltree::Builder::new(false)),
        }
    }

    /// Takes in what `other` collected from other threads.
    pub fn join(&mut self, other: Calls) {
        self.builder.join(other.builder);
    }

    /// The trees go `depth` calls deep at most.
    pub fn finish(self, names: &Names, threads: &ThreadNames, depth: usize) -> CallsSection {
        // The trees are built and dropped recursively: bound their depth.
        let trees = self
            .builder
            .finish(names, threads, depth.min(calltree::MAX_PATH_DEPTH));
        CallsSection {
            functions: trees.functions,
            tree: trees.merged,
            thread_trees: trees.threads,
            stats: trees.stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{at, names};
    use clrprof_format::Event;

    /// Main calls A twice; A calls B once.
    fn calls() -> Vec<TimedEvent<'static>> {
        let enter = |ns, function, sp| at(ns, 1, Event::Enter { function, sp });
        let leave = |ns, function, sp| at(ns, 1, Event::Leave { function, sp });
        vec![
            enter(0, 1, 1000),
            enter(10, 2, 900),
            enter(20, 3, 800),
            leave(30, 3, 800),
            leave(40, 2, 900),
            enter(50, 2, 900),
            leave(55, 2, 900),
            leave(100, 1, 1000),
        ]
    }

    fn collected(depth: usize) -> CallsSection {
        let mut c = Calls::default();
        for e in calls() {
            c.observe(&e);
        }
        c.finish(
            &names(&[(1, "Main"), (2, "A"), (3, "B")]),
            &Default::default(),
            depth,
        )
    }

    fn tree(n: &TreeNode) -> String {
        let children: Vec<String> = n.children.iter().map(tree).collect();
        format!("{}×{}[{}]", n.name, n.calls, children.join(","))
    }

    #[test]
    fn functions_trees_and_stats() {
        let s = collected(64);
        let functions: Vec<_> = s
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.calls, f.inclusive_ns, f.self_ns))
            .collect();
        assert_eq!(
            functions,
            [("Main", 1, 100, 65), ("A", 2, 35, 25), ("B", 1, 10, 10)]
        );
        assert_eq!(tree(&s.tree.children[0]), "Main×1[A×2[B×1[]]]");
        assert_eq!(s.thread_trees.len(), 1);
        assert_eq!(s.stats.calls, 4);
        assert_eq!(s.stats.open_at_end, 0);
    }

    #[test]
    fn depth_bounds_the_trees() {
        let s = collected(2);
        assert_eq!(tree(&s.tree.children[0]), "Main×1[A×2[]]");
    }
}
