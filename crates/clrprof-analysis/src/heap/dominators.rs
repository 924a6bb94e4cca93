//! Immediate dominators of a graph rooted at node 0, by the iterative algorithm of
//! Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm", 2001): number the
//! nodes in reverse postorder, then refine `idom` with the two-finger intersection until
//! nothing changes. On heap graphs it converges in two or three passes. Memory: two
//! `u32`s per node (order, and idom, held as ranks while it iterates) and the DFS stack;
//! the edges are read where they are, with no predecessor lists.

/// A directed graph in compressed sparse rows: the successors of `n` are
/// `targets[start[n]..start[n + 1]]`.
#[derive(Debug, Default, Clone)]
pub struct Graph {
    pub start: Vec<u32>,
    pub targets: Vec<u32>,
}

impl Graph {
    pub fn nodes(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn successors(&self, n: u32) -> &[u32] {
        &self.targets[self.start[n as usize] as usize..self.start[n as usize + 1] as usize]
    }

    /// Builds from an adjacency list (tests and small graphs).
    pub fn from_lists(lists: &[Vec<u32>]) -> Graph {
        let mut g = Graph::default();
        for l in lists {
            g.start.push(g.targets.len() as u32);
            g.targets.extend_from_slice(l);
        }
        g.start.push(g.targets.len() as u32);
        g
    }
}

/// A graph as the dominator computation reads it: node `n`'s out-edges are positions
/// `edges(n)`, each leading to `successor(n, e)` or left out (`None`). A heap snapshot's
/// graph is read in place through this, without a copy.
pub trait Successors {
    fn nodes(&self) -> usize;
    fn edges(&self, n: u32) -> std::ops::Range<u32>;
    fn successor(&self, n: u32, e: u32) -> Option<u32>;
}

impl Successors for Graph {
    fn nodes(&self) -> usize {
        Graph::nodes(self)
    }

    fn edges(&self, n: u32) -> std::ops::Range<u32> {
        self.start[n as usize]..self.start[n as usize + 1]
    }

    fn successor(&self, _: u32, e: u32) -> Option<u32> {
        Some(self.targets[e as usize])
    }
}

/// No dominator: the node is not reachable from node 0.
pub const UNREACHABLE: u32 = u32::MAX;

/// The result: `idom[n]` (`idom[0] == 0`) and the reverse postorder from node 0.
#[derive(Debug, Clone)]
pub struct Dominators {
    pub idom: Vec<u32>,
    /// Reachable nodes in reverse postorder: every node comes after its dominator.
    pub order: Vec<u32>,
}

/// Reverse postorder of the nodes reachable from 0 (iterative DFS), and a spare array of
/// one `u32` per node (the DFS's edge cursors) for the caller to reuse.
pub fn reverse_postorder(g: &impl Successors) -> (Vec<u32>, Vec<u32>) {
    let n = g.nodes();
    // Per node, its next edge to look at; UNREACHABLE: not visited yet.
    let mut cursor = vec![UNREACHABLE; n];
    let mut post = Vec::new();
    if n == 0 {
        return (post, cursor);
    }
    let mut stack: Vec<u32> = vec![0];
    cursor[0] = g.edges(0).start;
    while let Some(&node) = stack.last() {
        let end = g.edges(node).end;
        let mut next = cursor[node as usize];
        let mut pushed = false;
        while next < end {
            let e = next;
            next += 1;
            if let Some(s) = g.successor(node, e)
                && cursor[s as usize] == UNREACHABLE
            {
                cursor[node as usize] = next;
                cursor[s as usize] = g.edges(s).start;
                stack.push(s);
                pushed = true;
                break;
            }
        }
        if !pushed {
            cursor[node as usize] = end;
            post.push(node);
            stack.pop();
        }
    }
    post.reverse();
    (post, cursor)
}

/// Immediate dominators. The iteration of Cooper, Harvey and Kennedy, pushed along the
/// out-edges instead of pulled from the predecessors (no reversed graph in memory): each
/// node, in reverse postorder, lowers the dominator of each of its successors to the
/// nearest common ancestor of that dominator and itself, until nothing changes. This is
/// the same monotone data-flow system (Dom(v) = {v} ∪ ⋂ Dom(pred)), iterated edge by
/// edge, so it reaches the same greatest fixed point.
pub fn dominators(g: &impl Successors) -> Dominators {
    let (order, cursor) = reverse_postorder(g);
    dominators_from(g, order, cursor)
}

/// [`dominators`] from a [`reverse_postorder`] already computed (its two arrays).
///
/// While it iterates, each node's dominator is held as its rank (its position in
/// `order`), so that the two fingers compare ranks directly and climb through `order`:
/// no array of every node's rank (4 bytes a node) is needed beside `order` and `idom`.
/// The dominators become node numbers again at the end, in place.
pub fn dominators_from(g: &impl Successors, order: Vec<u32>, spare: Vec<u32>) -> Dominators {
    let n = g.nodes();
    // Per node, the rank of its dominator found so far; UNREACHABLE: none yet.
    let mut idom = spare;
    idom.clear();
    idom.resize(n, UNREACHABLE);
    if n == 0 {
        return Dominators { idom, order };
    }
    // Node 0 comes first in reverse postorder: rank 0, its own dominator.
    idom[0] = 0;
    // The nearest common dominator of the nodes of ranks `a` and `b`, as a rank: a node's
    // dominator comes before it in reverse postorder, so the deeper finger climbs.
    let intersect = |idom: &[u32], mut a: u32, mut b: u32| {
        while a != b {
            while a > b {
                a = idom[order[a as usize] as usize];
            }
            while b > a {
                b = idom[order[b as usize] as usize];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for (rank, &u) in order.iter().enumerate() {
            // Every reachable node has its DFS parent, which comes before it in reverse
            // postorder, so it has a dominator when its turn comes.
            if idom[u as usize] == UNREACHABLE {
                continue;
            }
            let rank = rank as u32;
            for e in g.edges(u) {
                let Some(v) = g.successor(u, e) else { continue };
                if v == 0 {
                    continue;
                }
                let old = idom[v as usize];
                let new = if old == UNREACHABLE {
                    rank
                } else {
                    intersect(&idom, rank, old)
                };
                if new != old {
                    idom[v as usize] = new;
                    changed = true;
                }
            }
        }
    }
    for d in idom.iter_mut() {
        if *d != UNREACHABLE {
            *d = order[*d as usize];
        }
    }
    Dominators { idom, order }
}

/// Retained weight: each node's weight plus that of every node it dominates. `weight`
/// becomes the retained weight, in place.
pub fn retained_in_place(d: &Dominators, weight: &mut [u64]) {
    for &v in d.order.iter().skip(1).rev() {
        let parent = d.idom[v as usize] as usize;
        weight[parent] += weight[v as usize];
    }
}

/// Retained weight: each node's weight plus that of every node it dominates.
pub fn retained(d: &Dominators, weight: &[u64]) -> Vec<u64> {
    let mut r: Vec<u64> = weight.to_vec();
    retained_in_place(d, &mut r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_irreducible_loop() {
        // 0 → 1, 2; 1 → 3; 2 → 4; 3 → 4; 4 → 3, 5; 5 → 4: the loop 3 ⇄ 4 has two entries,
        // so neither dominates the other (the case the paper's iteration exists for).
        let g = Graph::from_lists(&[vec![1, 2], vec![3], vec![4], vec![4], vec![3, 5], vec![4]]);
        let d = dominators(&g);
        assert_eq!(d.idom, vec![0, 0, 0, 0, 0, 4]);
    }

    #[test]
    fn a_chain_under_a_diamond() {
        // 0 → 1, 2; 1 → 3; 2 → 3; 3 → 4 → 5; 6 unreachable.
        let g = Graph::from_lists(&[
            vec![1, 2],
            vec![3],
            vec![3],
            vec![4],
            vec![5],
            vec![],
            vec![5],
        ]);
        let d = dominators(&g);
        assert_eq!(d.idom, vec![0, 0, 0, 0, 3, 4, UNREACHABLE]);
        let r = retained(&d, &[0, 10, 20, 30, 40, 50, 60]);
        assert_eq!(r[3], 120);
        assert_eq!(r[1], 10);
        assert_eq!(r[0], 150, "the unreachable node is not counted");
    }

    #[test]
    fn a_cycle_is_dominated_by_its_entry() {
        // 0 → 1 → 2 → 3 → 1 (cycle), 0 → 4 → 3.
        let g = Graph::from_lists(&[vec![1, 4], vec![2], vec![3], vec![1], vec![3]]);
        let d = dominators(&g);
        assert_eq!(d.idom, vec![0, 0, 1, 0, 0]);
        let r = retained(&d, &[0, 1, 2, 4, 8]);
        assert_eq!(r, vec![15, 3, 2, 4, 8]);
    }

    /// Immediate dominators by definition: d dominates v when v cannot be reached from 0
    /// without d; the immediate one is the strict dominator dominated by all the others.
    fn by_definition(g: &Graph) -> Vec<u32> {
        let n = g.nodes();
        let reach = |without: Option<u32>| {
            let mut seen = vec![false; n];
            let mut stack = vec![0u32];
            seen[0] = true;
            while let Some(v) = stack.pop() {
                for &s in g.successors(v) {
                    if Some(s) != without && !seen[s as usize] {
                        seen[s as usize] = true;
                        stack.push(s);
                    }
                }
            }
            seen
        };
        let all = reach(None);
        let cut: Vec<Vec<bool>> = (0..n as u32).map(|d| reach(Some(d))).collect();
        (0..n)
            .map(|v| {
                if !all[v] {
                    return UNREACHABLE;
                }
                if v == 0 {
                    return 0;
                }
                let strict: Vec<u32> = (0..n as u32)
                    .filter(|&d| d as usize != v && (d == 0 || !cut[d as usize][v]))
                    .collect();
                *strict
                    .iter()
                    .find(|&&d| {
                        strict
                            .iter()
                            .all(|&o| o == d || o == 0 || !cut[o as usize][d as usize])
                    })
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn pushed_along_out_edges_they_match_the_definition_on_random_graphs() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..300 {
            let n = 2 + next(14) as usize;
            let edges = next(3 * n as u64);
            let mut lists = vec![Vec::new(); n];
            for _ in 0..edges {
                let (a, b) = (next(n as u64) as usize, next(n as u64) as u32);
                lists[a].push(b);
            }
            let g = Graph::from_lists(&lists);
            assert_eq!(dominators(&g).idom, by_definition(&g), "{lists:?}");
        }
    }
}
