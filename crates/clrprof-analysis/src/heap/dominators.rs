//! Immediate dominators of a graph rooted at node 0, by the iterative algorithm of
//! Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm", 2001): number the
//! nodes in reverse postorder, then refine `idom` with the two-finger intersection until
//! nothing changes. On heap graphs it converges in two or three passes. Memory: a few
//! `u32`s per node plus the predecessor lists.

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

    /// The same graph with every edge reversed.
    pub fn reversed(&self) -> Graph {
        let n = self.nodes();
        let mut count = vec![0u32; n + 1];
        for &t in &self.targets {
            count[t as usize + 1] += 1;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut targets = vec![0u32; self.targets.len()];
        for from in 0..n as u32 {
            for &to in self.successors(from) {
                targets[fill[to as usize] as usize] = from;
                fill[to as usize] += 1;
            }
        }
        Graph {
            start: count,
            targets,
        }
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

/// Reverse postorder of the nodes reachable from 0 (iterative DFS).
fn reverse_postorder(g: &Graph) -> Vec<u32> {
    let n = g.nodes();
    let mut visited = vec![false; n];
    let mut post = Vec::with_capacity(n);
    if n == 0 {
        return post;
    }
    // (node, index of the next successor to visit)
    let mut stack: Vec<(u32, u32)> = vec![(0, g.start[0])];
    visited[0] = true;
    while let Some(top) = stack.last_mut() {
        let (node, next) = *top;
        if next < g.start[node as usize + 1] {
            top.1 += 1;
            let s = g.targets[next as usize];
            if !visited[s as usize] {
                visited[s as usize] = true;
                stack.push((s, g.start[s as usize]));
            }
        } else {
            post.push(node);
            stack.pop();
        }
    }
    post.reverse();
    post
}

pub fn dominators(g: &Graph) -> Dominators {
    let n = g.nodes();
    let order = reverse_postorder(g);
    let mut rank = vec![u32::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        rank[v as usize] = i as u32;
    }
    let preds = g.reversed();
    let mut idom = vec![UNREACHABLE; n];
    if n == 0 {
        return Dominators { idom, order };
    }
    idom[0] = 0;
    let intersect = |idom: &[u32], mut a: u32, mut b: u32| {
        while a != b {
            while rank[a as usize] > rank[b as usize] {
                a = idom[a as usize];
            }
            while rank[b as usize] > rank[a as usize] {
                b = idom[b as usize];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in order.iter().skip(1) {
            let mut new = UNREACHABLE;
            for &p in preds.successors(v) {
                if idom[p as usize] == UNREACHABLE {
                    continue;
                }
                new = if new == UNREACHABLE {
                    p
                } else {
                    intersect(&idom, p, new)
                };
            }
            if new != UNREACHABLE && idom[v as usize] != new {
                idom[v as usize] = new;
                changed = true;
            }
        }
    }
    Dominators { idom, order }
}

/// Retained weight: each node's weight plus that of every node it dominates.
pub fn retained(d: &Dominators, weight: &[u64]) -> Vec<u64> {
    let mut r: Vec<u64> = weight.to_vec();
    for &v in d.order.iter().skip(1).rev() {
        let parent = d.idom[v as usize] as usize;
        r[parent] += r[v as usize];
    }
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

    #[test]
    fn reversed_swaps_edges() {
        let g = Graph::from_lists(&[vec![1, 2], vec![2], vec![]]);
        let r = g.reversed();
        assert_eq!(r.successors(0), &[] as &[u32]);
        assert_eq!(r.successors(1), &[0]);
        assert_eq!(r.successors(2), &[0, 1]);
    }
}
