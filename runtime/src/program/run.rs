//! Running a [`Program`]: workspaces, the steps in order, inputs, outputs and state in and out.
//!
//! Assumes a program and code as the module above describes, for `graph`'s computation `plan`.
//! Guarantees:
//! - a run checks every output then every input array exactly (axes in order and from this
//!   graph's table, lengths, dtype) before anything runs, copies or binds inputs and the
//!   current state, runs the steps in order (a kernel with a `parallel` loop across the pool),
//!   copies the outputs out and, only when everything succeeded, writes assigned values into
//!   the state;
//! - a set of storages (a *workspace*) is used by one run at a time; concurrent runs take
//!   different workspaces (made on demand, then reused), so a [`NativeExecutable`] is
//!   `Send + Sync` and a steady-state run allocates no device memory.

use super::{Home, Program, StateRead, Step, StorageId, StorageKind};
use crate::binding::{copy_array, BindScope, HostBindings, NoSlot};
use crate::{
    CompiledKernel, DeviceBufferReference, DeviceBufferStorage, Executable, Plan, RunError,
    RuntimeError, State, StateView, ThreadPool,
};
use std::sync::{Arc, Mutex};
use weft_ir::{
    ArrayData, DType, DataMut, DataRef, Graph, HostArray, HostError, HostView, Inputs, NodeId,
    OutputArrays,
};

/// The storages of one run.
struct Workspace {
    storages: Vec<Arc<DeviceBufferStorage>>,
    references: Vec<DeviceBufferReference>,
    /// One slot per storage for the caller's arrays bound in its place during a call.
    host: HostBindings,
    /// Per assign committed by swapping: the array its kernels write, swapped with the state's
    /// value at the commit (so the old value is the next call's spare); made on first use.
    spares: Vec<Option<HostArray>>,
}

/// A [`Program`] with the code of its kernels, run on a thread pool: the runtime's half of a
/// compiled computation.
pub struct NativeExecutable {
    graph: Arc<Graph>,
    plan: Plan,
    program: Program,
    code: Vec<CompiledKernel>,
    /// Per kernel, its arguments as workspace slots (`StorageId::index`), so a call builds no
    /// table.
    slots: Vec<Vec<usize>>,
    pool: Arc<ThreadPool>,
    workspaces: Mutex<Vec<Workspace>>,
    /// Per storage, the largest magnitude of a constant's f32 or f64 data (found once, at
    /// load): each workspace's copy is told it, so a GEMM reading the constant does not scan
    /// it for its overflow bound in every call (`DeviceBufferStorage::know_largest_magnitude`).
    constant_largest: Vec<Option<f64>>,
}

impl std::fmt::Debug for NativeExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeExecutable")
            .field("kernels", &self.code.len())
            .field("storages", &self.program.storages.len())
            .finish()
    }
}

impl NativeExecutable {
    /// The computation `plan` of `graph` as `program` with `code` (one per kernel, in order),
    /// running parallel steps on `pool`. Fails when the code does not match the program.
    pub fn new(
        graph: Arc<Graph>,
        plan: Plan,
        program: Program,
        code: Vec<CompiledKernel>,
        pool: Arc<ThreadPool>,
    ) -> Result<NativeExecutable, RunError> {
        let malformed = |message: String| RunError::Malformed {
            node: "program".into(),
            op: "load",
            message,
        };
        program.check().map_err(malformed)?;
        let (inputs, outputs) = (plan.placeholders(), plan.outputs());
        let same = |a: &[NodeId], b: &mut dyn Iterator<Item = NodeId>| a.iter().copied().eq(b);
        if !same(inputs, &mut program.inputs.iter().map(|x| x.placeholder))
            || !same(outputs, &mut program.outputs.iter().map(|o| o.node))
        {
            return Err(malformed(
                "its inputs and outputs are not the computation's".into(),
            ));
        }
        let sources = program.state_reads.iter().map(|r| r.source);
        if let Some(n) = sources
            .chain(program.assigns.iter().map(|a| a.target))
            .find(|n| graph.get(*n).is_none())
        {
            return Err(malformed(format!("{n} is not a node of the graph")));
        }
        if code.len() != program.kernels.len() {
            return Err(malformed(format!(
                "{} kernels, {} compiled",
                program.kernels.len(),
                code.len()
            )));
        }
        let count = program.storages.len();
        let mut slots = Vec::with_capacity(code.len());
        for (k, c) in program.kernels.iter().zip(&code) {
            if k.args.len() != c.signature().buffers.len()
                || k.args.iter().any(|a| a.index() >= count)
            {
                return Err(malformed(format!(
                    "@{}: arguments do not match its code",
                    k.name
                )));
            }
            slots.push(k.args.iter().map(|a| a.index()).collect());
        }
        let constant_largest = program
            .storages
            .iter()
            .map(|s| match &s.kind {
                StorageKind::Constant(d) => crate::gemm_float::largest_magnitude_of(d),
                _ => None,
            })
            .collect();
        Ok(NativeExecutable {
            graph,
            plan,
            program,
            code,
            slots,
            pool,
            workspaces: Mutex::new(Vec::new()),
            constant_largest,
        })
    }

    /// The graph it computes over (the caller's).
    pub fn graph(&self) -> &Arc<Graph> {
        &self.graph
    }

    /// The program it runs.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Whether GEMM `gemm`'s A and B are program constants whose largest magnitude was found
    /// at load ([`NativeExecutable::new`]): its calls skip their overflow scan (`weft
    /// explain`).
    pub fn gemm_operands_known(&self, gemm: super::GemmId) -> [bool; 2] {
        let known = |s: StorageId| {
            self.constant_largest
                .get(s.index())
                .is_some_and(Option::is_some)
        };
        self.program
            .gemms
            .get(gemm.index())
            .map_or([false; 2], |g| [known(g.args[0]), known(g.args[1])])
    }

    /// The code of its kernels, by [`KernelId`](super::KernelId).
    pub fn code(&self) -> &[CompiledKernel] {
        &self.code
    }

    /// Threads that run its parallel steps.
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// Its pool.
    pub fn pool(&self) -> &Arc<ThreadPool> {
        &self.pool
    }

    fn workspace(&self) -> Result<Workspace, RunError> {
        if let Some(w) = self
            .workspaces
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
        {
            return Ok(w);
        }
        let mut storages = Vec::new();
        let mut references = Vec::new();
        for (i, spec) in self.program.storages.iter().enumerate() {
            let s = DeviceBufferStorage::new(spec.dtype, spec.elements).map_err(|e| match e {
                RuntimeError::AllocationFailed { .. } => RunError::Alloc {
                    tensor: spec.holders_text(),
                    source: HostError::Alloc {
                        bytes: spec.bytes() as usize,
                    },
                },
                e => e.into(),
            })?;
            if let StorageKind::Constant(d) = &spec.kind {
                copy_in(&s, d)?;
                if let Some(largest) = self.constant_largest[i] {
                    s.know_largest_magnitude(largest);
                }
            }
            references.push(DeviceBufferReference::to_storage(
                format!("s{i}"),
                Arc::clone(&s),
            ));
            storages.push(s);
        }
        Ok(Workspace {
            spares: vec![None; self.program.assigns.len()],
            host: HostBindings::new(storages.len()),
            storages,
            references,
        })
    }

    fn give_back(&self, w: Workspace) {
        self.workspaces
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(w);
    }

    /// Checks `inputs` against the placeholders and copies them into `w`'s storages.
    fn load_inputs(&self, w: &Workspace, inputs: &dyn Inputs) -> Result<(), RunError> {
        self.check_inputs(inputs)?;
        for (i, input) in self.program.inputs.iter().enumerate() {
            if let Some(s) = input.storage {
                self.copy_input(&w.storages[s.index()], i, inputs.input(i))?;
            }
        }
        Ok(())
    }

    /// Checks `inputs` against the placeholders: count, axes (in order and from this graph's
    /// table, `Axes::identical_to`), lengths, dtype. Allocates nothing unless it fails.
    fn check_inputs(&self, inputs: &dyn Inputs) -> Result<(), RunError> {
        let g = &*self.graph;
        if inputs.count() != self.program.inputs.len() {
            return Err(RunError::InputCount {
                expected: self.program.inputs.len(),
                got: inputs.count(),
            });
        }
        for (i, p) in self.program.inputs.iter().enumerate() {
            let input = inputs.input(i);
            let node = g.node(p.placeholder);
            if !input.axes().identical_to(&node.axes)
                || input.shape() != &p.shape[..]
                || input.dtype() != node.dtype
            {
                return Err(RunError::Input {
                    placeholder: p.name.clone(),
                    message: format!(
                        "expected axes {} with shape {:?} and dtype {}",
                        g.axes_name(&node.axes),
                        p.shape,
                        node.dtype
                    ),
                });
            }
        }
        Ok(())
    }

    /// Copies input `i` into storage `s`, in the layout the caller asked for if another than
    /// its declared one (a transposed copy, which allocates).
    fn copy_input(
        &self,
        s: &DeviceBufferStorage,
        i: usize,
        input: HostView<'_>,
    ) -> Result<(), RunError> {
        let p = &self.program.inputs[i];
        let Some(order) = &p.order else {
            return Ok(copy_in_ref(s, input.data())?);
        };
        let permuted = input
            .to_owned_array()
            .with_axes_order(order)
            .ok_or_else(|| RunError::Input {
                placeholder: p.name.clone(),
                message: format!("cannot be put in order {}", self.graph.axes_name(order)),
            })?;
        Ok(copy_in(s, permuted.data())?)
    }

    /// The value of `read` in `state`.
    fn state_value<'s>(
        &self,
        read: &StateRead,
        state: &'s State,
    ) -> Result<&'s HostArray, RunError> {
        state.get(read.source).ok_or_else(|| RunError::State {
            tensor: read.name.clone(),
            message: "has no value in the state".into(),
        })
    }

    /// Copies the variables and persistent tensors the run reads from `state` into `storages`.
    fn load_state(
        &self,
        storages: &[Arc<DeviceBufferStorage>],
        state: &State,
    ) -> Result<(), RunError> {
        for r in &self.program.state_reads {
            let v = self.state_value(r, state)?;
            copy_in(&storages[r.storage.index()], v.data())?;
        }
        Ok(())
    }

    /// Checks that `outputs` are one array per output, each with its output node's axes in
    /// order, lengths and dtype. Allocates nothing unless it fails.
    fn check_outputs(&self, outputs: &OutputArrays<'_, '_>) -> Result<(), RunError> {
        let g = &*self.graph;
        if outputs.len() != self.program.outputs.len() {
            return Err(RunError::OutputCount {
                expected: self.program.outputs.len(),
                got: outputs.len(),
            });
        }
        for (i, o) in self.program.outputs.iter().enumerate() {
            let array = outputs.view(i);
            let node = g.node(o.node);
            let shape = &o.home.shape;
            if !array.axes().identical_to(&node.axes)
                || array.shape() != &shape[..]
                || array.dtype() != node.dtype
            {
                return Err(RunError::Output {
                    output: g.node_label(o.node),
                    message: format!(
                        "expected axes {} with shape {shape:?} and dtype {}",
                        g.axes_name(&node.axes),
                        node.dtype
                    ),
                });
            }
        }
        Ok(())
    }

    /// Runs over workspace `w` writing the outputs into `outputs` (checked) and committing
    /// assigned values to `state`. Inputs and outputs bound [`Binding::InPlace`] are read and
    /// written by the kernels in the caller's arrays; the rest are copied. Allocates nothing
    /// in steady state.
    fn run_into_in(
        &self,
        w: &mut Workspace,
        inputs: &dyn Inputs,
        outputs: &mut OutputArrays<'_, '_>,
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        self.check_outputs(outputs)?;
        self.check_inputs(inputs)?;
        let Workspace {
            storages,
            references,
            host,
            spares,
        } = w;
        if spares.iter().any(Option::is_none) {
            state.read(|st| self.make_spares(spares, st))?;
        }
        // Kernels read the state in place, so the state is held (shared) while they run.
        let mut run = |st: Option<&State>| -> Result<(), RunError> {
            let mut scope = host.scope();
            self.bind_inputs(&mut scope, storages, inputs)?;
            if let Some(st) = st {
                self.bind_state(&mut scope, storages, st)?;
            }
            for (out, o) in outputs.data_mut().zip(&self.program.outputs) {
                if o.binding.in_place() {
                    bind_output(&mut scope, o.home.storage.index(), out)?;
                }
            }
            for (a, spare) in self.program.assigns.iter().zip(spares.iter_mut()) {
                if let Some(spare) = spare {
                    bind_output(&mut scope, a.home.storage.index(), spare.data_mut())?;
                }
            }
            self.execute_on(references, Some(&scope))
        };
        if self.program.state_reads.is_empty() {
            run(None)?;
        } else {
            state.read(|st| run(Some(st)))?;
        }
        self.copy_outputs(storages, spares, outputs)?;
        self.commit(storages, spares, state)
    }

    /// Binds the inputs read in place and copies the others into their storages.
    fn bind_inputs<'a>(
        &self,
        scope: &mut BindScope<'_, 'a>,
        storages: &[Arc<DeviceBufferStorage>],
        inputs: &'a dyn Inputs,
    ) -> Result<(), RunError> {
        for (i, input) in self.program.inputs.iter().enumerate() {
            match input.storage {
                Some(s) if input.binding.in_place() => {
                    bind_input(scope, s.index(), inputs.input(i))?
                }
                Some(s) => self.copy_input(&storages[s.index()], i, inputs.input(i))?,
                None => {}
            }
        }
        Ok(())
    }

    /// Copies the outputs not written in place into the caller's arrays.
    fn copy_outputs(
        &self,
        storages: &[Arc<DeviceBufferStorage>],
        spares: &[Option<HostArray>],
        outputs: &mut OutputArrays<'_, '_>,
    ) -> Result<(), RunError> {
        for (mut out, o) in outputs.data_mut().zip(&self.program.outputs) {
            if o.binding.in_place() {
                continue;
            }
            let spare = self
                .program
                .swapped_assign(o.home.storage)
                .and_then(|a| spares[a].as_ref());
            if let Some(spare) = spare {
                copy_array(out, spare)?;
            } else if o.home.row_major {
                copy_out(&storages[o.home.storage.index()], out)?;
            } else {
                // Not expected (outputs are stored row-major), but correct: gather, allocating.
                let value = read(storages, &self.program, &o.home)?;
                out.copy_from(value.view().data())?;
            }
        }
        Ok(())
    }

    /// Writes the assigned values into the state (all or none).
    fn commit(
        &self,
        storages: &[Arc<DeviceBufferStorage>],
        spares: &mut [Option<HostArray>],
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        let assigns = &self.program.assigns;
        if assigns.is_empty() {
            return Ok(());
        }
        if assigns.iter().all(|a| a.home.row_major) {
            return state.commit(|state| self.commit_assigns_in_place(storages, spares, state));
        }
        let assigned = assigns
            .iter()
            .zip(spares.iter())
            .map(|(a, spare)| match spare {
                Some(v) => Ok((a.target, v.clone())),
                None => Ok((a.target, read(storages, &self.program, &a.home)?)),
            })
            .collect::<Result<Vec<_>, RunError>>()?;
        state.commit(|s| s.set_all(&self.graph, assigned))
    }

    /// Binds the state values the kernels read in place and copies the rest in.
    fn bind_state<'a>(
        &self,
        scope: &mut BindScope<'_, 'a>,
        storages: &[Arc<DeviceBufferStorage>],
        state: &'a State,
    ) -> Result<(), RunError> {
        for r in &self.program.state_reads {
            let v = self.state_value(r, state)?;
            if r.binding.in_place() {
                bind_input(scope, r.storage.index(), v.view())?;
            } else {
                copy_in(&storages[r.storage.index()], v.data())?;
            }
        }
        Ok(())
    }

    /// Makes the missing spare arrays of assigns committed by swapping: each with its target's
    /// axes, lengths and dtype (once per workspace).
    fn make_spares(&self, spares: &mut [Option<HostArray>], state: &State) -> Result<(), RunError> {
        for (a, spare) in self.program.assigns.iter().zip(spares.iter_mut()) {
            if !a.binding.in_place() || spare.is_some() {
                continue;
            }
            let v = state.get(a.target).ok_or_else(|| RunError::State {
                tensor: a.name.clone(),
                message: "has no value in the state".into(),
            })?;
            let data =
                crate::zeroed_host_data(v.dtype(), v.len()).map_err(|source| RunError::Alloc {
                    tensor: a.name.clone(),
                    source,
                })?;
            *spare = Some(HostArray::new(v.axes().clone(), v.shape().to_vec(), data)?);
        }
        Ok(())
    }

    /// Copies every assigned value (each row-major at the start of its storage) into the
    /// state's arrays in place, checking every target before writing any, so a failed run
    /// changes nothing. Allocates nothing unless it fails.
    fn commit_assigns_in_place(
        &self,
        storages: &[Arc<DeviceBufferStorage>],
        spares: &mut [Option<HostArray>],
        state: &mut State,
    ) -> Result<(), RunError> {
        let assigns = &self.program.assigns;
        // After the checks no copy or swap can fail: types and lengths match and this run owns
        // its workspace.
        for (a, spare) in assigns.iter().zip(spares.iter()) {
            let target = state.get(a.target);
            let fits = match spare {
                Some(v) => target.is_some_and(|old| old.same_shape(v)),
                None => {
                    let storage = &storages[a.home.storage.index()];
                    target.is_some_and(|v| {
                        v.dtype() == storage.dtype() && v.len() as u64 <= storage.len()
                    })
                }
            };
            if !fits {
                return Err(RunError::State {
                    tensor: a.name.clone(),
                    message: "the assigned value does not fit the state".into(),
                });
            }
        }
        for (a, spare) in assigns.iter().zip(spares.iter_mut()) {
            match spare {
                // Double buffering: the new value goes in, the old one becomes the spare.
                Some(v) => state.swap(a.target, v)?,
                None => commit_in_place(&storages[a.home.storage.index()], state, a.target)?,
            }
        }
        Ok(())
    }

    /// Runs the steps, in order, over `references`, with the slots `host` binds read or
    /// written in the caller's arrays instead.
    fn execute_on(
        &self,
        references: &[DeviceBufferReference],
        host: Option<&BindScope<'_, '_>>,
    ) -> Result<(), RunError> {
        for step in &self.program.steps {
            self.run_step(step, references, host)?;
        }
        Ok(())
    }

    /// Runs one step over `references` (the loop body of [`NativeExecutable::execute_on`]).
    fn run_step(
        &self,
        step: &Step,
        references: &[DeviceBufferReference],
        host: Option<&BindScope<'_, '_>>,
    ) -> Result<(), RunError> {
        let pool = &*self.pool;
        let gemm_pool = (pool.threads() > 1).then_some(pool);
        // Kernels bind the workspace by index: no argument table is built, and a kernel of up
        // to `STACK_TABLE` buffers allocates nothing.
        let k = match step {
            Step::Kernel(k) => k.index(),
            Step::Gemm(g) => {
                let gemm = &self.program.gemms[g.index()];
                let [a, b, c] = gemm.args;
                let args = [a.index(), b.index(), c.index()];
                return Ok(gemm.call.call_bound(gemm_pool, references, host, args)?);
            }
            Step::GemmThen {
                kernel, epilogue, ..
            } => {
                return Ok(epilogue.call_bound(
                    &self.code[kernel.index()],
                    gemm_pool,
                    references,
                    host,
                )?);
            }
        };
        let code = &self.code[k];
        let parallel = code.signature().parallel_extent.is_some() && pool.threads() > 1;
        let pool = parallel.then_some(pool);
        match host {
            Some(scope) => code.call_bound(pool, references, scope, &self.slots[k])?,
            None => code.call_indexed(pool, references, &self.slots[k])?,
        }
        Ok(())
    }

    /// Loads `inputs` and the state into device buffers and keeps them there, so the steps
    /// can be run again and again over resident data ([`ResidentRun::execute`]): what a
    /// benchmark of kernel time (fused against unfused) measures, without host copies.
    pub fn resident(
        &self,
        inputs: &[HostArray],
        state: &State,
    ) -> Result<ResidentRun<'_>, RunError> {
        let w = self.workspace()?;
        let run = ResidentRun {
            exe: self,
            workspace: Some(w),
        };
        let w = run.workspace()?;
        self.load_inputs(w, &inputs)?;
        self.load_state(&w.storages, state)?;
        self.execute_on(&w.references, None)?;
        Ok(run)
    }

    /// One zeroed array per output, with its axes (in order) and lengths.
    fn fresh_outputs(&self) -> Result<Vec<HostArray>, RunError> {
        self.program
            .outputs
            .iter()
            .map(|o| {
                let h = &o.home;
                let n =
                    weft_ir::size::element_count(&h.shape).ok_or_else(|| RunError::Malformed {
                        node: h.name.clone(),
                        op: "output",
                        message: "no element count".into(),
                    })?;
                let data =
                    crate::zeroed_host_data(h.dtype, n).map_err(|source| RunError::Alloc {
                        tensor: h.name.clone(),
                        source,
                    })?;
                Ok(HostArray::new(
                    self.graph.node(o.node).axes.clone(),
                    h.shape.clone(),
                    data,
                )?)
            })
            .collect()
    }
}

/// Reads the value at `h` out of `storages` into a new array (gathering through its strides
/// when it is not row-major). Refuses sizes the system would not give, rather than abort.
fn read(
    storages: &[Arc<DeviceBufferStorage>],
    program: &Program,
    h: &Home,
) -> Result<HostArray, RunError> {
    let s = &storages[h.storage.index()];
    let elements = weft_ir::size::element_count(&h.shape).ok_or_else(|| RunError::Malformed {
        node: h.name.clone(),
        op: "read",
        message: "no element count".into(),
    })?;
    let positions = (elements as u64).saturating_mul(std::mem::size_of::<usize>() as u64);
    let bytes = program.storages[h.storage.index()]
        .bytes()
        .saturating_mul(2)
        .saturating_add(positions);
    weft_ir::host::check_alloc(usize::try_from(bytes).unwrap_or(usize::MAX)).map_err(|source| {
        RunError::Alloc {
            tensor: program.storages[h.storage.index()].holders_text(),
            source,
        }
    })?;
    let data = if h.row_major {
        // Row-major at the start of its storage: a prefix copy, no index arithmetic.
        fn prefix<T: Copy>(mut v: Vec<T>, n: usize) -> Vec<T> {
            v.truncate(n);
            v
        }
        match h.dtype {
            DType::F32 => ArrayData::F32(prefix(s.to_vec::<f32>()?, elements)),
            DType::F64 => ArrayData::F64(prefix(s.to_vec::<f64>()?, elements)),
            DType::I32 => ArrayData::I32(prefix(s.to_vec::<i32>()?, elements)),
            DType::I64 => ArrayData::I64(prefix(s.to_vec::<i64>()?, elements)),
            DType::Bool => ArrayData::Bool(prefix(s.to_vec::<bool>()?, elements)),
        }
    } else {
        let positions = strided_positions(&h.shape, &h.strides, elements);
        fn pick<T: Copy>(v: Vec<T>, p: &[usize]) -> Vec<T> {
            p.iter().map(|i| v[*i]).collect()
        }
        match h.dtype {
            DType::F32 => ArrayData::F32(pick(s.to_vec::<f32>()?, &positions)),
            DType::F64 => ArrayData::F64(pick(s.to_vec::<f64>()?, &positions)),
            DType::I32 => ArrayData::I32(pick(s.to_vec::<i32>()?, &positions)),
            DType::I64 => ArrayData::I64(pick(s.to_vec::<i64>()?, &positions)),
            DType::Bool => ArrayData::Bool(pick(s.to_vec::<bool>()?, &positions)),
        }
    };
    Ok(HostArray::new(h.axes.clone(), h.shape.clone(), data)?)
}

/// Element k (row-major over `shape`) is at Σ index·stride in its storage.
fn strided_positions(shape: &[usize], strides: &[i64], elements: usize) -> Vec<usize> {
    let mut positions = Vec::with_capacity(elements);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..elements {
        let p: i64 = idx.iter().zip(strides).map(|(i, s)| *i as i64 * s).sum();
        positions.push(p as usize);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    positions
}

/// Device buffers of one executable loaded with one set of inputs; see
/// [`NativeExecutable::resident`]. The buffers return to the executable when dropped.
pub struct ResidentRun<'e> {
    exe: &'e NativeExecutable,
    workspace: Option<Workspace>,
}

impl ResidentRun<'_> {
    fn workspace(&self) -> Result<&Workspace, RunError> {
        self.workspace.as_ref().ok_or_else(|| RunError::Malformed {
            node: "program".into(),
            op: "run",
            message: "no workspace".into(),
        })
    }

    /// Runs every step once more over the resident buffers (state is not committed).
    pub fn execute(&mut self) -> Result<(), RunError> {
        let w = self.workspace()?;
        self.exe.execute_on(&w.references, None)
    }

    /// A profile: every step run `rounds` times over the resident buffers, in program order,
    /// each timed alone; per step (in [`Program::steps`] order), the median of its times. Each
    /// step sees the caches its predecessors left, as in a whole run.
    pub fn profile(&mut self, rounds: usize) -> Result<Vec<std::time::Duration>, RunError> {
        let w = self.workspace()?;
        let steps = &self.exe.program.steps;
        let mut times = vec![Vec::with_capacity(rounds.max(1)); steps.len()];
        for _ in 0..rounds.max(1) {
            for (step, t) in steps.iter().zip(&mut times) {
                let start = std::time::Instant::now();
                self.exe.run_step(step, &w.references, None)?;
                t.push(start.elapsed());
            }
        }
        Ok(times
            .into_iter()
            .map(|mut t| {
                t.sort_unstable();
                t[t.len() / 2]
            })
            .collect())
    }

    /// The outputs as they stand in the buffers.
    pub fn outputs(&self) -> Result<Vec<HostArray>, RunError> {
        let w = self.workspace()?;
        let program = &self.exe.program;
        program
            .outputs
            .iter()
            .map(|o| read(&w.storages, program, &o.home))
            .collect()
    }
}

impl Drop for ResidentRun<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.workspace.take() {
            self.exe.give_back(w);
        }
    }
}

/// Binds `input` to storage slot `s` for reading.
fn bind_input<'a>(
    scope: &mut BindScope<'_, 'a>,
    s: usize,
    input: HostView<'a>,
) -> Result<(), RunError> {
    let r = match input.data() {
        DataRef::F32(v) => scope.bind(s, v),
        DataRef::F64(v) => scope.bind(s, v),
        DataRef::I32(v) => scope.bind(s, v),
        DataRef::I64(v) => scope.bind(s, v),
        DataRef::Bool(v) => scope.bind(s, v),
    };
    r.map_err(no_slot)
}

/// Binds `out` (an output's memory) to storage slot `s` for writing.
fn bind_output<'a>(
    scope: &mut BindScope<'_, 'a>,
    s: usize,
    out: DataMut<'a>,
) -> Result<(), RunError> {
    let r = match out {
        DataMut::F32(v) => scope.bind_mut(s, v),
        DataMut::F64(v) => scope.bind_mut(s, v),
        DataMut::I32(v) => scope.bind_mut(s, v),
        DataMut::I64(v) => scope.bind_mut(s, v),
        DataMut::Bool(_) => Ok(false),
    };
    match r {
        Ok(true) => Ok(()),
        Ok(false) => Err(RunError::Malformed {
            node: "program".into(),
            op: "bind",
            message: format!(
                "storage {}: a bool output is never bound in place",
                StorageId(s)
            ),
        }),
        Err(e) => Err(no_slot(e)),
    }
}

fn no_slot(e: NoSlot) -> RunError {
    RunError::Malformed {
        node: "program".into(),
        op: "bind",
        message: e.to_string(),
    }
}

/// Copies the first `out.len()` elements of `s` into `out`.
fn copy_out(s: &DeviceBufferStorage, out: DataMut<'_>) -> Result<(), RunError> {
    match out {
        DataMut::F32(v) => s.copy_prefix_to_slice(v)?,
        DataMut::F64(v) => s.copy_prefix_to_slice(v)?,
        DataMut::I32(v) => s.copy_prefix_to_slice(v)?,
        DataMut::I64(v) => s.copy_prefix_to_slice(v)?,
        DataMut::Bool(v) => s.copy_prefix_to_slice(v)?,
    }
    Ok(())
}

/// Copies the value assigned to `target` (row-major at the start of `s`) into the state.
fn commit_in_place(
    s: &DeviceBufferStorage,
    state: &mut State,
    target: NodeId,
) -> Result<(), RunError> {
    fn one<T: crate::Element + weft_ir::Element>(
        s: &DeviceBufferStorage,
        state: &mut State,
        target: NodeId,
    ) -> Result<(), RunError> {
        match state.elements_mut::<T>(target) {
            Some(out) => Ok(s.copy_prefix_to_slice(out)?),
            None => Err(RunError::State {
                tensor: format!("{target}"),
                message: "the assigned value does not fit the state".into(),
            }),
        }
    }
    match s.dtype() {
        DType::F32 => one::<f32>(s, state, target),
        DType::F64 => one::<f64>(s, state, target),
        DType::I32 => one::<i32>(s, state, target),
        DType::I64 => one::<i64>(s, state, target),
        DType::Bool => one::<bool>(s, state, target),
    }
}

fn copy_in_ref(s: &DeviceBufferStorage, d: DataRef<'_>) -> Result<(), RuntimeError> {
    match d {
        DataRef::F32(v) => s.copy_from_slice(v),
        DataRef::F64(v) => s.copy_from_slice(v),
        DataRef::I32(v) => s.copy_from_slice(v),
        DataRef::I64(v) => s.copy_from_slice(v),
        DataRef::Bool(v) => s.copy_from_slice(v),
    }
}

fn copy_in(s: &DeviceBufferStorage, d: &ArrayData) -> Result<(), RuntimeError> {
    match d {
        ArrayData::F32(v) => s.copy_from_slice(v),
        ArrayData::F64(v) => s.copy_from_slice(v),
        ArrayData::I32(v) => s.copy_from_slice(v),
        ArrayData::I64(v) => s.copy_from_slice(v),
        ArrayData::Bool(v) => s.copy_from_slice(v),
    }
}

impl Executable for NativeExecutable {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    /// `run_into_in` checks outputs then inputs first (`check_outputs`, `check_inputs`).
    fn checks_arrays_exactly(&self) -> bool {
        true
    }

    fn outputs(&self) -> &[NodeId] {
        self.plan.outputs()
    }

    fn placeholders(&self) -> &[NodeId] {
        self.plan.placeholders()
    }

    /// New output arrays (zeroed allocations), written in place by the kernels where the
    /// outputs are bound ([`Executable::run_into_on`]).
    fn run_on(
        &self,
        inputs: &dyn Inputs,
        state: &mut StateView<'_>,
    ) -> Result<Vec<HostArray>, RunError> {
        let mut outputs = self.fresh_outputs()?;
        self.run_into_on(inputs, OutputArrays::Owned(&mut outputs), state)?;
        Ok(outputs)
    }

    /// Allocates nothing in steady state: the workspace comes from the pool (a new one only
    /// when every pooled one is in use), inputs and state are copied into its storages, the
    /// kernels run with their argument tables on the stack (parallel ones through the shared
    /// pool, whose dispatch does not allocate), the outputs are copied into the caller's
    /// arrays and assigned values into the state's arrays in place.
    fn run_into_on(
        &self,
        inputs: &dyn Inputs,
        mut outputs: OutputArrays<'_, '_>,
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        let mut w = self.workspace()?;
        let result = self.run_into_in(&mut w, inputs, &mut outputs, state);
        self.give_back(w);
        result
    }
}
