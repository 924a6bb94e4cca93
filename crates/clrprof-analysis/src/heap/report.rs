//! The heap section of a report (`clrprof heap`, `clrprof report` of a snapshot; JSON
//! schema in docs/report-json.md): type histogram with retained bytes, the roots that
//! retain most, the top of the dominator tree, shortest paths from roots to a type, and
//! static field values.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use clrprof_settings::pattern::matches_or_short_name;

use super::model::{Model, RootKind};
use super::snapshot::{HeapSnapshot, NON_GC};

#[derive(Debug, Clone, Default)]
pub struct HeapOptions {
    /// Rows per list.
    pub top: usize,
    /// `--paths-to`: a type name pattern (`*` and `?` wildcards).
    pub paths_to: Option<String>,
    /// `--statics`: a class name pattern whose static fields to list.
    pub statics: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TypeRow {
    pub name: String,
    pub count: u64,
    pub shallow_bytes: u64,
    pub retained_bytes: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RootRow {
    pub kind: RootKind,
    pub name: String,
    pub objects: u64,
    pub retained_bytes: u64,
    /// Bytes of every object the root reaches, shared with other roots or not (`None`
    /// when the heap was too large to count them, see [`REACHABLE_BUDGET`]).
    pub reachable_bytes: Option<u64>,
}

/// Most nodes visited in all to count what each root reaches.
pub const REACHABLE_BUDGET: u64 = 200_000_000;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DominatorRow {
    pub name: String,
    pub retained_bytes: u64,
    pub children: Vec<DominatorRow>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PathRoot {
    pub kind: RootKind,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash)]
pub struct PathEdge {
    /// The type the edge leaves from.
    #[serde(rename = "type")]
    pub type_name: String,
    pub field: String,
    /// True when the same edge repeats here (a linked list): shown once.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PathRow {
    pub root: PathRoot,
    pub edges: Vec<PathEdge>,
    /// The type the path ends at.
    pub target: String,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StaticRow {
    pub class: String,
    pub field: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub thread: u64,
    /// The value of a primitive or string static.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// The type of the object it holds.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained_bytes: Option<u64>,
    /// The object it holds is in the non-GC heap (a string literal, …).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nongc: bool,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Generations {
    pub gen0: u64,
    pub gen1: u64,
    pub gen2: u64,
    pub loh: u64,
    pub poh: u64,
    /// The non-GC (frozen) heap.
    pub nongc: u64,
    /// Generation unknown.
    pub other: u64,
}

impl Generations {
    fn of(s: &HeapSnapshot) -> Generations {
        let mut g = Generations::default();
        for (size, generation) in s.sizes().zip(&s.generation) {
            *match *generation {
                0 => &mut g.gen0,
                1 => &mut g.gen1,
                2 => &mut g.gen2,
                3 => &mut g.loh,
                4 => &mut g.poh,
                NON_GC => &mut g.nongc,
                _ => &mut g.other,
            } += size;
        }
        g
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeapReport {
    pub snapshot: u64,
    pub objects: u64,
    pub bytes: u64,
    pub references: u64,
    /// Objects and roots the agent could not record.
    pub lost: u64,
    /// How long the target was stopped for the snapshot.
    pub pause_ms: f64,
    pub complete: bool,
    /// References to objects the snapshot does not hold (dropped).
    pub dangling: u64,
    /// Objects and bytes of the non-GC (frozen) heap, included in `objects` and `bytes`.
    pub nongc_objects: u64,
    pub nongc_bytes: u64,
    /// Why the non-GC heap is not in the snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nongc_missing: Option<String>,
    /// Bytes per generation: gen0, gen1, gen2, loh, poh, nongc, and `other` (unknown).
    pub generations: Generations,
    pub types: Vec<TypeRow>,
    pub roots: Vec<RootRow>,
    /// The same roots by reachable bytes, most first: the holders of objects several
    /// roots share, which no root retains alone.
    pub roots_by_reachable: Vec<RootRow>,
    /// Roots that reach more than they retain: they share objects with other roots.
    pub roots_sharing: u64,
    pub dominators: Vec<DominatorRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<PathRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statics: Option<Vec<StaticRow>>,
}

/// Type histogram over every class (all rows, by retained bytes).
pub fn types(m: &Model<'_>) -> Vec<TypeRow> {
    let s = m.snapshot;
    let retained = m.retained_by_class();
    let mut rows: Vec<TypeRow> = (0..retained.len())
        .map(|c| TypeRow {
            name: s.class_names.get(c).cloned().unwrap_or_else(|| "?".into()),
            count: 0,
            shallow_bytes: 0,
            retained_bytes: retained[c],
        })
        .collect();
    for o in 0..s.len() {
        let r = &mut rows[s.class[o] as usize];
        r.count += 1;
        r.shallow_bytes += s.size(o as u32);
    }
    // Generic instantiations loaded twice share a name: merge rows by name.
    let mut by_name: HashMap<String, TypeRow> = HashMap::new();
    for r in rows.into_iter().filter(|r| r.count > 0) {
        let e = by_name.entry(r.name.clone()).or_insert(TypeRow {
            name: r.name.clone(),
            count: 0,
            shallow_bytes: 0,
            retained_bytes: 0,
        });
        e.count += r.count;
        e.shallow_bytes += r.shallow_bytes;
        e.retained_bytes += r.retained_bytes;
    }
    let mut rows: Vec<TypeRow> = by_name.into_values().collect();
    rows.sort_by(|a, b| {
        b.retained_bytes
            .cmp(&a.retained_bytes)
            .then(b.shallow_bytes.cmp(&a.shallow_bytes))
            .then(a.name.cmp(&b.name))
    });
    rows
}

pub fn build(s: &HeapSnapshot, opts: &HeapOptions) -> HeapReport {
    let g = Model::graph(s, Some(REACHABLE_BUDGET));
    report(Model::finish(s, g), opts, s.targets.len() as u64)
}

/// [`build`] of a snapshot its caller is done with: unless paths are asked for, its
/// references (4 bytes each, and 4 bytes an object) are given back as soon as the
/// dominators are known, before the dominator tree and the retained bytes take their
/// place.
pub fn build_owned(mut s: HeapSnapshot, opts: &HeapOptions) -> HeapReport {
    let g = Model::graph(&s, Some(REACHABLE_BUDGET));
    let references = s.targets.len() as u64;
    if opts.paths_to.is_none() {
        s.drop_references();
    }
    report(Model::finish(&s, g), opts, references)
}

fn report(mut m: Model<'_>, opts: &HeapOptions, references: u64) -> HeapReport {
    let s = m.snapshot;
    let top = opts.top.max(1);
    let types = types(&m);
    let children = &m.children;
    let row = |node: u32, kids: Vec<DominatorRow>| DominatorRow {
        name: m
            .object_of(node)
            .map(|o| s.class_name(o).to_string())
            .unwrap_or_default(),
        retained_bytes: m.retained_bytes(node),
        children: kids,
    };
    let top_of = |nodes: &mut Vec<u32>, n: usize| {
        nodes.sort_by_key(|&n| std::cmp::Reverse(m.retained_bytes(n)));
        nodes.truncate(n);
    };
    // Top-level retainers: objects whose dominator is a root group or the virtual root.
    let mut tops: Vec<u32> = (0..m.first_object)
        .flat_map(|g| children.successors(g).iter().copied())
        .filter(|&v| v >= m.first_object)
        .collect();
    top_of(&mut tops, top);
    let dominators = tops
        .into_iter()
        .map(|v| {
            let mut kids: Vec<u32> = children.successors(v).to_vec();
            top_of(&mut kids, 5);
            row(v, kids.into_iter().map(|k| row(k, Vec::new())).collect())
        })
        .collect();
    m.drop_children();
    let reachable = m.reachable.take();
    let mut roots: Vec<RootRow> = m
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| RootRow {
            kind: g.kind,
            name: g.name.clone(),
            objects: g.objects.len() as u64,
            retained_bytes: m.retained_of_group(i),
            reachable_bytes: reachable.as_ref().map(|r| r[i]),
        })
        .collect();
    let roots_sharing = roots
        .iter()
        .filter(|r| r.reachable_bytes.is_some_and(|b| b > r.retained_bytes))
        .count() as u64;
    let mut roots_by_reachable: Vec<RootRow> = if reachable.is_some() {
        roots.clone()
    } else {
        Vec::new()
    };
    roots_by_reachable.sort_by(|a, b| {
        b.reachable_bytes
            .cmp(&a.reachable_bytes)
            .then(a.kind.cmp(&b.kind))
            .then(a.name.cmp(&b.name))
    });
    roots_by_reachable.truncate(top);
    roots.sort_by(|a, b| {
        b.retained_bytes
            .cmp(&a.retained_bytes)
            .then(a.kind.cmp(&b.kind))
            .then(a.name.cmp(&b.name))
    });
    let paths = opts.paths_to.as_deref().map(|p| paths_to(&m, p, top));
    let statics = opts.statics.as_deref().map(|p| statics(&m, p));
    let generations = Generations::of(s);
    HeapReport {
        snapshot: s.snapshot,
        objects: s.len() as u64,
        bytes: s.sizes().sum(),
        references,
        lost: s.totals.lost,
        pause_ms: s.totals.pause_ns as f64 / 1e6,
        complete: s.complete,
        dangling: s.dangling,
        nongc_objects: (0..s.len() as u32).filter(|&o| s.is_non_gc(o)).count() as u64,
        nongc_bytes: generations.nongc,
        nongc_missing: s.nongc_missing.clone(),
        generations,
        types: types.into_iter().take(top).collect(),
        roots: roots.into_iter().take(top).collect(),
        roots_by_reachable,
        roots_sharing,
        dominators,
        paths,
        statics,
    }
}

/// Shortest paths from roots to every object whose type matches `pattern`, grouped by
/// root and edge sequence (a repeated edge, as along a linked list, is shown once).
pub fn paths_to(m: &Model<'_>, pattern: &str, top: usize) -> Vec<PathRow> {
    let s = m.snapshot;
    let n = s.len();
    const NONE: u32 = u32::MAX;
    // Per object: the object it was reached from (or NONE at a root), the edge used, and
    // the root group.
    let mut parent = vec![NONE; n];
    let mut via = vec![NONE; n];
    let mut group = vec![NONE; n];
    let mut queue: VecDeque<u32> = VecDeque::new();
    for (gi, g) in m.groups.iter().enumerate() {
        if g.weak {
            continue;
        }
        for &o in &g.objects {
            if group[o as usize] == NONE {
                group[o as usize] = gi as u32;
                queue.push_back(o);
            }
        }
    }
    while let Some(o) = queue.pop_front() {
        for e in s.edges(o) {
            let t = s.targets[e];
            if group[t as usize] != NONE || m.is_skipped(o, t) {
                continue;
            }
            group[t as usize] = group[o as usize];
            parent[t as usize] = o;
            via[t as usize] = e as u32;
            queue.push_back(t);
        }
    }
    let mut grouped: HashMap<(u32, Vec<PathEdge>, String), u64> = HashMap::new();
    for o in 0..n as u32 {
        let name = s.class_name(o);
        if group[o as usize] == NONE || !matches_or_short_name(pattern, name) {
            continue;
        }
        let mut edges: Vec<PathEdge> = Vec::new();
        let mut cur = o;
        while parent[cur as usize] != NONE {
            let p = parent[cur as usize];
            let edge = PathEdge {
                type_name: s.class_name(p).to_string(),
                field: s.field_name(p, via[cur as usize] as usize),
                repeated: false,
            };
            match edges.last_mut() {
                Some(last) if last.type_name == edge.type_name && last.field == edge.field => {
                    last.repeated = true;
                }
                _ => edges.push(edge),
            }
            cur = p;
        }
        edges.reverse();
        *grouped
            .entry((group[o as usize], edges, name.to_string()))
            .or_default() += 1;
    }
    let mut rows: Vec<PathRow> = grouped
        .into_iter()
        .map(|((g, edges, target), count)| PathRow {
            root: PathRoot {
                kind: m.groups[g as usize].kind,
                name: m.groups[g as usize].name.clone(),
            },
            edges,
            target,
            count,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.edges.len().cmp(&b.edges.len()))
            .then(a.root.name.cmp(&b.root.name))
    });
    rows.truncate(top);
    rows
}

/// Static fields of classes matching `pattern`.
pub fn statics(m: &Model<'_>, pattern: &str) -> Vec<StaticRow> {
    let s = m.snapshot;
    let mut rows: Vec<StaticRow> = s
        .statics
        .iter()
        .filter(|st| matches_or_short_name(pattern, &st.class))
        .map(|st| StaticRow {
            class: st.class.clone(),
            field: st.field.clone(),
            thread: st.thread,
            value: st.value.clone(),
            type_name: st.object.map(|o| s.class_name(o).to_string()),
            retained_bytes: st.object.map(|o| m.retained_bytes(m.node_of(o))),
            nongc: st.object.is_some_and(|o| s.is_non_gc(o)),
        })
        .collect();
    rows.sort_by(|a, b| (&a.class, &a.field, a.thread).cmp(&(&b.class, &b.field, b.thread)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::snapshot::Static;

    #[test]
    fn the_report_counts_non_gc_objects_and_marks_statics_holding_one() {
        // A GC object (gen 0) → a string literal; a static holds the literal.
        let s = HeapSnapshot {
            class: vec![0, 1],
            size: vec![32, 40],
            generation: vec![0, NON_GC],
            edge_start: vec![0, 1, 1],
            targets: vec![1],
            fields: vec![8],
            class_names: vec!["App.Config".into(), "System.String".into()],
            statics: vec![Static {
                class: "App.Config".into(),
                field: "Name".into(),
                thread: 0,
                object: Some(1),
                value: "literal".into(),
            }],
            ..HeapSnapshot::default()
        };
        let opts = HeapOptions {
            top: 10,
            paths_to: Some("System.String".into()),
            statics: Some("App.*".into()),
        };
        let r = build(&s, &opts);
        assert_eq!((r.objects, r.bytes), (2, 72));
        assert_eq!((r.nongc_objects, r.nongc_bytes), (1, 40));
        assert_eq!((r.generations.gen0, r.generations.nongc), (32, 40));
        assert_eq!(r.generations.other, 0);
        let string = r.types.iter().find(|t| t.name == "System.String").unwrap();
        assert_eq!((string.count, string.shallow_bytes), (1, 40));
        let st = &r.statics.as_ref().unwrap()[0];
        assert!(st.nongc);
        assert_eq!(st.type_name.as_deref(), Some("System.String"));
        // Paths prefer the static to the non-GC heap's own root.
        let p = &r.paths.as_ref().unwrap()[0];
        assert_eq!((p.root.kind, p.edges.len()), (RootKind::Static, 0));
        let text = crate::text::render_heap(&r);
        assert!(text.contains("non-GC heap: 1 objects, 40 B"), "{text}");
        assert!(text.contains("(retains 40 bytes, non-GC heap)"), "{text}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["nongc_objects"], 1);
        assert!(json.get("nongc_missing").is_none());
        assert_eq!(json["statics"][0]["nongc"], true);
    }
}
