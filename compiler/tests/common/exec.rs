//! A slow executor of compiled plans for tests: runs each kernel program point by point over a
//! byte-addressed arena laid out as the buffer plan says, so wrong index maps, layouts or buffer
//! sharing show up as wrong results. Values are held in f64 cells (integers exactly while
//! small); each op converts its operands to their dtype and applies `weft_ir::scalar`, the
//! rules every backend follows.
#![allow(dead_code)]

use std::collections::HashMap;
use weft_compiler::passes::kernel::{Instr, KernelProgram, StageProgram};
use weft_compiler::passes::storage::Planned;
use weft_compiler::passes::views::{IterAxis, StridedView};
use weft_compiler::CompiledPlan;
use weft_ir::loop_ir::ScalarValue;
use weft_ir::scalar;
use weft_ir::{Axis, DType, NodeId, Op, ReduceOp, TensorInit};

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
                    // An input holds values of its dtype, as a host array would.
                    None => inputs[node.name.as_ref().unwrap()]
                        .iter()
                        .map(|&x| untyped(typed(x, node.dtype)))
                        .collect(),
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
                        let mut xs = Vec::new();
                        for q in points(&rl) {
                            for (a, i) in r.axes.iter().zip(&q) {
                                at.insert(a.axis, *i as i64);
                            }
                            xs.push(eval(plan, st, &at, homes, mem, &locals, size)[st.result]);
                        }
                        reduce(r.op, st.body[st.result].dtype, &xs)
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

/// An f64 cell's value as a value of dtype `d`.
fn typed(x: f64, d: DType) -> ScalarValue {
    match d {
        DType::F32 => ScalarValue::F32(x as f32),
        DType::F64 => ScalarValue::F64(x),
        DType::I32 => ScalarValue::I32(x as i32),
        DType::I64 => ScalarValue::I64(x as i64),
        DType::Bool => ScalarValue::Bool(x != 0.0),
    }
}

/// A value as an f64 cell.
fn untyped(v: ScalarValue) -> f64 {
    match v {
        ScalarValue::F32(x) => f64::from(x),
        ScalarValue::F64(x) => x,
        ScalarValue::I32(x) => f64::from(x),
        ScalarValue::I64(x) => x as f64,
        ScalarValue::Bool(x) => f64::from(u8::from(x)),
    }
}

/// `op` over `xs` (of dtype `d`, in visiting order), as the interpreter folds it: floats (and
/// bools, as 0/1: max is any, min all) in f64, integers in i64 with wrapping, rounded once to
/// `d`; argmax/argmin give the flat index of the first NaN, else of the first extreme.
fn reduce(op: ReduceOp, d: DType, xs: &[f64]) -> f64 {
    if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
        let max = op == ReduceOp::ArgMax;
        let mut best = 0;
        for (i, &x) in xs.iter().enumerate() {
            if scalar::arg_replaces(max, xs[best], x) {
                best = i;
            }
        }
        return best as f64;
    }
    let wide = if d.is_int() { DType::I64 } else { DType::F64 };
    let mut acc = typed(xs[0], wide);
    for &x in &xs[1..] {
        acc = scalar::reduce_step(op, acc, typed(x, wide)).expect("a reduction its dtype has");
    }
    if op == ReduceOp::Mean {
        acc = ScalarValue::F64(untyped(acc) / xs.len() as f64);
    }
    untyped(scalar::convert(acc, d))
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
                let r = scalar::unary(*u, typed(v[*a], inst.dtype));
                untyped(r.expect("a unary op its dtype has"))
            }
            Instr::Binary(b, x, y) => {
                let (x, y) = (typed(v[*x], inst.dtype), typed(v[*y], inst.dtype));
                untyped(scalar::binary(*b, x, y).expect("a binary op its dtype has"))
            }
            Instr::Compare(c, x, y) => {
                let d = st.body[*x].dtype;
                let r = scalar::compare_values(*c, typed(v[*x], d), typed(v[*y], d));
                f64::from(u8::from(r.expect("operands of one dtype")))
            }
            Instr::Select(c, x, y) => {
                if v[*c] != 0.0 {
                    v[*x]
                } else {
                    v[*y]
                }
            }
            Instr::Convert(x) => {
                untyped(scalar::convert(typed(v[*x], st.body[*x].dtype), inst.dtype))
            }
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
