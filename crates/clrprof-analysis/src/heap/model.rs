//! The snapshot as one rooted graph: node 0 is a virtual root, then one node per root
//! group (a static field, a stack frame's function, a handle kind, the finalizer queue,
//! the non-GC heap, objects no reported root reaches), then one node per object. Dominators over that
//! graph give every object's retained size and every root group's.

use std::collections::{HashMap, HashSet};

use super::dominators::{self, Graph, Successors};
use super::snapshot::{GcRootKind, HeapSnapshot, ROOT_PINNING, ROOT_REFCOUNTED, ROOT_WEAK};

/// What holds a root group's objects, as the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RootKind {
    /// A static field.
    Static,
    /// A `[ThreadStatic]` field of one thread.
    ThreadStatic,
    /// A stack frame's function.
    Stack,
    /// A GC handle (strong, weak, pinning or ref-counted).
    Handle,
    /// The finalizer queue.
    Finalizer,
    /// A root the runtime reports as neither of the above.
    Other,
    /// The non-GC (frozen) heap, which the runtime keeps alive itself.
    NonGc,
    /// Objects no reported root reaches.
    Unrooted,
}

impl RootKind {
    /// Its name in the report (text and JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            RootKind::Static => "static",
            RootKind::ThreadStatic => "thread-static",
            RootKind::Stack => "stack",
            RootKind::Handle => "handle",
            RootKind::Finalizer => "finalizer",
            RootKind::Other => "other",
            RootKind::NonGc => "nongc",
            RootKind::Unrooted => "unrooted",
        }
    }
}

impl std::fmt::Display for RootKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl serde::Serialize for RootKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Ordered by name, as the report breaks ties between roots.
impl Ord for RootKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for RootKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A set of roots shown as one: e.g. every stack root of one function.
#[derive(Debug, Clone)]
pub struct Group {
    pub kind: RootKind,
    pub name: String,
    pub objects: Vec<u32>,
    /// Weak handles: listed, but they keep nothing alive.
    pub weak: bool,
}

/// Retained bytes per node in 48 bits (6 bytes a node, not 8): a `u32` and a `u16`. No
/// heap reaches 2^48 bytes (256 TiB, more than the 47-bit user address space of x86-64
/// and arm64 with 4-level page tables); a sum past it would stay at the largest value.
#[derive(Debug, Default, Clone)]
pub struct Retained {
    low: Vec<u32>,
    high: Vec<u16>,
}

impl Retained {
    const MAX: u64 = (1 << 48) - 1;

    fn zeroed(n: usize) -> Retained {
        Retained {
            low: vec![0; n],
            high: vec![0; n],
        }
    }

    pub fn len(&self) -> usize {
        self.low.len()
    }

    pub fn is_empty(&self) -> bool {
        self.low.is_empty()
    }

    pub fn get(&self, node: u32) -> u64 {
        let n = node as usize;
        u64::from(self.high[n]) << 32 | u64::from(self.low[n])
    }

    fn set(&mut self, node: u32, v: u64) {
        let v = v.min(Self::MAX);
        let n = node as usize;
        self.low[n] = v as u32;
        self.high[n] = (v >> 32) as u16;
    }

    fn add(&mut self, node: u32, v: u64) {
        self.set(node, self.get(node).saturating_add(v));
    }
}

pub struct Model<'s> {
    pub snapshot: &'s HeapSnapshot,
    pub groups: Vec<Group>,
    /// Children of each node in the dominator tree (the immediate dominators are not
    /// kept beside it: 4 bytes a node); empty after [`Model::drop_children`].
    pub children: Graph,
    /// Retained bytes per node.
    pub retained: Retained,
    /// Node of object 0.
    pub first_object: u32,
    /// Per root group, what it reaches, when [`Model::graph`] was asked to count it and it
    /// stayed within the budget (see [`Model::reachable_of_groups`]).
    pub reachable: Option<Vec<u64>>,
    /// Edges left out of the graph: from the runtime's static storage arrays to the
    /// objects their statics hold (the static field is the root instead).
    skipped: HashSet<(u32, u32)>,
}

/// [`Model::graph`]'s result: what [`Model::finish`] needs of the references.
pub struct Graphed {
    groups: Vec<Group>,
    skipped: HashSet<(u32, u32)>,
    first_object: u32,
    dom: dominators::Dominators,
    reachable: Option<Vec<u64>>,
}

/// The rooted graph, read in place from the snapshot: node 0 → each group node → the
/// group's objects (none for a weak group) → their references, less the skipped edges.
struct View<'a> {
    s: &'a HeapSnapshot,
    groups: &'a [Group],
    first_object: u32,
    skipped: &'a HashSet<(u32, u32)>,
    /// One bit per object: it has a skipped edge (the set is only looked in for those).
    skipping: Vec<u64>,
}

impl<'a> View<'a> {
    fn new(s: &'a HeapSnapshot, groups: &'a [Group], skipped: &'a HashSet<(u32, u32)>) -> Self {
        let mut skipping = vec![0u64; s.len().div_ceil(64)];
        for &(from, _) in skipped {
            skipping[from as usize / 64] |= 1 << (from % 64);
        }
        View {
            s,
            groups,
            first_object: 1 + groups.len() as u32,
            skipped,
            skipping,
        }
    }
}

impl Successors for View<'_> {
    fn nodes(&self) -> usize {
        self.first_object as usize + self.s.len()
    }

    fn edges(&self, n: u32) -> std::ops::Range<u32> {
        if n == 0 {
            0..self.groups.len() as u32
        } else if n < self.first_object {
            let g = &self.groups[n as usize - 1];
            0..if g.weak { 0 } else { g.objects.len() as u32 }
        } else {
            let o = (n - self.first_object) as usize;
            self.s.edge_start[o]..self.s.edge_start[o + 1]
        }
    }

    fn successor(&self, n: u32, e: u32) -> Option<u32> {
        if n == 0 {
            Some(1 + e)
        } else if n < self.first_object {
            Some(self.first_object + self.groups[n as usize - 1].objects[e as usize])
        } else {
            let o = n - self.first_object;
            let t = self.s.targets[e as usize];
            let skips = self.skipping[o as usize / 64] & (1 << (o % 64)) != 0;
            (!skips || !self.skipped.contains(&(o, t))).then_some(self.first_object + t)
        }
    }
}

fn handle_name(flags: u32) -> &'static str {
    if flags & ROOT_WEAK != 0 {
        "weak handle"
    } else if flags & ROOT_PINNING != 0 {
        "pinned handle"
    } else if flags & ROOT_REFCOUNTED != 0 {
        "ref-counted handle"
    } else {
        "strong handle"
    }
}

/// Root groups in the order paths prefer them: statics first, then stacks, handles.
fn groups(s: &HeapSnapshot) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    let mut index: HashMap<(RootKind, String), usize> = HashMap::new();
    let mut add = |out: &mut Vec<Group>, kind: RootKind, name: String, object: u32, weak: bool| {
        let key = (kind, name);
        let i = *index.entry(key.clone()).or_insert_with(|| {
            out.push(Group {
                kind,
                name: key.1.clone(),
                objects: Vec::new(),
                weak,
            });
            out.len() - 1
        });
        out[i].objects.push(object);
    };
    for st in &s.statics {
        if let Some(o) = st.object {
            let kind = if st.thread != 0 {
                RootKind::ThreadStatic
            } else {
                RootKind::Static
            };
            add(
                &mut out,
                kind,
                format!("{}.{}", st.class, st.field),
                o,
                false,
            );
        }
    }
    for r in &s.roots {
        let (kind, name, weak) = match r.kind {
            GcRootKind::Stack => (
                RootKind::Stack,
                s.functions
                    .get(&r.id)
                    .cloned()
                    .unwrap_or_else(|| "?".into()),
                false,
            ),
            GcRootKind::Finalizer => (RootKind::Finalizer, "finalizer queue".to_string(), false),
            GcRootKind::Handle => (
                RootKind::Handle,
                handle_name(r.flags).to_string(),
                r.flags & ROOT_WEAK != 0,
            ),
            GcRootKind::Other => (
                RootKind::Other,
                "other".to_string(),
                r.flags & ROOT_WEAK != 0,
            ),
        };
        add(&mut out, kind, name, r.object, weak);
    }
    // The runtime keeps every non-GC heap object alive itself (never collected): they are
    // roots of their own, after the reported ones so that paths prefer those.
    for o in (0..s.len() as u32).filter(|&o| s.is_non_gc(o)) {
        add(&mut out, RootKind::NonGc, "non-GC heap".into(), o, false);
    }
    out
}

/// Edges from the runtime's static storage to the objects that a named static holds. The
/// runtime keeps statics in `Object[]`s: on .NET 10 plain statics in one held by a strong
/// handle, `[ThreadStatic]`s in one per thread under another reported as a stack root of
/// that thread. Those edges are left out so that the field, not the array, is the root.
fn static_storage_edges(s: &HeapSnapshot, groups: &[Group]) -> HashSet<(u32, u32)> {
    let held: HashSet<u32> = groups
        .iter()
        .filter(|g| matches!(g.kind, RootKind::Static | RootKind::ThreadStatic))
        .flat_map(|g| g.objects.iter().copied())
        .collect();
    let mut out = HashSet::new();
    if held.is_empty() {
        return out;
    }
    let is_storage = |o: u32| s.class_name(o) == "System.Object[]";
    // Rooted Object[]s, and the Object[]s they hold.
    let mut storage: Vec<u32> = s
        .roots
        .iter()
        .filter(|r| r.flags & ROOT_WEAK == 0 && is_storage(r.object))
        .map(|r| r.object)
        .collect();
    let first_level = storage.len();
    for i in 0..first_level {
        for e in s.edges(storage[i]) {
            if is_storage(s.targets[e]) {
                storage.push(s.targets[e]);
            }
        }
    }
    for o in storage {
        for e in s.edges(o) {
            let t = s.targets[e];
            if held.contains(&t) {
                out.insert((o, t));
            }
        }
    }
    out
}

impl<'s> Model<'s> {
    pub fn build(s: &'s HeapSnapshot) -> Model<'s> {
        Model::finish(s, Model::graph(s, None))
    }

    /// The part of [`Model::build`] that reads the references: root groups, dominators
    /// and, within `reachable_budget`, what each root reaches. A caller done with the
    /// references may give them back before [`Model::finish`].
    pub fn graph(s: &HeapSnapshot, reachable_budget: Option<u64>) -> Graphed {
        let mut groups = groups(s);
        let skipped = static_storage_edges(s, &groups);
        // Objects no root reaches (dependent handles, roots the API does not report)
        // hang under one more group.
        let (order, spare) = dominators::reverse_postorder(&View::new(s, &groups, &skipped));
        let first_object = 1 + groups.len();
        let unreached: Vec<u32> = (0..s.len() as u32)
            .filter(|&o| spare[first_object + o as usize] == dominators::UNREACHABLE)
            .collect();
        let (order, spare) = if unreached.is_empty() {
            (order, spare)
        } else {
            drop((order, spare));
            groups.push(Group {
                kind: RootKind::Unrooted,
                name: "no reported root".into(),
                objects: unreached,
                weak: false,
            });
            dominators::reverse_postorder(&View::new(s, &groups, &skipped))
        };
        let view = View::new(s, &groups, &skipped);
        let reachable = reachable_budget.and_then(|b| reachable_of(&view, b));
        let dom = dominators::dominators_from(&view, order, spare);
        let first_object = view.first_object;
        drop(view);
        Graphed {
            groups,
            skipped,
            first_object,
            dom,
            reachable,
        }
    }

    /// The rest of [`Model::build`]: retained bytes and the dominator tree, from the
    /// dominators and the sizes (the references are not read). Retained bytes come from
    /// the order and the dominators, the order is then given back, and the tree is built
    /// over the dominators' own array: at most three words a node beside the objects.
    pub fn finish(s: &'s HeapSnapshot, g: Graphed) -> Model<'s> {
        let Graphed {
            groups,
            skipped,
            first_object,
            dom,
            reachable,
        } = g;
        let dominators::Dominators { idom, order } = dom;
        let mut retained = Retained::zeroed(idom.len());
        for (o, size) in s.sizes().enumerate() {
            retained.set(first_object + o as u32, size);
        }
        for &v in order.iter().skip(1).rev() {
            let parent = idom[v as usize];
            retained.add(parent, retained.get(v));
        }
        drop(order);
        let children = children_of(idom);
        Model {
            snapshot: s,
            groups,
            children,
            retained,
            first_object,
            skipped,
            reachable,
        }
    }

    /// The immediate dominator of `node` (None: the virtual root, or not reachable),
    /// looked up in the dominator tree: linear, for tests and single nodes.
    pub fn idom_of(&self, node: u32) -> Option<u32> {
        (0..self.children.nodes() as u32).find(|&d| self.children.successors(d).contains(&node))
    }

    pub fn node_of(&self, object: u32) -> u32 {
        self.first_object + object
    }

    /// The object of a node, if it is one.
    pub fn object_of(&self, node: u32) -> Option<u32> {
        node.checked_sub(self.first_object)
    }

    pub fn retained_of_group(&self, g: usize) -> u64 {
        self.retained.get(g as u32 + 1)
    }

    /// Retained bytes of `node`.
    pub fn retained_bytes(&self, node: u32) -> u64 {
        self.retained.get(node)
    }

    /// Gives back the dominator tree (8 bytes a node) once the rows that read it are made.
    pub fn drop_children(&mut self) {
        self.children = Graph::default();
    }

    /// Per root group, the bytes of every object it reaches, shared or not (an object
    /// several roots reach counts under each, where retained bytes count it under none):
    /// one traversal per group, with a visit stamp per node instead of a set. `None` when
    /// the traversals would visit more than `budget` nodes in all (a huge heap with many
    /// roots), so that a report never runs away.
    pub fn reachable_of_groups(&self, budget: u64) -> Option<Vec<u64>> {
        reachable_of(
            &View::new(self.snapshot, &self.groups, &self.skipped),
            budget,
        )
    }

    pub fn is_skipped(&self, from: u32, to: u32) -> bool {
        !self.skipped.is_empty() && self.skipped.contains(&(from, to))
    }

    /// Retained bytes per class index: objects of the class and everything only they
    /// keep alive (an object under another of its own class is counted once, at the top).
    pub fn retained_by_class(&self) -> Vec<u64> {
        let s = self.snapshot;
        let classes = s
            .class_names
            .len()
            .max(s.class.iter().map(|&c| c as usize + 1).max().unwrap_or(0));
        let mut out = vec![0u64; classes];
        // Per class: an object of it is on the path from the root (its subtree is being
        // walked); only such a topmost object counts, and only it is left again.
        let mut active = vec![false; classes];
        let children = &self.children;
        // Nodes to enter; LEAVE | node: leave a counted node. Children without children of
        // their own are done at once, not pushed, so that a list whose nodes each hold a
        // leaf keeps the stack short.
        const LEAVE: u32 = 1 << 31;
        let class_of = |v: u32| self.object_of(v).map(|o| s.class[o as usize] as usize);
        let mut stack: Vec<u32> = vec![0];
        while let Some(top) = stack.pop() {
            if top & LEAVE != 0 {
                if let Some(c) = class_of(top & !LEAVE) {
                    active[c] = false;
                }
                continue;
            }
            if let Some(c) = class_of(top)
                && !active[c]
            {
                out[c] += self.retained.get(top);
                if children.successors(top).is_empty() {
                    continue;
                }
                active[c] = true;
                stack.push(top | LEAVE);
            }
            for &k in children.successors(top) {
                if children.successors(k).is_empty() {
                    if let Some(c) = class_of(k)
                        && !active[c]
                    {
                        out[c] += self.retained.get(k);
                    }
                } else {
                    stack.push(k);
                }
            }
        }
        out
    }
}

/// [`Model::reachable_of_groups`] over a view of the rooted graph.
fn reachable_of(view: &View<'_>, budget: u64) -> Option<Vec<u64>> {
    let s = view.s;
    // One byte a node: the stamp of the last group that visited it, cleared every 255
    // groups.
    let mut stamp = vec![0u8; view.nodes()];
    let mut stack: Vec<u32> = Vec::new();
    let mut visits = 0u64;
    let mut out = Vec::with_capacity(view.groups.len());
    for g in 0..view.groups.len() {
        let mark = (g % 255) as u8 + 1;
        if mark == 1 && g > 0 {
            stamp.fill(0);
        }
        let node = g as u32 + 1;
        let mut bytes = 0u64;
        stack.clear();
        stack.push(node);
        stamp[node as usize] = mark;
        while let Some(v) = stack.pop() {
            visits += 1;
            if visits > budget {
                return None;
            }
            if let Some(o) = v.checked_sub(view.first_object) {
                bytes += s.size(o);
            }
            for t in view.edges(v).filter_map(|e| view.successor(v, e)) {
                if stamp[t as usize] != mark {
                    stamp[t as usize] = mark;
                    stack.push(t);
                }
            }
        }
        out.push(bytes);
    }
    Some(out)
}

/// Children of each node in the dominator tree, in node order, built over `idom`'s own
/// array: each node's entry becomes its position among its parent's children, then the
/// permutation is inverted in place (cycle by cycle, a written entry marked by its top
/// bit), so that only the run starts are new (4 bytes a node, not 8).
fn children_of(mut idom: Vec<u32>) -> Graph {
    let n = idom.len();
    if n >= 1 << 31 {
        return children_of_copied(&idom);
    }
    // Per node its number of children, then the end of its run, then its start.
    let mut start: Vec<u32> = vec![0; n + 1];
    for &d in idom.iter().skip(1) {
        if d != dominators::UNREACHABLE {
            start[d as usize] += 1;
        }
    }
    let mut total = 0u32;
    for c in &mut start[..n] {
        total += *c;
        *c = total;
    }
    start[n] = total;
    const FREE: u32 = dominators::UNREACHABLE;
    const WRITTEN: u32 = 1 << 31;
    if n > 0 {
        idom[0] = FREE;
    }
    for v in (1..n).rev() {
        let d = idom[v];
        if d != FREE {
            start[d as usize] -= 1;
            idom[v] = start[d as usize];
        }
    }
    // idom[v] is now v's position (or FREE); put v at it.
    let slot = &mut idom;
    for v in 0..n {
        let p = slot[v];
        if p == FREE || p & WRITTEN != 0 {
            continue;
        }
        slot[v] = FREE;
        let (mut node, mut at) = (v as u32, p);
        loop {
            let displaced = slot[at as usize];
            slot[at as usize] = node | WRITTEN;
            if displaced == FREE {
                break;
            }
            (node, at) = (at, displaced);
        }
    }
    idom.truncate(total as usize);
    for t in &mut idom {
        *t &= !WRITTEN;
    }
    idom.shrink_to_fit();
    Graph {
        start,
        targets: idom,
    }
}

/// [`children_of`] into a new array (graphs of 2^31 nodes or more, whose node numbers
/// use the top bit).
fn children_of_copied(idom: &[u32]) -> Graph {
    let n = idom.len();
    let mut start: Vec<u32> = vec![0; n + 1];
    for &d in idom.iter().skip(1) {
        if d != dominators::UNREACHABLE {
            start[d as usize] += 1;
        }
    }
    let mut total = 0u32;
    for c in &mut start[..n] {
        total += *c;
        *c = total;
    }
    start[n] = total;
    let mut targets = vec![0u32; total as usize];
    for v in (1..n).rev() {
        let d = idom[v];
        if d != dominators::UNREACHABLE {
            start[d as usize] -= 1;
            targets[start[d as usize] as usize] = v as u32;
        }
    }
    Graph { start, targets }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::snapshot::{NON_GC, Root, Static};

    /// Objects: 0 storage Object[] (handle root) → 1 list head → 2 → 3; 4 a local's array
    /// (stack root) → 5; 6 reached by nothing.
    fn snapshot() -> HeapSnapshot {
        let edges: [&[u32]; 7] = [&[1], &[2], &[3], &[], &[5], &[], &[]];
        let mut s = HeapSnapshot {
            class: vec![0, 1, 1, 1, 2, 3, 3],
            size: vec![100, 32, 32, 32, 40, 24, 24],
            generation: vec![2; 7],
            class_names: vec![
                "System.Object[]".into(),
                "Node".into(),
                "Local[]".into(),
                "Local".into(),
            ],
            ..HeapSnapshot::default()
        };
        for e in edges {
            s.edge_start.push(s.targets.len() as u32);
            s.targets.extend_from_slice(e);
            s.fields.extend(e.iter().map(|_| 8));
        }
        s.edge_start.push(s.targets.len() as u32);
        s.roots = vec![
            Root {
                object: 0,
                kind: GcRootKind::Handle,
                flags: 0,
                id: 1,
            },
            Root {
                object: 4,
                kind: GcRootKind::Stack,
                flags: 0,
                id: 77,
            },
        ];
        s.functions.insert(77, "App.Hold".into());
        s.statics.push(Static {
            class: "App.Holder".into(),
            field: "List".into(),
            thread: 0,
            object: Some(1),
            value: String::new(),
        });
        s
    }

    /// The kinds read as the report has always spelled them, and order by those names
    /// (the report breaks ties between roots by kind).
    #[test]
    fn root_kinds_keep_their_report_names_and_order() {
        let mut kinds = [
            RootKind::Static,
            RootKind::ThreadStatic,
            RootKind::Stack,
            RootKind::Handle,
            RootKind::Finalizer,
            RootKind::Other,
            RootKind::NonGc,
            RootKind::Unrooted,
        ];
        kinds.sort();
        let names: Vec<String> = kinds.iter().map(|k| format!("{k}")).collect();
        assert_eq!(
            names,
            [
                "finalizer",
                "handle",
                "nongc",
                "other",
                "stack",
                "static",
                "thread-static",
                "unrooted"
            ]
        );
        assert_eq!(
            serde_json::to_string(&RootKind::ThreadStatic).unwrap(),
            "\"thread-static\""
        );
        assert_eq!(format!("[{:<8}]", RootKind::Stack), "[stack   ]");
        assert_eq!(GcRootKind::from_raw(3), GcRootKind::Handle);
        assert_eq!(GcRootKind::from_raw(9), GcRootKind::Other);
    }

    #[test]
    fn reachable_bytes_count_shared_objects_under_every_root_that_reaches_them() {
        let s = snapshot();
        let m = Model::build(&s);
        let reach = m.reachable_of_groups(u64::MAX).unwrap();
        for (g, grp) in m.groups.iter().enumerate() {
            // Without sharing, what a root reaches is what it retains.
            assert_eq!(reach[g], m.retained_of_group(g), "{}", grp.name);
        }
        assert_eq!(m.reachable_of_groups(2), None, "over the budget");
    }

    #[test]
    fn a_static_retains_what_its_storage_array_also_references() {
        let s = snapshot();
        let m = Model::build(&s);
        let group = |kind: RootKind| m.groups.iter().position(|g| g.kind == kind).unwrap();
        let list = group(RootKind::Static);
        assert_eq!(m.groups[list].name, "App.Holder.List");
        assert_eq!(m.retained_of_group(list), 96, "the three nodes");
        assert_eq!(
            m.retained_of_group(group(RootKind::Handle)),
            100,
            "the array only"
        );
        assert_eq!(m.groups[group(RootKind::Stack)].name, "App.Hold");
        assert_eq!(m.retained_of_group(group(RootKind::Stack)), 64);
        let unrooted = group(RootKind::Unrooted);
        assert_eq!(m.groups[unrooted].objects, vec![6]);
        let by_class = m.retained_by_class();
        assert_eq!(by_class, vec![100, 96, 64, 48]);
        assert!(m.groups.iter().all(|g| g.kind != RootKind::NonGc));
    }

    /// GC objects: 0 `App.Config` (static `App.Config.Instance`) → 2 the literal; 1 an
    /// object no root reaches. Non-GC objects: 2 a string literal, also held by the static
    /// `App.Config.Name`; 3 a `RuntimeType` → 4, another non-GC object.
    fn with_non_gc() -> HeapSnapshot {
        let edges: [&[u32]; 5] = [&[2], &[], &[], &[4], &[]];
        let mut s = HeapSnapshot {
            class: vec![0, 0, 1, 2, 3],
            size: vec![32, 24, 40, 48, 24],
            generation: vec![0, 2, NON_GC, NON_GC, NON_GC],
            class_names: vec![
                "App.Config".into(),
                "System.String".into(),
                "System.RuntimeType".into(),
                "System.Object".into(),
            ],
            ..HeapSnapshot::default()
        };
        for e in edges {
            s.edge_start.push(s.targets.len() as u32);
            s.targets.extend_from_slice(e);
            s.fields.extend(e.iter().map(|_| 8));
        }
        s.edge_start.push(s.targets.len() as u32);
        for (field, object) in [("Instance", 0), ("Name", 2)] {
            s.statics.push(Static {
                class: "App.Config".into(),
                field: field.into(),
                thread: 0,
                object: Some(object),
                value: String::new(),
            });
        }
        s
    }

    #[test]
    fn non_gc_objects_are_held_by_their_own_root_and_are_never_unrooted() {
        let s = with_non_gc();
        let m = Model::build(&s);
        let group = |kind: RootKind, name: &str| {
            m.groups
                .iter()
                .position(|g| g.kind == kind && g.name == name)
                .unwrap_or_else(|| panic!("no {kind} {name}"))
        };
        let nongc = group(RootKind::NonGc, "non-GC heap");
        assert_eq!(m.groups[nongc].objects, vec![2, 3, 4]);
        assert_eq!(nongc, m.groups.len() - 2, "after the reported roots");
        // Only the GC object that nothing references is unrooted.
        assert_eq!(
            m.groups[group(RootKind::Unrooted, "no reported root")].objects,
            vec![1]
        );
        // The literal stays whatever the statics do: neither it nor they retain it.
        assert_eq!(
            m.retained_of_group(group(RootKind::Static, "App.Config.Instance")),
            32
        );
        assert_eq!(
            m.retained_of_group(group(RootKind::Static, "App.Config.Name")),
            0
        );
        assert_eq!(m.idom_of(m.node_of(2)), Some(0), "the virtual root");
        // Every non-GC object hangs from the group itself: the RuntimeType and the object
        // it references are siblings there.
        assert_eq!(m.retained_of_group(nongc), 72);
        assert_eq!(m.idom_of(m.node_of(4)), Some(1 + nongc as u32));
        assert_eq!(m.retained_by_class(), vec![56, 40, 48, 24]);
    }

    #[test]
    fn the_dominator_tree_built_in_place_matches_the_copied_one() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..500 {
            let n = 1 + next(40) as usize;
            // A tree rooted at 0 (each node's dominator before it), some nodes unreachable.
            let mut idom = vec![0u32];
            for v in 1..n {
                idom.push(if next(5) == 0 {
                    dominators::UNREACHABLE
                } else {
                    next(v as u64) as u32
                });
            }
            let copied = children_of_copied(&idom);
            let in_place = children_of(idom.clone());
            assert_eq!(in_place.start, copied.start, "{idom:?}");
            assert_eq!(in_place.targets, copied.targets, "{idom:?}");
        }
    }

    #[test]
    fn retained_bytes_keep_48_bits() {
        let mut r = Retained::zeroed(2);
        r.set(0, 5 << 40 | 7);
        r.add(0, u64::from(u32::MAX));
        assert_eq!(r.get(0), (5 << 40) + 7 + u64::from(u32::MAX));
        r.add(1, u64::MAX);
        assert_eq!(r.get(1), Retained::MAX, "saturates");
    }
}
