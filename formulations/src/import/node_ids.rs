//! Graph files whose nodes carry ids and whose edges name them by `sourceId` and `destId`
//! (Piper's and dnn-partitioning's): ids to indices, with the errors that name the field.

use crate::error::InputError;
use std::collections::BTreeMap;

/// The node ids of a graph file, read in order, and its edges as node indices.
pub(crate) struct NodeIds {
    ids: Vec<i64>,
    index: BTreeMap<i64, usize>,
    /// The first edge joining each pair of nodes, to name an edge of a cycle.
    edge_of: BTreeMap<(usize, usize), usize>,
}

impl NodeIds {
    /// Ids for a file of `nodes` nodes; none is an error (`nodes`).
    pub(crate) fn new(nodes: usize) -> Result<NodeIds, InputError> {
        if nodes == 0 {
            return Err(InputError::field(
                "nodes",
                "empty graph: at least one node is needed",
            ));
        }
        Ok(NodeIds {
            ids: Vec::with_capacity(nodes),
            index: BTreeMap::new(),
            edge_of: BTreeMap::new(),
        })
    }

    /// Reads the next node's id; a repeated id is an error (`nodes[i].id`).
    pub(crate) fn push(&mut self, id: i64) -> Result<(), InputError> {
        let i = self.ids.len();
        if let Some(first) = self.index.insert(id, i) {
            return Err(InputError::field(
                format!("nodes[{i}].id"),
                format!("duplicate node id {id} (also nodes[{first}])"),
            ));
        }
        self.ids.push(id);
        Ok(())
    }

    /// Edge `k` (`edges[k]`) from node id `source` to node id `dest`, as node indices; an unknown
    /// id is an error (`edges[k].sourceId` or `.destId`).
    pub(crate) fn edge(
        &mut self,
        k: usize,
        source: i64,
        dest: i64,
    ) -> Result<(usize, usize), InputError> {
        let find = |id: i64, name: &str| {
            self.index.get(&id).copied().ok_or_else(|| {
                InputError::field(
                    format!("edges[{k}].{name}"),
                    format!("unknown node id {id}"),
                )
            })
        };
        let (a, b) = (find(source, "sourceId")?, find(dest, "destId")?);
        self.edge_of.entry((a, b)).or_insert(k);
        Ok((a, b))
    }

    /// The error for a cycle of node indices (as `dag::topological_order` returns it, its first
    /// node repeated at the end): the edge that closes it, and the node ids around it.
    pub(crate) fn cycle(&self, cycle: &[usize]) -> InputError {
        let k = cycle.len();
        let ids: Vec<String> = cycle.iter().map(|&v| self.ids[v].to_string()).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        InputError::field(
            format!("edges[{}]", self.edge_of[&(cycle[k - 2], cycle[k - 1])]),
            format!(
                "the graph has a cycle through node ids {}",
                super::cycle_text(&ids)
            ),
        )
    }
}
