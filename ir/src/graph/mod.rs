//! The axes-labelled op graph (docs/design.md).
//!
//! A [`Graph`] owns an axis table and an arena of [`Node`]s in creation order; every node's
//! operands precede it, so creation order is a topological order. Each node records its op, its
//! result axes and dtype, inferred when the node is made (see `build.rs`), and an optional unique
//! name. Lengths may be left unbound while building; [`Graph::verify`] checks everything that
//! needs lengths once they are bound.

mod build;
mod builder;
mod contraction;
pub mod convolution;
mod cut;
mod error;
mod repeated;
mod tensor_size;
mod verify;
mod walk;
mod window;
pub mod window_fold;

pub(crate) use build::resolve_index;
pub use builder::{GraphBuilder, Tensor};
pub use contraction::SumOfProducts;
pub use convolution::{ConvExpansion, ConvPairing, ConvSpec, PoolKind, PoolSpec, SpatialPair};
pub use error::GraphError;
pub use repeated::{Repeated, RepeatedReduction};
pub use window::PooledAxis;

use crate::arena::Arena;
use crate::axis::{window_len, Axes, Axis, AxisData, AxisDef, AxisId, Role, SliceRange};
use crate::axis::{WindowKernel, WindowStep};
use crate::axis_names::TableNames;
use crate::dtype::DType;
use crate::host::{ArrayData, Scalar};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};
use std::sync::Arc;

/// A node of a graph: an index into its arena, meaningful only to the graph that made it.
///
/// Like an [`Axis`], a node id remembers which graph made it (the graph's table number; a
/// clone of a graph keeps it, so the clone accepts the original's ids). Comparison, ordering
/// and hashing ignore it; the graph's builders and lookups check it, so an id of another
/// graph is [`GraphError::Foreign`] instead of the node with the same index here.
/// [`NodeId::from_u32`] makes an id of no known graph, which every graph accepts.
///
/// ```
/// use weft::prelude::*;
/// let mut g = Graph::new();
/// let n = g.axis("N", 2)?;
/// let x = g.placeholder("x", &[n], DType::F32)?;
/// assert_eq!(g.find("x"), Some(x));
/// assert_eq!(g.node(x).dtype, DType::F32);
/// let other = Graph::new();
/// assert!(other.get(x).is_none()); // x is g's, not other's
/// # Ok::<(), GraphError>(())
/// ```
#[derive(Clone, Copy)]
pub struct NodeId {
    index: u32,
    /// The table number of the graph that made it; 0 when unknown.
    table: u32,
}

impl PartialEq for NodeId {
    fn eq(&self, other: &NodeId) -> bool {
        self.index == other.index
    }
}

impl Eq for NodeId {}

impl std::hash::Hash for NodeId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index.hash(state)
    }
}

impl PartialOrd for NodeId {
    fn partial_cmp(&self, other: &NodeId) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NodeId {
    fn cmp(&self, other: &NodeId) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}

impl crate::arena::EntityRef for NodeId {
    fn index(self) -> usize {
        self.index as usize
    }
    fn new(index: usize) -> Self {
        NodeId::from_u32(u32::try_from(index).expect("arena holds at most u32::MAX entities"))
    }
}

impl NodeId {
    /// The raw index.
    pub fn as_u32(self) -> u32 {
        self.index
    }
    /// The node with raw index `i`, of no known graph.
    pub fn from_u32(i: u32) -> Self {
        NodeId { index: i, table: 0 }
    }
    /// This id as graph `table`'s.
    fn in_table(self, table: u32) -> NodeId {
        NodeId { table, ..self }
    }
    /// Whether a graph of table number `table` may read this id as its own.
    fn belongs_to(self, table: u32) -> bool {
        self.table == 0 || self.table == table
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}", self.index)
    }
}

impl std::fmt::Debug for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The four kinds of stored tensor (docs/design.md, "Tensor kinds").
///
/// ```
/// use weft::ir::TensorKind;
/// let v = TensorKind::Variable.flags();
/// assert!(v.persistent && v.trainable && !v.input);
/// assert_eq!(TensorKind::PersistentTensor.keyword(), "persistent_tensor");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    /// Immutable, given when the graph is built.
    Constant,
    /// An input: a value passed in on every call.
    Placeholder,
    /// A trainable parameter that persists across calls and starts from an initial value.
    Variable,
    /// State that persists across calls (e.g. a velocity in SGD), not trainable.
    PersistentTensor,
}

/// The flags of nGraph's stored tensors (docs/design.md, "Tensor kinds").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindFlags {
    /// Immutable; may be inlined.
    pub constant: bool,
    /// Retained across computations.
    pub persistent: bool,
    /// Meant to be retrieved as part of a variable list.
    pub trainable: bool,
    /// Passed in at run time.
    pub input: bool,
}

impl TensorKind {
    /// The flags of this kind (docs/design.md, "Tensor kinds").
    pub fn flags(self) -> KindFlags {
        let (constant, persistent, trainable, input) = match self {
            TensorKind::Constant => (true, true, false, false),
            TensorKind::Placeholder => (false, true, false, true),
            TensorKind::PersistentTensor => (false, true, false, false),
            TensorKind::Variable => (false, true, true, false),
        };
        KindFlags {
            constant,
            persistent,
            trainable,
            input,
        }
    }
    /// The keyword of this kind in the text format.
    pub fn keyword(self) -> &'static str {
        match self {
            TensorKind::Constant => "constant",
            TensorKind::Placeholder => "placeholder",
            TensorKind::Variable => "variable",
            TensorKind::PersistentTensor => "persistent_tensor",
        }
    }
}

/// The value a stored tensor starts with.
///
/// ```
/// use weft::ir::{ArrayData, DType, Graph, Scalar, TensorInit};
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let zeros = g.variable("z", &[n], DType::F64, TensorInit::Fill(Scalar::Float(0.0)))?;
/// let given = g.variable("w", &[n], DType::F64, TensorInit::data(ArrayData::F64(vec![1., 2., 3.])))?;
/// assert_ne!(zeros, given);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum TensorInit {
    /// Every element the same.
    Fill(Scalar),
    /// Elements in row-major order of the tensor's axes as declared. Shared, not copied, when
    /// a pass rebuilds the graph (a 4 MiB constant was copied eight times per compile);
    /// [`TensorInit::data`] makes one.
    Data(Arc<ArrayData>),
}

impl TensorInit {
    /// Elements in row-major order of the tensor's axes as declared.
    pub fn data(data: ArrayData) -> TensorInit {
        TensorInit::Data(Arc::new(data))
    }
}

impl From<ArrayData> for TensorInit {
    fn from(data: ArrayData) -> TensorInit {
        TensorInit::data(data)
    }
}

macro_rules! op_names {
    ($(#[$m:meta])* $ty:ident { $($(#[$vm:meta])* $v:ident => $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $ty { $($(#[$vm])* $v),* }
        impl $ty {
            /// Every variant.
            pub const ALL: &'static [$ty] = &[$($ty::$v),*];
            /// The op's name in the text format and the API.
            pub fn name(self) -> &'static str {
                match self { $($ty::$v => $s),* }
            }
            /// The variant named `s`.
            pub fn from_name(s: &str) -> Option<$ty> {
                match s { $($s => Some($ty::$v),)* _ => None }
            }
        }
    };
}

op_names!(
    /// Elementwise unary ops.
    UnaryOp {
        /// −x.
        Negative => "negative",
        /// |x|.
        Abs => "abs",
        /// eˣ.
        Exp => "exp",
        /// ln x.
        Log => "log",
        /// √x.
        Sqrt => "sqrt",
        /// x².
        Square => "square",
        /// 1/x.
        Reciprocal => "reciprocal",
        /// −1, 0 or 1.
        Sign => "sign",
        /// tanh x.
        Tanh => "tanh",
        /// 1/(1+e⁻ˣ).
        Sigmoid => "sigmoid",
        /// sin x.
        Sin => "sin",
        /// cos x.
        Cos => "cos",
        /// max(x, 0).
        Relu => "relu",
    }
);

impl UnaryOp {
    /// Whether the op is defined on floats only (the others take any numeric dtype).
    pub fn is_float_only(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Sqrt
                | UnaryOp::Reciprocal
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Sin
                | UnaryOp::Cos
        )
    }

    /// Whether backends may compute the op only to within a few ulps of the exact result,
    /// instead of rounding it as the interpreter does: the JIT's polynomial functions
    /// (docs/numerics.md). The interpreter's perturbed runs nudge their results
    /// (docs/testing.md, "Tolerances").
    pub fn is_approximate(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Sin
                | UnaryOp::Cos
        )
    }
}

op_names!(
    /// Elementwise binary arithmetic.
    BinaryOp {
        /// x + y.
        Add => "add",
        /// x − y.
        Subtract => "subtract",
        /// x · y.
        Multiply => "multiply",
        /// x / y.
        Divide => "divide",
        /// max(x, y).
        Maximum => "maximum",
        /// min(x, y).
        Minimum => "minimum",
        /// xʸ.
        Power => "power",
    }
);

op_names!(
    /// Elementwise comparisons; the result is `bool`.
    CompareOp {
        /// x = y.
        Equal => "equal",
        /// x ≠ y.
        NotEqual => "not_equal",
        /// x < y.
        Less => "less",
        /// x ≤ y.
        LessEqual => "less_equal",
        /// x > y.
        Greater => "greater",
        /// x ≥ y.
        GreaterEqual => "greater_equal",
    }
);

op_names!(
    /// Reductions over a set of axes.
    ReduceOp {
        /// Σ.
        Sum => "sum",
        /// Π.
        Prod => "prod",
        /// Maximum.
        Max => "max",
        /// Minimum.
        Min => "min",
        /// Arithmetic mean.
        Mean => "mean",
        /// Index of the first maximum, as i64.
        ArgMax => "argmax",
        /// Index of the first minimum, as i64.
        ArgMin => "argmin",
    }
);

/// How `slice` treats one axis.
///
/// ```
/// use weft::ir::{AxisSlice, DType, Graph, SliceRange};
/// let mut g = Graph::new();
/// let (h, w) = (g.axis("H", 4)?, g.axis("W", 5)?);
/// let x = g.placeholder("x", &[h, w], DType::F32)?;
/// // Rows 1..3 of x, column 0: a derived axis of length 2 in H's place; W is dropped.
/// let s = g.slice(x, &[(h, AxisSlice::Range(SliceRange::range(1, 3))), (w, AxisSlice::Index(0))])?;
/// assert_eq!(g.shape_of(&g.node(s).axes)?, vec![2]);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisSlice {
    /// Keep a range; the result has a derived axis in its place.
    Range(SliceRange),
    /// Pin one index (negative counts from the end); the axis is dropped.
    Index(i64),
}

/// What a node computes. Operands are earlier nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A stored tensor: constant, placeholder, variable or persistent tensor.
    Tensor {
        /// Which kind.
        kind: TensorKind,
        /// The initial value; `None` only for placeholders.
        init: Option<TensorInit>,
    },
    /// An elementwise unary op.
    Unary(UnaryOp, NodeId),
    /// An elementwise binary op; operands broadcast by axis.
    Binary(BinaryOp, NodeId, NodeId),
    /// An elementwise comparison; operands broadcast by axis.
    Compare(CompareOp, NodeId, NodeId),
    /// `select(cond, on_true, on_false)`, elementwise.
    Select(NodeId, NodeId, NodeId),
    /// Elementwise conversion to the node's dtype.
    Convert(NodeId),
    /// A reduction over `axes` (in the given order, which matters only for argmax/argmin's flat
    /// index); the node's axes give the order of the remaining ones.
    Reduce {
        /// Which reduction.
        op: ReduceOp,
        /// The reduced tensor.
        input: NodeId,
        /// The reduction axes.
        axes: Axes,
    },
    /// Contraction of every shared axis and every dual pair.
    Dot(NodeId, NodeId),
    /// A view with more axes (the node's), values repeated along the new ones.
    Broadcast(NodeId),
    /// A view with the same axes in the node's order.
    AxesWithOrder(NodeId),
    /// A view relabelling each axis, position by position, with the node's axes.
    CastAxes(NodeId),
    /// A view mapping each axis `A^(k*)` to `A^((1-k)*)`, in reverse order.
    Transpose(NodeId),
    /// A view taking ranges of, or pinning, some axes.
    Slice {
        /// The sliced tensor.
        input: NodeId,
        /// Per-axis ranges or indices.
        slices: Vec<(Axis, AxisSlice)>,
    },
    /// A view merging `axes` (the first major) into one derived axis, placed where the first
    /// of them stood.
    Flatten {
        /// The flattened tensor.
        input: NodeId,
        /// The merged axes, in major-to-minor order.
        axes: Vec<Axis>,
    },
    /// A view splitting a flattened axis back into its parts, in place.
    Unflatten {
        /// The tensor.
        input: NodeId,
        /// The flattened axis to split.
        axis: Axis,
    },
    /// A view with zeros before and after some axes.
    Pad {
        /// The padded tensor.
        input: NodeId,
        /// Per-axis `(axis, before, after)`.
        pads: Vec<(Axis, usize, usize)>,
    },
    /// The concatenation of tensors along one axis each; the other axes agree as sets.
    Concat(Vec<(NodeId, Axis)>),
    /// A view with one more axis at a position, values repeated along it.
    ExpandDims {
        /// The tensor.
        input: NodeId,
        /// The new axis.
        axis: Axis,
        /// Its position in the result.
        pos: usize,
    },
    /// A convolution pairing `input` and `filter` by axis role (`convolution.rs`).
    Convolution {
        /// The input (feature maps).
        input: NodeId,
        /// The filter.
        filter: NodeId,
        /// Strides, dilations, padding and groups, per spatial role.
        spec: ConvSpec,
    },
    /// Max or average pooling over windows of some axes, named by role (`convolution.rs`).
    Pool {
        /// The pooled tensor.
        input: NodeId,
        /// Kind, and per role the window and how it moves.
        spec: PoolSpec,
    },
    /// Evaluates to `value`; after the call the variable holds it.
    Assign {
        /// A variable or persistent tensor.
        target: NodeId,
        /// The new value; its axes are the target's as a set.
        value: NodeId,
    },
}

impl Op {
    /// The op's name in the text format.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Tensor { kind, .. } => kind.keyword(),
            Op::Unary(u, _) => u.name(),
            Op::Binary(b, _, _) => b.name(),
            Op::Compare(c, _, _) => c.name(),
            Op::Select(..) => "select",
            Op::Convert(_) => "convert",
            Op::Reduce { op, .. } => op.name(),
            Op::Dot(..) => "dot",
            Op::Broadcast(_) => "broadcast",
            Op::AxesWithOrder(_) => "axes_with_order",
            Op::CastAxes(_) => "cast_axes",
            Op::Transpose(_) => "transpose",
            Op::Slice { .. } => "slice",
            Op::Flatten { .. } => "flatten",
            Op::Unflatten { .. } => "unflatten",
            Op::Pad { .. } => "pad",
            Op::Concat(_) => "concat",
            Op::ExpandDims { .. } => "expand_dims",
            Op::Assign { .. } => "assign",
            Op::Convolution { .. } => "convolution",
            Op::Pool { spec, .. } => spec.kind.name(),
        }
    }

    /// The operands, in order.
    pub fn inputs(&self) -> Vec<NodeId> {
        match self {
            Op::Tensor { .. } => vec![],
            Op::Unary(_, x)
            | Op::Convert(x)
            | Op::Broadcast(x)
            | Op::AxesWithOrder(x)
            | Op::CastAxes(x)
            | Op::Transpose(x) => vec![*x],
            Op::Reduce { input, .. }
            | Op::Slice { input, .. }
            | Op::Flatten { input, .. }
            | Op::Unflatten { input, .. }
            | Op::Pad { input, .. }
            | Op::Pool { input, .. }
            | Op::ExpandDims { input, .. } => vec![*input],
            Op::Binary(_, a, b) | Op::Compare(_, a, b) | Op::Dot(a, b) => vec![*a, *b],
            Op::Convolution { input, filter, .. } => vec![*input, *filter],
            Op::Select(c, a, b) => vec![*c, *a, *b],
            Op::Concat(parts) => parts.iter().map(|(n, _)| *n).collect(),
            Op::Assign { target, value } => vec![*target, *value],
        }
    }

    /// True for ops that only re-index their operand (simple and complex views, docs/design.md).
    pub fn is_view(&self) -> bool {
        matches!(
            self,
            Op::Broadcast(_)
                | Op::AxesWithOrder(_)
                | Op::CastAxes(_)
                | Op::Transpose(_)
                | Op::Slice { .. }
                | Op::Flatten { .. }
                | Op::Unflatten { .. }
                | Op::Pad { .. }
                | Op::ExpandDims { .. }
        )
    }
}

/// A node: an op with its inferred result axes and dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What the node computes.
    pub op: Op,
    /// The result axes.
    pub axes: Axes,
    /// The result dtype.
    pub dtype: DType,
    /// A unique name, if the user gave one.
    pub name: Option<String>,
}

/// An axes-labelled op graph: an axis table, nodes in creation order, and the outputs marked
/// for `weft run`.
///
/// ```
/// use weft::ir::{BinaryOp, DType, Graph, ReduceOp};
/// let mut g = Graph::new();
/// let (r, c) = (g.axis("R", 2)?, g.axis("C", 3)?);
/// let x = g.placeholder("x", &[r, c], DType::F32)?;
/// let b = g.placeholder("b", &[c], DType::F32)?;
/// let y = g.binary(BinaryOp::Add, x, b)?; // b broadcasts over R, by axis
/// let s = g.reduce(ReduceOp::Sum, y, &[c], None)?;
/// g.mark_output(s)?;
/// assert_eq!(g.shape_of(&g.node(s).axes)?, vec![2]);
/// g.verify()?;
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Graph {
    /// The axis table's number, stamped on every axis this graph hands out (`Axis::table`).
    table: u32,
    /// The table's names as `{:?}` of an `Axis` shows them (crate::axis_names), shared with
    /// clones; every entry pushed or renamed is registered there.
    table_names: Arc<TableNames>,
    axes: Arena<AxisId, AxisData>,
    nodes: Arena<NodeId, Node>,
    outputs: Vec<NodeId>,
    // Interning of derived axes, lookup of names and each axis-table entry's length where it
    // resolves (indexed like `axes`): kept up to date by every change, derived from the fields
    // above, not compared.
    derived: HashMap<AxisDef, AxisId>,
    names: HashMap<String, NodeId>,
    lens: Vec<Option<usize>>,
}

/// One step of resolving a derived length: the length, or a part that has none.
enum Derived {
    Len(usize),
    NeedsPart(Axis),
}

impl Default for Graph {
    fn default() -> Graph {
        // Each graph draws a new table number (never 0, "unknown"); wrapping after 2^32 − 1
        // graphs only weakens the check, it never rejects a valid array.
        static NEXT_TABLE: AtomicU32 = AtomicU32::new(1);
        let table = NEXT_TABLE.fetch_add(1, AtomicOrdering::Relaxed).max(1);
        Graph {
            table,
            table_names: TableNames::new(table),
            axes: Arena::default(),
            nodes: Arena::default(),
            outputs: Vec::new(),
            derived: HashMap::new(),
            names: HashMap::new(),
            lens: Vec::new(),
        }
    }
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// The number of this graph's axis table (`Axis::table` of its axes; a clone shares it).
    pub fn axis_table_number(&self) -> u32 {
        self.table
    }

    /// The plain axis of table entry `id`, as this graph's own.
    pub fn axis_of(&self, id: AxisId) -> Axis {
        Axis::in_table(id, 0, self.table)
    }

    // ---- axes ----------------------------------------------------------------------------

    /// Declares an axis with a known length (nGraph's `make_axis(length, name)`).
    /// A length of 0 is allowed (an empty batch; NumPy's meanings, docs/axes.md).
    pub fn axis(&mut self, name: &str, len: usize) -> Result<Axis, GraphError> {
        self.axis_with_roles(name, Some(len), Vec::new())
    }

    /// Declares an axis whose length is bound later with [`Graph::bind`].
    pub fn axis_unbound(&mut self, name: &str) -> Result<Axis, GraphError> {
        self.axis_with_roles(name, None, Vec::new())
    }

    /// Declares an axis with roles and an optional length.
    pub fn axis_with_roles(
        &mut self,
        name: &str,
        len: Option<usize>,
        roles: Vec<Role>,
    ) -> Result<Axis, GraphError> {
        if self.base_axis_named(name).is_some() {
            return Err(GraphError::AxisNameTaken(name.to_string()));
        }
        Ok(self.declare_axis(name, len, roles))
    }

    /// Declares a new axis whose name is only a label: another axis may already have it
    /// (nGraph-python's `make_axis`, where two models in one process both call their batch
    /// axis `N`). Axes so named are told apart by their table index wherever they are shown
    /// (`N@0`, `N@3`, as the text form writes them), and [`Graph::find_axis`] finds neither.
    pub fn axis_labelled(&mut self, name: &str, len: Option<usize>, roles: Vec<Role>) -> Axis {
        self.declare_axis(name, len, roles)
    }

    /// A graph with this one's axis table — the same ids, names (same-named axes included),
    /// roles, lengths and derivations — and no nodes or outputs: where a pass rebuilds the
    /// nodes. `None` when the table holds one derivation twice (interning would merge them).
    pub fn with_axis_table_only(&self) -> Option<Graph> {
        let mut out = Graph::new();
        for (id, data) in self.axis_table() {
            let made = match &data.def {
                AxisDef::Base { len } => out.declare_axis(&data.name, *len, data.roles.clone()),
                def => {
                    let a = out.derived_axis(def.clone());
                    out.rename_axis(a.id, &data.name);
                    out.add_roles(a.id, &data.roles);
                    a
                }
            };
            if made.id != id {
                return None;
            }
        }
        Some(out)
    }

    /// The first declared axis named `name`, if any.
    fn base_axis_named(&self, name: &str) -> Option<AxisId> {
        self.axes
            .iter()
            .find(|(_, d)| d.name == name && matches!(d.def, AxisDef::Base { .. }))
            .map(|(id, _)| id)
    }

    /// Declares an axis even if another has its name: the text format's `N@3`, told apart by
    /// its table index, and the expansions' fresh axes. Names then show as `name@index`.
    pub(crate) fn declare_axis(
        &mut self,
        name: &str,
        len: Option<usize>,
        roles: Vec<Role>,
    ) -> Axis {
        let id = self.axes.push(AxisData {
            name: name.to_string(),
            roles,
            def: AxisDef::Base { len },
        });
        self.table_names.set(id.as_u32(), name, true);
        let axis = self.axis_of(id);
        self.lens.push(len);
        axis
    }

    /// The axis table entry of `id`.
    pub fn axis_data(&self, id: AxisId) -> &AxisData {
        &self.axes[id]
    }

    /// Every axis-table entry, in creation order.
    pub fn axis_table(&self) -> impl ExactSizeIterator<Item = (AxisId, &AxisData)> {
        self.axes.iter()
    }

    /// Adds roles to an axis (those it lacks).
    pub fn add_roles(&mut self, id: AxisId, roles: &[Role]) {
        let have = &mut self.axes[id].roles;
        for r in roles {
            if !have.contains(r) {
                have.push(r.clone());
            }
        }
    }

    /// Binds the length of a declared axis (a length bound late: docs/design.md, "Axes"). Rebinding
    /// replaces the length; derived axes follow.
    pub fn bind(&mut self, axis: Axis, len: usize) -> Result<(), GraphError> {
        self.set_len(axis, Some(len), "bind")
    }

    /// Forgets the length of a declared axis, so that a transformer binds it at each call from
    /// its inputs (docs/runtime.md, "Lengths bound at call time"): e.g. a batch axis declared
    /// with a length in a `.weft` file, to be fed batches of several sizes. Derived axes follow.
    /// Ops checked against the old length are not checked again here; `verify` (and each
    /// call's binding) checks the graph at the lengths it gets.
    ///
    /// ```
    /// use weft::ir::Graph;
    /// let mut g = Graph::new();
    /// let b = g.axis("B", 64)?;
    /// g.unbind(b)?;
    /// assert!(g.resolve_len(b).is_err());
    /// # Ok::<(), weft::ir::GraphError>(())
    /// ```
    pub fn unbind(&mut self, axis: Axis) -> Result<(), GraphError> {
        self.set_len(axis, None, "unbind")
    }

    /// [`Graph::bind`] (`Some`) and [`Graph::unbind`] (`None`); `verb` names the caller in the
    /// error for a derived axis.
    fn set_len(&mut self, axis: Axis, len: Option<usize>, verb: &str) -> Result<(), GraphError> {
        let name = self.axis_name(axis);
        let entry = self
            .axes
            .get_mut(axis.id)
            .ok_or_else(|| GraphError::Foreign(name.clone()))?;
        match &mut entry.def {
            AxisDef::Base { len: l } => {
                *l = len;
                self.refresh_lens();
                Ok(())
            }
            _ => Err(GraphError::AxisDefinition {
                axis: name,
                message: format!("is derived from other axes; {verb} those instead"),
            }),
        }
    }

    /// The declared axis named `name`, if exactly one has that name.
    pub fn find_axis(&self, name: &str) -> Option<Axis> {
        let mut found = self
            .axes
            .iter()
            .filter(|(_, d)| d.name == name && matches!(d.def, AxisDef::Base { .. }));
        match (found.next(), found.next()) {
            (Some((id, _)), None) => Some(self.axis_of(id)),
            _ => None,
        }
    }

    /// The display name of an axis: its table name, with `*` marks for its dual degree
    /// (`H*`, `H**`, `H^-1*`).
    pub fn axis_name(&self, axis: Axis) -> String {
        let base = match self.axes.get(axis.id) {
            Some(d) if matches!(d.def, AxisDef::Base { .. }) && self.named_twice(&d.name) => {
                format!("{}@{}", d.name, axis.id.as_u32())
            }
            Some(d) => d.name.clone(),
            None => format!("{}", axis.id),
        };
        match axis.dual {
            0 => base,
            k if (1..=3).contains(&k) => format!("{base}{}", "*".repeat(k as usize)),
            k => format!("{base}^{k}*"),
        }
    }

    /// Whether two declared axes are named `name` (only the text format and the expansions
    /// declare such; their names show with the table index, as the text form writes them).
    fn named_twice(&self, name: &str) -> bool {
        self.axes
            .iter()
            .filter(|(_, d)| d.name == name && matches!(d.def, AxisDef::Base { .. }))
            .nth(1)
            .is_some()
    }

    /// Axes rendered by name: `(H, W)`.
    pub fn axes_name(&self, axes: &Axes) -> String {
        let names: Vec<String> = axes.iter().map(|a| self.axis_name(*a)).collect();
        format!("({})", names.join(", "))
    }

    /// The length of an axis, if bound (derived axes resolve through their definition).
    pub fn axis_len(&self, axis: Axis) -> Option<usize> {
        self.resolve_len(axis).ok()
    }

    /// The length of an axis, or why it has none. Constant time when it has one (lengths are
    /// kept per table entry); otherwise a walk down the first part without a length, in a loop,
    /// so no chain of derivations is too deep.
    pub fn resolve_len(&self, axis: Axis) -> Result<usize, GraphError> {
        if let Some(n) = self.known_len(axis) {
            return Ok(n);
        }
        let mut at = axis;
        loop {
            match self.len_from_parts(at)? {
                Derived::Len(n) if at == axis => return Ok(n),
                Derived::Len(_) => {
                    return Err(GraphError::AxisDefinition {
                        axis: self.axis_name(axis),
                        message: "its kept length is out of date".into(),
                    })
                }
                Derived::NeedsPart(part) => at = part,
            }
        }
    }

    /// The kept length of `axis`, if it resolves.
    fn known_len(&self, axis: Axis) -> Option<usize> {
        self.lens.get(axis.id.as_u32() as usize).copied().flatten()
    }

    /// The length of `axis` from its definition and its parts' kept lengths (not theirs
    /// recursively): the one rule for a derived axis's length.
    fn len_from_parts(&self, axis: Axis) -> Result<Derived, GraphError> {
        let data = self
            .axes
            .get(axis.id)
            .ok_or_else(|| GraphError::Foreign(format!("{}", axis.id)))?;
        let part = |a: Axis| self.known_len(a).ok_or(Derived::NeedsPart(a));
        let n = match &data.def {
            AxisDef::Base { len } => len.ok_or_else(|| GraphError::UnboundAxis {
                axis: data.name.clone(),
            })?,
            AxisDef::Slice { of, range } => {
                let l = match part(*of) {
                    Ok(l) => l,
                    Err(d) => return Ok(d),
                };
                range
                    .resolve(l)
                    .map_err(|message| GraphError::Range {
                        op: "slice".into(),
                        axis: self.axis_name(*of),
                        message,
                    })?
                    .len
            }
            AxisDef::Pad { of, before, after } => match part(*of) {
                Ok(l) => l
                    .checked_add(*before)
                    .and_then(|n| n.checked_add(*after))
                    .ok_or_else(|| self.axis_too_long(axis))?,
                Err(d) => return Ok(d),
            },
            AxisDef::Flatten(parts) | AxisDef::Concat(parts) => {
                let flatten = matches!(data.def, AxisDef::Flatten(_));
                let mut acc = usize::from(flatten);
                for a in parts {
                    let l = match part(*a) {
                        Ok(l) => l,
                        Err(d) => return Ok(d),
                    };
                    acc = if flatten {
                        acc.checked_mul(l)
                    } else {
                        acc.checked_add(l)
                    }
                    .ok_or_else(|| self.axis_too_long(axis))?;
                }
                acc
            }
            AxisDef::Window { of, kernel, step } => {
                let l = match part(*of) {
                    Ok(l) => l,
                    Err(d) => return Ok(d),
                };
                let taps = match kernel {
                    WindowKernel::Len(n) => *n,
                    WindowKernel::Axis(k) => match part(*k) {
                        Ok(n) => n,
                        Err(d) => return Ok(d),
                    },
                };
                window_len(l, taps, step).map_err(|message| GraphError::Range {
                    op: "window".into(),
                    axis: self.axis_name(*of),
                    message,
                })?
            }
            AxisDef::Features(of) => match part(*of) {
                Ok(l) => l,
                Err(d) => return Ok(d),
            },
        };
        Ok(Derived::Len(n))
    }

    /// Keeps the length of the newest axis-table entry (its parts are earlier entries).
    fn keep_new_len(&mut self, axis: Axis) {
        let n = match self.len_from_parts(axis) {
            Ok(Derived::Len(n)) => Some(n),
            _ => None,
        };
        self.lens.push(n);
    }

    /// Recomputes every kept length in table order (after a bind).
    fn refresh_lens(&mut self) {
        self.lens.clear();
        for i in 0..self.axes.len() {
            self.keep_new_len(self.axis_of(AxisId::from_u32(i as u32)));
        }
    }

    fn axis_too_long(&self, axis: Axis) -> GraphError {
        GraphError::AxisTooLong {
            axis: self.axis_name(axis),
        }
    }

    /// The lengths of `axes`, in order.
    pub fn shape_of(&self, axes: &Axes) -> Result<Vec<usize>, GraphError> {
        axes.iter().map(|a| self.resolve_len(*a)).collect()
    }

    /// The derived axis for `def`, made on first request (derived axes are interned).
    pub fn derived_axis(&mut self, def: AxisDef) -> Axis {
        if let Some(id) = self.derived.get(&def) {
            return self.axis_of(*id);
        }
        let name = self.derived_name(&def);
        // A window axis is the axis it slides over, seen through the window: same roles. A
        // feature axis is what the next convolution contracts: a Channel.
        let roles = match &def {
            AxisDef::Window { of, .. } => self.axes[of.id].roles.clone(),
            AxisDef::Features(_) => vec![Role::Channel],
            _ => Vec::new(),
        };
        let id = self.axes.push(AxisData {
            name,
            roles,
            def: def.clone(),
        });
        self.table_names
            .set(id.as_u32(), &self.axes[id].name, false);
        self.derived.insert(def, id);
        self.keep_new_len(self.axis_of(id));
        self.axis_of(id)
    }

    /// Renames an axis-table entry (the text reader names derived axes as written).
    pub fn rename_axis(&mut self, id: AxisId, name: &str) {
        self.axes[id].name = name.to_string();
        let declared = matches!(self.axes[id].def, AxisDef::Base { .. });
        self.table_names.set(id.as_u32(), name, declared);
    }

    fn derived_name(&self, def: &AxisDef) -> String {
        match def {
            AxisDef::Base { .. } => String::new(),
            AxisDef::Slice { of, range } => format!("{}[{range}]", self.axis_name(*of)),
            AxisDef::Pad { of, before, after } => {
                format!("{}+pad({before},{after})", self.axis_name(*of))
            }
            AxisDef::Flatten(parts) => {
                let n: Vec<String> = parts.iter().map(|a| self.axis_name(*a)).collect();
                n.join("*")
            }
            AxisDef::Concat(parts) => {
                let n: Vec<String> = parts.iter().map(|a| self.axis_name(*a)).collect();
                n.join("|")
            }
            AxisDef::Window { of, kernel, step } => {
                let k = match kernel {
                    WindowKernel::Axis(a) => self.axis_name(*a),
                    WindowKernel::Len(n) => n.to_string(),
                };
                let d = WindowStep::default();
                let mut s = format!("{}~{k}", self.axis_name(*of));
                if step.stride != d.stride {
                    s += &format!("/{}", step.stride);
                }
                if step.dilation != d.dilation {
                    s += &format!(":{}", step.dilation);
                }
                if (step.before, step.after) != (0, 0) {
                    s += &format!("+pad({},{})", step.before, step.after);
                }
                s
            }
            AxisDef::Features(of) => format!("{}'", self.axis_name(*of)),
        }
    }

    // ---- nodes ---------------------------------------------------------------------------

    /// The node `id`.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The node `id`, if it belongs to this graph.
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        if !id.belongs_to(self.table) {
            return None;
        }
        self.nodes.get(id)
    }

    /// Every node, in creation (topological) order.
    pub fn nodes(&self) -> impl DoubleEndedIterator<Item = (NodeId, &Node)> + ExactSizeIterator {
        let table = self.table;
        self.nodes
            .iter()
            .map(move |(id, n)| (id.in_table(table), n))
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node named `name`.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.names.get(name).copied()
    }

    /// Names a node; names are unique.
    pub fn set_name(&mut self, id: NodeId, name: &str) -> Result<(), GraphError> {
        self.check_node(id)?;
        if let Some(other) = self.find(name) {
            if other != id {
                return Err(GraphError::NameTaken(name.to_string()));
            }
            return Ok(());
        }
        if let Some(old) = self.nodes[id].name.take() {
            self.names.remove(&old);
        }
        self.nodes[id].name = Some(name.to_string());
        self.names.insert(name.to_string(), id);
        Ok(())
    }

    /// A readable label for a node: its name, or its id.
    pub fn node_label(&self, id: NodeId) -> String {
        match self.nodes.get(id).and_then(|n| n.name.clone()) {
            Some(n) => n,
            None => format!("{id}"),
        }
    }

    /// The outputs marked for `weft run`, in order.
    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// Marks `id` as an output (once).
    pub fn mark_output(&mut self, id: NodeId) -> Result<(), GraphError> {
        self.check_node(id)?;
        if !self.outputs.contains(&id) {
            self.outputs.push(id);
        }
        Ok(())
    }

    /// The placeholders, in creation order.
    pub fn placeholders(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|(_, n)| {
                matches!(
                    n.op,
                    Op::Tensor {
                        kind: TensorKind::Placeholder,
                        ..
                    }
                )
            })
            .map(|(id, _)| id)
            .collect()
    }

    /// The node `id`, or [`GraphError::Foreign`] if it is not a node of this graph (what a
    /// graph-building function outside this crate, such as weft-nn's, checks its operands with).
    pub fn check_node(&self, id: NodeId) -> Result<&Node, GraphError> {
        if !id.belongs_to(self.table) {
            return Err(GraphError::Foreign(format!("node {id} of another graph")));
        }
        self.nodes
            .get(id)
            .ok_or_else(|| GraphError::Foreign(format!("node {id}")))
    }

    pub(crate) fn push_node(&mut self, node: Node) -> NodeId {
        let name = node.name.clone();
        let id = self.nodes.push(node).in_table(self.table);
        if let Some(n) = name {
            self.names.insert(n, id);
        }
        id
    }
}

impl PartialEq for Graph {
    fn eq(&self, other: &Graph) -> bool {
        self.axes == other.axes && self.nodes == other.nodes && self.outputs == other.outputs
    }
}
