//! A node's size: [`Graph::tensor_size`] (its elements and bytes, or a typed error naming it),
//! [`Graph::bytes_of_all`] and [`Graph::dot_points`], by the checked arithmetic of `crate::size`.

use super::error::GraphError;
use super::{Graph, NodeId, Op};
use crate::size::{element_count, tensor_size, TensorSize, MAX_RANK};

impl Graph {
    /// The element count and byte size of node `id`, or [`GraphError::TooLarge`] naming it, its
    /// axes and their lengths when the count overflows or the bytes exceed
    /// [`MAX_TENSOR_BYTES`](crate::size::MAX_TENSOR_BYTES), or [`GraphError::TooManyAxes`]
    /// past [`MAX_RANK`]. Needs the node's axes bound.
    pub fn tensor_size(&self, id: NodeId) -> Result<TensorSize, GraphError> {
        let node = self
            .get(id)
            .ok_or_else(|| GraphError::Foreign(format!("{id}")))?;
        if node.axes.len() > MAX_RANK {
            return Err(GraphError::TooManyAxes {
                tensor: self.node_label(id),
                rank: node.axes.len(),
                max: MAX_RANK,
            });
        }
        let lengths = self.shape_of(&node.axes)?;
        tensor_size(node.dtype, &lengths).ok_or_else(|| GraphError::TooLarge {
            tensor: self.node_label(id),
            axes: self.axes_name(&node.axes),
            lengths,
            dtype: node.dtype,
        })
    }

    /// The bytes of the nodes `ids` together (saturating): what holding all of them at once
    /// takes. [`Graph::tensor_size`]'s error for the first that has no size.
    pub fn bytes_of_all<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a NodeId>,
    ) -> Result<u64, GraphError> {
        ids.into_iter().try_fold(0u64, |total, id| {
            Ok(total.saturating_add(self.tensor_size(*id)?.bytes as u64))
        })
    }
}

impl Graph {
    /// The index points `dot` node `id` iterates over — its result's elements times the lengths
    /// of the axes it contracts — or `None` when that count overflows `usize`. Needs lengths.
    pub fn dot_points(&self, id: NodeId) -> Result<Option<usize>, GraphError> {
        let node = self
            .get(id)
            .ok_or_else(|| GraphError::Foreign(format!("{id}")))?;
        let Op::Dot(x, y) = node.op else {
            return Err(GraphError::Foreign(format!("{id} is not a dot")));
        };
        let pairs = self.dot_pairs(&self.node_label(id), &self.node(x).axes, &self.node(y).axes)?;
        let mut lengths = self.shape_of(&node.axes)?;
        for (a, _) in pairs {
            lengths.push(self.resolve_len(a)?);
        }
        Ok(element_count(&lengths))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axis::AxisDef;
    use crate::dtype::DType;

    #[test]
    fn too_large_tensor_names_itself_and_its_axes() {
        let mut g = Graph::new();
        let a = g.axis("A", 1 << 32).unwrap();
        let b = g.axis("B", 1 << 31).unwrap();
        let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
        let e = g.tensor_size(x).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`x`") && text.contains("(A, B)"), "{text}");
    }

    #[test]
    fn derived_lengths_that_overflow_are_errors_naming_the_axis() {
        let mut g = Graph::new();
        let a = g.axis("A", usize::MAX).unwrap();
        let p = g.derived_axis(AxisDef::Pad {
            of: a,
            before: 1,
            after: 0,
        });
        let e = g.resolve_len(p).unwrap_err();
        assert!(matches!(e, GraphError::AxisTooLong { .. }), "{e}");
        let f = g.derived_axis(AxisDef::Flatten(vec![a, a.dual()]));
        assert!(g.resolve_len(f).is_err());
    }
}
