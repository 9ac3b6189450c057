//! weft-ir: the data weft compiles — axes, dtypes, host arrays, the axes-labelled op graph, its
//! text form, the loop IR and TensorWrapper's shape algebra. It knows no backend.

pub mod arena;
pub mod loop_ir;
