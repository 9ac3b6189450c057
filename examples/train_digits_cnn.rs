//! Trains a small CNN on the bundled 8 × 8 digits to ≥ 98% test accuracy: two 3 × 3
//! convolutions (1 → 16 → 32 channels, zero padding, relu), a 2 × 2 max pool, a dense head to
//! the 10 classes; softmax cross-entropy, gradients by `Graph::grad`, SGD with momentum,
//! batches of 64 reshuffled each epoch. Axes are paired by role, never by position: the
//! filters' Height and Width axes slide over the image's, their Channel axis contracts the
//! input's, and each convolution's Channelout axis becomes the next one's Channel axis.
//! Run it: `cargo run --release --example train_digits_cnn`.
use weft::ir::AxisDef;
use weft::nn::Activation::{Identity, Relu};
use weft::prelude::*;

const SEED: u64 = 0; // the split, the initial weights and each epoch's shuffle
const EPOCHS: usize = 20;
const BATCH: usize = 64;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (train, test) = datasets::digits()?.split(0.2, SEED)?; // 1438 and 359 images
    let mut g = Graph::new();
    let (b, p, c) = (g.axis_unbound("B")?, g.axis("P", 64)?, g.axis("C", 10)?);
    let mut axis = |name, len, role| g.axis_with_roles(name, Some(len), vec![role]);
    let (h, w) = (axis("H", 8, Role::Height)?, axis("W", 8, Role::Width)?);
    let (r, s) = (axis("R", 3, Role::Height)?, axis("S", 3, Role::Width)?);
    let gray = axis("gray", 1, Role::Channel)?;
    let (k1, k2) = (
        axis("K1", 16, Role::Channelout)?,
        axis("K2", 32, Role::Channelout)?,
    );
    let x = g.placeholder("x", &[b, p], DType::F32)?;
    let labels = g.placeholder("labels", &[b], DType::I64)?;

    // The 64 pixels as an 8 × 8 image with one (gray) channel: P relabelled as H·W, split.
    let hw = g.derived_axis(AxisDef::Flatten(vec![h, w]));
    let image = g.cast_axes(x, &[b, hw])?;
    let image = g.unflatten(image, hw)?;
    let image = g.expand_dims(image, gray, 1)?; // [B, gray, H, W]

    let same = ConvSpec::new()
        .pad(Role::Height, 1, 1)
        .pad(Role::Width, 1, 1);
    let he = nn::Init::he(SEED);
    let conv1 = nn::conv(&mut g, "conv1", image, &[k1, gray, r, s], &same, Relu, he)?;
    // conv1's features axis (the Channel role) is the axis conv2's filter contracts.
    let f1 = g.derived_axis(AxisDef::Features(k1));
    let conv2 = nn::conv(
        &mut g,
        "conv2",
        conv1.output,
        &[k2, f1, r, s],
        &same,
        Relu,
        he,
    )?;
    let pool = PoolSpec::new(PoolKind::Max)
        .window(Role::Height, 2)
        .window(Role::Width, 2);
    let pooled = g.pool(conv2.output, &pool)?; // [B, K2', 4, 4]
    let spatial: Vec<Axis> = g.node(pooled).axes.iter().skip(1).copied().collect();
    let flat = g.flatten(pooled, &spatial)?; // [B, K2'·4·4 = 512]
    let flat_axis = g.derived_axis(AxisDef::Flatten(spatial));
    let out = nn::dense(
        &mut g,
        "out",
        flat,
        flat_axis,
        c,
        Identity,
        nn::Init::glorot(SEED),
    )?;
    let loss = nn::softmax_cross_entropy(&mut g, out.output, labels, c)?;
    let accuracy = nn::accuracy(&mut g, out.output, labels, c)?;
    let params = [conv1.variables(), conv2.variables(), out.variables()].concat();
    let pairs: Vec<_> = params.iter().copied().zip(g.grad(loss, &params)?).collect();
    let step = nn::momentum(&mut g, &pairs, 0.05, 0.9)?;

    let t = Transformer::new(g, Backend::Jit)?;
    let train_step = t.computation(&[vec![loss], step.assigns].concat(), &[x, labels])?;
    let evaluate = t.computation(&[accuracy], &[x, labels])?;
    let bar = indicatif::ProgressBar::new((EPOCHS * train.len().div_ceil(BATCH)) as u64);
    let mut test_accuracy = 0.0;
    for epoch in 1..=EPOCHS {
        let (shuffled, _) = train.split(0.0, SEED + epoch as u64)?;
        let mut total = 0.0;
        for start in (0..train.len()).step_by(BATCH) {
            let rows: Vec<usize> = (start..train.len().min(start + BATCH)).collect();
            let batch = shuffled.subset(&rows)?;
            let inputs = [batch.images_array(b, p)?, batch.labels_array(b)?];
            total += train_step.call(&inputs)?[0].to_vec::<f32>()?[0] * rows.len() as f32;
            bar.inc(1);
        }
        let test_set = [test.images_array(b, p)?, test.labels_array(b)?];
        test_accuracy = evaluate.call(&test_set)?[0].to_vec::<f32>()?[0];
        let (loss, pct) = (total / train.len() as f32, 100.0 * test_accuracy);
        bar.suspend(|| println!("epoch {epoch:>2}: loss {loss:.4}, test accuracy {pct:.2}%"));
    }
    bar.finish_and_clear();
    let verdict = if test_accuracy >= 0.98 {
        "reached"
    } else {
        "MISSED"
    };
    println!("the 98% target is {verdict}: {:.2}%", 100.0 * test_accuracy);
    assert!(
        test_accuracy >= 0.98,
        "the example should reach 98% test accuracy"
    );
    Ok(())
}
