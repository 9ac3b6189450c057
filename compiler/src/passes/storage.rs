//! storage sharing: liveness over the kernel schedule, then buffer assignment so that tensors
//! whose lives do not overlap share storage, in place where safe.
//!
//! Assumes: kernel programs with layouts (every load and store has its strided view).
//! Guarantees:
//! - placeholders, variables, persistent tensors and constants get no buffer (the caller or the
//!   executable owns them); graph outputs and assigned values each get a buffer of their own
//!   that no other tensor shares (they outlive the call or are copied into state after it);
//! - every other stored intermediate, and every kernel's per-row scratch, lives from the kernel
//!   that writes it to the last kernel that reads it (inclusive; the operands of a GEMM run
//!   batch index by batch index one kernel more, for the epilogue that may run beside it) and
//!   gets a slot in one arena of shared buffers, each 64-byte aligned: two tensors share a
//!   buffer only if their lives are disjoint, or if the later one is written in place over the
//!   earlier — only when a kernel's single elementwise stage reads the dead tensor element by
//!   element at exactly the address it writes (same strided view, no mask, same size) and
//!   nothing else in that kernel reads it;
//! - assignment is greedy by size, largest first, best fit among compatible buffers (growing the
//!   largest compatible one when none is big enough), so a chain like an MLP needs two scratch
//!   buffers whatever its depth.

use super::groups::{BoundaryReason, FusionPlan};
use super::kernel::{Instr, KernelProgram};
use super::layout::LayoutPlan;
use super::PassError;
use std::collections::{BTreeSet, HashMap, HashSet};
use weft_ir::{Graph, NodeId, Op, TensorKind};

/// Alignment of every buffer and arena offset, in bytes.
pub const ALIGN: usize = 64;

/// What a planned tensor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorRole {
    /// A placeholder: the caller's array.
    Input,
    /// A variable or persistent tensor: held by the executable across calls.
    State,
    /// A constant with data: held by the executable.
    Constant,
    /// A graph output: its own buffer, handed to the caller.
    Output,
    /// The new value of a variable or persistent tensor: its own buffer, copied after the call.
    AssignValue,
    /// An intermediate stored between kernels: shared.
    Scratch,
    /// A kernel's per-row scratch for stages kept locally: shared.
    RowScratch,
}

/// What a planned tensor holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planned {
    /// A node's value.
    Node(NodeId),
    /// The per-row scratch of the kernel at this schedule index.
    RowScratch(usize),
}

/// A tensor of the buffer plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedTensor {
    /// What it holds.
    pub what: Planned,
    /// Its role.
    pub role: TensorRole,
    /// Its size in bytes.
    pub bytes: usize,
    /// Schedule index of the kernel writing it (0 for tensors existing before the call).
    pub first: usize,
    /// Schedule index of the last kernel reading it.
    pub last: usize,
    /// The buffer holding it, if the plan allocates it.
    pub buffer: Option<usize>,
}

/// A buffer: a 64-byte-aligned region of the arena (shared) or a dedicated allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Size in bytes (a multiple of [`ALIGN`]).
    pub bytes: usize,
    /// Offset in the arena for shared buffers; `None` for a dedicated buffer.
    pub arena_offset: Option<usize>,
    /// Indices into [`BufferPlan::tensors`] of the tensors it holds, in order of life.
    pub tensors: Vec<usize>,
}

/// The storage of a compiled plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferPlan {
    /// Every tensor that exists in memory, with its life and buffer.
    pub tensors: Vec<PlannedTensor>,
    /// The buffers the executable allocates.
    pub buffers: Vec<Buffer>,
    /// Bytes of the shared arena (the sum of shared buffers).
    pub arena_bytes: usize,
    /// Bytes the shared tensors would take with one buffer each (aligned).
    pub unshared_bytes: usize,
    /// The most bytes of shared tensors alive at once during the schedule (aligned; a tensor
    /// overwritten in place ends as its successor starts): the floor no assignment goes below.
    pub peak_live_bytes: usize,
    /// `(written, overwritten)`: a tensor written in place over a dead one.
    pub in_place: Vec<(NodeId, NodeId)>,
}

impl BufferPlan {
    /// The number of shared (arena) buffers.
    pub fn scratch_buffers(&self) -> usize {
        self.buffers
            .iter()
            .filter(|b| b.arena_offset.is_some())
            .count()
    }
    /// The tensor entry of `node`.
    pub fn tensor_of(&self, node: NodeId) -> Option<&PlannedTensor> {
        self.tensors.iter().find(|t| t.what == Planned::Node(node))
    }
    /// A readable listing: buffers with their tensors and lives, then the totals.
    pub fn display(&self, g: &Graph) -> String {
        let name = |t: &PlannedTensor| match t.what {
            Planned::Node(n) => g.node_label(n),
            Planned::RowScratch(k) => format!("rows#{k}"),
        };
        let mut s = String::new();
        for t in self.tensors.iter().filter(|t| t.buffer.is_none()) {
            s += &format!(
                "{} {:?} {} bytes (not allocated by the plan)\n",
                name(t),
                t.role,
                t.bytes
            );
        }
        for (i, b) in self.buffers.iter().enumerate() {
            let place = match b.arena_offset {
                Some(o) => format!("arena @{o}"),
                None => "dedicated".to_string(),
            };
            s += &format!("buffer {i} {} bytes {place}:", b.bytes);
            for t in &b.tensors {
                let t = &self.tensors[*t];
                s += &format!(
                    " {} {:?} [{}..{}] {}B;",
                    name(t),
                    t.role,
                    t.first,
                    t.last,
                    t.bytes
                );
            }
            s += "\n";
        }
        for (w, o) in &self.in_place {
            s += &format!("in place: {} over {}\n", g.node_label(*w), g.node_label(*o));
        }
        s += &format!(
            "arena {} bytes in {} buffers (peak live {}); {} bytes with one buffer per tensor\n",
            self.arena_bytes,
            self.scratch_buffers(),
            self.peak_live_bytes,
            self.unshared_bytes
        );
        s
    }
}

fn align(n: usize) -> usize {
    n.div_ceil(ALIGN).max(1) * ALIGN
}

/// Plans the storage of `programs` (in schedule order). With `share` off every intermediate gets
/// a buffer of its own (unfused mode). `by_batch_index[k]` says that kernel `k` is a GEMM call
/// run batch index by batch index (its operands then outlive the next kernel, module docs).
pub fn plan_buffers(
    g: &Graph,
    plan: &FusionPlan,
    programs: &[KernelProgram],
    layouts: &LayoutPlan,
    share: bool,
    by_batch_index: &[bool],
) -> Result<BufferPlan, PassError> {
    let mut tensors = planned_tensors(g, plan, programs, layouts, by_batch_index)?;
    let in_place = if share {
        in_place_pairs(programs, &tensors)
    } else {
        Vec::new()
    };
    let in_place_set: HashSet<(NodeId, NodeId)> = in_place.iter().copied().collect();
    let mut buffers = dedicated_buffers(&mut tensors);
    let first_shared = buffers.len();
    let unshared_bytes = share_buffers(&mut tensors, &mut buffers, &in_place_set, share);
    let mut offset = 0;
    for b in buffers.iter_mut().skip(first_shared) {
        b.arena_offset = Some(offset);
        offset = offset.saturating_add(b.bytes);
        b.tensors.sort_by_key(|t| tensors[*t].first);
    }
    let used = in_place_used(in_place, &tensors);
    let peak_live_bytes = peak_live(programs.len(), &tensors, &used);
    Ok(BufferPlan {
        tensors,
        buffers,
        arena_bytes: offset,
        unshared_bytes,
        peak_live_bytes,
        in_place: used,
    })
}

/// Every stored value of `plan` and every program's row scratch, with its role, size and the
/// kernels (schedule indices) it lives across; no buffer yet.
fn planned_tensors(
    g: &Graph,
    plan: &FusionPlan,
    programs: &[KernelProgram],
    layouts: &LayoutPlan,
    by_batch_index: &[bool],
) -> Result<Vec<PlannedTensor>, PassError> {
    let end = programs.len().saturating_sub(1);
    let mut tensors = Vec::new();
    let (writers, last_readers) = writers_and_last_readers(programs);
    let writer = |n: NodeId| writers.get(&n).copied();
    let last_reader = |n: NodeId| last_readers.get(&n).copied();
    // The operands of a GEMM run batch index by batch index live through the kernel after it,
    // which may run as its epilogue on each index's C while other indices still read them
    // (crate::epilogue): that kernel's outputs must not take their buffers.
    let keeps_operands = |k: usize| by_batch_index.get(k).copied().unwrap_or(false);
    for b in &plan.boundaries {
        let bytes = layouts
            .layouts
            .get(&b.node)
            .map(|l| l.bytes)
            .ok_or_else(|| {
                PassError::Internal(format!("{} has no layout", g.node_label(b.node)))
            })?;
        let role = role_of(&g.node(b.node).op, b.reason);
        let first = writer(b.node).unwrap_or(0);
        let last = match role {
            TensorRole::Scratch => last_reader(b.node)
                .map(|r| r + usize::from(keeps_operands(r) && r < end))
                .unwrap_or(first)
                .max(first),
            _ => end,
        };
        tensors.push(PlannedTensor {
            what: Planned::Node(b.node),
            role,
            bytes,
            first,
            last,
            buffer: None,
        });
    }
    for (k, p) in programs.iter().enumerate() {
        let bytes = p.scratch_bytes(g);
        if bytes > 0 {
            tensors.push(PlannedTensor {
                what: Planned::RowScratch(k),
                role: TensorRole::RowScratch,
                bytes,
                first: k,
                last: k,
                buffer: None,
            });
        }
    }
    Ok(tensors)
}

/// The role of a value stored for `reason` and computed by `op`.
fn role_of(op: &Op, reason: BoundaryReason) -> TensorRole {
    match (op, reason) {
        (
            Op::Tensor {
                kind: TensorKind::Placeholder,
                ..
            },
            _,
        ) => TensorRole::Input,
        (
            Op::Tensor {
                kind: TensorKind::Constant,
                ..
            },
            _,
        ) => TensorRole::Constant,
        (Op::Tensor { .. }, _) => TensorRole::State,
        (_, BoundaryReason::GraphOutput) => TensorRole::Output,
        (_, BoundaryReason::AssignTarget) => TensorRole::AssignValue,
        _ => TensorRole::Scratch,
    }
}

/// A buffer of its own for every output and assigned value, in node order.
fn dedicated_buffers(tensors: &mut [PlannedTensor]) -> Vec<Buffer> {
    let mut buffers: Vec<Buffer> = Vec::new();
    for (i, t) in tensors.iter_mut().enumerate() {
        if matches!(t.role, TensorRole::Output | TensorRole::AssignValue) {
            t.buffer = Some(buffers.len());
            buffers.push(Buffer {
                bytes: align(t.bytes),
                arena_offset: None,
                tensors: vec![i],
            });
        }
    }
    buffers
}

/// Whether `x` and `y` may share a buffer: their lives do not overlap, or touch at the one
/// kernel where one is written in place of the other (`in_place`).
fn may_share(x: &PlannedTensor, y: &PlannedTensor, in_place: &HashSet<(NodeId, NodeId)>) -> bool {
    let node = |t: &PlannedTensor| match t.what {
        Planned::Node(n) => Some(n),
        Planned::RowScratch(_) => None,
    };
    let pair = |w: &PlannedTensor, v: &PlannedTensor| match (node(w), node(v)) {
        (Some(w), Some(v)) => in_place.contains(&(w, v)),
        _ => false,
    };
    x.last < y.first
        || y.last < x.first
        || (pair(x, y) && y.last == x.first)
        || (pair(y, x) && x.last == y.first)
}

/// Gives every scratch tensor a buffer after `buffers` (the dedicated ones), largest first:
/// the smallest compatible buffer it fits, else the largest compatible one (grown), else a
/// new one; with `share` off, a new one each. Returns the bytes one buffer per scratch tensor
/// would take.
fn share_buffers(
    tensors: &mut [PlannedTensor],
    buffers: &mut Vec<Buffer>,
    in_place: &HashSet<(NodeId, NodeId)>,
    share: bool,
) -> usize {
    let mut shared: Vec<usize> = (0..tensors.len())
        .filter(|i| {
            matches!(
                tensors[*i].role,
                TensorRole::Scratch | TensorRole::RowScratch
            )
        })
        .collect();
    // Byte totals saturate: each tensor fits `isize::MAX` bytes (a verified graph), but many
    // together may not fit `usize`; such a plan is refused when allocated or by the budget.
    let unshared_bytes = shared
        .iter()
        .map(|i| align(tensors[*i].bytes))
        .fold(0usize, usize::saturating_add);
    shared.sort_by_key(|i| (std::cmp::Reverse(tensors[*i].bytes), tensors[*i].first));
    let first_shared = buffers.len();
    // Per shared buffer, its tensors by (first, last, index): they never overlap (but for an
    // in-place pair, which touches at one kernel), so their ends grow in this order and only
    // those starting at or before a candidate's end and not ending before its start need a check.
    let mut by_start: Vec<BTreeSet<(usize, usize, usize)>> = Vec::new();
    for i in shared {
        let need = align(tensors[i].bytes);
        let x = &tensors[i];
        let compatible: Vec<usize> = if share {
            (first_shared..buffers.len())
                .filter(|b| {
                    by_start[*b - first_shared]
                        .range(..=(x.last, usize::MAX, usize::MAX))
                        .rev()
                        .take_while(|(_, last, _)| *last >= x.first)
                        .all(|(_, _, o)| may_share(x, &tensors[*o], in_place))
                })
                .collect()
        } else {
            Vec::new()
        };
        let fit = compatible
            .iter()
            .filter(|b| buffers[**b].bytes >= need)
            .min_by_key(|b| buffers[**b].bytes)
            .or_else(|| compatible.iter().max_by_key(|b| buffers[**b].bytes))
            .copied();
        let b = match fit {
            Some(b) => b,
            None => {
                buffers.push(Buffer {
                    bytes: 0,
                    arena_offset: Some(0),
                    tensors: Vec::new(),
                });
                by_start.push(BTreeSet::new());
                buffers.len() - 1
            }
        };
        buffers[b].bytes = buffers[b].bytes.max(need);
        buffers[b].tensors.push(i);
        by_start[b - first_shared].insert((tensors[i].first, tensors[i].last, i));
        tensors[i].buffer = Some(b);
    }
    unshared_bytes
}

/// The in-place pairs whose two tensors ended up in one buffer.
fn in_place_used(
    in_place: Vec<(NodeId, NodeId)>,
    tensors: &[PlannedTensor],
) -> Vec<(NodeId, NodeId)> {
    let tensor_of_node: HashMap<NodeId, usize> = tensors
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t.what {
            Planned::Node(n) => Some((n, i)),
            Planned::RowScratch(_) => None,
        })
        .collect();
    in_place
        .into_iter()
        .filter(|(w, o)| {
            let buffer = |n: &NodeId| tensor_of_node.get(n).and_then(|i| tensors[*i].buffer);
            let tw = buffer(w);
            tw.is_some() && tw == buffer(o)
        })
        .collect()
}

/// The kernel (schedule index) storing each node, and the last kernel loading each, in one pass.
type WritersAndReaders = (HashMap<NodeId, usize>, HashMap<NodeId, usize>);

fn writers_and_last_readers(programs: &[KernelProgram]) -> WritersAndReaders {
    let (mut writers, mut readers) = (HashMap::new(), HashMap::new());
    for (k, p) in programs.iter().enumerate() {
        for s in &p.stages {
            if s.store.is_some() {
                writers.entry(s.node).or_insert(k);
            }
            for i in &s.body {
                if let Instr::Load { tensor, .. } = &i.instr {
                    readers.insert(*tensor, k);
                }
            }
        }
    }
    (writers, readers)
}

/// The most bytes of scratch live at once over the schedule (`len` kernels), by a sweep over
/// each tensor's live range. A tensor overwritten in place dies as its successor is born.
fn peak_live(len: usize, tensors: &[PlannedTensor], used: &[(NodeId, NodeId)]) -> usize {
    let overwritten: HashSet<NodeId> = used.iter().map(|(_, o)| *o).collect();
    let mut delta = vec![0i128; len + 1];
    for t in tensors
        .iter()
        .filter(|t| matches!(t.role, TensorRole::Scratch | TensorRole::RowScratch))
    {
        let over = matches!(t.what, Planned::Node(n) if overwritten.contains(&n));
        let last = if over {
            t.last.saturating_sub(1)
        } else {
            t.last
        };
        let last = last.min(len.saturating_sub(1));
        if t.first <= last && t.first < len {
            delta[t.first] += align(t.bytes) as i128;
            delta[last + 1] -= align(t.bytes) as i128;
        }
    }
    let mut live = 0i128;
    let mut peak = 0i128;
    for d in &delta[..len] {
        live += d;
        peak = peak.max(live);
    }
    usize::try_from(peak).unwrap_or(usize::MAX)
}

/// `(written, overwritten)` pairs where a kernel may write a scratch tensor over a dead one.
fn in_place_pairs(programs: &[KernelProgram], tensors: &[PlannedTensor]) -> Vec<(NodeId, NodeId)> {
    let scratch_of: HashMap<NodeId, &PlannedTensor> = tensors
        .iter()
        .filter_map(|t| match t.what {
            Planned::Node(n) if t.role == TensorRole::Scratch => Some((n, t)),
            _ => None,
        })
        .collect();
    let scratch = |n: NodeId| scratch_of.get(&n).copied();
    let mut out = Vec::new();
    for (k, p) in programs.iter().enumerate() {
        if p.stages.len() != 1 {
            continue;
        }
        let st = &p.stages[0];
        let (Some(store), None) = (&st.store, &st.reduction) else {
            continue;
        };
        let Some(w) = scratch(st.node) else { continue };
        let loads: Vec<_> = st
            .body
            .iter()
            .filter_map(|i| match &i.instr {
                Instr::Load {
                    tensor,
                    valid,
                    view,
                    ..
                } => Some((
                    *tensor,
                    valid.is_empty()
                        && *view
                            == store.view.clone().map(|mut v| {
                                v.tensor = *tensor;
                                v
                            }),
                )),
                _ => None,
            })
            .collect();
        for (t, same) in &loads {
            let Some(r) = scratch(*t) else { continue };
            let all_same = loads.iter().filter(|(x, _)| x == t).all(|(_, s)| *s);
            if *same && all_same && r.last == k && r.bytes == w.bytes && *t != st.node {
                out.push((st.node, *t));
                break;
            }
        }
    }
    out
}
