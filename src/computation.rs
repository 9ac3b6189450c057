//! Computations: callable evaluations of some outputs given some placeholders.
//!
//! Every call checks each input against its placeholder — the axes as a set (docs/design.md,
//! "Axes": the order of axes does not matter; a permuted array is transposed), then each axis's
//! length, then the dtype — and answers a mismatch with an error naming the placeholder. Outputs
//! come back in their output node's axes order, as new arrays from [`Computation::call`] or written
//! into caller-owned arrays by [`Computation::call_into`], which on the JIT allocates nothing in
//! steady state.

use crate::bound::{placeholder_names, Bound};
use crate::error::{Error, Result};
use crate::per_binding::{Binding, PerBinding};
use weft_ir::{AsHostView, Graph, HostArray, HostView, HostViewMut, NodeId, OutputArrays};

/// The inputs of a computation without placeholders: `c.call(NO_INPUTS)` (a bare `&[]` names
/// no input type for [`Computation::call`] to infer).
///
/// ```
/// use weft::prelude::*;
/// let b = GraphBuilder::new();
/// let n = b.axis("N", 2)?;
/// let w = b.variable("w", &[n], DType::F32, TensorInit::Fill(Scalar::Float(3.0)))?;
/// let (w, y) = (w.id(), (w * 2.0)?.id());
/// let t = Transformer::new(b.finish(), Backend::Jit)?;
/// let out = t.computation(&[y], &[])?.call(NO_INPUTS)?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![6.0, 6.0]);
/// # let _ = w;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const NO_INPUTS: &[HostArray] = &[];

/// A computation handed out by a [`Transformer`](crate::Transformer); it shares the
/// transformer's variables and persistent tensors. Calls may run from several threads at once:
/// calls that assign nothing never wait for each other; a call that assigns waits only for
/// calls touching what it assigns or assigning what it reads.
///
/// If the graph has axes bound at call time ([`Transformer::new`](crate::Transformer::new)),
/// each call takes their lengths from its inputs and runs the executable compiled for that
/// binding, compiling it on the binding's first call ([`Computation::bindings`]).
///
/// ```
/// use weft::prelude::*;
/// let b = GraphBuilder::new();
/// let batch = b.axis_unbound("B")?; // bound by each call's input
/// let x = b.placeholder("x", &[batch], DType::F32)?;
/// let (x, y) = (x.id(), x.relu()?.id());
/// let t = Transformer::new(b.finish(), Backend::Jit)?;
/// let relu = t.computation(&[y], &[x])?;
/// for rows in [2usize, 3] {
///     let data = vec![-1.0f32; rows];
///     let out = relu.call(&[HostView::new(&Axes::new([batch])?, &[rows], &data)?])?;
///     assert_eq!(out[0].to_vec::<f32>()?, vec![0.0; rows]);
/// }
/// assert_eq!(relu.compilations(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Computation(Inner);

enum Inner {
    /// Every length bound when the computation was made: one executable.
    Bound(Bound),
    /// Lengths bound at call time: one executable per binding.
    PerBinding(Box<PerBinding>),
}

impl Computation {
    pub(crate) fn bound(b: Bound) -> Computation {
        Computation(Inner::Bound(b))
    }

    pub(crate) fn per_binding(p: PerBinding) -> Computation {
        Computation(Inner::PerBinding(Box::new(p)))
    }

    /// The graph whose nodes the computation names (with axes bound at call time, the
    /// unbound one).
    pub fn graph(&self) -> &Graph {
        match &self.0 {
            Inner::Bound(b) => &b.shared.graph,
            Inner::PerBinding(p) => p.graph(),
        }
    }

    /// The JIT's executable behind it: its program, loop IR and code. `None` on the
    /// interpreter, and when lengths are bound at call time (an executable per binding).
    pub fn jit(&self) -> Option<&weft_compiler::JitExecutable> {
        match &self.0 {
            Inner::Bound(b) => b.executable.as_any().downcast_ref(),
            Inner::PerBinding(_) => None,
        }
    }

    /// The program the runtime runs for it — storages, steps, and how each input, output,
    /// state value and assign moves (its text form is the `program` stage of a dump) — read
    /// from the computation itself, never compiled again; `None` where [`Computation::jit`]
    /// is.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let b = GraphBuilder::new();
    /// let n = b.axis("N", 4)?;
    /// let x = b.placeholder("x", &[n], DType::F32)?;
    /// let (x, y) = (x.id(), x.exp()?.id());
    /// let t = Transformer::new(b.finish(), Backend::Jit)?;
    /// let c = t.computation(&[y], &[x])?;
    /// let program = c.plan().expect("compiled by the JIT");
    /// assert_eq!(program.kernels.len(), 1);
    /// assert!(program.inputs[0].binding.in_place()); // the kernel reads the caller's array
    /// assert!(c.explain().unwrap().contains("# calls: how each array moves"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan(&self) -> Option<&weft_runtime::Program> {
        self.jit().map(|j| j.program())
    }

    /// What the compiler made of it (`weft explain`): the target, the materialised tensors
    /// and why, the cost model's figures, each kernel's loops and how each array moves.
    /// `None` where [`Computation::jit`] is.
    pub fn explain(&self) -> Option<String> {
        self.jit().map(weft_compiler::explain::explain)
    }

    /// True if a call assigns a variable or persistent tensor (and so may wait for other calls
    /// touching it).
    pub fn assigns(&self) -> bool {
        match &self.0 {
            Inner::Bound(b) => b.assigns(),
            Inner::PerBinding(p) => p.assigns(),
        }
    }

    /// The outputs, in the order calls return them.
    pub fn outputs(&self) -> &[NodeId] {
        match &self.0 {
            Inner::Bound(b) => b.outputs(),
            Inner::PerBinding(p) => p.outputs(),
        }
    }

    /// The placeholders, in the order calls take inputs.
    pub fn placeholders(&self) -> &[NodeId] {
        match &self.0 {
            Inner::Bound(b) => b.placeholders(),
            Inner::PerBinding(p) => p.placeholders(),
        }
    }

    /// Runs the computation: one array per placeholder in, one array per output out.
    /// Variables and persistent tensors keep the values `assign`s give them for later calls
    /// of this and every other computation of the transformer.
    ///
    /// Inputs are borrowed: `&[HostArray]`, `&[&HostArray]` or [`HostView`]s of the caller's
    /// own memory (a slice with its axes, an `ndarray` view); on the JIT, kernels read them in
    /// place (docs/runtime.md, "Binding caller memory"). Axes bound at call time take their
    /// lengths from the inputs.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let b = GraphBuilder::new();
    /// let n = b.axis("N", 4)?;
    /// let x = b.placeholder("x", &[n], DType::F32)?;
    /// let (x, y) = (x.id(), (x * 2.0)?.id());
    /// let t = Transformer::new(b.finish(), Backend::Jit)?;
    /// let double = t.computation(&[y], &[x])?;
    /// let input = HostArray::from_vec(Axes::new([n])?, vec![4], vec![1f32, 2., 3., 4.])?;
    /// let out = double.call(&[&input])?;
    /// assert_eq!(out[0].to_vec::<f32>()?, vec![2., 4., 6., 8.]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call<I: AsHostView>(&self, inputs: &[I]) -> Result<Vec<HostArray>> {
        match &self.0 {
            Inner::Bound(b) => b.call(inputs),
            Inner::PerBinding(p) => p.for_inputs(inputs)?.call(inputs),
        }
    }

    /// Runs the computation like [`Computation::call`] but writes the outputs into
    /// caller-owned arrays, one per output in [`Computation::outputs`] order, each with its
    /// output's axes *in the output's order*, lengths and dtype (make them once with
    /// [`Computation::output_arrays`], or [`Computation::output_arrays_for`] when lengths are
    /// bound at call time); a mismatch is an error naming the output.
    ///
    /// On the JIT backends a steady-state call allocates nothing — no heap allocation at all,
    /// proved by `tests/steady_state_call.rs` with a counting global allocator — provided the
    /// inputs are in their placeholders' axes order (a permuted input is transposed into a new
    /// array), no other call of the same computation runs at the same time (a concurrent call
    /// makes one more set of device buffers, once), its binding (with lengths bound at call
    /// time) is compiled already and nothing fails (errors allocate their messages). Assigned
    /// values are committed into the state in place. The interpreter backend computes new
    /// arrays and moves them into `outputs`, so it allocates.
    ///
    /// On an error the output arrays may hold anything; variables and persistent tensors are
    /// unchanged.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let b = GraphBuilder::new();
    /// let n = b.axis("N", 3)?;
    /// let x = b.placeholder("x", &[n], DType::F64)?;
    /// let (x, y) = (x.id(), x.exp()?.id());
    /// let t = Transformer::new(b.finish(), Backend::Jit)?;
    /// let exp = t.computation(&[y], &[x])?;
    /// let mut out = exp.output_arrays()?; // once
    /// let data = [0.0, 1.0, 2.0];
    /// let axes = Axes::new([n])?;
    /// for _ in 0..3 {
    ///     // Reads `data` in place and writes into `out`: no allocation once warm.
    ///     exp.call_into(&[HostView::new(&axes, &[3], &data)?], &mut out)?;
    /// }
    /// assert_eq!(out[0].to_vec::<f64>()?[0], 1.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call_into<I: AsHostView>(&self, inputs: &[I], outputs: &mut [HostArray]) -> Result<()> {
        self.call_into_outputs(inputs, OutputArrays::Owned(outputs))
    }

    /// Runs the computation like [`Computation::call_into`] but writes the outputs into memory
    /// the caller lends: one [`HostViewMut`] per output, in [`Computation::outputs`] order,
    /// each with its output's axes in the output's order, lengths and dtype (a mismatch is an
    /// error naming the output). On the JIT backends an output the kernels write in place
    /// (docs/runtime.md, "Binding caller memory") is written straight into that memory, the others
    /// are copied in once; a steady-state call allocates nothing, as with `call_into`.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let b = GraphBuilder::new();
    /// let n = b.axis("N", 3)?;
    /// let x = b.placeholder("x", &[n], DType::F32)?;
    /// let (x, y) = (x.id(), (x * 2.0)?.id());
    /// let t = Transformer::new(b.finish(), Backend::Jit)?;
    /// let double = t.computation(&[y], &[x])?;
    /// let axes = Axes::new([n])?;
    /// let (input, mut mine) = ([1f32, 2.0, 3.0], [0f32; 3]);
    /// double.call_into_views(
    ///     &[HostView::new(&axes, &[3], &input)?],
    ///     &mut [HostViewMut::new(&axes, &[3], &mut mine)?],
    /// )?;
    /// assert_eq!(mine, [2.0, 4.0, 6.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call_into_views<I: AsHostView>(
        &self,
        inputs: &[I],
        outputs: &mut [HostViewMut<'_>],
    ) -> Result<()> {
        self.call_into_outputs(inputs, OutputArrays::Borrowed(outputs))
    }

    fn call_into_outputs<I: AsHostView>(
        &self,
        inputs: &[I],
        outputs: OutputArrays<'_, '_>,
    ) -> Result<()> {
        match &self.0 {
            Inner::Bound(b) => b.call_into(inputs, outputs),
            Inner::PerBinding(p) => p.for_inputs(inputs)?.call_into(inputs, outputs),
        }
    }

    /// Zero-filled arrays to pass to [`Computation::call_into`]: one per output, with its axes
    /// (in order), lengths and dtype. With lengths bound at call time they depend on the
    /// inputs: use [`Computation::output_arrays_for`] (here, an error naming the axes).
    pub fn output_arrays(&self) -> Result<Vec<HostArray>> {
        match &self.0 {
            Inner::Bound(b) => b.output_arrays(),
            Inner::PerBinding(p) => Err(p.lengths_unknown()),
        }
    }

    /// [`Computation::output_arrays`] for a call on `inputs`: with lengths bound at call time,
    /// the outputs' lengths under the inputs' binding (compiling it if it is new).
    pub fn output_arrays_for<I: AsHostView>(&self, inputs: &[I]) -> Result<Vec<HostArray>> {
        match &self.0 {
            Inner::Bound(b) => b.output_arrays(),
            Inner::PerBinding(p) => p.for_inputs(inputs)?.output_arrays(),
        }
    }

    /// The bindings of axes bound at call time that this computation holds compiled, most
    /// recently used first (empty when every length was bound when it was made).
    pub fn bindings(&self) -> Vec<Binding> {
        match &self.0 {
            Inner::Bound(_) => Vec::new(),
            Inner::PerBinding(p) => p.bindings(),
        }
    }

    /// How many times this computation has compiled: 1 when every length was bound when it
    /// was made, else once per binding first seen (again for one evicted and seen again).
    pub fn compilations(&self) -> usize {
        match &self.0 {
            Inner::Bound(_) => 1,
            Inner::PerBinding(p) => p.compilations(),
        }
    }

    /// How many bindings a computation with lengths bound at call time keeps compiled (at
    /// least 1; [`DEFAULT_BINDING_CAPACITY`](crate::per_binding::DEFAULT_BINDING_CAPACITY)
    /// unless set): a new binding beyond them evicts the least recently used one. No effect
    /// when every length was bound when it was made.
    pub fn set_binding_capacity(&self, capacity: usize) {
        if let Inner::PerBinding(p) = &self.0 {
            p.set_capacity(capacity);
        }
    }

    /// [`Computation::call`] with the inputs given by placeholder name, in any order: every
    /// placeholder exactly once (an unknown, missing or repeated name is an error naming it).
    pub fn call_named<I: AsHostView>(&self, inputs: &[(&str, I)]) -> Result<Vec<HostArray>> {
        let ordered = self.by_name(inputs)?;
        self.call(&ordered)
    }

    /// [`Computation::call_into`] with the inputs given by placeholder name, in any order.
    pub fn call_named_into<I: AsHostView>(
        &self,
        inputs: &[(&str, I)],
        outputs: &mut [HostArray],
    ) -> Result<()> {
        let ordered = self.by_name(inputs)?;
        self.call_into(&ordered, outputs)
    }

    /// `inputs` put in placeholder order, borrowed.
    fn by_name<'i, I: AsHostView>(&self, inputs: &'i [(&str, I)]) -> Result<Vec<HostView<'i>>> {
        let g = self.graph();
        let placeholders = self.placeholders();
        let mut ordered: Vec<Option<HostView<'i>>> = vec![None; placeholders.len()];
        for (name, array) in inputs {
            let position = placeholders
                .iter()
                .position(|p| g.node(*p).name.as_deref() == Some(*name))
                .ok_or_else(|| Error::UnknownInput {
                    name: name.to_string(),
                    placeholders: placeholder_names(g, placeholders),
                })?;
            if ordered[position].replace(array.host_view()).is_some() {
                return Err(Error::RepeatedInput {
                    name: name.to_string(),
                });
            }
        }
        ordered
            .into_iter()
            .zip(placeholders)
            .map(|(v, p)| {
                v.ok_or_else(|| Error::MissingInput {
                    name: g.node_label(*p),
                })
            })
            .collect()
    }
}

impl std::fmt::Debug for Computation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Computation")
            .field("outputs", &self.outputs())
            .field("placeholders", &self.placeholders())
            .field("bindings", &self.bindings())
            .finish()
    }
}
