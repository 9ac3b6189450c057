//! Property tests of `Graph::grad` (docs/autodiff.md, "How it is tested"):
//!
//! - gradients against central finite differences in f64, over random differentiable graphs
//!   (every unary, binary, select of a comparison, convert, sum/mean/prod/max/min, dot with
//!   and without dual axes, and every view: broadcast, axes_with_order, cast_axes, transpose,
//!   slices with steps, negative steps and pinned indices, pad, concat, flatten, unflatten,
//!   expand_dims) with random axes and lengths 1 to 3; the loss is Σ output · fixed random
//!   weights over the last two nodes, evaluated by the reference interpreter (the oracle);
//! - the backward graphs on the JIT, fused and unfused, against the interpreter with
//!   `weft_oracle`'s oracle and tolerances.
//!
//! Domains: `log`, `sqrt` and `reciprocal` operands, `divide`'s divisor and `power`'s base are
//! made positive by construction (`t² + 1/2`). Kinks: a case is taken only when every kink
//! lies at least `KINK_MARGIN` away from the point — `relu`, `abs` and `sign` inputs from 0,
//! `maximum`/`minimum` operands and compared values from each other, and a `max`/`min`
//! reduction's result from the runner-up — measured in the graph by the interpreter; up to
//! eight input draws are tried per graph. Tolerance: with step `H` = 1e-5, an element passes
//! when |grad − fd| ≤ 1e-5·(1 + |fd|) + 1e-7·|loss| (truncation ≈ H²·f‴/6 ≈ 1e-11·f‴, rounding
//! ≈ ε·|loss|/H ≈ 1e-11·|loss|; the margin covers third derivatives up to 1e5). Losses above
//! 1e6 or not finite are not taken.

mod jit_common;

use proptest::prelude::*;
use weft::prelude::*;
use weft::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use weft_ir::AxisDef;
use weft_oracle::{proptest_cases, SplitMix};

const H: f64 = 1e-5;
const KINK_MARGIN: f64 = 1e-2;
const F64: DType = DType::F64;

/// A random differentiable graph: its placeholders (the wrt nodes), the loss, and the
/// kink margins (scalars that must exceed `KINK_MARGIN` for finite differences to hold).
struct Case {
    g: Graph,
    wrt: Vec<NodeId>,
    loss: NodeId,
    margins: Vec<NodeId>,
}

struct Gen {
    r: SplitMix,
    g: Graph,
    axes: Vec<Axis>,
    pool: Vec<NodeId>,
    margins: Vec<NodeId>,
}

impl Gen {
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.r.below(v.len())]
    }

    fn node(&mut self) -> NodeId {
        // Biased towards the newest nodes, so chains are long.
        let n = self.pool.len();
        if self.r.chance(60) {
            self.pool[n - 1 - self.r.below(n.min(3))]
        } else {
            self.pool[self.r.below(n)]
        }
    }

    fn axes_of(&self, t: NodeId) -> Vec<Axis> {
        self.g.node(t).axes.as_slice().to_vec()
    }

    fn scalar(&mut self, v: f64) -> NodeId {
        self.g.scalar(Scalar::Float(v), F64).unwrap()
    }

    /// `t² + 1/2`: positive, for the ops with a restricted domain.
    fn positive(&mut self, t: NodeId) -> NodeId {
        let sq = self.g.square(t).unwrap();
        let half = self.scalar(0.5);
        self.g.add(sq, half).unwrap()
    }

    /// `min |t|` over all of t's axes, a kink margin.
    fn margin_of(&mut self, t: NodeId) {
        let a = self.g.abs(t).unwrap();
        let axes = self.axes_of(a);
        let m = self.g.min(a, &axes).unwrap();
        self.margins.push(m);
    }

    fn difference_margin(&mut self, x: NodeId, y: NodeId) {
        let d = self.g.subtract(x, y).unwrap();
        self.margin_of(d);
    }

    /// The gap between a max (min) reduction's result and the runner-up.
    fn reduction_margin(&mut self, op: ReduceOp, x: NodeId, y: NodeId, red: &[Axis]) {
        let far = self.scalar(if op == ReduceOp::Max { -1e9 } else { 1e9 });
        let hit = self.g.equal(x, y).unwrap();
        let rest = self.g.select(hit, far, x).unwrap();
        let second = self.g.reduce(op, rest, red, None).unwrap();
        self.difference_margin(y, second);
    }

    /// One random step; an error when the draw does not fit (it is then skipped).
    fn step(&mut self) -> Result<NodeId, weft::GraphError> {
        let t = self.node();
        let ta = self.axes_of(t);
        match self.r.below(17) {
            0 | 1 => {
                let op = self.pick(UnaryOp::ALL);
                let x = match op {
                    UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Reciprocal => self.positive(t),
                    UnaryOp::Exp => self.g.tanh(t)?, // keeps magnitudes tame
                    _ => t,
                };
                if matches!(op, UnaryOp::Relu | UnaryOp::Abs | UnaryOp::Sign) {
                    self.margin_of(x);
                }
                self.g.unary(op, x)
            }
            2 | 3 => {
                let op = self.pick(BinaryOp::ALL);
                let u = self.node();
                let (x, y) = match op {
                    BinaryOp::Divide => (t, self.positive(u)),
                    BinaryOp::Power => {
                        let y = self.g.tanh(u)?;
                        (self.positive(t), y)
                    }
                    _ => (t, u),
                };
                if matches!(op, BinaryOp::Maximum | BinaryOp::Minimum) {
                    self.difference_margin(x, y);
                }
                self.g.binary(op, x, y)
            }
            4 => {
                let op = self.pick(&[
                    ReduceOp::Sum,
                    ReduceOp::Mean,
                    ReduceOp::Prod,
                    ReduceOp::Max,
                    ReduceOp::Min,
                ]);
                let red: Vec<Axis> = ta.iter().copied().filter(|_| self.r.chance(60)).collect();
                let y = self.g.reduce(op, t, &red, None)?;
                if matches!(op, ReduceOp::Max | ReduceOp::Min) {
                    self.reduction_margin(op, t, y, &red);
                }
                Ok(y)
            }
            5 => {
                let u = self.node();
                let x = if self.r.chance(30) {
                    self.g.transpose(t)?
                } else {
                    t
                };
                let y = if self.r.chance(30) {
                    self.g.transpose(u)?
                } else {
                    u
                };
                self.g.dot(x, y)
            }
            6 => {
                let mut axes = ta.clone();
                for a in self.axes.clone() {
                    if !axes.contains(&a) && self.r.chance(40) {
                        let at = self.r.below(axes.len() + 1);
                        axes.insert(at, a);
                    }
                }
                self.g.broadcast(t, &axes)
            }
            7 => {
                let mut axes = ta.clone();
                let k = self.r.below(axes.len().max(1)).min(axes.len());
                axes.rotate_left(k);
                axes.reverse();
                self.g.axes_with_order(t, &axes)
            }
            8 => {
                // Relabel one axis as a declared axis of the same length that t lacks.
                let lens = |g: &Graph, a: Axis| g.axis_len(a);
                let mut axes = ta.clone();
                let Some(i) = (!axes.is_empty()).then(|| self.r.below(axes.len())) else {
                    return self.g.transpose(t);
                };
                let want = lens(&self.g, axes[i]);
                let to = self
                    .axes
                    .clone()
                    .into_iter()
                    .find(|a| !axes.contains(a) && lens(&self.g, *a) == want);
                match to {
                    Some(a) => {
                        axes[i] = a;
                        self.g.cast_axes(t, &axes)
                    }
                    None => self.g.transpose(t),
                }
            }
            9 => self.g.transpose(t),
            10 | 11 => {
                let Some(&a) = ta.get(self.r.below(ta.len().max(1))) else {
                    return self.g.negative(t);
                };
                let n = self.g.axis_len(a).unwrap_or(1) as i64;
                let spec = match self.r.below(4) {
                    0 => AxisSlice::Index(
                        self.r.below(n as usize) as i64 - n * (self.r.below(2) as i64),
                    ),
                    1 => AxisSlice::Range(SliceRange::reversed()),
                    _ => {
                        let step = self.pick(&[1i64, 2, 3, -1, -2]);
                        let s = self.r.below(n as usize) as i64;
                        AxisSlice::Range(SliceRange {
                            start: Some(s),
                            stop: None,
                            step,
                        })
                    }
                };
                self.g.slice(t, &[(a, spec)])
            }
            12 => {
                let Some(&a) = ta.get(self.r.below(ta.len().max(1))) else {
                    return self.g.negative(t);
                };
                let (b, c) = (self.r.below(3), self.r.below(3));
                self.g.pad(t, &[(a, b, c)])
            }
            13 => {
                let Some(&a) = ta.get(self.r.below(ta.len().max(1))) else {
                    return self.g.negative(t);
                };
                let u = self.node();
                let other = if self.g.node(u).axes == self.g.node(t).axes {
                    u
                } else {
                    t
                };
                self.g.concat(&[(t, a), (other, a)])
            }
            14 => {
                // Flatten two axes, or unflatten a flattened one.
                if let Some(f) = ta.iter().copied().find(|a| {
                    a.dual == 0 && matches!(self.g.axis_data(a.id).def, AxisDef::Flatten(_))
                }) {
                    return self.g.unflatten(t, f);
                }
                if ta.len() < 2 {
                    return self.g.sin(t);
                }
                let i = self.r.below(ta.len());
                let j = (i + 1 + self.r.below(ta.len() - 1)) % ta.len();
                self.g.flatten(t, &[ta[i], ta[j]])
            }
            15 => {
                let free: Vec<Axis> = self
                    .axes
                    .iter()
                    .copied()
                    .filter(|a| !ta.contains(a))
                    .collect();
                if free.is_empty() {
                    return self.g.cos(t);
                }
                let a = self.pick(&free);
                let pos = self.r.below(ta.len() + 1);
                self.g.expand_dims(t, a, pos)
            }
            _ => {
                // select on a comparison, or an identity convert.
                if self.r.chance(25) {
                    return self.g.convert(t, F64);
                }
                let (u, v, w) = (self.node(), self.node(), self.node());
                let op = self.pick(CompareOp::ALL);
                if u != t {
                    // The select switches where the compared values meet: a kink.
                    self.difference_margin(t, u);
                }
                let c = self.g.compare(op, t, u)?;
                self.g.select(c, v, w)
            }
        }
    }
}

/// A random case from `seed`: 1 to 3 axes of lengths 1 to 3, 1 or 2 f64 placeholders, 3 to 9
/// steps.
fn draw(seed: u64) -> Case {
    let mut r = SplitMix(seed);
    let mut g = Graph::new();
    let axes: Vec<Axis> = (0..1 + r.below(3))
        .map(|i| g.axis(&format!("A{i}"), 1 + r.below(3)).unwrap())
        .collect();
    let mut wrt = Vec::new();
    for k in 0..1 + r.below(2) {
        let mine: Vec<Axis> = axes.iter().copied().filter(|_| r.chance(70)).collect();
        wrt.push(g.placeholder(&format!("x{k}"), &mine, F64).unwrap());
    }
    let mut gen = Gen {
        r,
        g,
        axes,
        pool: wrt.clone(),
        margins: Vec::new(),
    };
    let steps = 3 + gen.r.below(7);
    for _ in 0..steps {
        if let Ok(id) = gen.step() {
            gen.pool.push(id);
        }
    }
    // loss = Σ over the last two nodes of Σ node · W, W fixed random weights.
    let n = gen.pool.len();
    let mut loss: Option<NodeId> = None;
    for &t in &gen.pool[n.saturating_sub(2)..] {
        let axes = gen.axes_of(t);
        let count: usize = gen
            .g
            .shape_of(&gen.g.node(t).axes)
            .unwrap()
            .iter()
            .product();
        let data: Vec<f64> = (0..count).map(|_| gen.r.unit()).collect();
        let w = gen
            .g
            .constant(None, &axes, F64, TensorInit::data(ArrayData::F64(data)))
            .unwrap();
        let p = gen.g.multiply(t, w).unwrap();
        let s = gen.g.sum(p, &axes).unwrap();
        loss = Some(match loss {
            None => s,
            Some(l) => gen.g.add(l, s).unwrap(),
        });
    }
    Case {
        g: gen.g,
        wrt,
        loss: loss.expect("at least one node"),
        margins: gen.margins,
    }
}

fn inputs(g: &Graph, ps: &[NodeId], seed: u64) -> Vec<HostArray> {
    let mut r = SplitMix(seed);
    ps.iter()
        .map(|p| {
            let axes = g.node(*p).axes.clone();
            let shape = g.shape_of(&axes).unwrap();
            let n: usize = shape.iter().product();
            let v: Vec<f64> = (0..n).map(|_| r.unit() / 2.0).collect();
            HostArray::from_vec(axes, shape, v).unwrap()
        })
        .collect()
}

fn values(c: &Computation, inputs: &[HostArray]) -> Vec<Vec<f64>> {
    c.call(inputs)
        .unwrap()
        .iter()
        .map(|a| a.to_vec::<f64>().unwrap())
        .collect()
}

fn check_finite_differences(seed: u64) -> Result<(), TestCaseError> {
    let mut case = draw(seed);
    let grads = case.g.grad(case.loss, &case.wrt).map_err(|e| {
        TestCaseError::fail(format!(
            "grad failed: {e}\n{}",
            weft_ir::text::print(&case.g)
        ))
    })?;
    let g = &case.g;
    g.verify()
        .map_err(|e| TestCaseError::fail(format!("{e}")))?;
    for (w, d) in case.wrt.iter().zip(&grads) {
        prop_assert_eq!(&g.node(*d).axes, &g.node(*w).axes);
        prop_assert_eq!(g.node(*d).dtype, F64);
    }
    let t = Transformer::new(g.clone(), Backend::Interpreter).unwrap();
    let mut outs = vec![case.loss];
    outs.extend(&grads);
    outs.extend(&case.margins);
    let all = t.computation(&outs, &case.wrt).unwrap();
    let f = t.computation(&[case.loss], &case.wrt).unwrap();
    // Inputs away from every kink.
    let Some((xs, got)) = (0..8u64).find_map(|k| {
        let xs = inputs(g, &case.wrt, seed ^ (k << 40));
        let got = values(&all, &xs);
        let margins = &got[1 + grads.len()..];
        let far = margins.iter().all(|m| m[0] > KINK_MARGIN);
        let tame = got[0][0].is_finite() && got[0][0].abs() < 1e6;
        (far && tame).then_some((xs, got))
    }) else {
        return Err(TestCaseError::reject("every input draw lies near a kink"));
    };
    let loss = got[0][0];
    for (k, x) in xs.iter().enumerate() {
        let grad = &got[1 + k];
        prop_assert!(grad.iter().all(|v| v.is_finite()), "gradient {:?}", grad);
        for (e, &ge) in grad.iter().enumerate() {
            let at = |delta: f64| {
                let mut moved = xs.clone();
                moved[k].as_mut_slice::<f64>().unwrap()[e] += delta;
                values(&f, &moved)[0][0]
            };
            let fd = (at(H) - at(-H)) / (2.0 * H);
            let tol = 1e-5 * (1.0 + fd.abs()) + 1e-7 * loss.abs();
            prop_assert!(
                (ge - fd).abs() <= tol,
                "d loss / d {}[{}]: grad {} vs central difference {} (tolerance {:e}, x = {:?})\n{}",
                g.node_label(case.wrt[k]),
                e,
                ge,
                fd,
                tol,
                x.to_vec::<f64>().unwrap(),
                weft_ir::text::print(g)
            );
        }
    }
    Ok(())
}

fn check_jit(seed: u64) -> Result<(), TestCaseError> {
    let mut case = draw(seed);
    let mut outs = case.g.grad(case.loss, &case.wrt).unwrap();
    outs.push(case.loss);
    let g = &case.g;
    let ps = g.placeholders();
    let xs = inputs(g, &ps, seed);
    jit_common::check_backends(g, &outs, &xs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(128)))]

    #[test]
    fn gradients_match_central_differences(seed in any::<u64>()) {
        check_finite_differences(seed)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases((proptest_cases(128) / 4).max(1)))]

    #[test]
    fn backward_graphs_on_the_jit_match_the_interpreter(seed in any::<u64>()) {
        check_jit(seed)?;
    }
}

#[test]
fn the_generator_draws_every_op_and_view() {
    // Over 200 seeds, every op kind the properties claim appears in some graph.
    let mut seen = std::collections::HashSet::new();
    for seed in 0..200 {
        let case = draw(seed);
        for (_, n) in case.g.nodes() {
            seen.insert(n.op.name());
        }
    }
    for op in UnaryOp::ALL
        .iter()
        .map(|o| o.name())
        .chain(BinaryOp::ALL.iter().map(|o| o.name()))
        .chain([
            "select",
            "convert",
            "sum",
            "mean",
            "prod",
            "max",
            "min",
            "dot",
            "broadcast",
            "axes_with_order",
            "cast_axes",
            "transpose",
            "slice",
            "pad",
            "concat",
            "flatten",
            "unflatten",
            "expand_dims",
        ])
    {
        assert!(seen.contains(op), "no graph draws {op}");
    }
}
