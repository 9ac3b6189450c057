//! Trains an MLP 64 → 128 (relu) → 10 on the bundled digits to ≥ 97% test accuracy: softmax
//! cross-entropy, gradients by `Graph::grad`, SGD with momentum, batches of 64 reshuffled each
//! epoch. A training step is one computation whose outputs include the optimizer's assigns.
//! The batch axis `B` is bound at each call, so the last partial batch (1438 = 22·64 + 30) and
//! the whole test set (one call) run through the same graph. The variables are saved as .npy.
//! Run it: `cargo run --release --example train_digits`.
use weft::nn::Activation::{Identity, Relu};
use weft::prelude::*;

const SEED: u64 = 0; // the split, the initial weights and each epoch's shuffle
const EPOCHS: usize = 20;
const BATCH: usize = 64;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (train, test) = datasets::digits()?.split(0.2, SEED)?; // 1438 and 359 images
    let mut g = Graph::new();
    let (b, p) = (g.axis_unbound("B")?, g.axis("P", 64)?);
    let (h, c) = (g.axis("H", 128)?, g.axis("C", 10)?);
    let x = g.placeholder("x", &[b, p], DType::F32)?;
    let labels = g.placeholder("labels", &[b], DType::I64)?;
    let hidden = nn::dense(&mut g, "hidden", x, p, h, Relu, nn::Init::he(SEED))?;
    let out = nn::dense(
        &mut g,
        "out",
        hidden.output,
        h,
        c,
        Identity,
        nn::Init::glorot(SEED),
    )?;
    let loss = nn::softmax_cross_entropy(&mut g, out.output, labels, c)?;
    let accuracy = nn::accuracy(&mut g, out.output, labels, c)?;
    let params = [hidden.variables(), out.variables()].concat();
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
    let dir = std::env::temp_dir().join("weft-train-digits");
    println!("saved {} tensors to {}", t.save(&dir)?.len(), dir.display());
    let verdict = if test_accuracy >= 0.97 {
        "reached"
    } else {
        "MISSED"
    };
    println!("the 97% target is {verdict}: {:.2}%", 100.0 * test_accuracy);
    assert!(
        test_accuracy >= 0.97,
        "the example should reach 97% test accuracy"
    );
    Ok(())
}
