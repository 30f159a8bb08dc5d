//! The states PipeDream's DP cuts the model at: prefixes of the chain, or, on an instance that
//! carries its layer graph (`extensions.dag`), the optimizer's antichain states
//! (`graph/graph.py`, `antichain_dag`): the down-sets of the graph it reaches from its first
//! source by advancing one node of an antichain at a time.

use super::PdProfile;

/// A set of layers, one bit each.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
    fn union_with(&mut self, other: &Bits) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
    }
    fn intersects(&self, other: &Bits) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            (0..64)
                .filter(move |b| word >> b & 1 == 1)
                .map(move |b| w * 64 + b)
        })
    }
}

/// The states of the DP, in a topological order of their inclusion (state `j`'s predecessors
/// come before it), the last one every layer.
#[derive(Debug, Clone, PartialEq)]
pub struct PdStates {
    /// Which layers each state holds and which states precede it.
    shape: Shape,
    /// Sums over each state's layers, as the optimizer accumulates them.
    pub(super) compute: Vec<f64>,
    pub(super) activation: Vec<f64>,
    pub(super) parameters: Vec<f64>,
    /// Bytes sent after each state (the optimizer's `output_activation_size`).
    pub(super) output: Vec<f64>,
}

/// The layers of the states and their order.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// State `j` is layers `0..=j`, preceded by every earlier state: nothing to store but
    /// `0..n`, whose prefixes are the predecessor lists (a long chain would otherwise hold
    /// n^2 / 2 of them).
    Chain(Vec<usize>),
    /// The antichain states of a graph.
    Graph {
        /// The layers of each state (a down-set of the graph).
        members: Vec<Bits>,
        /// The states each state can be cut after (its predecessors in the optimizer's
        /// antichain DAG, transitively), ascending.
        preds: Vec<Vec<usize>>,
        /// `preds` as sets.
        pred_sets: Vec<Bits>,
    },
}

impl PdStates {
    /// The optimizer's antichain states when the profile has its graph and they number at most
    /// [`MAX_STATES`](super::MAX_STATES), else the chain's prefixes.
    pub fn of(p: &PdProfile) -> PdStates {
        p.edges
            .as_ref()
            .and_then(|e| PdStates::antichains(p, e, super::MAX_STATES))
            .unwrap_or_else(|| PdStates::chain(p))
    }

    /// The chain's prefixes: state `j` is layers `0..=j`, its output the cut after layer `j`.
    pub fn chain(p: &PdProfile) -> PdStates {
        let n = p.len();
        let pre = |v: &[f64]| {
            let mut acc = 0.0;
            v.iter()
                .map(|x| {
                    acc += x;
                    acc
                })
                .collect()
        };
        PdStates {
            shape: Shape::Chain((0..n).collect()),
            compute: pre(&p.compute),
            activation: pre(&p.activation),
            parameters: pre(&p.parameters),
            output: p.output.clone(),
        }
    }

    /// The optimizer's antichain states of the graph `edges` (`[from, to]` between layers of
    /// the chain, which is a topological order), or `None` when there are more than `limit` or
    /// none of them holds every layer (a layer joined to no other is never reached).
    pub fn antichains(p: &PdProfile, edges: &[[usize; 2]], limit: usize) -> Option<PdStates> {
        let g = Graph::new(p.len(), edges);
        let (antichains, edges) = g.antichain_dag(limit)?;
        // Down-sets, ordered by size (a topological order of inclusion), then discovery.
        let downs: Vec<Bits> = antichains.iter().map(|a| g.down(a)).collect();
        let sizes: Vec<usize> = downs.iter().map(|d| d.iter().count()).collect();
        let mut order: Vec<usize> = (0..antichains.len()).collect();
        order.sort_by_key(|&s| (sizes[s], s));
        let mut rank = vec![0; order.len()];
        for (r, &s) in order.iter().enumerate() {
            rank[s] = r;
        }
        let n = order.len();
        let mut direct = vec![Vec::new(); n];
        for &(a, b) in &edges {
            direct[rank[b]].push(rank[a]);
        }
        let pred_sets = closure(&direct);
        if order.last().map(|&s| sizes[s]) != Some(p.len()) {
            return None;
        }
        let members: Vec<Bits> = order.iter().map(|&s| downs[s].clone()).collect();
        let sum = |v: &[f64], set: &Bits| set.iter().map(|l| v[l]).sum::<f64>();
        Some(PdStates {
            compute: members.iter().map(|m| sum(&p.compute, m)).collect(),
            activation: members.iter().map(|m| sum(&p.activation, m)).collect(),
            parameters: members.iter().map(|m| sum(&p.parameters, m)).collect(),
            output: order
                .iter()
                .map(|&s| sum(&p.activation, &g.augment(&antichains[s])))
                .collect(),
            shape: Shape::Graph {
                preds: pred_sets.iter().map(|s| s.iter().collect()).collect(),
                members,
                pred_sets,
            },
        })
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.compute.len()
    }

    /// True without states.
    pub fn is_empty(&self) -> bool {
        self.compute.is_empty()
    }

    /// True for the antichain states of a graph, false for the chain's prefixes.
    pub fn graph(&self) -> bool {
        matches!(self.shape, Shape::Graph { .. })
    }

    /// The states state `j` can be cut after, ascending.
    pub(super) fn preds(&self, j: usize) -> &[usize] {
        match &self.shape {
            Shape::Chain(all) => &all[..j],
            Shape::Graph { preds, .. } => &preds[j],
        }
    }

    /// Whether the range after state `i - 1` (from the start when `i` = 0) to state `j` is a
    /// set of layers: state `i - 1` is a predecessor of state `j`.
    pub(super) fn nested(&self, i: usize, j: usize) -> bool {
        i == 0
            || match &self.shape {
                Shape::Chain(_) => i <= j,
                Shape::Graph { pred_sets, .. } => pred_sets[j].contains(i - 1),
            }
    }

    /// The layers after state `i - 1` up to state `j` (state `i - 1` precedes state `j`),
    /// ascending.
    pub fn layers(&self, i: usize, j: usize) -> Vec<usize> {
        match &self.shape {
            Shape::Chain(_) => (i..=j).collect(),
            Shape::Graph { members, .. } => members[j]
                .iter()
                .filter(|&l| i == 0 || !members[i - 1].contains(l))
                .collect(),
        }
    }
}

/// The transitive predecessors of every node, given each node's direct predecessors, all of
/// lower index.
fn closure(direct: &[Vec<usize>]) -> Vec<Bits> {
    let n = direct.len();
    let mut out: Vec<Bits> = Vec::with_capacity(n);
    for d in direct {
        let mut set = Bits::new(n);
        for &a in d {
            set.union_with(&out[a]);
            set.insert(a);
        }
        out.push(set);
    }
    out
}

/// The layer graph with its transitive relations.
struct Graph {
    n: usize,
    succ: Vec<Vec<usize>>,
    /// Transitive predecessors and successors of each layer.
    ancestors: Vec<Bits>,
    descendants: Vec<Bits>,
}

impl Graph {
    fn new(n: usize, edges: &[[usize; 2]]) -> Graph {
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        for &[a, b] in edges {
            succ[a].push(b);
            pred[b].push(a);
        }
        // The chain is a topological order: ancestors forwards, descendants backwards.
        let ancestors = closure(&pred);
        let mut descendants = vec![Bits::new(n); n];
        for v in (0..n).rev() {
            let mut set = Bits::new(n);
            for &b in &succ[v] {
                set.union_with(&descendants[b]);
                set.insert(b);
            }
            descendants[v] = set;
        }
        Graph {
            n,
            succ,
            ancestors,
            descendants,
        }
    }

    /// The down-set of an antichain: its layers and their ancestors.
    fn down(&self, antichain: &Bits) -> Bits {
        let mut set = antichain.clone();
        for v in antichain.iter() {
            set.union_with(&self.ancestors[v]);
        }
        set
    }

    /// `augment_antichain`: the antichain plus every ancestor of one of its layers that also
    /// feeds a layer outside that layer's ancestors (other than the layer itself).
    fn augment(&self, antichain: &Bits) -> Bits {
        let mut set = antichain.clone();
        for a in antichain.iter() {
            for p in self.ancestors[a].iter() {
                if self.succ[p]
                    .iter()
                    .any(|&o| o != a && !self.ancestors[a].contains(o))
                {
                    set.insert(p);
                }
            }
        }
        set
    }

    /// `deaugment_augmented_antichain`: the layers of `set` none of whose descendants is in it.
    fn deaugment(&self, set: &Bits) -> Bits {
        let mut out = Bits::new(self.n);
        for v in set.iter() {
            if !self.descendants[v].intersects(set) {
                out.insert(v);
            }
        }
        out
    }

    /// `next_antichains`: for each layer `u` of the augmented antichain and each layer `v` it
    /// feeds that is not in the antichain and has no descendant in the augmented antichain,
    /// the augmented antichain with `u` replaced by `v`, deaugmented.
    fn next(&self, antichain: &Bits) -> Vec<Bits> {
        let aug = self.augment(antichain);
        let mut out = Vec::new();
        for u in aug.iter() {
            for &v in &self.succ[u] {
                if antichain.contains(v) || self.descendants[v].intersects(&aug) {
                    continue;
                }
                let mut replaced = aug.clone();
                replaced.0[u / 64] &= !(1 << (u % 64));
                replaced.insert(v);
                out.push(self.deaugment(&replaced));
            }
        }
        out
    }

    /// `antichain_dag`: every antichain reached from the first source (numbered in order of
    /// discovery, breadth first) and the edges between them; `None` past `limit` antichains.
    #[allow(clippy::type_complexity)]
    fn antichain_dag(&self, limit: usize) -> Option<(Vec<Bits>, Vec<(usize, usize)>)> {
        let source = (0..self.n).find(|&v| self.ancestors[v].0.iter().all(|&w| w == 0))?;
        let mut first = Bits::new(self.n);
        first.insert(source);
        let mut antichains = vec![first.clone()];
        let mut id = std::collections::HashMap::from([(first, 0usize)]);
        let mut edges = Vec::new();
        let mut queue = std::collections::VecDeque::from([0usize]);
        while let Some(s) = queue.pop_front() {
            for next in self.next(&antichains[s]) {
                let t = match id.get(&next) {
                    Some(&t) => t,
                    None => {
                        if antichains.len() == limit {
                            return None;
                        }
                        id.insert(next.clone(), antichains.len());
                        antichains.push(next);
                        queue.push_back(antichains.len() - 1);
                        antichains.len() - 1
                    }
                };
                edges.push((s, t));
            }
        }
        Some((antichains, edges))
    }
}
