//! `weft train`: trains a classifier written as a `.weft` file on the bundled digits.
//!
//! Assumes the file's conventions (docs/training.md, "Training from the command line"):
//! placeholders `x` (f32 over `[B, P]`, P of length 64) and `labels` (i64 over `[B]`), a float
//! scalar `loss`, `logits` over `B` and one class axis of length 10, and `assign`s that update
//! the variables. Guarantees: a file that breaks a convention is an [`Error::Train`] naming
//! the file, the tensor and what does not fit, before anything is compiled; `B` is bound at
//! each call (per_binding), so the last partial batch of an epoch and the whole test set (one
//! call) run through the graph; one step is one call whose outputs are `loss` and every
//! assign; the split and each epoch's shuffle are deterministic in `--seed`.

use std::path::{Path, PathBuf};

use weft_ir::{Axis, DType, Graph, NodeId, Op, TensorKind};

use crate::datasets::{digits, DIGITS_CLASSES, DIGITS_PIXELS};
use crate::{Backend, Error, Transformer};

/// The options of `weft train`.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Passes over the training set.
    pub epochs: usize,
    /// Images per step (the last batch of an epoch may be smaller).
    pub batch: usize,
    /// Seed of the split and of each epoch's shuffle.
    pub seed: u64,
    /// The fraction of the data held out to test on.
    pub test_fraction: f64,
    /// Where to write the trained variables and state as NAME.npy.
    pub save: Option<PathBuf>,
}

/// The tensors `weft train` feeds and reads, found and checked.
struct Model {
    x: NodeId,
    labels: NodeId,
    loss: NodeId,
    logits: NodeId,
    batch: Axis,
    classes: Axis,
    assigns: Vec<NodeId>,
}

/// Finds and checks the conventional tensors of `graph` (read from `file`).
fn model(graph: &Graph, file: &Path) -> Result<Model, Error> {
    let fail = |name: &str, problem: String| Error::Train {
        file: file.display().to_string(),
        name: name.to_string(),
        problem,
    };
    let find = |name: &str| {
        graph
            .find(name)
            .ok_or_else(|| fail(name, "is not declared".into()))
    };
    let placeholders = graph.placeholders();
    let axes_of = |id: NodeId| graph.axes_name(&graph.node(id).axes);
    let x = find("x")?;
    let xn = graph.node(x);
    let pixels_ok = xn.axes.len() == 2 && graph.resolve_len(xn.axes[1]).ok() == Some(DIGITS_PIXELS);
    if !placeholders.contains(&x) || xn.dtype != DType::F32 || !pixels_ok {
        return Err(fail(
            "x",
            format!(
                "must be a placeholder f32[B, P] with P of length {DIGITS_PIXELS} (the pixels); it is a {} {} {}",
                kind(graph, x),
                xn.dtype,
                axes_of(x)
            ),
        ));
    }
    let batch = xn.axes[0];
    let labels = find("labels")?;
    let ln = graph.node(labels);
    if !placeholders.contains(&labels) || ln.dtype != DType::I64 || ln.axes.as_slice() != [batch] {
        return Err(fail(
            "labels",
            format!(
                "must be a placeholder i64[{}] (x's batch axis); it is a {} {} {}",
                graph.axis_name(batch),
                kind(graph, labels),
                ln.dtype,
                axes_of(labels)
            ),
        ));
    }
    if let Some(other) = placeholders.iter().find(|p| ![x, labels].contains(p)) {
        return Err(fail(
            &graph.node_label(*other),
            "is a placeholder weft train cannot feed (it feeds `x` and `labels`)".into(),
        ));
    }
    let loss = find("loss")?;
    let n = graph.node(loss);
    if !n.dtype.is_float() || !n.axes.is_empty() {
        return Err(fail(
            "loss",
            format!(
                "must be a float scalar; it is {} {}",
                n.dtype,
                axes_of(loss)
            ),
        ));
    }
    let logits = find("logits")?;
    let n = graph.node(logits);
    let classes = n.axes.iter().copied().find(|a| *a != batch);
    let fits = n.dtype.is_float()
        && n.axes.len() == 2
        && n.axes.contains(batch)
        && classes.is_some_and(|c| graph.resolve_len(c).ok() == Some(DIGITS_CLASSES));
    let Some(classes) = classes.filter(|_| fits) else {
        return Err(fail(
            "logits",
            format!(
                "must be a float tensor over the batch axis `{}` and a class axis of length \
                 {DIGITS_CLASSES}; it is {} {}",
                graph.axis_name(batch),
                n.dtype,
                axes_of(logits)
            ),
        ));
    };
    let assigns: Vec<NodeId> = graph
        .nodes()
        .filter(|(_, n)| matches!(n.op, Op::Assign { .. }))
        .map(|(id, _)| id)
        .collect();
    if assigns.is_empty() {
        return Err(fail(
            "assign",
            "no statement assigns a variable, so a step would train nothing \
             (write the optimizer's updates with assign: examples/digits_mlp.weft)"
                .into(),
        ));
    }
    Ok(Model {
        x,
        labels,
        loss,
        logits,
        batch,
        classes,
        assigns,
    })
}

/// What `id` is, for an error message.
fn kind(graph: &Graph, id: NodeId) -> &'static str {
    match graph.node(id).op {
        Op::Tensor { kind, .. } => match kind {
            TensorKind::Placeholder => "placeholder",
            TensorKind::Constant => "constant",
            TensorKind::Variable => "variable",
            TensorKind::PersistentTensor => "persistent tensor",
        },
        _ => "computed tensor",
    }
}

/// Trains the model of `graph` (read from `file`) on the digits, printing per epoch the mean
/// training loss and the test loss and accuracy, then the files saved.
pub fn train(mut graph: Graph, file: &Path, o: &TrainOptions) -> Result<(), Error> {
    if o.batch == 0 || o.epochs == 0 {
        return Err(Error::Train {
            file: file.display().to_string(),
            name: if o.batch == 0 { "--batch" } else { "--epochs" }.into(),
            problem: "must be at least 1".into(),
        });
    }
    let m = model(&graph, file)?;
    let accuracy = weft_nn::accuracy(&mut graph, m.logits, m.labels, m.classes)?;
    graph.unbind(m.batch)?;
    let (train, test) = digits()?.split(o.test_fraction, o.seed)?;
    if train.is_empty() {
        return Err(Error::Train {
            file: file.display().to_string(),
            name: "--test-fraction".into(),
            problem: format!("{} leaves no image to train on", o.test_fraction),
        });
    }
    let t = Transformer::new(graph, Backend::Jit)?;
    let step = t.computation(&[vec![m.loss], m.assigns].concat(), &[m.x, m.labels])?;
    let evaluate = t.computation(&[m.loss, accuracy], &[m.x, m.labels])?;
    let (b, p) = (m.batch, t.graph().node(m.x).axes[1]);
    println!(
        "training {} on {} digits, testing on {}: {} epochs of batches of {}",
        file.display(),
        train.len(),
        test.len(),
        o.epochs,
        o.batch
    );
    let steps = train.len().div_ceil(o.batch);
    let bar = indicatif::ProgressBar::new((o.epochs * steps) as u64);
    for epoch in 1..=o.epochs {
        let (shuffled, _) = train.split(0.0, o.seed.wrapping_add(epoch as u64))?;
        let mut total = 0.0;
        for start in (0..train.len()).step_by(o.batch) {
            let rows: Vec<usize> = (start..train.len().min(start + o.batch)).collect();
            let batch = shuffled.subset(&rows)?;
            let out = step.call(&[batch.images_array(b, p)?, batch.labels_array(b)?])?;
            total += out[0].data().get(0).map_or(f64::NAN, |v| v.as_f64()) * rows.len() as f64;
            bar.inc(1);
        }
        let line = if test.is_empty() {
            format!("epoch {epoch}: loss {:.4}", total / train.len() as f64)
        } else {
            let out = evaluate.call(&[test.images_array(b, p)?, test.labels_array(b)?])?;
            let scalar = |i: usize| out[i].data().get(0).map_or(f64::NAN, |v| v.as_f64());
            format!(
                "epoch {epoch}: loss {:.4}, test loss {:.4}, test accuracy {:.2}%",
                total / train.len() as f64,
                scalar(0),
                100.0 * scalar(1)
            )
        };
        bar.suspend(|| println!("{line}"));
    }
    bar.finish_and_clear();
    if let Some(dir) = &o.save {
        for path in t.save(dir)? {
            println!("saved {}", path.display());
        }
    }
    Ok(())
}
