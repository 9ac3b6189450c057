//! Errors raised while planning or running a computation. Each names the node (by its name, or
//! its id when unnamed) and what is wrong with it.

use weft_ir::{GraphError, HostError};

/// An error planning or running a computation.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A graph error: an unbound axis, a bad slice, an initial value that does not fit.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A host array that does not hold together (shape and data disagree).
    #[error(transparent)]
    Host(#[from] HostError),
    /// A node id that does not belong to the graph.
    #[error("{0} does not belong to this graph")]
    ForeignNode(String),
    /// A node listed as a placeholder of a computation is not a placeholder.
    #[error("`{node}` is a {kind}, not a placeholder; only placeholders take values at a call")]
    NotAPlaceholder {
        /// The node.
        node: String,
        /// What it is.
        kind: &'static str,
    },
    /// A placeholder listed twice.
    #[error("placeholder `{placeholder}` is listed twice")]
    DuplicatePlaceholder {
        /// The placeholder.
        placeholder: String,
    },
    /// An output depends on a placeholder the computation does not take.
    #[error("output `{output}` depends on placeholder `{placeholder}`, which is not among the computation's placeholders")]
    MissingPlaceholder {
        /// The placeholder.
        placeholder: String,
        /// The output that needs it.
        output: String,
    },
    /// A call with the wrong number of input arrays.
    #[error("the computation takes {} (one per placeholder) but {got} {} given", weft_ir::size::count(*.expected, "input array", "input arrays"), if *.got == 1 { "was" } else { "were" })]
    InputCount {
        /// Placeholders of the computation.
        expected: usize,
        /// Arrays given.
        got: usize,
    },
    /// A call with more or fewer output arrays than the computation has outputs.
    #[error("the computation has {expected} outputs but {got} output arrays were given")]
    OutputCount {
        /// Outputs of the computation.
        expected: usize,
        /// Arrays given.
        got: usize,
    },
    /// An output array that does not match its output node exactly.
    #[error("output array for `{output}`: {message}")]
    Output {
        /// The output node.
        output: String,
        /// What does not match.
        message: String,
    },
    /// An input array that does not match its placeholder exactly (an executable receives
    /// inputs already put in the placeholder's axes order).
    #[error("input for placeholder `{placeholder}`: {message}")]
    Input {
        /// The placeholder.
        placeholder: String,
        /// What is wrong.
        message: String,
    },
    /// A variable or persistent tensor whose value is missing from, or does not fit, the state.
    #[error("state of `{tensor}`: {message}")]
    State {
        /// The variable or persistent tensor.
        tensor: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor's host memory could not be allocated (or is not a valid value of its dtype).
    #[error("`{tensor}`: {source}")]
    Alloc {
        /// The tensor.
        tensor: String,
        /// Why.
        source: HostError,
    },
    /// The memory a computation needs exceeds the caller's budget (`JitOptions::max_bytes`,
    /// `WEFT_MAX_BYTES`, by default the machine's physical memory).
    #[error("the computation needs {needed} bytes ({detail}), more than the memory budget of {budget} bytes")]
    MemoryBudget {
        /// Bytes needed.
        needed: u64,
        /// The budget.
        budget: u64,
        /// What the bytes are.
        detail: String,
    },
    /// A device buffer or kernel call failed (a compiled backend's runtime).
    #[error(transparent)]
    Device(#[from] crate::RuntimeError),
    /// A graph that the builders could not have made (operand dtypes or axes disagree with the
    /// node). Never expected; reported instead of panicking.
    #[error("node `{node}` ({op}): {message}")]
    Malformed {
        /// The node.
        node: String,
        /// Its op.
        op: &'static str,
        /// What is inconsistent.
        message: String,
    },
}
