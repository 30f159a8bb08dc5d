//! Fusing nodes into layers, as dp.cpp does: the forward nodes of one colour class become one
//! group, backward nodes whose class has no forward node get an artificial one (their own group),
//! and strongly connected components of the groups' graph are fused.

use super::super::dag;
use super::format::Graph;
use std::collections::{BTreeMap, BTreeSet};

/// The colour class a node belongs to: its `colorClass`, or itself alone.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Color(i64),
    Alone(usize),
}

/// The layers nodes are fused into (not yet in chain order).
pub(super) struct Fusion {
    /// The layer of every node.
    pub(super) layer_of: Vec<usize>,
    /// How many layers.
    pub(super) layers: usize,
    /// Edges between layers, sorted, each once.
    pub(super) edges: Vec<(usize, usize)>,
    /// Colour classes with a forward node.
    pub(super) classes: usize,
    /// Classes of backward nodes given an artificial forward node.
    pub(super) orphans: usize,
}

/// Fuses `g`'s nodes into layers.
pub(super) fn fuse(g: &Graph) -> Fusion {
    let n = g.len();
    let class = |v: usize| match g.file.nodes[v].color_class {
        Some(c) => Class::Color(c),
        None => Class::Alone(v),
    };
    // Groups: one per colour class with a forward node, then one per class of orphaned
    // backward nodes.
    let mut group_of_class: BTreeMap<Class, usize> = BTreeMap::new();
    let mut group = vec![usize::MAX; n];
    for v in (0..n).filter(|&v| g.forward(v)) {
        let next = group_of_class.len();
        group[v] = *group_of_class.entry(class(v)).or_insert(next);
    }
    let classes = group_of_class.len();
    let mut orphans = 0;
    for v in (0..n).filter(|&v| !g.forward(v)) {
        let next = group_of_class.len();
        group[v] = *group_of_class.entry(class(v)).or_insert_with(|| {
            orphans += 1;
            next
        });
    }
    let groups = group_of_class.len();
    let mut group_edges = BTreeSet::new();
    for &(a, b) in &g.edges {
        if g.forward(a) && g.forward(b) {
            group_edges.insert((group[a], group[b]));
        } else if !g.forward(a) && !g.forward(b) && (group[a] >= classes || group[b] >= classes) {
            // dp.cpp's createArtificialForwardNodes: mirror the backward edge.
            group_edges.insert((group[b], group[a]));
        }
    }
    group_edges.retain(|&(a, b)| a != b);
    let group_edges: Vec<(usize, usize)> = group_edges.into_iter().collect();
    let (comp_of_group, layers) = dag::condense(groups, &group_edges);
    let mut edges: Vec<(usize, usize)> = group_edges
        .iter()
        .map(|&(a, b)| (comp_of_group[a], comp_of_group[b]))
        .filter(|(a, b)| a != b)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    Fusion {
        layer_of: group.iter().map(|&gr| comp_of_group[gr]).collect(),
        layers,
        edges,
        classes,
        orphans,
    }
}
