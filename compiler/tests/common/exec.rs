//! A slow executor of compiled plans for tests: runs each kernel program point by point over a
//! byte-addressed arena laid out as the buffer plan says, so wrong index maps, layouts or buffer
//! sharing show up as wrong results. Values are computed in f64 (integers exactly while small).
#![allow(dead_code)]

use std::collections::HashMap;
use weft_compiler::passes::kernel::{Instr, KernelProgram, StageProgram};
use weft_compiler::passes::storage::Planned;
use weft_compiler::passes::views::{IterAxis, StridedView};
use weft_compiler::CompiledPlan;
use weft_ir::{Axis, BinaryOp, CompareOp, DType, NodeId, Op, ReduceOp, TensorInit, UnaryOp};

/// Where a stored tensor lives during execution.
enum Home {
    External(Vec<f64>),
    Arena(usize),
}

/// Runs `plan` with `inputs` (row-major in each placeholder's declared axes, by name) and returns
/// each graph output of the simplified graph, row-major in its axes.
pub fn run(plan: &CompiledPlan, inputs: &HashMap<String, Vec<f64>>) -> Vec<Vec<f64>> {
    let g = &plan.simplified.graph;
    let mut homes: HashMap<NodeId, Home> = HashMap::new();
    let buf_base: Vec<usize> = {
        let mut next = plan.buffers.arena_bytes;
        plan.buffers
            .buffers
            .iter()
            .map(|b| match b.arena_offset {
                Some(o) => o,
                None => {
                    let o = next;
                    next += b.bytes;
                    o
                }
            })
            .collect()
    };
    let total: usize = plan.buffers.buffers.iter().map(|b| b.bytes).sum::<usize>() + 64;
    let mut mem: Vec<f64> = vec![f64::NAN; total];
    for t in &plan.buffers.tensors {
        let Planned::Node(n) = t.what else { continue };
        let node = g.node(n);
        let home = match (&node.op, t.buffer) {
            (_, Some(b)) => Home::Arena(buf_base[b]),
            (Op::Tensor { init, .. }, None) => {
                let len = g.shape_of(&node.axes).unwrap().iter().product::<usize>();
                Home::External(match init {
                    None => inputs[node.name.as_ref().unwrap()].clone(),
                    Some(TensorInit::Fill(s)) => vec![s.as_f64(); len],
                    Some(TensorInit::Data(d)) => {
                        (0..d.len()).map(|i| d.get(i).unwrap().as_f64()).collect()
                    }
                })
            }
            _ => panic!("{} has no storage", g.node_label(n)),
        };
        homes.insert(n, home);
    }
    let size = |n: NodeId| g.node(n).dtype.size_bytes();
    for k in &plan.kernels {
        run_kernel(plan, k, &homes, &mut mem, &size);
    }
    g.outputs()
        .iter()
        .map(|o| {
            let l = &plan.layouts.layouts[o];
            let shape = g.shape_of(&g.node(*o).axes).unwrap();
            let mut out = Vec::new();
            for idx in points(&shape) {
                let off: i64 = idx.iter().zip(&l.strides).map(|(i, s)| *i as i64 * s).sum();
                out.push(match &homes[o] {
                    Home::Arena(b) => mem[b + off as usize * size(*o)],
                    Home::External(v) => v[off as usize],
                });
            }
            out
        })
        .collect()
}

fn points(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    out
}

fn addr(v: &StridedView, at: &HashMap<Axis, i64>) -> i64 {
    v.offset
        + v.axes
            .iter()
            .zip(&v.strides)
            .map(|(a, s)| at[&a.axis] * s)
            .sum::<i64>()
}

fn run_kernel(
    plan: &CompiledPlan,
    k: &KernelProgram,
    homes: &HashMap<NodeId, Home>,
    mem: &mut [f64],
    size: &dyn Fn(NodeId) -> usize,
) {
    let g = &plan.simplified.graph;
    let lens: Vec<usize> = k.outer.iter().map(|a| a.len).collect();
    for o in points(&lens) {
        let mut at: HashMap<Axis, i64> = k
            .outer
            .iter()
            .zip(&o)
            .map(|(a, i)| (a.axis, *i as i64))
            .collect();
        let mut locals: HashMap<NodeId, (Vec<IterAxis>, Vec<f64>)> = HashMap::new();
        for st in &k.stages {
            let ls: Vec<usize> = st.loops.iter().map(|a| a.len).collect();
            let mut row = Vec::new();
            for p in points(&ls) {
                for (a, i) in st.loops.iter().zip(&p) {
                    at.insert(a.axis, *i as i64);
                }
                let v = match &st.reduction {
                    None => eval(plan, st, &at, homes, mem, &locals, size)[st.result],
                    Some(r) => {
                        let rl: Vec<usize> = r.axes.iter().map(|a| a.len).collect();
                        let dtype = g.node(st.node).dtype;
                        let mut acc: Option<(f64, usize)> = None;
                        let mut sum = 0.0;
                        let mut prod = 1.0;
                        let all = points(&rl);
                        let count = all.len();
                        for (flat, q) in all.into_iter().enumerate() {
                            for (a, i) in r.axes.iter().zip(&q) {
                                at.insert(a.axis, *i as i64);
                            }
                            let x = eval(plan, st, &at, homes, mem, &locals, size)[st.result];
                            sum += x;
                            prod *= x;
                            let better = |x: f64, best: f64| match r.op {
                                ReduceOp::Max | ReduceOp::ArgMax => x > best,
                                _ => x < best,
                            };
                            acc = match acc {
                                None => Some((x, flat)),
                                Some((b, _)) if better(x, b) => Some((x, flat)),
                                keep => keep,
                            };
                        }
                        let _ = dtype;
                        match r.op {
                            ReduceOp::Sum => sum,
                            ReduceOp::Prod => prod,
                            ReduceOp::Mean => sum / count as f64,
                            ReduceOp::Max | ReduceOp::Min => acc.unwrap().0,
                            ReduceOp::ArgMax | ReduceOp::ArgMin => acc.unwrap().1 as f64,
                        }
                    }
                };
                row.push(v);
                if let Some(t) = &st.store {
                    let view = t.view.as_ref().unwrap();
                    let Home::Arena(b) = homes[&st.node] else {
                        panic!("store to external")
                    };
                    mem[b + addr(view, &at) as usize * size(st.node)] = v;
                }
            }
            locals.insert(st.node, (st.loops.clone(), row));
        }
    }
}

fn eval(
    plan: &CompiledPlan,
    st: &StageProgram,
    at: &HashMap<Axis, i64>,
    homes: &HashMap<NodeId, Home>,
    mem: &[f64],
    locals: &HashMap<NodeId, (Vec<IterAxis>, Vec<f64>)>,
    size: &dyn Fn(NodeId) -> usize,
) -> Vec<f64> {
    let _ = plan;
    let mut v: Vec<f64> = Vec::new();
    for inst in &st.body {
        let int = inst.dtype.is_int();
        let x = match &inst.instr {
            Instr::Load {
                tensor,
                valid,
                view,
                ..
            } => {
                let ok = valid.iter().all(|r| {
                    let i = r.index.constant
                        + r.index.terms.iter().map(|(a, k)| at[a] * k).sum::<i64>();
                    r.lo <= i && i < r.hi
                });
                if !ok {
                    0.0
                } else {
                    let off = addr(view.as_ref().unwrap(), at);
                    match &homes[tensor] {
                        Home::External(d) => d[off as usize],
                        Home::Arena(b) => mem[b + off as usize * size(*tensor)],
                    }
                }
            }
            Instr::Immediate(s) => s.as_f64(),
            Instr::Unary(u, a) => {
                let a = v[*a];
                match u {
                    UnaryOp::Negative => -a,
                    UnaryOp::Abs => a.abs(),
                    UnaryOp::Exp => a.exp(),
                    UnaryOp::Log => a.ln(),
                    UnaryOp::Sqrt => a.sqrt(),
                    UnaryOp::Square => a * a,
                    UnaryOp::Reciprocal => 1.0 / a,
                    UnaryOp::Sign => {
                        if a > 0.0 {
                            1.0
                        } else if a < 0.0 {
                            -1.0
                        } else {
                            0.0
                        }
                    }
                    UnaryOp::Tanh => a.tanh(),
                    UnaryOp::Sigmoid => 1.0 / (1.0 + (-a).exp()),
                    UnaryOp::Sin => a.sin(),
                    UnaryOp::Cos => a.cos(),
                    UnaryOp::Relu => a.max(0.0),
                }
            }
            Instr::Binary(b, x, y) => {
                let (x, y) = (v[*x], v[*y]);
                match b {
                    BinaryOp::Add => x + y,
                    BinaryOp::Subtract => x - y,
                    BinaryOp::Multiply => x * y,
                    BinaryOp::Divide if int => {
                        if y == 0.0 {
                            0.0
                        } else {
                            (x / y).trunc()
                        }
                    }
                    BinaryOp::Divide => x / y,
                    BinaryOp::Maximum => x.max(y),
                    BinaryOp::Minimum => x.min(y),
                    BinaryOp::Power => x.powf(y),
                }
            }
            Instr::Compare(c, x, y) => {
                let (x, y) = (v[*x], v[*y]);
                let r = match c {
                    CompareOp::Equal => x == y,
                    CompareOp::NotEqual => x != y,
                    CompareOp::Less => x < y,
                    CompareOp::LessEqual => x <= y,
                    CompareOp::Greater => x > y,
                    CompareOp::GreaterEqual => x >= y,
                };
                r as u8 as f64
            }
            Instr::Select(c, x, y) => {
                if v[*c] != 0.0 {
                    v[*x]
                } else {
                    v[*y]
                }
            }
            Instr::Convert(x) => match inst.dtype {
                DType::Bool => (v[*x] != 0.0) as u8 as f64,
                d if d.is_int() => v[*x].trunc(),
                _ => v[*x],
            },
            Instr::Guard { valid, value } => {
                let ok = valid.iter().all(|r| {
                    let i = r.index.constant
                        + r.index.terms.iter().map(|(a, k)| at[a] * k).sum::<i64>();
                    r.lo <= i && i < r.hi
                });
                if ok {
                    v[*value]
                } else {
                    0.0
                }
            }
            Instr::Choose { parts } => {
                let mut out = f64::NAN;
                for (r, x) in parts {
                    let i = r.index.constant
                        + r.index.terms.iter().map(|(a, k)| at[a] * k).sum::<i64>();
                    if r.lo <= i && i < r.hi {
                        out = v[*x];
                        break;
                    }
                }
                out
            }
            Instr::ReadLocal { valid, .. }
                if !valid.iter().all(|r| {
                    let i = r.index.constant
                        + r.index.terms.iter().map(|(a, k)| at[a] * k).sum::<i64>();
                    r.lo <= i && i < r.hi
                }) =>
            {
                0.0
            }
            Instr::ReadLocal { node, index, .. } => {
                let (loops, row) = &locals[node];
                let mut flat = 0usize;
                for (a, e) in loops.iter().zip(index) {
                    let i = e.constant + e.terms.iter().map(|(x, k)| at[x] * k).sum::<i64>();
                    flat = flat * a.len + i as usize;
                }
                row[flat]
            }
        };
        v.push(x);
    }
    v
}
