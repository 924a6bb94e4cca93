//! Tracing analysis: exact call trees rebuilt from enter/leave/tailcall records.
//!
//! Each record carries the caller's stack pointer (low 32 bits), which identifies the
//! frame. The rebuilt shadow stack therefore repairs itself: a Leave closes the frame
//! with its SP and every deeper frame still open (they were unwound by an exception and
//! got no Leave); an Enter first closes open frames at the same or a shallower SP (dead
//! frames, whatever callbacks the runtime did or did not send). Frames closed that way end
//! at the moment the exception was caught (ExceptionCatcherEnter) when known. A tail call
//! closes the calling frame; the callee's Enter reuses its SP.

use std::collections::{BTreeMap, BinaryHeap};

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use clrprof_format::{EltKind, Event, ExceptionPhase};

use crate::names::Names;
use crate::threads::ThreadNames;
use crate::timeline::{TimedCall, TimedEvent};

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

impl TreeNode {
    /// Cuts the tree `depth` levels below this node.
    pub fn prune(&mut self, depth: usize) {
        if depth == 0 {
            self.children.clear();
        } else {
            for c in &mut self.children {
                c.prune(depth - 1);
            }
        }
    }
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
    /// `--counts`: calls the agent could not count (a thread's table was full).
    #[serde(skip_serializing_if = "is_zero")]
    pub counts_missed: u64,
    /// `--counts`: calls made below a thread's shadow stack (their caller may be the
    /// deepest frame kept).
    #[serde(skip_serializing_if = "is_zero")]
    pub counts_deep: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One call with its exact interval, as the exporters' timelines need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallInterval {
    pub function: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Frames below it on the thread's stack.
    pub depth: u32,
    /// The values `--args` recorded for this call: its index in [`CallTrees::values`].
    pub values: Option<u32>,
}

/// What `--args` recorded for one call, attached to the call as the trace goes (the
/// `CallArgs` after its `Enter`, the `CallReturn` before its `Leave`, both with its
/// stack pointer), still encoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallValues {
    pub function: u64,
    /// The `CallArgs` values.
    pub args: Vec<u8>,
    /// The `CallReturn` values.
    pub ret: Option<Vec<u8>>,
    /// An exception unwound the call (`CallUnwound`).
    pub unwound: bool,
}

pub struct CallTrees {
    pub functions: Vec<FunctionStats>,
    pub merged: TreeNode,
    pub threads: Vec<ThreadTree>,
    pub stats: TraceStats,
    /// Every call per OS thread, in closing order (only when asked for: it is large).
    pub intervals: BTreeMap<u64, Vec<CallInterval>>,
    /// Calls left out of `intervals` by [`Builder::limit_intervals`].
    pub intervals_dropped: u64,
    /// When any were: the kept intervals are the calls that started before this time.
    pub intervals_until_ns: Option<u64>,
    /// Per OS thread, the calls aggregated by call path (only when asked for).
    pub paths: BTreeMap<u64, Vec<PathStats>>,
    /// The recorded values of the kept intervals' calls ([`CallInterval::values`]).
    pub values: Vec<CallValues>,
}

/// The calls of one call path (root first), as a flamegraph counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathStats {
    /// Function ids, root first.
    pub stack: Vec<u64>,
    pub calls: u64,
    pub self_ns: u64,
}

/// What the accumulators of all threads share.
#[derive(Default)]
struct Shared {
    /// Per function (filled at the end from `accs`, and by `--counts` tables).
    funcs: HashMap<u64, FuncAcc>,
    /// Function id → index into `accs`: one lookup per call, none per return.
    ids: HashMap<u64, u32>,
    accs: Vec<(u64, FuncAcc)>,
    /// Calls per (caller, callee), folded into the functions' `callers` and `callees` at
    /// the end: one map update per call instead of two.
    edges: HashMap<(u64, u64), u64>,
    stats: TraceStats,
    limit: Option<Limit>,
    /// Recorded values of calls (kept intervals only).
    values: Vec<CallValues>,
}

impl Shared {
    /// The dense index of `func`'s accumulator.
    fn id(&mut self, func: u64) -> u32 {
        let accs = &mut self.accs;
        *self.ids.entry(func).or_insert_with(|| {
            accs.push((func, FuncAcc::default()));
            (accs.len() - 1) as u32
        })
    }
}

/// The earliest-starting `max` intervals of all threads: a max-heap on start time. Once
/// full, a call that starts later than every kept one is dropped at once; an earlier one
/// replaces the latest kept. What remains is every call that started before `until`.
struct Limit {
    max: usize,
    heap: BinaryHeap<Kept>,
    until: u64,
    dropped: u64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Kept {
    start_ns: u64,
    os_tid: u64,
    end_ns: u64,
    function: u64,
    depth: u32,
    values: Option<u32>,
}

struct Node {
    func: u64,
    /// The function's index in `Shared::accs`.
    acc: u32,
    calls: u64,
    inclusive: u64,
    self_ns: u64,
    children: HashMap<u64, usize>,
    /// The child `children` gave last, `(func, node)` (`NO_CHILD` before the first):
    /// a node's next call is most often to the same function (a loop, a recursion), and
    /// this skips the hash lookup then.
    last_child: (u64, usize),
}

const NO_CHILD: (u64, usize) = (0, usize::MAX);

struct Frame {
    func: u64,
    /// The function's index in `Shared::accs` (and `ThreadState::active`).
    acc: u32,
    sp: u32,
    start: u64,
    child: u64,
    node: usize,
    /// Its recorded values, by index in `Shared::values`.
    values: Option<u32>,
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
    /// Active activations per function, by `Shared::accs` index (for recursion-aware
    /// inclusive time).
    active: Vec<u32>,
    unwound_at: Option<u64>,
    first: u64,
    last: u64,
    intervals: Option<Vec<CallInterval>>,
    os_tid: u64,
}

impl ThreadState {
    fn new(os_tid: u64, ns: u64, keep_intervals: bool) -> Self {
        ThreadState {
            os_tid,
            nodes: vec![Node {
                func: 0,
                acc: u32::MAX,
                calls: 0,
                inclusive: 0,
                self_ns: 0,
                children: HashMap::default(),
                last_child: NO_CHILD,
            }],
            stack: Vec::new(),
            active: Vec::new(),
            unwound_at: None,
            first: ns,
            last: ns,
            intervals: keep_intervals.then(Vec::new),
        }
    }

    #[inline]
    fn enter(&mut self, func: u64, sp: u32, ns: u64, sh: &mut Shared) {
        while let Some(top) = self.stack.last() {
            if (top.sp.wrapping_sub(sp) as i32) <= 0 {
                let at = self.unwound_at.unwrap_or(ns);
                self.close(at, sh);
                sh.stats.unwound_frames += 1;
            } else {
                break;
            }
        }
        self.unwound_at = None;
        let parent_node = self.stack.last().map(|f| f.node).unwrap_or(0);
        let next = self.nodes.len();
        let parent = &mut self.nodes[parent_node];
        let node = if parent.last_child.1 != usize::MAX && parent.last_child.0 == func {
            parent.last_child.1
        } else {
            let node = *parent.children.entry(func).or_insert(next);
            parent.last_child = (func, node);
            node
        };
        // A node knows its function's accumulator: one hash lookup per call (the node),
        // and the edges are summed from the tree at the end.
        let id = if node == next {
            let id = sh.id(func);
            self.nodes.push(Node {
                func,
                acc: id,
                calls: 0,
                inclusive: 0,
                self_ns: 0,
                children: HashMap::default(),
                last_child: NO_CHILD,
            });
            id
        } else {
            self.nodes[node].acc
        };
        // A function's calls, and all calls, are its nodes' summed at the end.
        self.nodes[node].calls += 1;
        if self.active.len() <= id as usize {
            self.active.resize(id as usize + 1, 0);
        }
        self.active[id as usize] += 1;
        self.stack.push(Frame {
            func,
            acc: id,
            sp,
            start: ns,
            child: 0,
            node,
            values: None,
        });
    }

    #[inline]
    fn leave(&mut self, func: u64, sp: u32, ns: u64, sh: &mut Shared) {
        let Some(k) = self
            .stack
            .iter()
            .rposition(|f| f.func == func && f.sp == sp)
        else {
            sh.stats.unmatched_leaves += 1;
            return;
        };
        while self.stack.len() > k + 1 {
            let at = self.unwound_at.unwrap_or(ns);
            self.close(at, sh);
            sh.stats.unwound_frames += 1;
        }
        self.unwound_at = None;
        self.close(ns, sh);
    }

    fn close(&mut self, ns: u64, sh: &mut Shared) {
        let Some(f) = self.stack.pop() else { return };
        if let Some(v) = self.intervals.as_mut() {
            let depth = self.stack.len() as u32;
            match sh.limit.as_mut() {
                None => v.push(CallInterval {
                    function: f.func,
                    start_ns: f.start,
                    end_ns: ns,
                    depth,
                    values: f.values,
                }),
                Some(l) if f.start >= l.until => l.dropped += 1,
                Some(l) => {
                    l.heap.push(Kept {
                        start_ns: f.start,
                        os_tid: self.os_tid,
                        end_ns: ns,
                        function: f.func,
                        depth,
                        values: f.values,
                    });
                    if l.heap.len() > l.max
                        && let Some(latest) = l.heap.pop()
                    {
                        l.until = latest.start_ns;
                        l.dropped += 1;
                    }
                }
            }
        }
        let dur = ns.saturating_sub(f.start);
        let self_ns = dur.saturating_sub(f.child);
        let node = &mut self.nodes[f.node];
        node.inclusive += dur;
        node.self_ns += self_ns;
        let acc = &mut sh.accs[f.acc as usize].1;
        acc.self_ns += self_ns;
        let active = &mut self.active[f.acc as usize];
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
    let mut b = Builder::new(false);
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
    /// Per thread, in order of first appearance; `index` maps OS thread ids to them and
    /// `last_thread` remembers the last event's (a thread's calls come in runs).
    states: Vec<ThreadState>,
    index: BTreeMap<u64, usize>,
    last_thread: Option<(u64, usize)>,
    /// `--counts`: each thread's last (cumulative) `CallCounts`: missed, deep, edges.
    counted: BTreeMap<u64, (u64, u64, Vec<u64>)>,
    shared: Shared,
    keep_intervals: bool,
    keep_paths: bool,
}

impl Builder {
    /// `keep_intervals`: also keep every call's interval (for timeline exports).
    pub fn new(keep_intervals: bool) -> Builder {
        Builder {
            states: Vec::new(),
            index: BTreeMap::new(),
            last_thread: None,
            counted: BTreeMap::new(),
            shared: Shared::default(),
            keep_intervals,
            keep_paths: false,
        }
    }

    /// Keeps the `max` intervals that started first (of all threads); the rest are
    /// counted in [`CallTrees::intervals_dropped`]. The kept calls are a whole prefix of
    /// the timeline: every call that started before [`CallTrees::intervals_until_ns`].
    pub fn limit_intervals(mut self, max: usize) -> Builder {
        self.shared.limit = Some(Limit {
            max,
            heap: BinaryHeap::new(),
            until: u64::MAX,
            dropped: 0,
        });
        self
    }

    /// Also aggregates each thread's calls by call path ([`CallTrees::paths`]).
    pub fn with_paths(mut self) -> Builder {
        self.keep_paths = true;
        self
    }

    /// Takes one event; only calls and exception catches matter, others are ignored.
    pub fn push(&mut self, e: &TimedEvent<'_>) {
        match &e.event {
            Event::Enter { .. } | Event::Leave { .. } | Event::Tailcall { .. } => {
                if let Some(c) = TimedCall::of(e) {
                    self.push_call(&c);
                }
            }
            Event::CallCounts {
                os_tid,
                missed,
                deep,
                edges,
            } => {
                // Cumulative: a thread's last record holds its totals.
                self.counted
                    .insert(*os_tid, (*missed, *deep, edges.to_vec()));
            }
            Event::ExceptionPhase {
                phase: ExceptionPhase::CatcherEnter,
                ..
            } => {
                if let Some(&i) = self.index.get(&e.os_tid) {
                    self.states[i].unwound_at = Some(e.ns);
                }
            }
            // `--args`: the values go to the call they belong to, the innermost open call
            // of the function with the same stack pointer (an unwind names no SP).
            Event::CallArgs {
                function,
                sp,
                values,
            } if self.keep_intervals => {
                let sp = *sp as u32;
                let next = self.shared.values.len() as u32;
                if let Some(f) = self.open_call(e.os_tid, *function, Some(sp))
                    && f.values.is_none()
                {
                    f.values = Some(next);
                    self.shared.values.push(CallValues {
                        function: *function,
                        args: values.to_vec(),
                        ..Default::default()
                    });
                }
            }
            Event::CallReturn {
                function,
                sp,
                values,
            } if self.keep_intervals => {
                let sp = *sp as u32;
                if let Some(i) = self
                    .open_call(e.os_tid, *function, Some(sp))
                    .and_then(|f| f.values)
                {
                    self.shared.values[i as usize].ret = Some(values.to_vec());
                }
            }
            Event::CallUnwound { function } if self.keep_intervals => {
                if let Some(i) = self
                    .open_call(e.os_tid, *function, None)
                    .and_then(|f| f.values)
                {
                    self.shared.values[i as usize].unwound = true;
                }
            }
            _ => {}
        }
    }

    /// Takes one Enter, Leave or Tailcall (what [`push`](Self::push) does with their
    /// events, without building one).
    #[inline(always)]
    pub fn push_call(&mut self, e: &TimedCall) {
        let (func, sp) = (e.function, e.sp as u32);
        let keep = self.keep_intervals;
        let i = match self.last_thread {
            Some((tid, i)) if tid == e.os_tid => i,
            _ => {
                let states = &mut self.states;
                let i = *self.index.entry(e.os_tid).or_insert_with(|| {
                    states.push(ThreadState::new(e.os_tid, e.ns, keep));
                    states.len() - 1
                });
                self.last_thread = Some((e.os_tid, i));
                i
            }
        };
        let st = &mut self.states[i];
        st.last = e.ns;
        if e.kind == EltKind::Enter {
            st.enter(func, sp, e.ns, &mut self.shared);
        } else {
            st.leave(func, sp, e.ns, &mut self.shared);
        }
    }

    /// A builder like this one (the same options), empty: for another worker of
    /// [`Trace::calls_on_workers`](crate::Trace::calls_on_workers), whose threads are
    /// none of this one's. `None` when this one keeps intervals (their bound and the
    /// recorded values are shared by all threads: such a pass reads on one thread).
    pub fn fork(&self) -> Option<Builder> {
        if self.keep_intervals {
            return None;
        }
        let mut b = Builder::new(false);
        b.keep_paths = self.keep_paths;
        Some(b)
    }

    /// Takes in what `other` built from other threads ([`fork`](Self::fork)): the same
    /// figures as one builder given every thread's records. A thread both built is
    /// counted twice (it cannot be rebuilt from two halves: keep the threads apart).
    pub fn join(&mut self, other: Builder) {
        let Builder {
            states,
            index,
            counted,
            shared,
            ..
        } = other;
        // The other's accumulator indices, renumbered into this one's.
        let ids: Vec<u32> = shared
            .accs
            .iter()
            .map(|(f, _)| self.shared.id(*f))
            .collect();
        for (i, (_, a)) in shared.accs.into_iter().enumerate() {
            let acc = &mut self.shared.accs[ids[i] as usize].1;
            acc.calls += a.calls;
            acc.inclusive += a.inclusive;
            acc.self_ns += a.self_ns;
        }
        let renumber = |acc: u32| ids.get(acc as usize).copied().unwrap_or(acc);
        let mut taken: Vec<Option<ThreadState>> = states.into_iter().map(Some).collect();
        for (tid, i) in index {
            let Some(mut st) = taken.get_mut(i).and_then(Option::take) else {
                continue;
            };
            for n in st.nodes.iter_mut().skip(1) {
                n.acc = renumber(n.acc);
            }
            for f in &mut st.stack {
                f.acc = renumber(f.acc);
            }
            let mut active = vec![0u32; self.shared.accs.len()];
            for (i, &n) in st.active.iter().enumerate() {
                if n > 0 {
                    active[renumber(i as u32) as usize] = n;
                }
            }
            st.active = active;
            self.states.push(st);
            self.index.insert(tid, self.states.len() - 1);
        }
        self.last_thread = None;
        self.counted.extend(counted);
        let (a, b) = (&mut self.shared.stats, shared.stats);
        a.calls += b.calls;
        a.unwound_frames += b.unwound_frames;
        a.unmatched_leaves += b.unmatched_leaves;
        a.open_at_end += b.open_at_end;
        a.counts_missed += b.counts_missed;
        a.counts_deep += b.counts_deep;
    }

    /// The innermost open call of `func` on `os_tid` (with stack pointer `sp`, if given).
    fn open_call(&mut self, os_tid: u64, func: u64, sp: Option<u32>) -> Option<&mut Frame> {
        let &i = self.index.get(&os_tid)?;
        self.states[i]
            .stack
            .iter_mut()
            .rev()
            .find(|f| f.func == func && sp.is_none_or(|sp| f.sp == sp))
    }

    /// Closes the frames still open and names everything.
    pub fn finish(self, names: &Names, threads: &ThreadNames, max_depth: usize) -> CallTrees {
        let Builder {
            states,
            index,
            counted,
            mut shared,
            keep_paths,
            ..
        } = self;
        for (missed, deep, edges) in counted.into_values() {
            shared.stats.counts_missed += missed;
            shared.stats.counts_deep += deep;
            for e in edges.chunks_exact(3) {
                let (caller, callee, n) = (e[0], e[1], e[2]);
                let acc = shared.funcs.entry(callee).or_default();
                acc.calls += n;
                shared.stats.calls += n;
                if caller != 0 {
                    *shared.edges.entry((caller, callee)).or_default() += n;
                }
            }
        }
        let mut taken: Vec<Option<ThreadState>> = states.into_iter().map(Some).collect();
        let mut states: BTreeMap<u64, ThreadState> = index
            .into_iter()
            .filter_map(|(tid, i)| taken[i].take().map(|st| (tid, st)))
            .collect();
        for st in states.values_mut() {
            while !st.stack.is_empty() {
                shared.stats.open_at_end += 1;
                let last = st.last;
                st.close(last, &mut shared);
            }
        }
        // Calls per function and in all: the nodes' (counted once per call).
        for st in states.values() {
            for n in st.nodes.iter().skip(1) {
                shared.accs[n.acc as usize].1.calls += n.calls;
                shared.stats.calls += n.calls;
            }
        }
        // Edge counts: a node's calls are calls of its function by its parent's.
        for st in states.values() {
            for n in &st.nodes {
                if n.func == 0 {
                    continue;
                }
                for (&callee, &child) in &n.children {
                    *shared.edges.entry((n.func, callee)).or_default() += st.nodes[child].calls;
                }
            }
        }
        let paths = if keep_paths {
            states
                .iter()
                .map(|(tid, st)| (*tid, paths_of(&st.nodes)))
                .collect()
        } else {
            BTreeMap::new()
        };
        let Shared {
            mut funcs,
            accs,
            edges,
            stats,
            limit,
            values,
            ..
        } = shared;
        // In function id order: which function a thread called first must not change the
        // order of functions with the same figures and name (nor one built on several
        // workers, `join`).
        let mut accs = accs;
        accs.sort_unstable_by_key(|a| a.0);
        for (func, a) in accs {
            let f = funcs.entry(func).or_default();
            f.calls += a.calls;
            f.inclusive += a.inclusive;
            f.self_ns += a.self_ns;
        }
        for ((caller, callee), n) in edges {
            *funcs
                .entry(callee)
                .or_default()
                .callers
                .entry(caller)
                .or_default() += n;
            *funcs
                .entry(caller)
                .or_default()
                .callees
                .entry(callee)
                .or_default() += n;
        }
        let mut trees = finish(states, funcs, stats, names, threads, max_depth);
        if let Some(l) = limit {
            for k in l.heap.into_vec() {
                trees
                    .intervals
                    .entry(k.os_tid)
                    .or_default()
                    .push(CallInterval {
                        function: k.function,
                        start_ns: k.start_ns,
                        end_ns: k.end_ns,
                        depth: k.depth,
                        values: k.values,
                    });
            }
            trees.intervals_dropped = l.dropped;
            trees.intervals_until_ns = (l.dropped > 0).then_some(l.until);
        }
        trees.paths = paths;
        trees.values = values;
        trees
    }
}

/// The builder takes a streamed pass's records as they come: the calls as plain numbers.
impl<'a> crate::timeline::StreamSink<'a> for Builder {
    #[inline(always)]
    fn call(&mut self, c: &TimedCall) {
        self.push_call(c);
    }

    fn event(&mut self, e: &TimedEvent<'a>) {
        self.push(e);
    }
}

/// Deepest call path [`CallTrees::paths`] spells out; the calls below are summed into one
/// path ending in [`TRUNCATED`] (a flamegraph line lists its whole stack, so a deep
/// recursion would otherwise make the output grow with the square of its depth).
pub const MAX_PATH_DEPTH: usize = 1024;

/// The function id of the pseudo-frame that stands for the frames below
/// [`MAX_PATH_DEPTH`].
pub const TRUNCATED: u64 = u64::MAX;

/// Every node with calls as a path from the root, walked without recursion (a deep
/// recursion in the app must not overflow this stack).
fn paths_of(nodes: &[Node]) -> Vec<PathStats> {
    let mut out = Vec::new();
    let mut stack: Vec<u64> = Vec::new();
    // (node, depth of its frame in `stack`)
    let mut todo: Vec<(usize, usize)> = vec![(0, 0)];
    let children = |i: usize| {
        let mut kids: Vec<usize> = nodes[i].children.values().copied().collect();
        kids.sort_unstable_by_key(|&c| std::cmp::Reverse(nodes[c].func));
        kids
    };
    while let Some((i, depth)) = todo.pop() {
        let n = &nodes[i];
        stack.truncate(depth);
        if i == 0 {
            todo.extend(children(i).into_iter().map(|c| (c, depth)));
            continue;
        }
        if depth == MAX_PATH_DEPTH {
            // The whole subtree in one path.
            let (mut calls, mut self_ns) = (0, 0);
            let mut below = vec![i];
            while let Some(j) = below.pop() {
                calls += nodes[j].calls;
                self_ns += nodes[j].self_ns;
                below.extend(nodes[j].children.values().copied());
            }
            let mut s = stack.clone();
            s.push(TRUNCATED);
            out.push(PathStats {
                stack: s,
                calls,
                self_ns,
            });
            continue;
        }
        stack.push(n.func);
        if n.calls > 0 {
            out.push(PathStats {
                stack: stack.clone(),
                calls: n.calls,
                self_ns: n.self_ns,
            });
        }
        todo.extend(children(i).into_iter().map(|c| (c, depth + 1)));
    }
    out
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
        intervals_dropped: 0,
        intervals_until_ns: None,
        paths: BTreeMap::new(),
        values: Vec::new(),
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
                    ..Default::default()
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

    /// `--args` values go to their own call: nested calls of one function, every record
    /// at the same time (no time tells them apart), one unwound.
    #[test]
    fn recorded_values_go_to_their_own_call() {
        use std::borrow::Cow;
        let args = |ns, f, sp, v: u8| {
            ev(
                ns,
                Event::CallArgs {
                    function: f,
                    sp,
                    values: Cow::Owned(vec![v]),
                },
            )
        };
        let ret = |ns, f, sp, v: u8| {
            ev(
                ns,
                Event::CallReturn {
                    function: f,
                    sp,
                    values: Cow::Owned(vec![v]),
                },
            )
        };
        // F(3) → F(2) → F(1) → F(0) at SPs 1000, 900, 800, 700; F(0) is unwound and caught
        // in F(1).
        let mut events = Vec::new();
        for (k, sp) in [1000u64, 900, 800, 700].into_iter().enumerate() {
            events.push(enter(5, 1, sp));
            events.push(args(5, 1, sp, 3 - k as u8));
        }
        events.push(ev(5, Event::CallUnwound { function: 1 }));
        events.push(ev(
            5,
            Event::ExceptionPhase {
                phase: ExceptionPhase::CatcherEnter,
                function: 1,
            },
        ));
        for (k, sp) in [800u64, 900, 1000].into_iter().enumerate() {
            events.push(ret(5, 1, sp, 10 + k as u8));
            events.push(leave(5, 1, sp));
        }
        let mut b = Builder::new(true);
        for e in &events {
            b.push(e);
        }
        let t = b.finish(&names(), &ThreadNames::default(), 0);
        let calls = &t.intervals[&1];
        assert_eq!(calls.len(), 4);
        for c in calls {
            let v = &t.values[c.values.expect("each call has its values") as usize];
            let n = 3 - c.depth as u8;
            assert_eq!(v.args, [n], "{c:?}");
            match n {
                0 => assert!(v.unwound && v.ret.is_none(), "{v:?}"),
                n => assert_eq!(v.ret.as_deref(), Some(&[10 + n - 1][..]), "{v:?}"),
            }
        }
        // Without intervals (the report), nothing is kept.
        let mut b = Builder::new(false);
        for e in &events {
            b.push(e);
        }
        assert!(
            b.finish(&names(), &ThreadNames::default(), 0)
                .values
                .is_empty()
        );
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
        let mut b = Builder::new(true);
        for e in &events {
            b.push(e);
        }
        let t = b.finish(&names(), &ThreadNames::default(), 0);
        let calls = &t.intervals[&1];
        let b = CallInterval {
            function: 3,
            start_ns: 20,
            end_ns: 35,
            depth: 2,
            values: None,
        };
        let a = CallInterval {
            function: 2,
            start_ns: 10,
            end_ns: 40,
            depth: 1,
            values: None,
        };
        let main = CallInterval {
            function: 1,
            start_ns: 0,
            end_ns: 50,
            depth: 0,
            values: None,
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

    #[test]
    fn a_limited_timeline_keeps_the_calls_that_started_first() {
        // Main → 10 × A (each with a B), on two threads that overlap in time.
        let mut events = Vec::new();
        for (tid, t0) in [(1u64, 0u64), (2, 5)] {
            let mut v = vec![enter(t0, 1, 1000)];
            for i in 0..10 {
                let t = t0 + 10 + i * 10;
                v.extend([enter(t, 2, 900), enter(t + 1, 3, 800)]);
                v.extend([leave(t + 2, 3, 800), leave(t + 3, 2, 900)]);
            }
            v.push(leave(t0 + 200, 1, 1000));
            events.extend(v.into_iter().map(|mut e| {
                e.os_tid = tid;
                e
            }));
        }
        let mut all = Builder::new(true);
        let mut cut = Builder::new(true).limit_intervals(9);
        for e in &events {
            all.push(e);
            cut.push(e);
        }
        let (all, cut) = (
            all.finish(&names(), &ThreadNames::default(), 0),
            cut.finish(&names(), &ThreadNames::default(), 0),
        );
        let starts = |t: &CallTrees| {
            let mut v: Vec<(u64, u64, u64)> = t
                .intervals
                .iter()
                .flat_map(|(tid, c)| c.iter().map(|c| (c.start_ns, *tid, c.function)))
                .collect();
            v.sort();
            v
        };
        assert_eq!(all.intervals_dropped, 0);
        assert_eq!(all.intervals_until_ns, None);
        assert_eq!(starts(&all).len(), 2 * 21);
        assert_eq!(cut.intervals_dropped, 2 * 21 - 9);
        assert_eq!(starts(&cut), starts(&all)[..9].to_vec());
        let until = cut.intervals_until_ns.unwrap();
        assert!(starts(&cut).iter().all(|c| c.0 < until));
        assert!(starts(&all)[9..].iter().all(|c| c.0 >= until));
        // The statistics still count every call.
        assert_eq!(cut.stats.calls, 2 * 21);
    }

    #[test]
    fn paths_aggregate_calls_and_self_time_per_call_path() {
        let mut b = Builder::new(false).with_paths();
        for e in [
            enter(0, 1, 1000),
            enter(10, 2, 900),
            enter(12, 3, 800),
            leave(15, 3, 800),
            leave(20, 2, 900),
            enter(30, 3, 900),
            leave(40, 3, 900),
            enter(50, 2, 900),
            leave(55, 2, 900),
            leave(100, 1, 1000),
        ] {
            b.push(&e);
        }
        let t = b.finish(&names(), &ThreadNames::default(), 0);
        let paths: Vec<(Vec<u64>, u64, u64)> = t.paths[&1]
            .iter()
            .map(|p| (p.stack.clone(), p.calls, p.self_ns))
            .collect();
        assert_eq!(
            paths,
            [
                (vec![1], 1, 100 - 10 - 10 - 5),
                (vec![1, 2], 2, 7 + 5),
                (vec![1, 2, 3], 1, 3),
                (vec![1, 3], 1, 10),
            ]
        );
        assert!(t.intervals.is_empty());
    }

    #[test]
    fn paths_of_a_deep_recursion_do_not_recurse() {
        // 100,000 nested calls: a recursive walk of the tree would overflow the stack.
        let n = 100_000u64;
        let mut b = Builder::new(false).with_paths();
        for i in 0..n {
            b.push(&enter(i, 2, 1_000_000 - i));
        }
        for i in (0..n).rev() {
            b.push(&leave(2 * n - i, 2, 1_000_000 - i));
        }
        let t = b.finish(&names(), &ThreadNames::default(), 8);
        let paths = &t.paths[&1];
        // One path per depth up to the limit, then one for everything below it.
        assert_eq!(paths.len(), MAX_PATH_DEPTH + 1);
        let last = paths.last().unwrap();
        assert_eq!(last.stack.len(), MAX_PATH_DEPTH + 1);
        assert_eq!(last.stack.last(), Some(&TRUNCATED));
        assert_eq!(last.calls, n - MAX_PATH_DEPTH as u64);
        assert_eq!(paths.iter().map(|p| p.calls).sum::<u64>(), n);
        assert_eq!(stats(&t, "A").calls, n);
    }

    #[test]
    fn threads_built_apart_and_joined_give_what_one_builder_gives() {
        // Three threads interleaved, each calling in its own order (so the functions
        // first appear in different orders), one with a frame unwound and one left open.
        let on = |tid: u64, e: TimedEvent<'static>| TimedEvent { os_tid: tid, ..e };
        let mut events = Vec::new();
        for round in 0..50u64 {
            let t = round * 100;
            for (tid, f, g) in [(1u64, 2u64, 3u64), (2, 3, 4), (3, 4, 2)] {
                events.push(on(tid, enter(t, 1, 1000)));
                events.push(on(tid, enter(t + 10, f, 900)));
                events.push(on(tid, enter(t + 20, g, 800)));
                if tid == 2 && round % 7 == 0 {
                    // `g` unwound: the next Leave closes it too.
                    events.push(on(tid, leave(t + 40, f, 900)));
                } else {
                    events.push(on(tid, leave(t + 30, g, 800)));
                    events.push(on(tid, leave(t + 40 + tid, f, 900)));
                }
                events.push(on(tid, leave(t + 60, 1, 1000)));
            }
        }
        events.push(on(3, enter(9_000, 5, 700)));
        let built = |split: bool| {
            let whole = Builder::new(false).with_paths();
            if !split {
                let mut b = whole;
                for e in &events {
                    b.push(e);
                }
                return b.finish(&names(), &ThreadNames::default(), 64);
            }
            let mut parts: Vec<Builder> = (0..2).map(|_| whole.fork().unwrap()).collect();
            for e in &events {
                parts[usize::from(e.os_tid == 2)].push(e);
            }
            let mut b = whole;
            for p in parts {
                b.join(p);
            }
            b.finish(&names(), &ThreadNames::default(), 64)
        };
        let (one, joined) = (built(false), built(true));
        let functions = |t: &CallTrees| format!("{:?}", t.functions);
        assert_eq!(functions(&one), functions(&joined));
        assert_eq!(format!("{:?}", one.merged), format!("{:?}", joined.merged));
        assert_eq!(
            format!("{:?}", one.threads),
            format!("{:?}", joined.threads)
        );
        assert_eq!(format!("{:?}", one.stats), format!("{:?}", joined.stats));
        assert_eq!(one.paths, joined.paths);
        assert!(one.stats.unwound_frames > 0 && one.stats.open_at_end > 0);
        // A builder that keeps intervals reads on one thread.
        assert!(Builder::new(true).fork().is_none());
    }
}
