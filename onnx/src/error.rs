//! The importer's one error type: every variant names the node (its name, or its first output
//! when unnamed), the op and the opset, or the file, at fault.

use weft_ir::GraphError;

/// Where in a model an error arose: the node and its op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At {
    /// The node's name, or `output <first output>` when the node has none.
    pub node: String,
    /// The ONNX op type.
    pub op: String,
    /// The opset the model imports for the op's domain.
    pub opset: i64,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node `{}` ({}, opset {})",
            self.node, self.op, self.opset
        )
    }
}

/// Why an ONNX model could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The bytes are not an ONNX model (a truncated or foreign file).
    #[error("{path}: not an ONNX model: {message}")]
    Parse {
        /// The file, or `<bytes>`.
        path: String,
        /// What the protobuf reader said.
        message: String,
    },
    /// The model has no graph, or imports no default-domain opset weft reads.
    #[error("{path}: {message}")]
    Model {
        /// The file, or `<bytes>`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An op weft does not import.
    #[error("{at}: weft does not import {}{}", .at.op, if .domain.is_empty() { String::new() } else { format!(" of domain `{}`", .domain) })]
    UnsupportedOp {
        /// The node.
        at: At,
        /// The op's domain (empty: the default ONNX domain).
        domain: String,
    },
    /// An op weft imports, used in a way weft does not (an attribute value, a run-time input
    /// that must be known at import, a dtype).
    #[error("{at}: {message}")]
    Unsupported {
        /// The node.
        at: At,
        /// What is not supported, and why.
        message: String,
    },
    /// A node reads a tensor that no node, input or initializer produces.
    #[error("{at}: input `{input}` is produced by no node, graph input or initializer")]
    MissingInput {
        /// The node.
        at: At,
        /// The missing tensor's name.
        input: String,
    },
    /// A node lacks an input or attribute its op requires, or has one of the wrong kind.
    #[error("{at}: {message}")]
    Malformed {
        /// The node.
        at: At,
        /// What is wrong.
        message: String,
    },
    /// The nodes cannot be ordered so that each reads only earlier results.
    #[error("the graph has a cycle through node `{node}` ({op})")]
    Cycle {
        /// A node on the cycle.
        node: String,
        /// Its op.
        op: String,
    },
    /// Operand shapes that do not agree (broadcasting, a reshape's element count, ...).
    #[error("{at}: {message}")]
    Shape {
        /// The node.
        at: At,
        /// The shapes and why they disagree.
        message: String,
    },
    /// A tensor (initializer, constant, input or output) with a dtype weft has no counterpart
    /// for, or whose data does not match its dims.
    #[error("tensor `{tensor}`: {message}")]
    Tensor {
        /// The tensor's name.
        tensor: String,
        /// What is wrong.
        message: String,
    },
    /// An external data file could not be read, or lies outside the model's directory.
    #[error("tensor `{tensor}`: external data `{location}`: {message}")]
    ExternalData {
        /// The tensor.
        tensor: String,
        /// The `location` the model gives.
        location: String,
        /// What went wrong.
        message: String,
    },
    /// The weft graph refused what the node asks of it.
    #[error("{at}: {source}")]
    Graph {
        /// The node.
        at: At,
        /// The graph's error (boxed: it is large and errors are rare).
        source: Box<GraphError>,
    },
}
