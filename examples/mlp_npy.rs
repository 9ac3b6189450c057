//! An MLP whose weights are `.npy` files, named in its `.weft` file (`= npy("weights/w1.npy")`),
//! run on a batch, its trained state saved and loaded back.
//! Run it: `cargo run --release --example mlp_npy`.
use weft::prelude::*;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/host/mlp.weft");
    let graph = weft::ir::text::parse(&std::fs::read_to_string(path)?, path)?;
    let (x, out) = (
        graph.find("x").ok_or("no x")?,
        graph.find("out").ok_or("no out")?,
    );
    let x_axes = graph.node(x).axes.clone();
    let transformer = Transformer::new(graph, Backend::Jit)?;
    let mlp = transformer.computation(&[out], &[x])?;

    let batch: Vec<f32> = (0..3 * 4).map(|i| (i as f32 * 0.37).sin()).collect();
    let input = HostView::new(&x_axes, &[3, 4], &batch)?; // B = 3, I = 4 (from w1.npy)
    let y = mlp.call(&[input])?;
    println!(
        "out (B, O) = {:?}: {:?}",
        y[0].shape(),
        y[0].as_slice::<f32>()?
    );

    // The variables, saved as NAME.npy and read back (a checkpoint).
    let dir = std::env::temp_dir().join(format!("weft-mlp-{}", std::process::id()));
    let saved = transformer.save(&dir)?;
    transformer.load(&dir)?;
    assert_eq!(
        mlp.call(&[input])?,
        y,
        "the loaded weights are the saved ones"
    );
    println!("saved and loaded {} tensors", saved.len());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
