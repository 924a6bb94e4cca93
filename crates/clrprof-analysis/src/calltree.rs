//! Tracing analysis: exact call trees rebuilt from enter/leave/tailcall records.
//!
//! Each record carries the caller's stack pointer (low 32 bits), which identifies the
//! frame. The rebuilt shadow stack therefore repairs itself: a Leave closes the frame
//! with its SP and every deeper frame still open (they were unwound by an exception and
//! got no Leave); an Enter first closes open frames at the same or a shallower SP (dead
//! frames, whatever callbacks the runtime did or did not send). Frames closed that way end
//! at the moment the exception was caught (ExceptionCatcherEnter) when known. A tail call
//! closes the calling frame; the callee's Enter reuses its SP.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use clrprof_format::{Event, ExceptionPhase};

use crate::names::Names;
use crate::threads::ThreadNames;
use crate::timeline::TimedEvent;

#[derive(Debug, Clone, Serialize)]
pub struct FunctionStats {
    pub name: String,
    pub signature: String,
    pub calls: u64,
    /// Time inside the function and its callees; recursive activations are counted once
    /// (from the outermost entry to its exit).
    pub inclusive_ns: u64,
    /// Time inside the function itself, callees excluded.
    pub self_ns: u64,
    /// Caller name → calls made from it.
    pub callers: BTreeMap<String, u64>,
    /// Callee name → calls made to it.
    pub callees: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TreeNode {
    pub name: String,
    pub calls: u64,
    pub inclusive_ns: u64,
    pub self_ns: u64,
    pub children: Vec<TreeNode>,
}

#[derive(Debug, Serialize)]
pub struct ThreadTree {
    pub os_tid: u64,
    pub name: Option<String>,
    /// First to last record of the thread.
    pub span_ns: u64,
    pub root: TreeNode,
}

#[derive(Debug, Default, Serialize)]
pub struct TraceStats {
    pub calls: u64,
    /// Frames closed without their own Leave (unwound by exceptions).
    pub unwound_frames: u64,
    /// Leave/Tailcall records that matched no open frame.
    pub unmatched_leaves: u64,
    /// Frames still open when the trace ended (closed at the thread's last record).
    pub open_at_end: u64,
}

/// One call with its exact interval, as the exporters' timelines need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallInterval {
    pub function: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Frames below it on the thread's stack.
    pub depth: u32,
}

pub struct CallTrees {
    pub functions: Vec<FunctionStats>,
    pub merged: TreeNode,
    pub threads: Vec<ThreadTree>,
    pub stats: TraceStats,
    /// Every call per OS thread, in closing order (only when asked for: it is large).
    pub intervals: BTreeMap<u64, Vec<CallInterval>>,
}

struct Node {
    func: u64,
    calls: u64,
    inclusive: u64,
    self_ns: u64,
    children: HashMap<u64, usize>,
}

struct Frame {
    func: u64,
    sp: u32,
    start: u64,
    child: u64,
    node: usize,
}

#[derive(Default)]
struct FuncAcc {
    calls: u64,
    inclusive: u64,
    self_ns: u64,
    callers: HashMap<u64, u64>,
    callees: HashMap<u64, u64>,
}

struct ThreadState {
    nodes: Vec<Node>,
    stack: Vec<Frame>,
    /// Active activations per function (for recursion-aware inclusive time).
    active: HashMap<u64, u32>,
    unwound_at: Option<u64>,
    first: u64,
    last: u64,
    intervals: Option<Vec<CallInterval>>,
}

impl ThreadState {
    fn new(ns: u64, keep_intervals: bool) -> Self {
        ThreadState {
            nodes: vec![Node {
                func: 0,
                calls: 0,
                inclusive: 0,
                self_ns: 0,
                children: HashMap::new(),
            }],
            stack: Vec::new(),
            active: HashMap::new(),
            unwound_at: None,
            first: ns,
            last: ns,
            intervals: keep_intervals.then(Vec::new),
        }
    }

    fn enter(
        &mut self,
        func: u64,
        sp: u32,
        ns: u64,
        funcs: &mut HashMap<u64, FuncAcc>,
        stats: &mut TraceStats,
    ) {
        while let Some(top) = self.stack.last() {
            if (top.sp.wrapping_sub(sp) as i32) <= 0 {
                let at = self.unwound_at.unwrap_or(ns);
                self.close(at, funcs);
                stats.unwound_frames += 1;
            } else {
                break;
            }
        }
        self.unwound_at = None;
        let parent_node = self.stack.last().map(|f| f.node).unwrap_or(0);
        let parent_func = self.stack.last().map(|f| f.func).unwrap_or(0);
        let next = self.nodes.len();
        let node = *self.nodes[parent_node].children.entry(func).or_insert(next);
        if node == next {
            self.nodes.push(Node {
                func,
                calls: 0,
                inclusive: 0,
                self_ns: 0,
                children: HashMap::new(),
            });
        }
        self.nodes[node].calls += 1;
        let acc = funcs.entry(func).or_default();
        acc.calls += 1;
        if parent_func != 0 {
            *acc.callers.entry(parent_func).or_default() += 1;
            *funcs
                .entry(parent_func)
                .or_default()
                .callees
                .entry(func)
                .or_default() += 1;
        }
        *self.active.entry(func).or_default() += 1;
        self.stack.push(Frame {
            func,
            sp,
            start: ns,
            child: 0,
            node,
        });
        stats.calls += 1;
    }

    fn leave(
        &mut self,
        func: u64,
        sp: u32,
        ns: u64,
        funcs: &mut HashMap<u64, FuncAcc>,
        stats: &mut TraceStats,
    ) {
        let Some(k) = self
            .stack
            .iter()
            .rposition(|f| f.func == func && f.sp == sp)
        else {
            stats.unmatched_leaves += 1;
            return;
        };
        while self.stack.len() > k + 1 {
            let at = self.unwound_at.unwrap_or(ns);
            self.close(at, funcs);
            stats.unwound_frames += 1;
        }
        self.unwound_at = None;
        self.close(ns, funcs);
    }

    fn close(&mut self, ns: u64, funcs: &mut HashMap<u64, FuncAcc>) {
        let Some(f) = self.stack.pop() else { return };
        if let Some(v) = self.intervals.as_mut() {
            v.push(CallInterval {
                function: f.func,
                start_ns: f.start,
                end_ns: ns,
                depth: self.stack.len() as u32,
            });
        }
        let dur = ns.saturating_sub(f.start);
        let self_ns = dur.saturating_sub(f.child);
        let node = &mut self.nodes[f.node];
        node.inclusive += dur;
        node.self_ns += self_ns;
        let acc = funcs.entry(f.func).or_default();
        acc.self_ns += self_ns;
        let active = self.active.entry(f.func).or_default();
        *active = active.saturating_sub(1);
        if *active == 0 {
            acc.inclusive += dur;
        }
        match self.stack.last_mut() {
            Some(parent) => parent.child += dur,
            None => self.nodes[0].inclusive += dur,
        }
    }
}

/// Rebuilds every thread's calls. `max_depth` bounds the exported trees (not the stats).
pub fn build(
    events: &[TimedEvent<'_>],
    names: &Names,
    threads: &ThreadNames,
    max_depth: usize,
) -> CallTrees {
    build_with_intervals(events, names, threads, max_depth, false)
}

/// As [`build`], and with `keep_intervals` also every call's interval (for exports).
pub fn build_with_intervals(
    events: &[TimedEvent<'_>],
    names: &Names,
    threads: &ThreadNames,
    max_depth: usize,
    keep_intervals: bool,
) -> CallTrees {
    let mut b = Builder::new(keep_intervals);
    for e in events {
        b.push(e);
    }
    b.finish(names, threads, max_depth)
}

/// Builds the call trees one event at a time, so that a trace's calls never have to be
/// held in memory: memory grows with the tree (distinct call paths) and the deepest
/// stack, not with the number of calls (unless intervals are kept).
///
/// Events must come in each thread's recorded order; threads may interleave.
pub struct Builder {
    states: BTreeMap<u64, ThreadState>,
    funcs: HashMap<u64, FuncAcc>,
    stats: TraceStats,
    keep_intervals: bool,
}

impl Builder {
    /// `keep_intervals`: also keep every call's interval (for timeline exports).
    pub fn new(keep_intervals: bool) -> Builder {
        Builder {
            states: BTreeMap::new(),
            funcs: HashMap::new(),
            stats: TraceStats::default(),
            keep_intervals,
        }
    }

    /// Takes one event; only calls and exception catches matter, others are ignored.
    pub fn push(&mut self, e: &TimedEvent<'_>) {
        let (kind, func, sp) = match &e.event {
            Event::Enter { function, sp } => (0, *function, *sp as u32),
            Event::Leave { function, sp } => (1, *function, *sp as u32),
            Event::Tailcall { function, sp } => (1, *function, *sp as u32),
            Event::ExceptionPhase {
                phase: ExceptionPhase::CatcherEnter,
                ..
            } => {
                if let Some(st) = self.states.get_mut(&e.os_tid) {
                    st.unwound_at = Some(e.ns);
                }
                return;
            }
            _ => return,
        };
        let keep = self.keep_intervals;
        let st = self
            .states
            .entry(e.os_tid)
            .or_insert_with(|| ThreadState::new(e.ns, keep));
        st.last = e.ns;
        if kind == 0 {
            st.enter(func, sp, e.ns, &mut self.funcs, &mut self.stats);
        } else {
            st.leave(func, sp, e.ns, &mut self.funcs, &mut self.stats);
        }
    }

    /// Closes the frames still open and names everything.
    pub fn finish(self, names: &Names, threads: &ThreadNames, max_depth: usize) -> CallTrees {
        let Builder {
            mut states,
            mut funcs,
            mut stats,
            ..
        } = self;
        for st in states.values_mut() {
            while !st.stack.is_empty() {
                stats.open_at_end += 1;
                let last = st.last;
                st.close(last, &mut funcs);
            }
        }
        finish(states, funcs, stats, names, threads, max_depth)
    }
}

fn finish(
    mut states: BTreeMap<u64, ThreadState>,
    funcs: HashMap<u64, FuncAcc>,
    stats: TraceStats,
    names: &Names,
    threads: &ThreadNames,
    max_depth: usize,
) -> CallTrees {
    let name = |f: u64| {
        if f == 0 {
            "[root]".to_string()
        } else {
            names.function(f)
        }
    };
    let mut functions: Vec<FunctionStats> = funcs
        .iter()
        .map(|(f, a)| FunctionStats {
            name: name(*f),
            signature: names
                .functions
                .get(f)
                .map(|n| n.signature.clone())
                .unwrap_or_default(),
            calls: a.calls,
            inclusive_ns: a.inclusive,
            self_ns: a.self_ns,
            callers: a.callers.iter().map(|(c, n)| (name(*c), *n)).collect(),
            callees: a.callees.iter().map(|(c, n)| (name(*c), *n)).collect(),
        })
        .collect();
    functions.sort_by(|a, b| b.self_ns.cmp(&a.self_ns).then_with(|| a.name.cmp(&b.name)));
    let mut merged = TreeNode {
        name: "[root]".into(),
        calls: 0,
        inclusive_ns: 0,
        self_ns: 0,
        children: Vec::new(),
    };
    let mut out_threads = Vec::new();
    for (tid, st) in &states {
        let root = export(&st.nodes, 0, &name, max_depth);
        merge(&mut merged, &root);
        out_threads.push(ThreadTree {
            os_tid: *tid,
            name: threads.named(*tid).map(String::from),
            span_ns: st.last - st.first,
            root,
        });
    }
    let intervals = states
        .iter_mut()
        .filter_map(|(tid, st)| st.intervals.take().map(|v| (*tid, v)))
        .collect();
    CallTrees {
        functions,
        merged,
        threads: out_threads,
        stats,
        intervals,
    }
}

fn export(nodes: &[Node], i: usize, name: &dyn Fn(u64) -> String, depth: usize) -> TreeNode {
    let n = &nodes[i];
    let mut children: Vec<TreeNode> = if depth == 0 {
        Vec::new()
    } else {
        n.children
            .values()
            .map(|c| export(nodes, *c, name, depth - 1))
            .collect()
    };
    children.sort_by(|a, b| {
        b.inclusive_ns
            .cmp(&a.inclusive_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    TreeNode {
        name: name(n.func),
        calls: n.calls,
        inclusive_ns: n.inclusive,
        self_ns: n.self_ns,
        children,
    }
}

fn merge(into: &mut TreeNode, from: &TreeNode) {
    into.calls += from.calls;
    into.inclusive_ns += from.inclusive_ns;
    into.self_ns += from.self_ns;
    for c in &from.children {
        match into.children.iter_mut().find(|x| x.name == c.name) {
            Some(x) => merge(x, c),
            None => into.children.push(c.clone()),
        }
    }
    into.children.sort_by(|a, b| {
        b.inclusive_ns
            .cmp(&a.inclusive_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ns: u64, event: Event<'static>) -> TimedEvent<'static> {
        TimedEvent {
            ns,
            os_tid: 1,
            event,
        }
    }
    fn enter(ns: u64, f: u64, sp: u64) -> TimedEvent<'static> {
        ev(ns, Event::Enter { function: f, sp })
    }
    fn leave(ns: u64, f: u64, sp: u64) -> TimedEvent<'static> {
        ev(ns, Event::Leave { function: f, sp })
    }
    fn names() -> Names {
        let mut n = Names::default();
        for (id, name) in [(1, "Main"), (2, "A"), (3, "B"), (4, "C"), (5, "Catcher")] {
            n.functions.insert(
                id,
                crate::names::FunctionName {
                    name: name.into(),
                    signature: String::new(),
                },
            );
        }
        n
    }
    fn build_for(events: &[TimedEvent<'static>]) -> CallTrees {
        build(events, &names(), &ThreadNames::default(), 64)
    }
    fn stats<'a>(t: &'a CallTrees, name: &str) -> &'a FunctionStats {
        t.functions.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn nested_calls_give_inclusive_and_self_times() {
        let t = build_for(&[
            enter(0, 1, 1000),
            enter(10, 2, 900),
            leave(30, 2, 900),
            enter(40, 2, 900),
            leave(50, 2, 900),
            leave(100, 1, 1000),
        ]);
        assert_eq!(stats(&t, "Main").inclusive_ns, 100);
        assert_eq!(stats(&t, "Main").self_ns, 70);
        assert_eq!(stats(&t, "A").calls, 2);
        assert_eq!(stats(&t, "A").inclusive_ns, 30);
        assert_eq!(stats(&t, "A").callers["Main"], 2);
        assert_eq!(t.stats.unwound_frames, 0);
        assert_eq!(t.merged.inclusive_ns, 100);
    }

    #[test]
    fn frames_an_exception_unwound_close_when_it_was_caught() {
        // Main → A → B → C; C throws, caught in A (no Leave for B and C), then A calls C again.
        let t = build_for(&[
            enter(0, 1, 1000),
            enter(10, 2, 900),
            enter(20, 3, 800),
            enter(30, 4, 700),
            ev(
                50,
                Event::ExceptionPhase {
                    phase: ExceptionPhase::CatcherEnter,
                    function: 2,
                },
            ),
            enter(60, 4, 800),
            leave(70, 4, 800),
            leave(80, 2, 900),
            leave(90, 1, 1000),
        ]);
        assert_eq!(t.stats.unwound_frames, 2);
        assert_eq!(t.stats.unmatched_leaves, 0);
        assert_eq!(stats(&t, "B").inclusive_ns, 30); // 20 → caught at 50
        assert_eq!(stats(&t, "C").calls, 2);
        assert_eq!(stats(&t, "C").inclusive_ns, 20 + 10);
        assert_eq!(stats(&t, "C").callers["B"], 1);
        assert_eq!(stats(&t, "C").callers["A"], 1);
        assert_eq!(stats(&t, "Main").inclusive_ns, 90);
    }

    #[test]
    fn intervals_follow_the_same_repair_rules() {
        let events = [
            enter(0, 1, 1000),
            enter(10, 2, 900),
            enter(20, 3, 800),
            ev(
                35,
                Event::ExceptionPhase {
                    phase: ExceptionPhase::CatcherEnter,
                    function: 2,
                },
            ),
            leave(40, 2, 900),
            leave(50, 1, 1000),
        ];
        let t = build_with_intervals(&events, &names(), &ThreadNames::default(), 0, true);
        let calls = &t.intervals[&1];
        let b = CallInterval {
            function: 3,
            start_ns: 20,
            end_ns: 35,
            depth: 2,
        };
        let a = CallInterval {
            function: 2,
            start_ns: 10,
            end_ns: 40,
            depth: 1,
        };
        let main = CallInterval {
            function: 1,
            start_ns: 0,
            end_ns: 50,
            depth: 0,
        };
        assert_eq!(calls, &vec![b, a, main]);
        assert!(build_for(&events).intervals.is_empty());
    }

    #[test]
    fn duplicated_or_missing_unwind_callbacks_do_not_matter() {
        // The same as above with unwind callbacks sent twice (.NET 9/10): the rebuild only
        // looks at stack pointers.
        let mut events = vec![enter(0, 1, 1000), enter(10, 2, 900), enter(20, 3, 800)];
        for _ in 0..2 {
            events.push(ev(
                25,
                Event::ExceptionPhase {
                    phase: ExceptionPhase::UnwindFunctionEnter,
                    function: 3,
                },
            ));
            events.push(ev(
                25,
                Event::ExceptionPhase {
                    phase: ExceptionPhase::UnwindFunctionLeave,
                    function: 0,
                },
            ));
        }
        events.extend([leave(40, 2, 900), leave(50, 1, 1000)]);
        let t = build_for(&events);
        assert_eq!(t.stats.unwound_frames, 1);
        assert_eq!(t.stats.unmatched_leaves, 0);
        assert_eq!(stats(&t, "A").inclusive_ns, 30);
    }

    #[test]
    fn a_tail_call_replaces_the_frame() {
        // A tail-calls B, B tail-calls A, …: each callee enters at the caller's SP.
        let mut events = vec![enter(0, 1, 1000)];
        let mut ns = 1;
        for i in 0..100 {
            let f = if i % 2 == 0 { 2 } else { 3 };
            events.push(enter(ns, f, 900));
            events.push(ev(
                ns + 1,
                Event::Tailcall {
                    function: f,
                    sp: 900,
                },
            ));
            ns += 2;
        }
        events.push(leave(ns, 1, 1000));
        let t = build_for(&events);
        assert_eq!(stats(&t, "A").calls, 50);
        assert_eq!(stats(&t, "B").calls, 50);
        // Flat: both are children of Main, never nested in each other.
        let main = &t.merged.children[0];
        assert_eq!(main.name, "Main");
        assert!(main.children.iter().all(|c| c.children.is_empty()));
        assert_eq!(t.stats.open_at_end, 0);
    }

    #[test]
    fn recursion_counts_inclusive_time_once() {
        let t = build_for(&[
            enter(0, 2, 1000),
            enter(10, 2, 900),
            enter(20, 2, 800),
            leave(30, 2, 800),
            leave(40, 2, 900),
            leave(50, 2, 1000),
        ]);
        let a = stats(&t, "A");
        assert_eq!(a.calls, 3);
        assert_eq!(a.inclusive_ns, 50);
        assert_eq!(a.self_ns, 50);
        assert_eq!(a.callers["A"], 2);
    }
}
