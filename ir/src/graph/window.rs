//! Window positions along one axis, shared by the convolution and pool expansions
//! (`convolution.rs`) and the pool's fold (`window_fold.rs`): a pooled axis and the slice of
//! its window positions.

use super::error::GraphError;
use crate::axis::{Axis, AxisDef, SliceRange, WindowKernel, WindowStep};

/// One pooled axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PooledAxis {
    /// The input's axis.
    pub input: Axis,
    /// Taps per window.
    pub taps: usize,
    /// Stride, dilation and padding.
    pub step: WindowStep,
}

impl PooledAxis {
    /// The derived axis of the window positions over `input`.
    pub fn output_def(&self) -> AxisDef {
        AxisDef::Window {
            of: self.input,
            kernel: WindowKernel::Len(self.taps),
            step: self.step,
        }
    }
}

/// `n` as a slice bound. Verified graphs never fail here: padded lengths are addressable
/// ([`Graph::verify`](super::Graph::verify)) and a stride is taken only where it is shorter
/// than its padded axis.
pub(crate) fn as_i64(n: usize) -> Result<i64, GraphError> {
    i64::try_from(n).map_err(|_| GraphError::Argument {
        op: "convolution or pool expansion".into(),
        message: format!("index {n} does not fit i64"),
    })
}

/// The slice of `n` window positions from `start`, `stride` apart. A single window's step is
/// never taken, so a stride past its padded axis need not fit a slice's i64 step.
pub(crate) fn window_range(
    start: usize,
    n: usize,
    stride: usize,
) -> Result<SliceRange, GraphError> {
    let stride = if n > 1 { stride } else { 1 };
    let stop = start + n.saturating_sub(1) * stride + 1;
    Ok(SliceRange {
        start: Some(as_i64(start)?),
        stop: Some(as_i64(stop)?),
        step: as_i64(stride)?,
    })
}
