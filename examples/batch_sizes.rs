//! One graph called at two batch sizes: the batch axis has no length in the graph, each call
//! binds it from its input, and the computation compiles once per batch size.
//! Run it: `cargo run --release --example batch_sizes`.
use weft::prelude::*;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let b = GraphBuilder::new();
    let (batch, features) = (b.axis_unbound("B")?, b.axis("F", 4)?);
    let x = b.placeholder("x", &[batch, features], DType::F32)?;
    let e = x.exp()?;
    let (x, softmax) = (x.id(), (e / e.sum(&[features])?)?.id());
    let transformer = Transformer::new(b.finish(), Backend::Jit)?;
    let c = transformer.computation(&[softmax], &[x])?;

    let axes = Axes::new([batch, features])?;
    for rows in [2usize, 5, 2, 5, 5] {
        let data: Vec<f32> = (0..rows * 4).map(|i| i as f32 * 0.1).collect();
        let y = c.call(&[HostView::new(&axes, &[rows, 4], &data)?])?;
        let total: f32 = y[0].as_slice::<f32>()?.iter().sum();
        assert!((total - rows as f32).abs() < 1e-4, "each row sums to 1");
        println!("B = {rows}: output shape {:?}", y[0].shape());
    }
    assert_eq!(c.compilations(), 2, "compiled once per batch size");
    println!("bindings held: {:?}", c.bindings());
    Ok(())
}
