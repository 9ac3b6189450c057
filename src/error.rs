//! weft's error type: everything the public API can refuse, each naming the op, axis, tensor or
//! placeholder at fault.

use weft_ir::{DType, GraphError, HostError};
use weft_runtime::RunError;

/// An error from building, compiling or calling a computation.
///
/// ```
/// use weft::prelude::*;
/// let b = GraphBuilder::new();
/// let n = b.axis("N", 3)?;
/// let x = b.placeholder("x", &[n], DType::F32)?;
/// let (x, y) = (x.id(), x.exp()?.id());
/// let t = Transformer::new(b.finish(), Backend::Jit)?;
/// let c = t.computation(&[y], &[x])?;
/// let wrong = HostArray::from_vec(Axes::new([n])?, vec![3], vec![1i32, 2, 3])?;
/// let e = c.call(&[&wrong]).unwrap_err();
/// assert!(matches!(e, Error::InputDType { .. }));
/// assert!(e.to_string().contains("`x`")); // names the placeholder at fault
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The graph is malformed or not ready (e.g. an axis without a length).
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// An axis list with a repeated axis.
    #[error(transparent)]
    Axes(#[from] weft_ir::AxesError),
    /// A host array or `.npy` file is malformed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// Planning or running a computation failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The JIT could not compile a computation (names the pass, kernel or node at fault).
    #[error("JIT: {0}")]
    Compile(#[from] weft_compiler::JitError),
    /// A call with more or fewer input arrays than the computation has placeholders.
    #[error("the computation takes {} (one per placeholder, in order: {placeholders}) but {got} {} given", weft_ir::size::count(*.expected, "input array", "input arrays"), if *.got == 1 { "was" } else { "were" })]
    InputCount {
        /// Number of placeholders.
        expected: usize,
        /// Number of arrays given.
        got: usize,
        /// The placeholders, by name.
        placeholders: String,
    },
    /// A call by name named no placeholder of the computation.
    #[error("`{name}` is not a placeholder of the computation (its placeholders: {placeholders})")]
    UnknownInput {
        /// The name given.
        name: String,
        /// The placeholders, by name.
        placeholders: String,
    },
    /// A variable or persistent tensor over an axis without a length: its value persists
    /// across calls, so its lengths cannot be bound at call time.
    #[error("`{tensor}` keeps its value across calls, so its axis `{axis}` must have a length before the transformer is made (bind it, or give the value from a file whose shape gives it)")]
    UnboundState {
        /// The variable or persistent tensor.
        tensor: String,
        /// Its unbound axis.
        axis: String,
    },
    /// Two inputs of one call give an axis bound at call time different lengths.
    #[error("axis `{axis}` is bound at call time, but input `{first}` gives it length {first_len} and input `{second}` length {second_len}")]
    ConflictingLengths {
        /// The axis.
        axis: String,
        /// The input read first.
        first: String,
        /// Its length there.
        first_len: usize,
        /// The input that disagrees.
        second: String,
        /// Its length there.
        second_len: usize,
    },
    /// Output arrays asked for before a call gives the lengths of axes bound at call time.
    #[error("the lengths of {axes} are bound at call time: make output arrays with `output_arrays_for(inputs)`")]
    LengthsAtCall {
        /// The axes, named.
        axes: String,
    },
    /// A call by name gave one placeholder twice.
    #[error("placeholder `{name}` is given more than once")]
    RepeatedInput {
        /// The placeholder.
        name: String,
    },
    /// A call by name did not give every placeholder.
    #[error("placeholder `{name}` is not given")]
    MissingInput {
        /// The placeholder.
        name: String,
    },
    /// An array labelled with an axis of another graph (another axis table), which this
    /// graph would read as its own axis of the same index.
    #[error(
        "`{tensor}`: the array is labelled with an axis of another graph (axis table #{got}) \
         where this graph (table #{expected}) has axis `{axis}`; label arrays with this graph's \
         axes"
    )]
    ForeignAxis {
        /// The tensor or output the array is for.
        tensor: String,
        /// This graph's axis of the same index.
        axis: String,
        /// This graph's axis table (`Graph::axis_table_number`).
        expected: u32,
        /// The array axis's table.
        got: u32,
    },
    /// An array whose axes are not the tensor's (as a set).
    #[error(
        "`{tensor}`: the array has axes {got} but the tensor has axes {expected} (in any order)"
    )]
    InputAxes {
        /// The placeholder, variable or persistent tensor.
        tensor: String,
        /// The tensor's axes.
        expected: String,
        /// The array's axes.
        got: String,
    },
    /// An array whose length along an axis is not the axis's.
    #[error(
        "`{tensor}`: the array has length {got} along axis `{axis}`, which has length {expected}"
    )]
    InputLength {
        /// The placeholder, variable or persistent tensor.
        tensor: String,
        /// The axis.
        axis: String,
        /// The axis's length.
        expected: usize,
        /// The array's length along it.
        got: usize,
    },
    /// An array of another dtype than the tensor's.
    #[error("`{tensor}`: the array has dtype {got} but the tensor has dtype {expected}")]
    InputDType {
        /// The placeholder, variable or persistent tensor.
        tensor: String,
        /// The tensor's dtype.
        expected: DType,
        /// The array's dtype.
        got: DType,
    },
    /// A `call_into` with more or fewer output arrays than the computation has outputs.
    #[error("the computation has {expected} outputs (in order: {outputs}) but {got} output arrays were given")]
    OutputCount {
        /// Number of outputs.
        expected: usize,
        /// Number of arrays given.
        got: usize,
        /// The outputs, by name.
        outputs: String,
    },
    /// An output array whose axes are not its output's, in the output's order.
    #[error("output `{output}`: the array has axes {got} but the output has axes {expected} (in this order)")]
    OutputAxes {
        /// The output.
        output: String,
        /// The output's axes.
        expected: String,
        /// The array's axes.
        got: String,
    },
    /// An output array whose length along an axis is not the axis's.
    #[error("output `{output}`: the array has length {got} along axis `{axis}`, which has length {expected}")]
    OutputLength {
        /// The output.
        output: String,
        /// The axis.
        axis: String,
        /// The axis's length.
        expected: usize,
        /// The array's length along it.
        got: usize,
    },
    /// An output array of another dtype than its output's.
    #[error("output `{output}`: the array has dtype {got} but the output has dtype {expected}")]
    OutputDType {
        /// The output.
        output: String,
        /// The output's dtype.
        expected: DType,
        /// The array's dtype.
        got: DType,
    },
    /// A `.weft` file that does not parse.
    #[error(transparent)]
    Parse(#[from] weft_ir::text::ParseError),
    /// A `.weft` file that did not parse, shown in the style of rustc: the message, the
    /// position, the source line with a caret under the token at fault, and a "did you mean"
    /// for a near miss ([`weft_ir::text::ParseError::render`]).
    #[error("{rendered}")]
    ParseSource {
        /// The rendered message.
        rendered: String,
        /// The parse error (boxed: it is large and errors are rare).
        #[source]
        error: Box<weft_ir::text::ParseError>,
    },
    /// An ONNX model that could not be imported.
    #[error(transparent)]
    Onnx(#[from] weft_onnx::ImportError),
    /// A file that cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// `--dump-pass` is not a regular expression.
    #[error("--dump-pass `{pattern}`: {message}")]
    DumpPattern {
        /// The pattern given.
        pattern: String,
        /// What the regex parser said.
        message: String,
    },
    /// The graph could not be laid out as a picture.
    #[error("weft graph: cannot draw the graph: {message}")]
    Picture {
        /// What the layout engine said.
        message: String,
    },
    /// The IR dump could not be written.
    #[error(transparent)]
    Dump(#[from] weft_compiler::dump::DumpError),
    /// `--bind` of an axis the graph does not declare.
    #[error("--bind: no declared axis is named `{name}` (declared: {declared}){}", help_text(.help))]
    UnknownAxis {
        /// The name given.
        name: String,
        /// The declared axes.
        declared: String,
        /// "did you mean `x`?" for a near miss.
        help: Option<String>,
    },
    /// `--input` for a name that is not a placeholder.
    #[error("--input: the graph has no placeholder named `{name}` (placeholders: {declared}){}", help_text(.help))]
    UnknownPlaceholder {
        /// The name given.
        name: String,
        /// The placeholders' names.
        declared: String,
        /// "did you mean `x`?" for a near miss.
        help: Option<String>,
    },
    /// A placeholder's value could not be read.
    #[error("input `{placeholder}`: {source}")]
    Input {
        /// The placeholder.
        placeholder: String,
        /// The cause.
        source: Box<Error>,
    },
    /// `weft run` on a graph that marks no output.
    #[error("the graph marks no output: add a line `output NAME`")]
    NoOutputs,
    /// `weft bench` of a graph whose outputs hold no element: there is no work to time.
    #[error("nothing to time: every output is empty ({empty}); bind the axes to lengths above 0")]
    NothingToTime {
        /// The outputs and their axes, with lengths.
        empty: String,
    },
    /// A bundled data set that does not read as expected, or a request it cannot meet (a
    /// split fraction out of range, an index past the end).
    #[error("data set `{name}`: {message}")]
    Dataset {
        /// The data set.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
    /// `weft train` on a file that does not follow its conventions (docs/training.md, "Training
    /// from the command line"), or an option it cannot use.
    #[error("weft train {file}: `{name}` {problem}")]
    Train {
        /// The `.weft` file.
        file: String,
        /// The tensor (or option) at fault.
        name: String,
        /// What does not fit.
        problem: String,
    },
    /// `value_of`/`set_value` on a node that holds no state.
    #[error("`{node}` is a {kind}, not a variable or persistent tensor")]
    NotStateful {
        /// The node.
        node: String,
        /// What it is.
        kind: &'static str,
    },
}

/// `Result` with weft's [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `; did you mean …?` when there is a suggestion.
fn help_text(help: &Option<String>) -> String {
    help.as_ref().map_or(String::new(), |h| format!("; {h}"))
}
