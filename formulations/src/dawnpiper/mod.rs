//! DawnPiper family (`docs/dawnpiper.md`): the fine-grained `graph` extension
//! ([`graph`]), compute- and memory-balanced cut positions ([`balance`]) and the Capuchin-style
//! swap/recompute cost model MemOpt ([`memopt`]).

pub mod balance;
pub mod comm;
pub mod graph;
pub mod memopt;
