//! weft's ONNX front end: an ONNX model (`ModelProto`, opsets 7 to 23) to an axes-labelled
//! weft graph.
//!
//! Assumes: a model file or its bytes; external data files beside the model.
//! Guarantees: the graph computes what the model does for the ops in [`SUPPORTED`]; its
//! placeholders are the model's inputs (initializers excluded) and its outputs the model's,
//! in order and with ONNX's dim order; every dim is an axis with an identity — dims ONNX pairs
//! (by broadcasting, contraction, convolution roles, `dim_param` names) are one axis
//! (docs/onnx.md). Anything else — an unknown op, a missing input, a cycle, shapes that do not
//! agree, a truncated file — is an [`ImportError`] naming the node, tensor or file; the
//! importer never panics on a model.
//!
//! ```no_run
//! let imported = weft_onnx::import_file("model.onnx")?;
//! println!("{}", weft_ir::text::print(&imported.graph));
//! # Ok::<(), weft_onnx::ImportError>(())
//! ```

mod broadcast;
mod context;
mod error;
mod importer;
mod naming;
mod ops;
mod proto;
mod value;

pub use error::{At, ImportError};
pub use importer::{ImportOptions, Imported, KnownInput, OPSETS};
pub use ops::SUPPORTED;

use onnx_protobuf::Message;
use std::path::Path;

/// Imports the model in file `path`; its external data is read from beside it.
pub fn import_file(path: impl AsRef<Path>) -> Result<Imported, ImportError> {
    import_file_with(path, &ImportOptions::default())
}

/// Imports a model from its bytes (a model with external data needs [`import_file`]).
pub fn import_bytes(bytes: &[u8]) -> Result<Imported, ImportError> {
    import_bytes_with(bytes, &ImportOptions::default())
}

/// [`import_file`] with `options` (inputs whose values are fixed at import).
pub fn import_file_with(
    path: impl AsRef<Path>,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        path: shown.clone(),
        source,
    })?;
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    });
    import_from(&bytes, dir, &shown, options)
}

/// [`import_bytes`] with `options`.
pub fn import_bytes_with(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    import_from(bytes, None, "<bytes>", options)
}

fn import_from(
    bytes: &[u8],
    dir: Option<&Path>,
    shown: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let model =
        onnx_protobuf::ModelProto::parse_from_bytes(bytes).map_err(|e| ImportError::Parse {
            path: shown.to_string(),
            message: e.to_string(),
        })?;
    importer::import_model(&model, dir, shown, options)
}
