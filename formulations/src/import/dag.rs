//! Linearizing a DAG of profiled operators into a pipeplan chain.
//!
//! Every importer reads a graph (nodes with costs, edges carrying tensors), places its nodes in a
//! deterministic topological order with [`topological_order`], and computes, for each position,
//! the bytes that a cut placed right after that position would have to send: [`cut_bytes`] sums
//! **every tensor live across the cut** (produced at or before the position, consumed by some
//! node after it), each tensor counted once however many later nodes read it.
//!
//! [`condense`] merges the strongly connected components of a graph; the dnn-partitioning
//! importer needs it after it fuses colocated nodes, which can close cycles.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A tensor of the graph: who produces it, how large it is, who reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Producing node; `None` for a model input, available before the first node.
    pub producer: Option<usize>,
    /// Size in bytes.
    pub bytes: f64,
    /// Nodes that read it (any order, duplicates allowed).
    pub consumers: Vec<usize>,
}

/// A topological order of nodes `0..n` under `edges` (`(from, to)` pairs). Among the nodes whose
/// predecessors are all placed, the one of least `rank[node]` (then least index) comes first, so
/// the order depends only on the graph and the ranks, never on the order of `edges`.
///
/// On a cycle, returns `Err` with the nodes of one cycle, in edge order, the first node repeated
/// at the end (`[a, b, a]`); a self-loop gives `[a, a]`.
pub fn topological_order(
    n: usize,
    edges: &[(usize, usize)],
    rank: &[usize],
) -> Result<Vec<usize>, Vec<usize>> {
    assert_eq!(rank.len(), n, "one rank per node");
    let mut succ = vec![Vec::new(); n];
    let mut indegree = vec![0usize; n];
    for &(a, b) in edges {
        succ[a].push(b);
        indegree[b] += 1;
    }
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = (0..n)
        .filter(|&v| indegree[v] == 0)
        .map(|v| Reverse((rank[v], v)))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((_, v))) = ready.pop() {
        order.push(v);
        for &w in &succ[v] {
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(Reverse((rank[w], w)));
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err(find_cycle(n, edges, &indegree))
    }
}

/// One cycle among the nodes Kahn's algorithm could not place (those with `indegree > 0`): each
/// of them has an unplaced predecessor, so walking predecessors must revisit a node.
fn find_cycle(n: usize, edges: &[(usize, usize)], indegree: &[usize]) -> Vec<usize> {
    let stuck = |v: usize| indegree[v] > 0;
    let mut pred = vec![None; n];
    for &(a, b) in edges {
        if stuck(a) && stuck(b) && pred[b].is_none_or(|p| a < p) {
            pred[b] = Some(a);
        }
    }
    let start = (0..n).find(|&v| stuck(v)).expect("a stuck node exists");
    let mut seen = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut v = start;
    while seen[v] == usize::MAX {
        seen[v] = walk.len();
        walk.push(v);
        v = pred[v].expect("every stuck node has a stuck predecessor");
    }
    // walk[seen[v]..] goes backwards along the edges: reverse it, start it at its least node
    // (so the message does not depend on where the walk began) and close the loop.
    let mut cycle: Vec<usize> = walk[seen[v]..].iter().rev().copied().collect();
    let least = (0..cycle.len())
        .min_by_key(|&i| cycle[i])
        .expect("non-empty");
    cycle.rotate_left(least);
    cycle.push(cycle[0]);
    cycle
}

/// Bytes crossing a cut after each position of `order`: entry `p` sums the tensors produced at or
/// before position `p` (model inputs count as produced before position 0) and read by a node at a
/// later position. Consumers absent from `order` are ignored.
pub fn cut_bytes(order: &[usize], n: usize, tensors: &[Tensor]) -> Vec<f64> {
    let mut pos = vec![usize::MAX; n];
    for (p, &v) in order.iter().enumerate() {
        pos[v] = p;
    }
    let mut cut = vec![0.0; order.len()];
    for t in tensors {
        let first = match t.producer {
            Some(v) if pos[v] == usize::MAX => continue,
            Some(v) => pos[v],
            None => 0,
        };
        let last = t
            .consumers
            .iter()
            .map(|&c| pos[c])
            .filter(|&p| p != usize::MAX)
            .max();
        if let Some(last) = last {
            // Adding each tensor to every cut it crosses (rather than a difference array) keeps
            // every sum a sum of non-negative terms: no rounding can make a cut negative.
            for c in &mut cut[first..last.max(first)] {
                *c += t.bytes;
            }
        }
    }
    cut
}

/// Strongly connected components of nodes `0..n`: returns `(component of each node, number of
/// components)`. Components are numbered by their least node, in increasing order, so the
/// numbering is deterministic. Iterative (Tarjan), so deep graphs cannot overflow the stack.
pub fn condense(n: usize, edges: &[(usize, usize)]) -> (Vec<usize>, usize) {
    let mut succ = vec![Vec::new(); n];
    for &(a, b) in edges {
        succ[a].push(b);
    }
    const UNSEEN: usize = usize::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut raw = vec![UNSEEN; n];
    let mut raw_count = 0;
    let mut next = 0;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        // (node, next successor to look at)
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            if let Some(&w) = succ[v].get(*i) {
                *i += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    loop {
                        let w = stack.pop().expect("v is on the stack");
                        on_stack[w] = false;
                        raw[w] = raw_count;
                        if w == v {
                            break;
                        }
                    }
                    raw_count += 1;
                }
            }
        }
    }
    // Renumber by least member so the numbering does not depend on the traversal.
    let mut first_member = vec![usize::MAX; raw_count];
    for v in 0..n {
        first_member[raw[v]] = first_member[raw[v]].min(v);
    }
    let mut by_first: Vec<usize> = (0..raw_count).collect();
    by_first.sort_by_key(|&c| first_member[c]);
    let mut renumber = vec![0; raw_count];
    for (new, &old) in by_first.iter().enumerate() {
        renumber[old] = new;
    }
    ((0..n).map(|v| renumber[raw[v]]).collect(), raw_count)
}

/// Sort key putting `node9` before `node10`: the text without its trailing digits, then the
/// number they form, then the whole text.
pub fn natural_key(s: &str) -> (String, u128, usize, String) {
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (prefix, number) = s.split_at(s.len() - digits);
    // Leading zeros and over-long numbers still sort deterministically: by value when it fits,
    // then by length, then by text.
    let value = number.parse::<u128>().unwrap_or(u128::MAX);
    (prefix.to_string(), value, number.len(), s.to_string())
}

/// Ranks (0, 1, 2...) of `keys` in increasing order, ties broken by index.
pub fn ranks<K: Ord>(keys: &[K]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by(|&a, &b| keys[a].cmp(&keys[b]).then(a.cmp(&b)));
    let mut rank = vec![0; keys.len()];
    for (r, &i) in idx.iter().enumerate() {
        rank[i] = r;
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_follows_ranks_not_edge_order() {
        // 0 -> {1, 2} -> 3
        let edges = [(0, 1), (0, 2), (1, 3), (2, 3)];
        let mut rev = edges;
        rev.reverse();
        assert_eq!(
            topological_order(4, &edges, &[0, 2, 1, 3]).unwrap(),
            vec![0, 2, 1, 3]
        );
        assert_eq!(
            topological_order(4, &rev, &[0, 2, 1, 3]).unwrap(),
            vec![0, 2, 1, 3]
        );
        assert_eq!(
            topological_order(4, &rev, &[0, 1, 2, 3]).unwrap(),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn cycles_are_reported() {
        let e = topological_order(4, &[(0, 1), (1, 2), (2, 3), (3, 1)], &[0, 1, 2, 3]);
        assert_eq!(e.unwrap_err(), vec![1, 2, 3, 1]);
        assert_eq!(
            topological_order(2, &[(0, 1), (1, 1)], &[0, 1]).unwrap_err(),
            vec![1, 1]
        );
    }

    #[test]
    fn cuts_count_each_tensor_once() {
        // a -> b -> c -> d with skips a -> c and a -> d; input x read by a and c.
        let t = |p: Option<usize>, bytes: f64, c: &[usize]| Tensor {
            producer: p,
            bytes,
            consumers: c.to_vec(),
        };
        let tensors = [
            t(None, 1000.0, &[0, 2]),
            t(Some(0), 10.0, &[1, 2, 3]),
            t(Some(1), 20.0, &[2]),
            t(Some(2), 30.0, &[3]),
            t(Some(3), 40.0, &[]),
        ];
        let cut = cut_bytes(&[0, 1, 2, 3], 4, &tensors);
        assert_eq!(cut, vec![1010.0, 1030.0, 40.0, 0.0]);
    }

    #[test]
    fn condense_merges_cycles_deterministically() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3
        let (comp, k) = condense(4, &[(0, 1), (1, 2), (2, 1), (2, 3)]);
        assert_eq!(k, 3);
        assert_eq!(comp, vec![0, 1, 1, 2]);
        let (comp, k) = condense(3, &[]);
        assert_eq!((comp, k), (vec![0, 1, 2], 3));
    }

    #[test]
    fn natural_order() {
        let names = ["node10", "node9", "input", "node1", "node010"];
        let r = ranks(&names.iter().map(|s| natural_key(s)).collect::<Vec<_>>());
        // input < node1 < node9 < node10 < node010 (same value, longer text)
        assert_eq!(r, vec![3, 2, 0, 1, 4]);
    }
}
