//! The butterfly view of `report --function PATTERN`: for each function whose name
//! matches, who called it and what it called. From samples (how many samples, and how
//! much CPU, had each caller or callee next to it) or from trace mode's call tree (exact
//! call counts and times).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use clrprof_settings::pattern;

use crate::calltree::TreeNode;
use crate::lines::{Lines, SourceLine};
use crate::names::Names;
use crate::samples::{self, LabelId, Labels, StackSample, View};

/// The callers' name for the start of a thread (no frame below).
pub const ROOT: &str = "(thread start)";

#[derive(Debug, Serialize)]
pub struct Butterfly {
    pub pattern: String,
    /// `samples` or `calls`.
    pub source: &'static str,
    /// One entry per matching function, most total weight first.
    pub functions: Vec<Focus>,
}

/// One matching function with its figures, callers and callees.
#[derive(Debug, Serialize, Default)]
pub struct Focus {
    pub name: String,
    #[serde(flatten)]
    pub figures: Figures,
    /// Most first.
    pub callers: Vec<Edge>,
    /// Most first.
    pub callees: Vec<Edge>,
}

/// Sample mode fills `samples`/`self_samples`/`cpu_ns`/`self_cpu_ns`; trace mode
/// `calls`/`time_ns`/`self_ns`.
#[derive(Debug, Serialize, Default, Clone, PartialEq)]
pub struct Figures {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_cpu_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Inclusive time of the calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<u64>,
}

/// A caller or callee: for samples, the samples (and CPU) in which it stood next to the
/// function; for calls, the calls between the two and their inclusive time (the
/// callee's, for both directions: what the caller spent calling the function, what the
/// function spent calling the callee).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Edge {
    pub name: String,
    #[serde(flatten)]
    pub figures: Figures,
    /// Where the call is made (in the caller, for both directions), when the samples
    /// hold positions and the PDB gives their lines: the line most of the edge's samples
    /// were on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_site: Option<CallSite>,
}

/// A source line a call is made on.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct CallSite {
    /// The document's path as the compiler wrote it.
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for CallSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.file.rsplit(['/', '\\']).next().unwrap_or(&self.file);
        write!(f, "{name}:{}", self.line)
    }
}

fn add(a: &mut Option<u64>, v: u64) {
    *a = Some(a.unwrap_or(0) + v);
}

fn sorted(map: BTreeMap<String, Figures>, key: impl Fn(&Figures) -> u64) -> Vec<Edge> {
    let mut v: Vec<Edge> = map
        .into_iter()
        .map(|(name, figures)| Edge {
            name,
            figures,
            call_site: None,
        })
        .collect();
    v.sort_by(|a, b| {
        key(&b.figures)
            .cmp(&key(&a.figures))
            .then(a.name.cmp(&b.name))
    });
    v
}

#[derive(Default)]
struct Acc {
    figures: Figures,
    callers: BTreeMap<String, Figures>,
    callees: BTreeMap<String, Figures>,
}

fn finish(
    pattern: &str,
    source: &'static str,
    acc: BTreeMap<String, Acc>,
    key: impl Fn(&Figures) -> u64 + Copy,
) -> Butterfly {
    let mut functions: Vec<Focus> = acc
        .into_iter()
        .map(|(name, a)| Focus {
            name,
            figures: a.figures,
            callers: sorted(a.callers, key),
            callees: sorted(a.callees, key),
        })
        .collect();
    functions.sort_by(|a, b| {
        key(&b.figures)
            .cmp(&key(&a.figures))
            .then(a.name.cmp(&b.name))
    });
    Butterfly {
        pattern: pattern.to_string(),
        source,
        functions,
    }
}

/// A matching function's figures while samples are counted, keyed by label ids.
#[derive(Default)]
struct IdAcc {
    figures: Figures,
    callers: HashMap<LabelId, Figures>,
    callees: HashMap<LabelId, Figures>,
}

/// The caller id of a thread's first frame ([`ROOT`]), and the mark of a function's own
/// once-per-sample entry in `seen`: ids no label gets.
const ROOT_ID: LabelId = LabelId::MAX;
const SELF_MARK: LabelId = LabelId::MAX - 1;

/// The butterfly of the samples `view` counts (weights: samples, and CPU time).
pub fn of_samples(
    all: &[StackSample],
    names: &Names,
    view: View,
    stubs_named: bool,
    pattern: &str,
    mut lines: Option<&mut Lines>,
) -> Butterfly {
    let mut labels = Labels::new(names, stubs_named);
    // Per (function, direction, other), the samples per call-site line.
    let mut sites: HashMap<(LabelId, u8, LabelId), HashMap<SourceLine, u64>> = HashMap::new();
    let mut line_of = |s: &StackSample, i: usize| -> Option<SourceLine> {
        let lines = lines.as_deref_mut()?;
        let item = *s
            .positions
            .get(i)
            .filter(|_| s.positions.len() == s.stack.len())?;
        (item != 0)
            .then(|| lines.line(names, s.stack[i], item))
            .flatten()
    };
    let mut acc: HashMap<LabelId, IdAcc> = HashMap::new();
    let mut matches: HashMap<LabelId, bool> = HashMap::new();
    let mut seen: HashSet<(LabelId, u8, LabelId)> = HashSet::new();
    let mut frames: Vec<LabelId> = Vec::new();
    for s in samples::counted(all, names, view) {
        frames.clear();
        frames.extend((0..s.stack.len()).map(|i| labels.label(s, i)));
        seen.clear();
        for (i, &id) in frames.iter().enumerate() {
            let hit = *matches
                .entry(id)
                .or_insert_with(|| pattern::matches(pattern, labels.text(id)));
            if !hit {
                continue;
            }
            let a = acc.entry(id).or_default();
            // Once per sample, whatever the recursion.
            if seen.insert((id, 0, SELF_MARK)) {
                add(&mut a.figures.samples, 1);
                add(&mut a.figures.cpu_ns, s.cpu_ns);
                a.figures.self_samples.get_or_insert(0);
                a.figures.self_cpu_ns.get_or_insert(0);
            }
            if i == 0 {
                add(&mut a.figures.self_samples, 1);
                add(&mut a.figures.self_cpu_ns, s.cpu_ns);
            } else if seen.insert((id, 2, frames[i - 1])) {
                let e = a.callees.entry(frames[i - 1]).or_default();
                add(&mut e.samples, 1);
                add(&mut e.cpu_ns, s.cpu_ns);
                // The call is made where the function itself is.
                if let Some(l) = line_of(s, i) {
                    *sites
                        .entry((id, 2, frames[i - 1]))
                        .or_default()
                        .entry(l)
                        .or_default() += 1;
                }
            }
            let caller = frames.get(i + 1).copied().unwrap_or(ROOT_ID);
            if seen.insert((id, 1, caller)) {
                let e = a.callers.entry(caller).or_default();
                add(&mut e.samples, 1);
                add(&mut e.cpu_ns, s.cpu_ns);
                // The call is made where the caller is.
                if let Some(l) = (caller != ROOT_ID).then(|| line_of(s, i + 1)).flatten() {
                    *sites
                        .entry((id, 1, caller))
                        .or_default()
                        .entry(l)
                        .or_default() += 1;
                }
            }
        }
    }
    let text = |id: LabelId| match id {
        ROOT_ID => ROOT.to_string(),
        _ => labels.text(id).to_string(),
    };
    let named = |m: HashMap<LabelId, Figures>| -> BTreeMap<String, Figures> {
        m.into_iter().map(|(id, f)| (text(id), f)).collect()
    };
    let acc: BTreeMap<String, Acc> = acc
        .into_iter()
        .map(|(id, a)| {
            (
                text(id),
                Acc {
                    figures: a.figures,
                    callers: named(a.callers),
                    callees: named(a.callees),
                },
            )
        })
        .collect();
    let key = move |f: &Figures| match view {
        View::Cpu => f.cpu_ns.unwrap_or(0),
        View::Wall => f.samples.unwrap_or(0),
    };
    // The most frequent line of each edge, by the edges' names.
    let mut site_of: HashMap<(String, u8, String), CallSite> = HashMap::new();
    for ((id, dir, other), per_line) in sites {
        let best = per_line
            .into_iter()
            .max_by(|(la, na), (lb, nb)| na.cmp(nb).then_with(|| lb.cmp(la)));
        if let Some((l, _)) = best {
            site_of.insert(
                (text(id), dir, text(other)),
                CallSite {
                    file: l.file.to_string(),
                    line: l.line,
                },
            );
        }
    }
    let mut b = finish(pattern, "samples", acc, key);
    for f in &mut b.functions {
        for (dir, edges) in [(1u8, &mut f.callers), (2u8, &mut f.callees)] {
            for e in edges.iter_mut() {
                e.call_site = site_of.remove(&(f.name.clone(), dir, e.name.clone()));
            }
        }
    }
    b
}

/// The butterfly of trace mode's merged call tree: exact calls between each pair.
pub fn of_calls(tree: &TreeNode, pattern: &str) -> Butterfly {
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    let mut matches: HashMap<String, bool> = Default::default();
    // (node, its caller's name); the root's children start threads.
    let mut todo: Vec<(&TreeNode, &str)> = tree.children.iter().map(|c| (c, ROOT)).collect();
    while let Some((n, caller)) = todo.pop() {
        let hit = *matches
            .entry(n.name.clone())
            .or_insert_with(|| pattern::matches(pattern, &n.name));
        if hit {
            let a = acc.entry(n.name.clone()).or_default();
            add(&mut a.figures.calls, n.calls);
            add(&mut a.figures.time_ns, n.inclusive_ns);
            add(&mut a.figures.self_ns, n.self_ns);
            let e = a.callers.entry(caller.to_string()).or_default();
            add(&mut e.calls, n.calls);
            add(&mut e.time_ns, n.inclusive_ns);
            for c in &n.children {
                let e = a.callees.entry(c.name.clone()).or_default();
                add(&mut e.calls, c.calls);
                add(&mut e.time_ns, c.inclusive_ns);
            }
        }
        todo.extend(n.children.iter().map(|c| (c, n.name.as_str())));
    }
    finish(pattern, "calls", acc, |f| f.calls.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, calls: u64, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            name: name.into(),
            calls,
            inclusive_ns: calls * 10,
            self_ns: calls,
            children,
        }
    }

    #[test]
    fn calls_give_exact_callers_and_callees() {
        // Main calls A 3 times and B once; B calls A twice; A calls C 5 times.
        let tree = node(
            "[root]",
            0,
            vec![node(
                "Main",
                1,
                vec![
                    node("A", 3, vec![node("C", 5, vec![])]),
                    node("B", 1, vec![node("A", 2, vec![])]),
                ],
            )],
        );
        let b = of_calls(&tree, "A");
        assert_eq!(b.functions.len(), 1);
        let a = &b.functions[0];
        assert_eq!(a.figures.calls, Some(5));
        let callers: Vec<_> = a
            .callers
            .iter()
            .map(|e| (e.name.as_str(), e.figures.calls))
            .collect();
        assert_eq!(callers, [("Main", Some(3)), ("B", Some(2))]);
        let callees: Vec<_> = a
            .callees
            .iter()
            .map(|e| (e.name.as_str(), e.figures.calls))
            .collect();
        assert_eq!(callees, [("C", Some(5))]);
        let main = &of_calls(&tree, "Main").functions[0];
        assert_eq!(main.callers[0].name, ROOT);
    }
}
