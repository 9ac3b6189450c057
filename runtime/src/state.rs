//! The values of a graph's variables and persistent tensors, which outlive a single call, and
//! how concurrent runs share them.
//!
//! A [`State`] starts from each tensor's initial value and is updated by `assign`s after a
//! call succeeds. Every value is held in its tensor's axes order with the graph's lengths and
//! the tensor's dtype; [`State::set`] refuses anything else, so executables can rely on it.
//!
//! A [`SharedState`] lets many runs use one state at once. Guarantees:
//! - a run reads a consistent snapshot: it copies everything it reads in one
//!   [`StateView::read`], under a shared lock that no commit holds at the same time;
//! - a run commits its assigns atomically, in one [`StateView::commit`] under the exclusive
//!   lock (held only for the copy, never for the run);
//! - a run that assigns ([`StateAccess::writes`] not empty) first *claims* its tensors — the
//!   ones it assigns exclusively, the ones it reads shared — and holds the claim until it ends,
//!   so it serialises with every run that assigns what it reads or reads or assigns what it
//!   assigns, and with nothing else. Claims are taken all at once (or not at all, waiting), so
//!   they cannot deadlock;
//! - a run that assigns nothing claims nothing: it only takes the shared lock for its snapshot.
//!
//! Together: every run behaves as if runs happened one at a time — an assigning run at its
//! commit, a non-assigning one at its snapshot.

use crate::error::RunError;
use crate::plan::Plan;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, RwLock};
use weft_ir::{ArrayData, Graph, HostArray, NodeId, Op, TensorInit, TensorKind};

/// The current values of the variables and persistent tensors of one graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    values: BTreeMap<NodeId, HostArray>,
}

impl State {
    /// The initial values of every variable and persistent tensor of `graph`, whose axes must be
    /// bound.
    pub fn initial(graph: &Graph) -> Result<State, RunError> {
        let mut values = BTreeMap::new();
        for (id, node) in graph.nodes() {
            if let Op::Tensor {
                kind: TensorKind::Variable | TensorKind::PersistentTensor,
                ..
            } = node.op
            {
                values.insert(id, stored_value(graph, id)?);
            }
        }
        Ok(State { values })
    }

    /// The value of a variable or persistent tensor.
    pub fn get(&self, id: NodeId) -> Option<&HostArray> {
        self.values.get(&id)
    }

    /// The elements of a variable or persistent tensor, mutably, if it is held here and of
    /// element type `T`. The axes, shape and dtype cannot change through it, so executables can
    /// commit an assigned value in place, without allocating.
    pub fn elements_mut<T: weft_ir::Element>(&mut self, id: NodeId) -> Option<&mut [T]> {
        self.values.get_mut(&id)?.as_mut_slice().ok()
    }

    /// Swaps the value of a variable or persistent tensor with `value`, which must have the
    /// same axes (in order), lengths and dtype: how an executable commits a value it computed
    /// into an array of its own without copying (the old value comes back in `value`).
    pub fn swap(&mut self, id: NodeId, value: &mut HostArray) -> Result<(), RunError> {
        match self.values.get_mut(&id) {
            Some(old) if old.same_shape(value) => {
                std::mem::swap(old, value);
                Ok(())
            }
            _ => Err(RunError::State {
                tensor: format!("{id}"),
                message: "the swapped-in value does not have the tensor's axes, lengths and dtype"
                    .into(),
            }),
        }
    }

    /// True if `id` is a variable or persistent tensor held here.
    pub fn holds(&self, id: NodeId) -> bool {
        self.values.contains_key(&id)
    }

    /// Replaces the value of a variable or persistent tensor. The value must have the tensor's
    /// axes in its order, its lengths and its dtype.
    pub fn set(&mut self, graph: &Graph, id: NodeId, value: HostArray) -> Result<(), RunError> {
        self.check_value(graph, id, &value)?;
        if let Some(old) = self.values.get_mut(&id) {
            *old = value;
        }
        Ok(())
    }

    /// Replaces several values at once, all or none: every value is checked as by
    /// [`State::set`] before any is written. If two name one tensor, the later wins.
    pub fn set_all(
        &mut self,
        graph: &Graph,
        values: Vec<(NodeId, HostArray)>,
    ) -> Result<(), RunError> {
        for (id, value) in &values {
            self.check_value(graph, *id, value)?;
        }
        for (id, value) in values {
            if let Some(old) = self.values.get_mut(&id) {
                *old = value;
            }
        }
        Ok(())
    }

    /// Checks that `value` can replace the value of `id`.
    fn check_value(&self, graph: &Graph, id: NodeId, value: &HostArray) -> Result<(), RunError> {
        let tensor = graph.node_label(id);
        let old = self.values.get(&id).ok_or_else(|| RunError::State {
            tensor: tensor.clone(),
            message: "is not a variable or persistent tensor of this graph".into(),
        })?;
        if value.axes() != old.axes() || value.shape() != old.shape() {
            return Err(RunError::State {
                tensor,
                message: format!(
                    "new value has axes {} and shape {:?}, not {} and {:?}",
                    graph.axes_name(value.axes()),
                    value.shape(),
                    graph.axes_name(old.axes()),
                    old.shape()
                ),
            });
        }
        if value.dtype() != old.dtype() {
            return Err(RunError::State {
                tensor,
                message: format!("new value has dtype {}, not {}", value.dtype(), old.dtype()),
            });
        }
        Ok(())
    }

    /// The variables and persistent tensors held, in node order.
    pub fn tensors(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.values.keys().copied()
    }
}

/// The initial value of a stored tensor (constant, variable or persistent tensor) over its
/// axes, in their order.
pub fn stored_value(graph: &Graph, id: NodeId) -> Result<HostArray, RunError> {
    let node = graph
        .get(id)
        .ok_or_else(|| RunError::ForeignNode(format!("node {id}")))?;
    let shape = graph.shape_of(&node.axes)?;
    let count = graph.tensor_size(id)?.elements;
    let init = match &node.op {
        Op::Tensor { init: Some(i), .. } => i,
        op => {
            return Err(RunError::State {
                tensor: graph.node_label(id),
                message: format!("a {} has no initial value", op.name()),
            })
        }
    };
    let data = match init {
        TensorInit::Fill(s) => {
            ArrayData::filled(node.dtype, *s, count).map_err(|source| RunError::Alloc {
                tensor: graph.node_label(id),
                source,
            })?
        }
        TensorInit::Data(d) => ArrayData::clone(d),
    };
    Ok(HostArray::new(node.axes.clone(), shape, data)?)
}

/// The variables and persistent tensors one computation reads and the ones it assigns, each
/// sorted by node: what its runs must claim ([`SharedState::begin`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateAccess {
    reads: Vec<NodeId>,
    writes: Vec<NodeId>,
}

impl StateAccess {
    /// What a computation of `plan` touches: the variables and persistent tensors it evaluates
    /// (reads) and the targets of the `assign`s it evaluates (writes).
    pub fn of(graph: &Graph, plan: &Plan) -> StateAccess {
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for (id, node) in graph.nodes() {
            if !plan.is_needed(id) {
                continue;
            }
            match node.op {
                Op::Tensor {
                    kind: TensorKind::Variable | TensorKind::PersistentTensor,
                    ..
                } => reads.push(id),
                Op::Assign { target, .. } => writes.push(target),
                _ => {}
            }
        }
        writes.sort();
        writes.dedup();
        StateAccess { reads, writes }
    }

    /// Access that assigns `target` and reads nothing (replacing a value from the host).
    pub fn assigning(target: NodeId) -> StateAccess {
        StateAccess {
            reads: Vec::new(),
            writes: vec![target],
        }
    }

    /// The tensors read, in node order.
    pub fn reads(&self) -> &[NodeId] {
        &self.reads
    }

    /// The tensors assigned, in node order.
    pub fn writes(&self) -> &[NodeId] {
        &self.writes
    }
}

/// How one state tensor is claimed by the assigning runs in flight.
#[derive(Clone, Copy, Debug, Default)]
struct Claim {
    /// Runs that read it (and assign something else).
    readers: usize,
    /// A run assigns it.
    writer: bool,
}

/// A [`State`] shared by concurrent runs (see the module documentation for the protocol).
#[derive(Debug)]
pub struct SharedState {
    values: RwLock<State>,
    /// The tensors held, in node order; `claims[i]` is `tensors[i]`'s.
    tensors: Vec<NodeId>,
    claims: Mutex<Vec<Claim>>,
    /// Signalled whenever claims are released.
    released: Condvar,
}

impl SharedState {
    /// Shares `state`.
    pub fn new(state: State) -> SharedState {
        let tensors: Vec<NodeId> = state.tensors().collect();
        SharedState {
            claims: Mutex::new(vec![Claim::default(); tensors.len()]),
            tensors,
            values: RwLock::new(state),
            released: Condvar::new(),
        }
    }

    /// True if `id` is a variable or persistent tensor held here.
    pub fn holds(&self, id: NodeId) -> bool {
        self.tensors.binary_search(&id).is_ok()
    }

    /// Reads the state under the shared lock (a consistent snapshot). A panic in a run that held
    /// a lock cannot leave the state half-updated (commits write only after every check), so a
    /// poisoned lock is still usable.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.values.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Starts a run that touches `access`: if it assigns anything, waits until its tensors can
    /// be claimed and claims them until the returned view is dropped; otherwise claims nothing.
    /// Allocates nothing.
    pub fn begin<'a>(&'a self, access: &'a StateAccess) -> StateView<'a> {
        if !access.writes.is_empty() {
            let mut claims = self.claims();
            while !self.claimable(&claims, access) {
                claims = self
                    .released
                    .wait(claims)
                    .unwrap_or_else(|e| e.into_inner());
            }
            self.each_claim(&mut claims, access, |c, write| {
                if write {
                    c.writer = true;
                } else {
                    c.readers += 1;
                }
            });
        }
        StateView::Shared {
            state: self,
            access,
        }
    }

    fn claims(&self) -> MutexGuard<'_, Vec<Claim>> {
        self.claims.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True if no run in flight holds a claim conflicting with `access`'s.
    fn claimable(&self, claims: &[Claim], access: &StateAccess) -> bool {
        let mut free = true;
        self.for_each(access, |i, write| {
            let c = claims[i];
            free &= !c.writer && (!write || c.readers == 0);
        });
        free
    }

    fn each_claim(
        &self,
        claims: &mut [Claim],
        access: &StateAccess,
        mut f: impl FnMut(&mut Claim, bool),
    ) {
        self.for_each(access, |i, write| f(&mut claims[i], write));
    }

    /// Calls `f(index, assigned)` once per tensor of `access` held here: assigned ones with
    /// `true`, ones only read with `false`.
    fn for_each(&self, access: &StateAccess, mut f: impl FnMut(usize, bool)) {
        for id in &access.writes {
            if let Ok(i) = self.tensors.binary_search(id) {
                f(i, true);
            }
        }
        for id in &access.reads {
            if access.writes.binary_search(id).is_err() {
                if let Ok(i) = self.tensors.binary_search(id) {
                    f(i, false);
                }
            }
        }
    }

    fn release(&self, access: &StateAccess) {
        if access.writes.is_empty() {
            return;
        }
        let mut claims = self.claims();
        self.each_claim(&mut claims, access, |c, write| {
            if write {
                c.writer = false;
            } else {
                c.readers = c.readers.saturating_sub(1);
            }
        });
        drop(claims);
        self.released.notify_all();
    }

    /// The state, for a caller that has it to itself.
    pub fn into_inner(self) -> State {
        self.values.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// One run's access to the state: a snapshot to read, a commit of its assigns. Made by
/// [`SharedState::begin`] (claims released on drop) or over a state the caller owns
/// ([`StateView::exclusive`]).
#[derive(Debug)]
pub enum StateView<'a> {
    /// A state nothing else uses during the run.
    Exclusive(&'a mut State),
    /// A shared state, with the run's claims taken.
    Shared {
        /// The state.
        state: &'a SharedState,
        /// What the run claimed.
        access: &'a StateAccess,
    },
}

impl<'a> StateView<'a> {
    /// A view of a state the caller owns for the run.
    pub fn exclusive(state: &'a mut State) -> StateView<'a> {
        StateView::Exclusive(state)
    }

    /// Reads the state. Everything a run reads must be read in one call: that is its snapshot.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        match self {
            StateView::Exclusive(s) => f(s),
            StateView::Shared { state, .. } => state.read(f),
        }
    }

    /// Commits a run's assigns: `f` must write all of them or, returning an error, none. On a
    /// shared state it runs under the exclusive lock, and only for a run that claimed what it
    /// assigns: a commit by a run that declared no assigns is an error.
    pub fn commit<R>(
        &mut self,
        f: impl FnOnce(&mut State) -> Result<R, RunError>,
    ) -> Result<R, RunError> {
        match self {
            StateView::Exclusive(s) => f(s),
            StateView::Shared { state, access } => {
                if access.writes.is_empty() {
                    return Err(RunError::State {
                        tensor: "state".into(),
                        message: "a run that assigns nothing tried to commit".into(),
                    });
                }
                f(&mut state.values.write().unwrap_or_else(|e| e.into_inner()))
            }
        }
    }
}

impl Drop for StateView<'_> {
    fn drop(&mut self) {
        if let StateView::Shared { state, access } = self {
            state.release(access);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;
    use weft_ir::{DType, Scalar};

    /// A shared state of variables `v` and `w`, and their ids.
    fn two_variables() -> (Graph, SharedState, NodeId, NodeId) {
        let mut graph = Graph::new();
        let n = graph.axis("N", 2).unwrap();
        let fill = || TensorInit::Fill(Scalar::Int(0));
        let v = graph.variable("v", &[n], DType::I32, fill()).unwrap();
        let w = graph.variable("w", &[n], DType::I32, fill()).unwrap();
        let state = SharedState::new(State::initial(&graph).unwrap());
        (graph, state, v, w)
    }

    fn access(reads: &[NodeId], writes: &[NodeId]) -> StateAccess {
        StateAccess {
            reads: reads.to_vec(),
            writes: writes.to_vec(),
        }
    }

    /// True if `begin(access)` gets through within `wait` while `held` is claimed. Once `held`
    /// is released it must always get through (else the scope's join hangs the test).
    fn begins_while(
        state: &SharedState,
        held: &StateAccess,
        access: &StateAccess,
        wait: Duration,
    ) -> bool {
        let view = state.begin(held);
        let (sent, got) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let _second = state.begin(access);
                let _ = sent.send(());
            });
            let before = got.recv_timeout(wait).is_ok();
            drop(view);
            before
        })
    }

    #[test]
    fn only_conflicting_assigning_runs_wait() {
        let (_, state, v, w) = two_variables();
        let assigns_v = access(&[v], &[v]);
        let passes = |held: &StateAccess, a: &StateAccess| {
            begins_while(&state, held, a, Duration::from_secs(10))
        };
        // Runs that assign nothing never wait, even while v is being assigned.
        assert!(passes(&assigns_v, &access(&[v, w], &[])));
        // Assigning w (reading only w) does not touch v.
        assert!(passes(&assigns_v, &access(&[w], &[w])));
        // Runs that only read v (and assign w) share it.
        let reads_v = access(&[v, w], &[w]);
        assert!(passes(&access(&[v], &[]), &reads_v));
        assert!(passes(&access(&[v], &[w]), &access(&[v], &[])));
        // Conflicts wait: reading what is assigned, assigning what is read or assigned.
        let waits = |held: &StateAccess, a: &StateAccess| {
            !begins_while(&state, held, a, Duration::from_millis(100))
        };
        assert!(waits(&assigns_v, &reads_v));
        assert!(waits(&reads_v, &assigns_v));
        assert!(waits(&assigns_v, &access(&[], &[v])));
    }

    #[test]
    fn a_commit_by_a_run_that_declared_no_assigns_is_an_error() {
        let (graph, state, v, _) = two_variables();
        let reads = access(&[v], &[]);
        let mut view = state.begin(&reads);
        let value = view.read(|s| s.get(v).cloned()).unwrap();
        assert!(view.commit(|s| s.set(&graph, v, value)).is_err());
    }

    #[test]
    fn set_all_writes_all_or_nothing() {
        let (graph, state, v, w) = two_variables();
        let mut s = state.into_inner();
        let good = s.get(v).unwrap().clone();
        let bad = HostArray::new(
            good.axes().clone(),
            good.shape().to_vec(),
            ArrayData::F32(vec![1.0, 2.0]),
        )
        .unwrap();
        let mut changed = good.clone();
        changed.as_mut_slice::<i32>().unwrap()[0] = 7;
        assert!(s
            .set_all(&graph, vec![(v, changed.clone()), (w, bad)])
            .is_err());
        assert_eq!(s.get(v), Some(&good));
        s.set_all(&graph, vec![(v, changed.clone())]).unwrap();
        assert_eq!(s.get(v), Some(&changed));
    }
}
