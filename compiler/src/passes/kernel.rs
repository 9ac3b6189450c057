//! Kernel programs: each fusion group written out as what lowering to the loop IR consumes —
//! the outer loops, then per stage its loops, reduction, straight-line body of scalar ops over
//! loads whose views have been folded into affine indices, and where the result goes.
//!
//! Assumes: a [`FusionPlan`] of a verified graph.
//! Guarantees:
//! - every value a stage reads is an [`Instr::Load`] of a stored tensor (with one affine index per
//!   axis of that tensor and the validity ranges under which it may be read; outside them the
//!   load must not touch memory), an [`Instr::Immediate`] (uniform constants), or an
//!   [`Instr::ReadLocal`] of an earlier stage of the same group at the same outer point (also
//!   with validity ranges);
//! - a body is in evaluation order (operands before users) and evaluates each (node, index)
//!   pair once;
//! - pad becomes an [`Instr::Guard`] (zero outside the valid region) and concat an
//!   [`Instr::Choose`] (the part whose range holds the index): the complex views of docs/design.md;
//! - after [`super::layout`], every load and store also carries its [`StridedView`].

use super::groups::{FusionGroup, FusionPlan};
use super::op_class::is_immediate;
use super::views::{
    leaves_under, node_keys, node_space, AffineExpr, IndexEnv, IterAxis, StridedView, ValidRange,
};
use super::PassError;
use std::collections::BTreeMap;
use std::collections::{BTreeSet, HashMap};
use weft_ir::{
    Axes, Axis, BinaryOp, CompareOp, DType, Graph, NodeId, Op, ReduceOp, Scalar, TensorInit,
    UnaryOp,
};

/// A value of a stage body: the index of the instruction computing it.
pub type Value = usize;

/// One scalar operation of a stage body, evaluated at every point of the stage's iteration space.
#[derive(Clone, Debug, PartialEq)]
pub enum Instr {
    /// An element of a stored tensor.
    Load {
        /// The stored tensor.
        tensor: NodeId,
        /// The index along each of its axes (in the node's axes order).
        index: Vec<AffineExpr>,
        /// Read only where all hold (inside a pad or a concat part); zero elsewhere.
        valid: Vec<ValidRange>,
        /// The address, once layouts are known.
        view: Option<StridedView>,
    },
    /// A constant.
    Immediate(Scalar),
    /// An elementwise unary op.
    Unary(UnaryOp, Value),
    /// An elementwise binary op.
    Binary(BinaryOp, Value, Value),
    /// A comparison.
    Compare(CompareOp, Value, Value),
    /// `select(cond, a, b)`.
    Select(Value, Value, Value),
    /// Conversion to this instruction's dtype.
    Convert(Value),
    /// `value` where every range holds, zero elsewhere (pad). `value`'s loads carry the same
    /// ranges, so nothing outside is read.
    Guard {
        /// The valid region.
        valid: Vec<ValidRange>,
        /// The value inside it.
        value: Value,
    },
    /// The value of the first part whose range holds (concat).
    Choose {
        /// `(range, value)` per part, in order.
        parts: Vec<(ValidRange, Value)>,
    },
    /// The value an earlier stage of this group computed for `node`, at this outer point and the
    /// given index along each of that stage's loops.
    ReadLocal {
        /// The earlier stage's node.
        node: NodeId,
        /// The index along each of its loops.
        index: Vec<AffineExpr>,
        /// Read only where all hold (inside a pad or a concat part); zero elsewhere.
        valid: Vec<ValidRange>,
    },
}

/// An instruction and the dtype of its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    /// What is computed.
    pub instr: Instr,
    /// The result dtype.
    pub dtype: DType,
}

/// A reduction a stage performs over its innermost loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// The reduction (a dot is a `Sum` of products).
    pub op: ReduceOp,
    /// The reduced axes, in the op's order (argmax/argmin's flat index is row-major over them).
    pub axes: Vec<IterAxis>,
}

/// Where a stage's result is written in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreTarget {
    /// The index along each axis of the node.
    pub index: Vec<AffineExpr>,
    /// The address, once layouts are known.
    pub view: Option<StridedView>,
}

/// One stage of a kernel: for every outer point, for every point of `loops`, evaluate `body`
/// (reducing over `reduction`'s axes if any) and keep/store the result.
#[derive(Clone, Debug, PartialEq)]
pub struct StageProgram {
    /// The node computed.
    pub node: NodeId,
    /// The stage's own loops (the node's axes outside the group's outer axes), outer first.
    pub loops: Vec<IterAxis>,
    /// The reduction performed innermost, if any.
    pub reduction: Option<Reduction>,
    /// The body, in evaluation order.
    pub body: Vec<Inst>,
    /// The body value that is reduced or is the result.
    pub result: Value,
    /// Later stages read the result: keep it in a register (no loops) or a per-row scratch over
    /// `loops`, row-major.
    pub local: bool,
    /// The result is also written to the node's tensor.
    pub store: Option<StoreTarget>,
}

/// A fusion group written out for lowering.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelProgram {
    /// The group's index in the schedule.
    pub group: usize,
    /// The outer loops, outermost first.
    pub outer: Vec<IterAxis>,
    /// The stages, in order.
    pub stages: Vec<StageProgram>,
}

impl KernelProgram {
    /// Bytes of per-row scratch the kernel needs (the sum over stages kept locally with loops).
    pub fn scratch_bytes(&self, g: &Graph) -> usize {
        self.stages
            .iter()
            .filter(|s| s.local && !s.loops.is_empty())
            .map(|s| {
                self.scratch_row(s)
                    .saturating_mul(g.node(s.node).dtype.size_bytes())
            })
            .fold(0, usize::saturating_add)
    }

    /// Elements of one scratch row of `st` (a stage kept locally over loops): the product of
    /// its loops' lengths, or 0 when the kernel runs no iteration of it — an outer or stage
    /// loop of length 0. A stage's own axes are bounded by nothing when the tensor is empty
    /// (`[2^63 − 1, 0]` is a valid tensor), and an empty kernel writes no row, so it needs none.
    /// Otherwise the row is part of the stage's (verified, addressable) tensor; the product
    /// saturates all the same, so a bad plan is the loop-IR verifier's error, never an overflow.
    pub fn scratch_row(&self, st: &StageProgram) -> usize {
        if self.outer.iter().chain(&st.loops).any(|a| a.len == 0) {
            return 0;
        }
        st.loops.iter().fold(1, |n, a| n.saturating_mul(a.len))
    }

    /// A readable listing of the kernel.
    pub fn display(&self, g: &Graph) -> String {
        let outer: Vec<String> = self.outer.iter().map(|a| a.display(g)).collect();
        let mut s = format!("kernel {} for ({}):\n", self.group, outer.join(", "));
        for st in &self.stages {
            let loops: Vec<String> = st.loops.iter().map(|a| a.display(g)).collect();
            s += &format!(
                "  stage {} loops ({})",
                g.node_label(st.node),
                loops.join(", ")
            );
            if let Some(r) = &st.reduction {
                let ax: Vec<String> = r.axes.iter().map(|a| a.display(g)).collect();
                s += &format!(" {} over ({})", r.op.name(), ax.join(", "));
            }
            s += "\n";
            for (i, inst) in st.body.iter().enumerate() {
                s += &format!(
                    "    v{i}: {} = {}\n",
                    inst.dtype,
                    instr_text(g, &inst.instr)
                );
            }
            let mut dest = Vec::new();
            if st.local {
                dest.push(if st.loops.is_empty() {
                    "register".to_string()
                } else {
                    "row scratch".to_string()
                });
            }
            if let Some(t) = &st.store {
                dest.push(match &t.view {
                    Some(v) => format!("store {}", v.display(g)),
                    None => format!("store {}", g.node_label(st.node)),
                });
            }
            s += &format!("    result v{} -> {}\n", st.result, dest.join(", "));
        }
        s
    }
}

fn instr_text(g: &Graph, i: &Instr) -> String {
    let idx = |v: &[AffineExpr]| {
        v.iter()
            .map(|e| e.display(g))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match i {
        Instr::Load {
            tensor,
            index,
            valid,
            view,
        } => {
            let mut s = match view {
                Some(v) => format!("load {}", v.display(g)),
                None => format!("load {}[{}]", g.node_label(*tensor), idx(index)),
            };
            if !valid.is_empty() {
                let v: Vec<String> = valid.iter().map(|r| r.display(g)).collect();
                s += &format!(" if {}", v.join(" && "));
            }
            s
        }
        Instr::Immediate(x) => format!("{x}"),
        Instr::Unary(u, a) => format!("{} v{a}", u.name()),
        Instr::Binary(b, x, y) => format!("{} v{x} v{y}", b.name()),
        Instr::Compare(c, x, y) => format!("{} v{x} v{y}", c.name()),
        Instr::Select(c, x, y) => format!("select v{c} v{x} v{y}"),
        Instr::Convert(x) => format!("convert v{x}"),
        Instr::Guard { valid, value } => {
            let v: Vec<String> = valid.iter().map(|r| r.display(g)).collect();
            format!("v{value} if {} else 0", v.join(" && "))
        }
        Instr::Choose { parts } => {
            let v: Vec<String> = parts
                .iter()
                .map(|(r, x)| format!("v{x} if {}", r.display(g)))
                .collect();
            format!("choose {}", v.join("; "))
        }
        Instr::ReadLocal { node, index, valid } => {
            let mut s = format!("local {}[{}]", g.node_label(*node), idx(index));
            if !valid.is_empty() {
                let v: Vec<String> = valid.iter().map(|r| r.display(g)).collect();
                s += &format!(" if {}", v.join(" && "));
            }
            s
        }
    }
}

/// Writes every group of `plan` out as a [`KernelProgram`], in schedule order.
pub fn build_programs(g: &Graph, plan: &FusionPlan) -> Result<Vec<KernelProgram>, PassError> {
    plan.groups
        .iter()
        .map(|grp| build_program(g, plan, grp))
        .collect()
}

fn build_program(
    g: &Graph,
    plan: &FusionPlan,
    grp: &FusionGroup,
) -> Result<KernelProgram, PassError> {
    let outer_keys: Vec<_> = grp.outer.iter().map(|a| a.axis).collect();
    let mut stages: Vec<StageProgram> = Vec::new();
    let mut done: Vec<NodeId> = Vec::new();
    let mut local_reads = BTreeSet::new();
    for st in &grp.stages {
        let node = g.node(st.node);
        let space = node_space(g, st.node)?;
        let loops: Vec<IterAxis> = space
            .iter()
            .filter(|a| !outer_keys.contains(&a.axis))
            .copied()
            .collect();
        let keys: Vec<_> = space.iter().map(|a| a.axis).collect();
        let env0 = IndexEnv::identity(&keys);
        let mut e = Emitter {
            g,
            plan,
            outer: &outer_keys,
            earlier: &done,
            stage_loops: &stages,
            body: Vec::new(),
            memo: HashMap::new(),
        };
        let (result, reduction) = match &node.op {
            Op::Reduce { op, input, axes } => e.reduce_stage(st.node, &env0, *op, *input, axes)?,
            Op::Dot(l, r) => e.dot_stage(st.node, &env0, *l, *r)?,
            Op::Assign { value, .. } => (e.emit(*value, &env0, &[])?, None),
            _ => (e.emit_op(st.node, &env0, &[])?, None),
        };
        for inst in &e.body {
            if let Instr::ReadLocal { node, .. } = &inst.instr {
                local_reads.insert(*node);
            }
        }
        let store = if st.stored {
            Some(StoreTarget {
                index: env0.per_axis(g, st.node, &node.axes)?,
                view: None,
            })
        } else {
            None
        };
        let body = e.body;
        stages.push(StageProgram {
            node: st.node,
            loops,
            reduction,
            body,
            result,
            local: false,
            store,
        });
        done.push(st.node);
    }
    for s in &mut stages {
        s.local = local_reads.contains(&s.node);
    }
    Ok(KernelProgram {
        group: grp.id,
        outer: grp.outer.clone(),
        stages,
    })
}

/// The loops over `keys` a stage's reduction or contraction adds: the keys, unless one is
/// already a loop of the stage (in `env0`) or of the reduction so far (`red`): then `whole`
/// alone, looped whole.
fn reduction_keys(env0: &IndexEnv, red: &[IterAxis], keys: Vec<Axis>, whole: Axis) -> Vec<Axis> {
    let clash = keys
        .iter()
        .any(|k| env0.map.contains_key(k) || red.iter().any(|x| x.axis == *k));
    if clash {
        vec![whole]
    } else {
        keys
    }
}

impl Emitter<'_> {
    /// The body of reduction stage `n` (`op` of `input` over `axes`) at the stage's own index
    /// `env0`: the term's value and the reduction's loops.
    fn reduce_stage(
        &mut self,
        n: NodeId,
        env0: &IndexEnv,
        op: ReduceOp,
        input: NodeId,
        axes: &Axes,
    ) -> Result<(Value, Option<Reduction>), PassError> {
        let g = self.g;
        let node = g.node(n);
        // The input's index in its own frame: the result's axes, then the reduced ones
        // (whole or by parts, as the input's frame has them).
        let in_leaves = node_keys(g, input);
        let mut map = BTreeMap::new();
        for a in &node.axes {
            env0.pass_axis(g, input, *a, &in_leaves, &mut map)?;
        }
        // A reduced axis loops over its parts as the input's frame has them, unless a
        // part is already a loop of this stage (a result over `(A·B)**` reducing `A·B`
        // shares `B**`): then it loops whole, as a dot's contracted axis does, and an
        // input that would need its parts is stored (`SplitIndex`).
        let mut red: Vec<IterAxis> = Vec::new();
        for r in axes {
            let keys = reduction_keys(env0, &red, leaves_under(g, *r, &in_leaves), *r);
            for k in keys {
                map.insert(k, AffineExpr::var(k));
                red.push(IterAxis {
                    axis: k,
                    len: g.resolve_len(k)?,
                });
            }
        }
        if reassociable(op, g.node(input).dtype) {
            // Any order sums alike (up to rounding): loop in the input's axis order,
            // outermost first, so the reduction walks the input as it lies in memory
            // whatever order the op lists its axes in.
            let at = |a: &IterAxis| in_leaves.iter().position(|k| *k == a.axis);
            red.sort_by_key(|a| at(a).unwrap_or(usize::MAX));
        }
        let v = self.emit(input, &IndexEnv { map }, &[])?;
        Ok((v, Some(Reduction { op, axes: red })))
    }

    /// The body of dot stage `n` (`dot(l, r)`) at the stage's own index `env0`: the product's
    /// value and the contraction's loops.
    fn dot_stage(
        &mut self,
        n: NodeId,
        env0: &IndexEnv,
        l: NodeId,
        r: NodeId,
    ) -> Result<(Value, Option<Reduction>), PassError> {
        let g = self.g;
        let (ln, rn) = (g.node(l), g.node(r));
        let pairs = g.dot_pairs(&g.node_label(n), &ln.axes, &rn.axes)?;
        let (l_leaves, r_leaves) = (node_keys(g, l), node_keys(g, r));
        let mut lmap = BTreeMap::new();
        let mut rmap = BTreeMap::new();
        // Free axes keep the dot's index, in each operand's frame.
        for a in &ln.axes {
            if !pairs.iter().any(|p| p.0 == *a) {
                env0.pass_axis(g, l, *a, &l_leaves, &mut lmap)?;
            }
        }
        for a in &rn.axes {
            if !pairs.iter().any(|p| p.1 == *a) {
                env0.pass_axis(g, r, *a, &r_leaves, &mut rmap)?;
            }
        }
        // Contracted pairs loop over the left axis as the left frame has it, unless a
        // key is already a loop of this stage (then whole).
        let mut red: Vec<IterAxis> = Vec::new();
        for (pl, pr) in &pairs {
            let keys = reduction_keys(env0, &red, leaves_under(g, *pl, &l_leaves), *pl);
            let mut lens = Vec::new();
            let mut whole = AffineExpr::constant(0);
            for k in &keys {
                let len = g.resolve_len(*k)?;
                lens.push(len);
                whole = whole.scale_add(len as i64, 0).add(&AffineExpr::var(*k));
                lmap.insert(*k, AffineExpr::var(*k));
                red.push(IterAxis { axis: *k, len });
            }
            let rk = leaves_under(g, *pr, &r_leaves);
            let alike = rk.len() == keys.len()
                && rk.len() > 1
                && rk
                    .iter()
                    .zip(&lens)
                    .all(|(p, n)| g.resolve_len(*p).ok() == Some(*n));
            if alike {
                for (p, k) in rk.iter().zip(&keys) {
                    rmap.insert(*p, AffineExpr::var(*k));
                }
            } else {
                rmap.insert(*pr, whole);
            }
        }
        let lv = self.emit(l, &IndexEnv { map: lmap }, &[])?;
        let rv = self.emit(r, &IndexEnv { map: rmap }, &[])?;
        let v = self.push(Instr::Binary(BinaryOp::Multiply, lv, rv), g.node(n).dtype);
        Ok((
            v,
            Some(Reduction {
                op: ReduceOp::Sum,
                axes: red,
            }),
        ))
    }
}

struct Emitter<'a> {
    g: &'a Graph,
    plan: &'a FusionPlan,
    outer: &'a [weft_ir::Axis],
    earlier: &'a [NodeId],
    stage_loops: &'a [StageProgram],
    body: Vec<Inst>,
    memo: HashMap<(NodeId, IndexEnv, Vec<ValidRange>), Value>,
}

/// A value to emit: node `n` at index `env`, read only under `valid`.
struct Request {
    n: NodeId,
    env: IndexEnv,
    valid: Vec<ValidRange>,
}

/// How an op's instruction is made from its operands' values, in operand order.
enum Finish {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CompareOp),
    Select,
    Convert,
    /// Concat: one range per part.
    Choose(Vec<ValidRange>),
    /// Any other view: its operand, guarded by these ranges if there are any.
    View(Vec<ValidRange>),
}

/// An op whose operands are being emitted: what remains to do once they all have values.
struct Pending {
    n: NodeId,
    /// Where the value is remembered (`None` for a stage's own op, which is emitted once).
    key: Option<(NodeId, IndexEnv, Vec<ValidRange>)>,
    operands: Vec<Request>,
    finish: Finish,
    values: Vec<Value>,
}

/// What one request needs: nothing more (its value), or its operands first.
enum Step {
    Done(Value),
    Op(Pending),
}

impl Emitter<'_> {
    fn push(&mut self, instr: Instr, dtype: DType) -> Value {
        self.body.push(Inst { instr, dtype });
        self.body.len() - 1
    }

    /// The value of `n` at index `env` (an environment covering `n`'s axes, in any frame), read
    /// only under `valid`.
    fn emit(
        &mut self,
        n: NodeId,
        env: &IndexEnv,
        valid: &[ValidRange],
    ) -> Result<Value, PassError> {
        let step = self.request(n, env, valid)?;
        self.run(step)
    }

    /// The value of `n`'s own op at `env` (operands through the rules of [`Emitter::emit`]).
    fn emit_op(
        &mut self,
        n: NodeId,
        env: &IndexEnv,
        valid: &[ValidRange],
    ) -> Result<Value, PassError> {
        let step = self.op_step(n, env, valid, None)?;
        self.run(step)
    }

    /// Emits operands depth first, in operand order (as a recursive walk would, so bodies
    /// read in evaluation order), with an explicit stack: op chains may be any length.
    fn run(&mut self, first: Step) -> Result<Value, PassError> {
        let mut stack = match first {
            Step::Done(v) => return Ok(v),
            Step::Op(p) => vec![p],
        };
        loop {
            let Some(top) = stack.last_mut() else {
                return Err(PassError::Internal("empty emission stack".into()));
            };
            if let Some(r) = top.operands.get(top.values.len()) {
                let (n, env, valid) = (r.n, r.env.clone(), r.valid.clone());
                match self.request(n, &env, &valid)? {
                    Step::Done(v) => top.values.push(v),
                    Step::Op(p) => stack.push(p),
                }
                continue;
            }
            let Some(done) = stack.pop() else {
                return Err(PassError::Internal("empty emission stack".into()));
            };
            let v = self.finish(done);
            match stack.last_mut() {
                Some(parent) => parent.values.push(v),
                None => return Ok(v),
            }
        }
    }

    /// The instruction of an op whose operands all have values; remembers it under its key.
    fn finish(&mut self, p: Pending) -> Value {
        let dt = self.g.node(p.n).dtype;
        let x = |i: usize| p.values[i];
        let v = match p.finish {
            Finish::Unary(u) => self.push(Instr::Unary(u, x(0)), dt),
            Finish::Binary(b) => self.push(Instr::Binary(b, x(0), x(1)), dt),
            Finish::Compare(c) => self.push(Instr::Compare(c, x(0), x(1)), dt),
            Finish::Select => self.push(Instr::Select(x(0), x(1), x(2)), dt),
            Finish::Convert => self.push(Instr::Convert(x(0)), dt),
            Finish::Choose(ranges) => {
                let parts = ranges.into_iter().zip(p.values.iter().copied()).collect();
                self.push(Instr::Choose { parts }, dt)
            }
            Finish::View(valid) if valid.is_empty() => x(0),
            Finish::View(valid) => self.push(Instr::Guard { valid, value: x(0) }, dt),
        };
        if let Some(key) = p.key {
            self.memo.insert(key, v);
        }
        v
    }

    /// What the value of `n` at `env` under `valid` needs: an immediate, a load of a stored
    /// tensor, a remembered value or a read of an earlier stage are done at once; an inline
    /// op waits for its operands.
    fn request(
        &mut self,
        n: NodeId,
        env: &IndexEnv,
        valid: &[ValidRange],
    ) -> Result<Step, PassError> {
        let g = self.g;
        let node = g.node(n);
        let dt = node.dtype;
        if is_immediate(&node.op) {
            let Op::Tensor {
                init: Some(TensorInit::Fill(s)),
                ..
            } = &node.op
            else {
                return Err(PassError::Internal("immediate without a fill".into()));
            };
            let key = (n, IndexEnv::default(), Vec::new());
            if let Some(v) = self.memo.get(&key) {
                return Ok(Step::Done(*v));
            }
            let v = self.push(Instr::Immediate(*s), dt);
            self.memo.insert(key, v);
            return Ok(Step::Done(v));
        }
        let earlier = self.earlier.iter().position(|s| *s == n);
        if earlier.is_none() && self.plan.is_stored(n) {
            // A stored tensor is addressed per axis, each axis taken whole.
            let index = env.per_axis(g, n, &node.axes)?;
            let key_env = IndexEnv {
                map: node
                    .axes
                    .iter()
                    .copied()
                    .zip(index.iter().cloned())
                    .collect(),
            };
            let key = (n, key_env, valid.to_vec());
            if let Some(v) = self.memo.get(&key) {
                return Ok(Step::Done(*v));
            }
            let v = self.push(
                Instr::Load {
                    tensor: n,
                    index,
                    valid: valid.to_vec(),
                    view: None,
                },
                dt,
            );
            self.memo.insert(key, v);
            return Ok(Step::Done(v));
        }
        // Computed here (inline) or by an earlier stage: indexed in its own frame.
        let env = env.for_node(g, n)?;
        let key = (n, env.clone(), valid.to_vec());
        if let Some(v) = self.memo.get(&key) {
            return Ok(Step::Done(*v));
        }
        let Some(k) = earlier else {
            return self.op_step(n, &env, valid, Some(key));
        };
        for o in self.outer {
            if let Some(e) = env.map.get(o) {
                if *e != AffineExpr::var(*o) {
                    return Err(PassError::OuterPoint {
                        node: n,
                        label: g.node_label(n),
                    });
                }
            }
        }
        let index = self.stage_loops[k]
            .loops
            .iter()
            .map(|a| env.get(g, n, a.axis).cloned())
            .collect::<Result<_, _>>()?;
        let v = self.push(
            Instr::ReadLocal {
                node: n,
                index,
                valid: valid.to_vec(),
            },
            dt,
        );
        self.memo.insert(key, v);
        Ok(Step::Done(v))
    }

    /// `n`'s own op at `env`: its operands (with their indices and validity) and how their
    /// values combine.
    fn op_step(
        &mut self,
        n: NodeId,
        env: &IndexEnv,
        valid: &[ValidRange],
        key: Option<(NodeId, IndexEnv, Vec<ValidRange>)>,
    ) -> Result<Step, PassError> {
        let g = self.g;
        let node = g.node(n);
        let same = |x: &NodeId| Request {
            n: *x,
            env: env.clone(),
            valid: valid.to_vec(),
        };
        let (operands, finish) = match &node.op {
            Op::Unary(u, x) => (vec![same(x)], Finish::Unary(*u)),
            Op::Binary(b, x, y) => (vec![same(x), same(y)], Finish::Binary(*b)),
            Op::Compare(c, x, y) => (vec![same(x), same(y)], Finish::Compare(*c)),
            Op::Select(c, x, y) => (vec![same(c), same(x), same(y)], Finish::Select),
            Op::Convert(x) => (vec![same(x)], Finish::Convert),
            Op::Concat(parts) => {
                let ops = env.through_view(g, n)?;
                let mut requests = Vec::new();
                let mut ranges = Vec::new();
                for ((part, _), o) in parts.iter().zip(ops) {
                    let mut v = valid.to_vec();
                    v.extend(o.valid.iter().cloned());
                    ranges.push(o.valid[0].clone());
                    requests.push(Request {
                        n: *part,
                        env: o.env,
                        valid: v,
                    });
                }
                (requests, Finish::Choose(ranges))
            }
            op if op.is_view() => {
                let mut ops = env.through_view(g, n)?;
                let o = ops.remove(0);
                let mut v = valid.to_vec();
                v.extend(o.valid.iter().cloned());
                let request = Request {
                    n: op.inputs()[0],
                    env: o.env,
                    valid: v,
                };
                (vec![request], Finish::View(o.valid))
            }
            _ => {
                return Err(PassError::Internal(format!(
                    "{} ({}) is neither stored, a stage of its reader's group nor inline",
                    g.node_label(n),
                    node.op.name()
                )))
            }
        };
        Ok(Step::Op(Pending {
            n,
            key,
            operands,
            finish,
            values: Vec::new(),
        }))
    }
}

/// Whether a `op` reduction of `dtype` values may take its terms in any order, whatever the
/// lowering options (`crate::lower::keeps_order` lists the ones that may not: f64 sums and
/// means unless `reassociate_f64_sums`, float products; docs/numerics.md); arg-reductions
/// number their terms row-major over the listed axes.
fn reassociable(op: ReduceOp, dtype: DType) -> bool {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => dtype != DType::F64,
        ReduceOp::Prod => !dtype.is_float(),
        ReduceOp::Max | ReduceOp::Min => true,
        ReduceOp::ArgMax | ReduceOp::ArgMin => false,
    }
}
