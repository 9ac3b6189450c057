//! The graph-level passes, in pipeline order: [`simplify`], [`fusion`], [`layout`],
//! [`views`] (view folding into per-kernel programs of loads with index maps) and [`storage`].
//! Each file opens with what its pass assumes and guarantees; docs/passes.md has examples.
//! What fusion records (groups, boundaries, merge decisions) is in [`groups`], read by the
//! later passes without fusion's driver; how the passes class ops is in [`op_class`].

pub mod cost;
pub mod fusion;
pub mod groups;
pub mod kernel;
pub mod layout;
pub mod op_class;
pub mod rebuild;
pub mod simplify;
pub mod storage;
pub mod views;

pub use rebuild::NodeMap;

use weft_ir::GraphError;

/// An error of a pass: a graph the passes cannot compile, named, or a broken pass invariant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PassError {
    /// The graph is malformed or not fully bound (from `Graph::verify` or a builder).
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A construct the passes do not compile, naming the node and why.
    #[error("cannot compile {node}: {reason}")]
    Unsupported {
        /// The node at fault, by label.
        node: String,
        /// Why it cannot be compiled.
        reason: String,
    },
    /// Node `node` would be read per part of a flattened axis that its reader iterates whole
    /// (a div/mod index); the pipeline stores the node instead. Storing always helps (views.rs),
    /// so it escapes only on an internal inconsistency.
    #[error("cannot compile {label}: axis `{axis}` is indexed through a flattened axis iterated whole (needs div/mod)")]
    SplitIndex {
        /// The node to store.
        node: weft_ir::NodeId,
        /// The node, by label.
        label: String,
        /// The axis without an index.
        axis: String,
    },
    /// A stage of a kernel would be read at another outer point than the one it is computed
    /// at: a leaf key of the group's outer loops stands for a part of one flattened axis in
    /// the stage's frame and of another in its reader's (`A0·A1` beside `A1·A0`). The pipeline
    /// ends the group at that stage instead, so the reader loads it from memory; this escapes
    /// only on an internal inconsistency.
    #[error("internal compiler error: {label} is read at another outer point than it is computed")]
    OuterPoint {
        /// The stage to store at a group boundary.
        node: weft_ir::NodeId,
        /// The node, by label.
        label: String,
    },
    /// A pass broke one of its own guarantees (a bug in weft, not in the graph).
    #[error("internal compiler error: {0}")]
    Internal(String),
}
