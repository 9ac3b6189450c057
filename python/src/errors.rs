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

/// A weft error as the `weft.errors` exception of its kind.
pub(crate) fn to_py(py: Python<'_>, e: weft::Error) -> PyErr {
    use weft::Error as E;
    let kind = match &e {
        E::Graph(g) => graph_error_kind(g),
        E::Axes(_) => "AxisError",
        E::Compile(_) | E::UnboundState { .. } => "CompileError",
        _ => "CallError",
    };
    raise(py, kind, e.to_string())
}

pub(crate) fn graph_err(py: Python<'_>, e: weft::GraphError) -> PyErr {
    raise(py, graph_error_kind(&e), e.to_string())
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
