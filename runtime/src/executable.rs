//! The contract between a computation and the backend that runs it.
//!
//! A backend turns a [`Plan`](crate::Plan) into an [`Executable`] once; the computation then
//! calls it many times, possibly from several threads at once. The caller (weft's
//! `Computation`) has already checked each input against its placeholder and put it in the
//! placeholder's axes order, and hands the run a [`StateView`]: a run reads the state in one
//! [`StateView::read`] (its consistent snapshot) and commits its assigns in one
//! [`StateView::commit`] (all or nothing).

use crate::error::RunError;
use crate::state::{State, StateView};
use weft_ir::{HostArray, Inputs, NodeId, OutputArrays};

/// A computation compiled (or prepared) by a backend.
pub trait Executable: Send + Sync {
    /// The outputs, in the order [`Executable::run`] returns them.
    fn outputs(&self) -> &[NodeId];

    /// The placeholders, in the order [`Executable::run`] takes inputs.
    fn placeholders(&self) -> &[NodeId];

    /// Itself, so a host that knows the backend can reach what only that backend has (the
    /// JIT's program, its loop IR for `weft explain`) without compiling it again.
    fn as_any(&self) -> &dyn std::any::Any;

    /// Whether [`Executable::run_into_on`] itself checks, before any effect, that every
    /// input and output array is exactly what its placeholder or output takes — its axes in
    /// order and of this graph's table (`Axes::identical_to`), its lengths and dtype —
    /// answering anything else with `RunError::{InputCount, Input, OutputCount, Output}`. A
    /// caller with no other rule to apply may then skip its own check in the steady state
    /// (`weft`'s computations do: a 1K-element add's whole call took 0.52 → 0.47 µs). False
    /// unless overridden.
    fn checks_arrays_exactly(&self) -> bool {
        false
    }

    /// Runs the computation on `inputs` (one per placeholder, each in its placeholder's axes
    /// order, lengths and dtype; borrowed, so a backend may read them in place). Returns one array per output, in the output node's axes
    /// order. Reads variables and persistent tensors from `state` in one snapshot and, only if
    /// the run succeeds, commits the values `assign`s gave them in one commit: within a run
    /// every read sees the value from before the run.
    fn run_on(
        &self,
        inputs: &dyn Inputs,
        state: &mut StateView<'_>,
    ) -> Result<Vec<HostArray>, RunError>;

    /// Runs the computation like [`Executable::run_on`] but writes the outputs into `outputs`,
    /// caller-owned arrays or borrowed memory that the caller has already checked: one per
    /// output, each with its output node's axes in that order, its lengths and dtype. On an
    /// error the outputs may hold anything, but the state is unchanged.
    ///
    /// A backend that can run without allocating overrides this so that a steady-state call
    /// allocates nothing (the JIT does, writing outputs bound in place straight into the
    /// caller's memory). The default runs [`Executable::run_on`] and moves its arrays into
    /// owned outputs, or copies them into borrowed ones: it allocates (the reference
    /// interpreter uses it).
    fn run_into_on(
        &self,
        inputs: &dyn Inputs,
        mut outputs: OutputArrays<'_, '_>,
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        if outputs.len() != self.outputs().len() {
            return Err(RunError::OutputCount {
                expected: self.outputs().len(),
                got: outputs.len(),
            });
        }
        let values = self.run_on(inputs, state)?;
        for (i, value) in values.into_iter().enumerate() {
            outputs.put(i, value)?;
        }
        Ok(())
    }

    /// [`Executable::run_on`] over a state the caller owns.
    fn run(&self, inputs: &[HostArray], state: &mut State) -> Result<Vec<HostArray>, RunError> {
        self.run_on(&inputs, &mut StateView::exclusive(state))
    }

    /// [`Executable::run_into_on`] over a state the caller owns.
    fn run_into(
        &self,
        inputs: &[HostArray],
        outputs: &mut [HostArray],
        state: &mut State,
    ) -> Result<(), RunError> {
        self.run_into_on(
            &inputs,
            OutputArrays::Owned(outputs),
            &mut StateView::exclusive(state),
        )
    }
}
