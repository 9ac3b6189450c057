//! Placeholder values for `weft run`: read from `.npy` files, or drawn from a seeded generator
//! (ChaCha8, so a seed gives the same inputs on every machine).

use super::InputFile;
use crate::Error;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use weft_ir::{ArrayData, DType, Graph, HostArray, NodeId};
use weft_runtime::RunError;

/// One value per placeholder, in order. Floats are uniform in [-1, 1), integers in [-10, 10],
/// bools fair coins; each placeholder draws from its own stream so adding an input file does
/// not change the others.
pub fn gather(
    graph: &Graph,
    placeholders: &[NodeId],
    files: &[InputFile],
    seed: u64,
) -> Result<Vec<HostArray>, Error> {
    placeholders
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            let node = graph.node(id);
            let name = graph.node_label(id);
            if let Some(f) = files.iter().find(|f| f.name == name) {
                return HostArray::read_npy(&f.path, node.axes.clone()).map_err(|e| Error::Input {
                    placeholder: name.clone(),
                    source: Box::new(e.into()),
                });
            }
            let shape = graph.shape_of(&node.axes)?;
            // Checked (too large is a typed error) and reservable before `collect` allocates.
            let size = graph.tensor_size(id)?;
            let n = size.elements;
            weft_ir::host::check_alloc(size.bytes).map_err(|source| RunError::Alloc {
                tensor: name.clone(),
                source,
            })?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(i as u64);
            let data = match node.dtype {
                DType::F32 => ArrayData::F32((0..n).map(|_| rng.random_range(-1.0..1.0)).collect()),
                DType::F64 => ArrayData::F64((0..n).map(|_| rng.random_range(-1.0..1.0)).collect()),
                DType::I32 => ArrayData::I32((0..n).map(|_| rng.random_range(-10..=10)).collect()),
                DType::I64 => ArrayData::I64((0..n).map(|_| rng.random_range(-10..=10)).collect()),
                DType::Bool => ArrayData::Bool((0..n).map(|_| rng.random()).collect()),
            };
            Ok(HostArray::new(node.axes.clone(), shape, data)?)
        })
        .collect()
}
