//! The snapshot as one rooted graph: node 0 is a virtual root, then one node per root
//! group (a static field, a stack frame's function, a handle kind, the finalizer queue,
//! the non-GC heap, objects no reported root reaches), then one node per object. Dominators over that
//! graph give every object's retained size and every root group's.

use std::collections::{HashMap, HashSet};

use super::dominators::{self, Graph, Successors};
use super::snapshot::{
    HeapSnapshot, ROOT_FINALIZER, ROOT_HANDLE, ROOT_PINNING, ROOT_REFCOUNTED, ROOT_STACK, ROOT_WEAK,
};

/// A set of roots shown as one: e.g. every stack root of one function.
#[derive(Debug, Clone)]
pub struct Group {
    /// `static`, `thread-static`, `stack`, `handle`, `finalizer`, `other`, `nongc`,
    /// `unrooted`.
    pub kind: String,
    pub name: String,
    pub objects: Vec<u32>,
    /// Weak handles: listed, but they keep nothing alive.
    pub weak: bool,
}

pub struct Model<'s> {
    pub snapshot: &'s HeapSnapshot,
    pub groups: Vec<Group>,
    /// Children of each node in the dominator tree (the immediate dominators are not
    /// kept beside it: 4 bytes a node).
    pub children: Graph,
    /// Retained bytes per node.
    pub retained: Vec<u64>,
    /// Node of object 0.
    pub first_object: u32,
    /// Edges left out of the graph: from the runtime's static storage arrays to the
    /// objects their statics hold (the static field is the root instead).
    skipped: HashSet<(u32, u32)>,
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
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut add = |out: &mut Vec<Group>, kind: &str, name: String, object: u32, weak: bool| {
        let key = (kind.to_string(), name);
        let i = *index.entry(key.clone()).or_insert_with(|| {
            out.push(Group {
                kind: key.0.clone(),
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
                "thread-static"
            } else {
                "static"
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
            ROOT_STACK => (
                "stack",
                s.functions
                    .get(&r.id)
                    .cloned()
                    .unwrap_or_else(|| "?".into()),
                false,
            ),
            ROOT_FINALIZER => ("finalizer", "finalizer queue".to_string(), false),
            ROOT_HANDLE => (
                "handle",
                handle_name(r.flags).to_string(),
                r.flags & ROOT_WEAK != 0,
            ),
            _ => ("other", "other".to_string(), r.flags & ROOT_WEAK != 0),
        };
        add(&mut out, kind, name, r.object, weak);
    }
    // The runtime keeps every non-GC heap object alive itself (never collected): they are
    // roots of their own, after the reported ones so that paths prefer those.
    for o in (0..s.len() as u32).filter(|&o| s.is_non_gc(o)) {
        add(&mut out, "nongc", "non-GC heap".into(), o, false);
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
        .filter(|g| g.kind == "static" || g.kind == "thread-static")
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
                kind: "unrooted".into(),
                name: "no reported root".into(),
                objects: unreached,
                weak: false,
            });
            dominators::reverse_postorder(&View::new(s, &groups, &skipped))
        };
        let view = View::new(s, &groups, &skipped);
        let first_object = view.first_object;
        let nodes = view.nodes();
        let dom = dominators::dominators_from(&view, order, spare);
        drop(view);
        let mut retained = vec![0u64; nodes];
        for (r, size) in retained[first_object as usize..].iter_mut().zip(s.sizes()) {
            *r = size;
        }
        dominators::retained_in_place(&dom, &mut retained);
        let dominators::Dominators { idom, order } = dom;
        drop(order);
        let children = children_of(&idom);
        drop(idom);
        Model {
            snapshot: s,
            groups,
            children,
            retained,
            first_object,
            skipped,
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
        self.retained[g + 1]
    }

    /// Per root group, the bytes of every object it reaches, shared or not (an object
    /// several roots reach counts under each, where retained bytes count it under none):
    /// one traversal per group, with a visit stamp per node instead of a set. `None` when
    /// the traversals would visit more than `budget` nodes in all (a huge heap with many
    /// roots), so that a report never runs away.
    pub fn reachable_of_groups(&self, budget: u64) -> Option<Vec<u64>> {
        let s = self.snapshot;
        let view = View::new(s, &self.groups, &self.skipped);
        let mut stamp = vec![u32::MAX; view.nodes()];
        let mut stack: Vec<u32> = Vec::new();
        let mut visits = 0u64;
        let mut out = Vec::with_capacity(self.groups.len());
        for g in 0..self.groups.len() {
            let node = g as u32 + 1;
            let mut bytes = 0u64;
            stack.clear();
            stack.push(node);
            stamp[node as usize] = g as u32;
            while let Some(v) = stack.pop() {
                visits += 1;
                if visits > budget {
                    return None;
                }
                if let Some(o) = self.object_of(v) {
                    bytes += s.size(o);
                }
                for t in view.edges(v).filter_map(|e| view.successor(v, e)) {
                    if stamp[t as usize] != g as u32 {
                        stamp[t as usize] = g as u32;
                        stack.push(t);
                    }
                }
            }
            out.push(bytes);
        }
        Some(out)
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
        let mut active = vec![0u32; classes];
        let children = &self.children;
        // (node, leaving)
        let mut stack: Vec<(u32, bool)> = vec![(0, false)];
        while let Some((v, leaving)) = stack.pop() {
            let class = self.object_of(v).map(|o| s.class[o as usize] as usize);
            if leaving {
                if let Some(c) = class {
                    active[c] -= 1;
                }
                continue;
            }
            if let Some(c) = class {
                if active[c] == 0 {
                    out[c] += self.retained[v as usize];
                }
                active[c] += 1;
            }
            stack.push((v, true));
            for &c in children.successors(v) {
                stack.push((c, false));
            }
        }
        out
    }
}

/// Children of each node in the dominator tree, in node order.
fn children_of(idom: &[u32]) -> Graph {
    let n = idom.len();
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
                kind: ROOT_HANDLE,
                flags: 0,
                id: 1,
            },
            Root {
                object: 4,
                kind: ROOT_STACK,
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
        let group = |kind: &str| m.groups.iter().position(|g| g.kind == kind).unwrap();
        let list = group("static");
        assert_eq!(m.groups[list].name, "App.Holder.List");
        assert_eq!(m.retained_of_group(list), 96, "the three nodes");
        assert_eq!(m.retained_of_group(group("handle")), 100, "the array only");
        assert_eq!(m.groups[group("stack")].name, "App.Hold");
        assert_eq!(m.retained_of_group(group("stack")), 64);
        let unrooted = group("unrooted");
        assert_eq!(m.groups[unrooted].objects, vec![6]);
        let by_class = m.retained_by_class();
        assert_eq!(by_class, vec![100, 96, 64, 48]);
        assert!(m.groups.iter().all(|g| g.kind != "nongc"));
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
        let group = |kind: &str, name: &str| {
            m.groups
                .iter()
                .position(|g| g.kind == kind && g.name == name)
                .unwrap_or_else(|| panic!("no {kind} {name}"))
        };
        let nongc = group("nongc", "non-GC heap");
        assert_eq!(m.groups[nongc].objects, vec![2, 3, 4]);
        assert_eq!(nongc, m.groups.len() - 2, "after the reported roots");
        // Only the GC object that nothing references is unrooted.
        assert_eq!(
            m.groups[group("unrooted", "no reported root")].objects,
            vec![1]
        );
        // The literal stays whatever the statics do: neither it nor they retain it.
        assert_eq!(
            m.retained_of_group(group("static", "App.Config.Instance")),
            32
        );
        assert_eq!(m.retained_of_group(group("static", "App.Config.Name")), 0);
        assert_eq!(m.idom_of(m.node_of(2)), Some(0), "the virtual root");
        // Every non-GC object hangs from the group itself: the RuntimeType and the object
        // it references are siblings there.
        assert_eq!(m.retained_of_group(nongc), 72);
        assert_eq!(m.idom_of(m.node_of(4)), Some(1 + nongc as u32));
        assert_eq!(m.retained_by_class(), vec![56, 40, 48, 24]);
    }
}
