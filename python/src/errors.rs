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

/// Which `weft.errors` class a graph error belongs to.
pub(crate) fn graph_error_kind(e: &weft::GraphError) -> &'static str {
    let variant = format!("{e:?}");
    let name = variant.split([' ', '(', '{']).next().unwrap_or("");
    if name.contains("DType") {
        "DTypeError"
    } else if name.contains("Axis") || name.contains("Axes") || name == "LengthMismatch" {
        "AxisError"
    } else {
        "GraphError"
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
    let kind = match &e {
        E::Graph(g) => graph_error_kind(g),
        E::Axes(_) | E::UnboundState { .. } => "AxisError",
        E::Compile(_) => "CompileError",
        _ => "CallError",
    };
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
