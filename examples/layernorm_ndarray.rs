//! A layer norm compiled once and called 1000 times on `ndarray` data, borrowed in place.
//! Run it: `cargo run --release --features ndarray --example layernorm_ndarray`.
use weft::ndarray::{Array1, Array2, Ix2};
use weft::prelude::*;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/layernorm.weft");
    let graph = weft::ir::text::parse(&std::fs::read_to_string(path)?, path)?;
    let node = |name: &str| graph.find(name).ok_or(format!("no tensor `{name}`"));
    let (a, g, b, out) = (node("a")?, node("g")?, node("b")?, node("out")?);
    let axes = |id: NodeId| graph.node(id).axes.clone();
    let (a_axes, g_axes, b_axes) = (axes(a), axes(g), axes(b));
    let transformer = Transformer::new(graph.clone(), Backend::Jit)?;
    let norm = transformer.computation(&[out], &[a, g, b])?;

    let x = Array2::from_shape_fn((4, 8), |(i, j)| (i * 8 + j * j) as f32 * 0.1);
    let (gain, bias) = (Array1::from_elem(8, 1.0f32), Array1::<f32>::zeros(8));
    let (xv, gv, bv) = (x.view(), gain.view(), bias.view());
    let inputs = [
        HostView::from_ndarray(&a_axes, &xv)?,
        HostView::from_ndarray(&g_axes, &gv)?,
        HostView::from_ndarray(&b_axes, &bv)?,
    ];
    let mut outputs = norm.output_arrays()?;
    for _ in 0..1000 {
        norm.call_into(&inputs, &mut outputs)?; // reads x in place, allocates nothing
    }
    let y = outputs[0]
        .to_ndarray::<f32>()?
        .into_dimensionality::<Ix2>()?;
    for row in y.rows() {
        assert!(row.sum().abs() < 1e-4, "each row is centred: {row}");
    }
    println!("layer norm, 1000 calls; row 0: {}", y.row(0));
    Ok(())
}
