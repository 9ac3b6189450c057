//! The `.weft` printer: the canonical text of a graph. Every axis-table entry (declared and
//! derived) is declared first, in table order, then every node in arena order, then the
//! outputs, so that [`parse`](super::parse) rebuilds the same arenas.
//!
//! Handles: a node prints as its name (bare or quoted) or, unnamed, as `%N` with `N` its arena
//! index; an axis as its name, tagged `name@N` (`N` its table index) when another entry has the
//! same name. Floats print in their shortest exact form (f32 values as f32).

use super::{name_token, quote};
use crate::axis::{Axis, AxisDef, AxisId, Role, SliceRange, WindowKernel, WindowStep};
use crate::dtype::DType;
use crate::graph::{AxisSlice, Graph, NodeId, Op, TensorInit};
use crate::host::{write_float, ArrayData, Scalar};
use std::collections::HashMap;
use std::fmt::Write;

/// The canonical `.weft` text of `graph`.
pub fn print(graph: &Graph) -> String {
    Printer::new(graph).run()
}

struct Printer<'g> {
    graph: &'g Graph,
    axis_handles: Vec<String>,
    out: String,
}

impl<'g> Printer<'g> {
    fn new(graph: &'g Graph) -> Printer<'g> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for (_, d) in graph.axis_table() {
            *counts.entry(d.name.as_str()).or_default() += 1;
        }
        let axis_handles = graph
            .axis_table()
            .map(|(id, d)| {
                if counts[d.name.as_str()] > 1 {
                    format!("{}@{}", name_token(&d.name), id.as_u32())
                } else {
                    name_token(&d.name)
                }
            })
            .collect();
        Printer {
            graph,
            axis_handles,
            out: String::new(),
        }
    }

    fn run(mut self) -> String {
        let g = self.graph;
        for (id, data) in g.axis_table() {
            let mut line = format!("axis {}", self.axis_handles[id.as_u32() as usize]);
            match &data.def {
                AxisDef::Base { len: Some(n) } => write!(line, " = {n}").unwrap(),
                AxisDef::Base { len: None } => {}
                AxisDef::Slice { of, range } => {
                    write!(line, " = slice({}, {})", self.axis(*of), range_text(range)).unwrap()
                }
                AxisDef::Pad { of, before, after } => {
                    write!(line, " = pad({}, {before}, {after})", self.axis(*of)).unwrap()
                }
                AxisDef::Flatten(parts) => {
                    write!(line, " = flatten({})", self.axis_list(parts)).unwrap()
                }
                AxisDef::Concat(parts) => {
                    write!(line, " = concat({})", self.axis_list(parts)).unwrap()
                }
                AxisDef::Window { of, kernel, step } => {
                    let k = match kernel {
                        WindowKernel::Axis(a) => self.axis(*a),
                        WindowKernel::Len(n) => n.to_string(),
                    };
                    let WindowStep {
                        stride,
                        dilation,
                        before,
                        after,
                    } = step;
                    write!(
                        line,
                        " = window({}, {k}, {stride}, {dilation}, {before}, {after})",
                        self.axis(*of)
                    )
                    .unwrap()
                }
                AxisDef::Features(of) => write!(line, " = features({})", self.axis(*of)).unwrap(),
            }
            if !data.roles.is_empty() {
                let roles: Vec<String> = data.roles.iter().map(role_text).collect();
                write!(line, " : {}", roles.join(", ")).unwrap();
            }
            self.line(line);
        }
        if g.axis_table().len() > 0 && !g.is_empty() {
            self.out.push('\n');
        }
        for (id, node) in g.nodes() {
            let handle = self.node(id);
            let line = match &node.op {
                Op::Tensor { kind, init } => {
                    let mut line = format!(
                        "{} {handle}: {}[{}]",
                        kind.keyword(),
                        node.dtype,
                        self.axis_list(node.axes.as_slice())
                    );
                    match init {
                        None => {}
                        Some(TensorInit::Fill(s)) => {
                            write!(line, " = {}", scalar_text(*s, node.dtype)).unwrap()
                        }
                        Some(TensorInit::Data(d)) => write!(line, " = [{}]", data_text(d)).unwrap(),
                    }
                    line
                }
                op => format!("{handle} = {}", self.op(op, id)),
            };
            self.line(line);
        }
        if !g.outputs().is_empty() {
            let outs: Vec<String> = g.outputs().iter().map(|o| self.node(*o)).collect();
            if !g.is_empty() || g.axis_table().len() > 0 {
                self.out.push('\n');
            }
            self.line(format!("output {}", outs.join(", ")));
        }
        self.out
    }

    fn line(&mut self, s: String) {
        self.out.push_str(&s);
        self.out.push('\n');
    }

    fn op(&self, op: &Op, id: NodeId) -> String {
        let node = self.graph.node(id);
        let n = |x: &NodeId| self.node(*x);
        let args = match op {
            Op::Tensor { .. } => unreachable!("stored tensors print as declarations"),
            Op::Unary(_, x) | Op::Transpose(x) => n(x),
            Op::Binary(_, a, b) | Op::Compare(_, a, b) | Op::Dot(a, b) => {
                format!("{}, {}", n(a), n(b))
            }
            Op::Select(c, a, b) => format!("{}, {}, {}", n(c), n(a), n(b)),
            Op::Convert(x) => format!("{}, {}", n(x), node.dtype),
            Op::Reduce { input, axes, .. } => {
                let mut s = format!("{}, [{}]", n(input), self.axis_list(axes.as_slice()));
                let default = self.graph.node(*input).axes.difference(axes);
                if node.axes != default {
                    write!(s, ", out=[{}]", self.axis_list(node.axes.as_slice())).unwrap();
                }
                s
            }
            Op::Broadcast(x) | Op::AxesWithOrder(x) | Op::CastAxes(x) => {
                format!("{}, [{}]", n(x), self.axis_list(node.axes.as_slice()))
            }
            Op::Slice { input, slices } => {
                let mut s = n(input);
                for (a, sl) in slices {
                    let spec = match sl {
                        AxisSlice::Range(r) => range_text(r),
                        AxisSlice::Index(i) => i.to_string(),
                    };
                    write!(s, ", {}={spec}", self.axis(*a)).unwrap();
                }
                s
            }
            Op::Flatten { input, axes } => format!("{}, [{}]", n(input), self.axis_list(axes)),
            Op::Unflatten { input, axis } => format!("{}, {}", n(input), self.axis(*axis)),
            Op::Pad { input, pads } => {
                let mut s = n(input);
                for (a, before, after) in pads {
                    write!(s, ", {}=({before}, {after})", self.axis(*a)).unwrap();
                }
                s
            }
            Op::Concat(parts) => {
                let p: Vec<String> = parts
                    .iter()
                    .map(|(x, a)| format!("{}:{}", n(x), self.axis(*a)))
                    .collect();
                p.join(", ")
            }
            Op::ExpandDims { input, axis, pos } => {
                format!("{}, {}, {pos}", n(input), self.axis(*axis))
            }
            Op::Assign { target, value } => format!("{}, {}", n(target), n(value)),
            Op::Convolution {
                input,
                filter,
                spec,
            } => {
                let mut s = format!("{}, {}", n(input), n(filter));
                for (role, step) in &spec.steps {
                    if let Some(w) = step_text(None, step) {
                        write!(s, ", {}=({w})", role_text(role)).unwrap();
                    }
                }
                if spec.groups != 1 {
                    write!(s, ", groups={}", spec.groups).unwrap();
                }
                s
            }
            Op::Pool { input, spec } => {
                let mut s = n(input);
                for (role, taps, step) in &spec.windows {
                    let w = step_text(Some(*taps), step).unwrap_or_default();
                    write!(s, ", {}=({w})", role_text(role)).unwrap();
                }
                s
            }
        };
        format!("{}({args})", op.name())
    }

    fn node(&self, id: NodeId) -> String {
        match &self.graph.node(id).name {
            Some(name) => name_token(name),
            None => format!("{id}"),
        }
    }

    fn axis(&self, a: Axis) -> String {
        let handle = match self.axis_handles.get(a.id.as_u32() as usize) {
            Some(h) => h.clone(),
            // Not in the table: cannot parse back, but printing must not fail.
            None => quote(&format!("{}", AxisId::from_u32(a.id.as_u32()))),
        };
        match a.dual {
            0 => handle,
            k if (1..=3).contains(&k) => format!("{handle}{}", "*".repeat(k as usize)),
            k => format!("{handle}^{k}*"),
        }
    }

    fn axis_list(&self, axes: &[Axis]) -> String {
        let v: Vec<String> = axes.iter().map(|a| self.axis(*a)).collect();
        v.join(", ")
    }
}

fn range_text(r: &SliceRange) -> String {
    r.to_string()
}

/// A window's settings as `key=value` pairs, those that differ from the defaults (a pool's
/// `window` always, its stride defaulting to the window); `None` when nothing differs.
fn step_text(taps: Option<usize>, step: &WindowStep) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(t) = taps {
        parts.push(format!("window={t}"));
    }
    if step.stride != taps.unwrap_or(1) {
        parts.push(format!("stride={}", step.stride));
    }
    if step.dilation != 1 {
        parts.push(format!("dilation={}", step.dilation));
    }
    if (step.before, step.after) != (0, 0) {
        parts.push(format!("pad=({}, {})", step.before, step.after));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn role_text(r: &Role) -> String {
    match r {
        Role::User(s) if Role::parse(s) != *r || !super::is_plain_name(s) => quote(s),
        r => r.name().to_string(),
    }
}

/// A fill value as text; f32 tensors hold f32 values (stored widened) and print as f32.
fn scalar_text(s: Scalar, dtype: DType) -> String {
    match s {
        Scalar::Float(v) if dtype == DType::F32 && (v as f32 as f64 == v || v.is_nan()) => {
            f32_text(v as f32)
        }
        Scalar::Float(v) => f64_text(v),
        Scalar::Int(v) => v.to_string(),
        Scalar::Bool(b) => b.to_string(),
    }
}

fn f64_text(v: f64) -> String {
    let mut s = String::new();
    write_float(&mut s, v).unwrap();
    s
}

/// The shortest text that reads back as this f32 (as [`write_float`] does for f64).
fn f32_text(v: f32) -> String {
    if v.is_nan() || v.is_infinite() {
        f64_text(v as f64)
    } else if v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v:?}")
    }
}

fn data_text(d: &ArrayData) -> String {
    let v: Vec<String> = match d {
        ArrayData::F32(v) => v.iter().map(|x| f32_text(*x)).collect(),
        ArrayData::F64(v) => v.iter().map(|x| f64_text(*x)).collect(),
        ArrayData::I32(v) => v.iter().map(|x| x.to_string()).collect(),
        ArrayData::I64(v) => v.iter().map(|x| x.to_string()).collect(),
        ArrayData::Bool(v) => v.iter().map(|x| x.to_string()).collect(),
    };
    v.join(", ")
}
