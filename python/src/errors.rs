//! weft's errors as `weft.errors` exceptions, and NumPy's dtype names.

use super::*;

// ---- errors ------------------------------------------------------------------------------

/// An exception of class `kind` of the pure-Python `weft.errors` module with `message`.
pub(crate) fn raise(py: Python<'_>, kind: &str, message: String) -> PyErr {
    let made = py
        .import("weft.errors")
        .and_then(|m| m.getattr(kind))
        .and_then(|class| class.call1((message.clone(),)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// Which `weft.errors` class a graph error belongs to, by variant. Every variant is listed
/// (no `_` arm): a new one does not compile until someone decides its class (docs/python.md,
/// "weft error → Python exception").
pub(crate) fn graph_error_kind(e: &weft::GraphError) -> &'static str {
    use weft::GraphError as G;
    match e {
        G::DTypeMismatch { .. } | G::UnsupportedDType { .. } => "DTypeError",
        G::DuplicateAxis { .. }
        | G::Axes { .. }
        | G::LengthMismatch { .. }
        | G::UnboundAxis { .. }
        | G::AxisDefinition { .. }
        | G::AxisNameTaken(_)
        | G::TooManyAxes { .. }
        | G::AxisTooLong { .. } => "AxisError",
        G::EmptyReduction { .. }
        | G::Range { .. }
        | G::Init { .. }
        | G::NameTaken(_)
        | G::Foreign(_)
        | G::NotComputed { .. }
        | G::AssignTarget { .. }
        | G::TooLarge { .. }
        | G::GraphBorrowed
        | G::Argument { .. }
        | G::GradLoss { .. }
        | G::NotDifferentiable { .. } => "GraphError",
    }
}

/// Which `weft.errors` class a weft error belongs to, by variant (none by `_`, as
/// [`graph_error_kind`]). Wrapped errors take their inner error's class, so one fault has
/// one class whichever backend or stage reports it.
pub(crate) fn error_kind(e: &weft::Error) -> &'static str {
    use weft::Error as E;
    match e {
        E::Graph(g) => graph_error_kind(g),
        E::Host(h) => host_error_kind(h),
        E::Run(r) => run_error_kind(r),
        E::Compile(j) => jit_error_kind(j),
        E::Input { source, .. } => error_kind(source),
        E::Axes(_) | E::UnboundState { .. } | E::UnknownAxis { .. } | E::NothingToTime { .. } => {
            "AxisError"
        }
        E::InputDType { .. } | E::OutputDType { .. } => "DTypeError",
        E::InputCount { .. }
        | E::UnknownInput { .. }
        | E::ConflictingLengths { .. }
        | E::LengthsAtCall { .. }
        | E::RepeatedInput { .. }
        | E::MissingInput { .. }
        | E::ForeignAxis { .. }
        | E::InputAxes { .. }
        | E::InputLength { .. }
        | E::OutputCount { .. }
        | E::OutputAxes { .. }
        | E::OutputLength { .. }
        | E::UnknownPlaceholder { .. } => "CallError",
        E::NotStateful { .. } | E::NoOutputs | E::Train { .. } => "GraphError",
        E::Dump(_) => "CompileError",
        E::Onnx(o) => onnx_error_kind(o),
        E::Parse(_) | E::ParseSource { .. } => "ParseError",
        // Files, data sets and command-line options: none of the narrower classes means them.
        E::Io { .. } | E::DumpPattern { .. } | E::Picture { .. } | E::Dataset { .. } => "WeftError",
    }
}

/// [`error_kind`] of an ONNX import's error: a graph error keeps its class, the rest are
/// `OnnxImportError` (a model weft cannot read).
fn onnx_error_kind(e: &weft::onnx::ImportError) -> &'static str {
    use weft::onnx::ImportError as O;
    match e {
        O::Graph { source, .. } => graph_error_kind(source),
        O::Io { .. }
        | O::Parse { .. }
        | O::Model { .. }
        | O::UnsupportedOp { .. }
        | O::Unsupported { .. }
        | O::MissingInput { .. }
        | O::Malformed { .. }
        | O::Cycle { .. }
        | O::Shape { .. }
        | O::Tensor { .. }
        | O::ExternalData { .. } => "OnnxImportError",
    }
}

/// [`error_kind`] of a host array's error.
fn host_error_kind(e: &weft::HostError) -> &'static str {
    use weft::HostError as H;
    match e {
        H::DType { .. } | H::Value { .. } => "DTypeError",
        H::Size { .. } | H::Overflow { .. } | H::Rank { .. } | H::Layout => "CallError",
        // Memory the machine does not have: a budget's kind of failure.
        H::Alloc { .. } => "CompileError",
        H::Io { .. } | H::Npy { .. } => "WeftError",
    }
}

/// [`error_kind`] of an error planning or running a computation.
fn run_error_kind(e: &weft::RunError) -> &'static str {
    use weft::RunError as R;
    match e {
        R::Graph(g) => graph_error_kind(g),
        R::Host(h) => host_error_kind(h),
        R::ForeignNode(_)
        | R::NotAPlaceholder { .. }
        | R::DuplicatePlaceholder { .. }
        | R::MissingPlaceholder { .. } => "GraphError",
        R::InputCount { .. }
        | R::OutputCount { .. }
        | R::Output { .. }
        | R::Input { .. }
        | R::State { .. }
        | R::Device(_) => "CallError",
        R::Alloc { .. } | R::MemoryBudget { .. } | R::Malformed { .. } => "CompileError",
    }
}

/// [`error_kind`] of a JIT compilation's error: a graph or plan error found while compiling
/// keeps its own class (the interpreter reports it before compiling).
fn jit_error_kind(e: &weft::compiler::JitError) -> &'static str {
    use weft::compiler::{JitError as J, PassError as P};
    match e {
        J::Plan(r) => run_error_kind(r),
        J::Pass(P::Graph(g)) => graph_error_kind(g),
        J::Pass(P::Unsupported { .. } | P::SplitIndex { .. } | P::OuterPoint { .. })
        | J::Pass(P::Internal(_))
        | J::Lower(_)
        | J::Codegen(_)
        | J::Dump(_)
        | J::Threads { .. } => "CompileError",
    }
}

/// [`to_py`] for an error about the ops of `g`: ops named as the user knows them
/// ([`name_ops`]), never by their ids.
pub(crate) fn to_py_in(py: Python<'_>, g: &weft::Graph, e: weft::Error) -> PyErr {
    let err = to_py(py, e);
    let value = err.value(py);
    let message = name_ops(g, &value.to_string());
    match value.get_type().call1((message,)) {
        Ok(named) => PyErr::from_value(named),
        Err(_) => err,
    }
}

/// A weft error as the `weft.errors` exception of its kind.
pub(crate) fn to_py(py: Python<'_>, e: weft::Error) -> PyErr {
    use weft::Error as E;
    let kind = error_kind(&e);
    let message = match &e {
        E::Graph(g) => graph_message(g),
        E::UnboundState { tensor, axis } => format!(
            "`{tensor}` keeps its value across calls, so its axis `{axis}` needs a length \
             before a transformer compiles it (`{axis}.length = n`, or make_axis(length=n))"
        ),
        _ => e.to_string(),
    };
    raise(py, kind, for_python(message))
}

pub(crate) fn graph_err(py: Python<'_>, e: weft::GraphError) -> PyErr {
    raise(py, graph_error_kind(&e), for_python(graph_message(&e)))
}

/// [`graph_err`] for an error of building an op in `g`: ops named as the user knows them
/// ([`name_ops`]), never by their ids.
pub(crate) fn graph_err_in(py: Python<'_>, g: &weft::Graph, e: weft::GraphError) -> PyErr {
    let message = name_ops(g, &graph_message(&e));
    raise(py, graph_error_kind(&e), for_python(message))
}

/// A graph error's message, with the advice a Python user can follow where Rust's would not
/// do (an unbound axis is bound by `A.length = n` or by a call's inputs, not `Graph::bind`).
fn graph_message(e: &weft::GraphError) -> String {
    match e {
        weft::GraphError::UnboundAxis { axis } => format!(
            "axis `{axis}` has no length: give it one (`{axis}.length = n`, or \
             `make_axis(length=n)`) or make it an axis of a placeholder of the computation, \
             whose inputs then give it at each call"
        ),
        e => e.to_string(),
    }
}

/// `message` with weft's Rust names for Python's: `convert` is `ng.cast` there.
fn for_python(message: String) -> String {
    message.replace("(use convert)", "(use ng.cast)")
}

/// `message` with every op id (`%20`) replaced by what a Python user calls the op: its name,
/// or its kind (`an unnamed multiply`).
pub(crate) fn name_ops(g: &weft::Graph, message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        let node = rest[at + 1..at + 1 + digits]
            .parse::<u32>()
            .ok()
            .map(NodeId::from_u32)
            .filter(|&n| g.get(n).is_some());
        match node {
            Some(n) => out.push_str(&describe(g, n)),
            None => out.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// Op `n` as a message names it: `` `x` `` when named, else `an unnamed <kind>`.
fn describe(g: &weft::Graph, n: NodeId) -> String {
    let node = g.node(n);
    match &node.name {
        Some(name) => format!("`{name}`"),
        None => {
            let kind = match &node.op {
                Op::Tensor { kind, .. } => kind.keyword(),
                op => op.name(),
            };
            format!("an unnamed {kind}")
        }
    }
}

// ---- dtypes ------------------------------------------------------------------------------

/// NumPy's name of `d`.
pub(crate) fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::Bool => "bool",
    }
}

pub(crate) fn parse_dtype(py: Python<'_>, name: &str) -> PyResult<DType> {
    Ok(match name {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "bool" => DType::Bool,
        other => {
            return Err(raise(
                py,
                "DTypeError",
                format!("weft has no dtype `{other}` (float32, float64, int32, int64, bool)"),
            ))
        }
    })
}
