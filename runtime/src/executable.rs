//! The contract between a computation and the backend that runs it.
//!
//! A backend turns a [`Plan`](crate::Plan) into an [`Executable`] once; the computation then
//! calls it many times. The caller (weft's `Computation`) has already checked each input
//! against its placeholder and put it in the placeholder's axes order, and holds the state's
//! lock for the whole run, so an executable sees consistent state.

use crate::error::RunError;
use crate::state::State;
use weft_ir::{HostArray, NodeId};

/// A computation compiled (or prepared) by a backend.
pub trait Executable: Send + Sync {
    /// The outputs, in the order [`Executable::run`] returns them.
    fn outputs(&self) -> &[NodeId];

    /// The placeholders, in the order [`Executable::run`] takes inputs.
    fn placeholders(&self) -> &[NodeId];

    /// Runs the computation on `inputs` (one per placeholder, each in its placeholder's axes
    /// order, lengths and dtype). Returns one array per output, in the output node's axes
    /// order. Reads variables and persistent tensors from `state` and, only if the run
    /// succeeds, writes the values `assign`s gave them back to it: within a run every read
    /// sees the value from before the run.
    fn run(&self, inputs: &[HostArray], state: &mut State) -> Result<Vec<HostArray>, RunError>;

    /// Runs the computation like [`Executable::run`] but writes the outputs into `outputs`,
    /// caller-owned arrays that the caller has already checked: one per output, each with its
    /// output node's axes in that order, its lengths and dtype. On an error the outputs may
    /// hold anything, but the state is unchanged.
    ///
    /// A backend that can run without allocating overrides this so that a steady-state call
    /// allocates nothing (the JIT does). The default runs [`Executable::run`] and moves its
    /// arrays into `outputs`: it allocates (the reference interpreter uses it).
    fn run_into(
        &self,
        inputs: &[HostArray],
        outputs: &mut [HostArray],
        state: &mut State,
    ) -> Result<(), RunError> {
        if outputs.len() != self.outputs().len() {
            return Err(RunError::OutputCount {
                expected: self.outputs().len(),
                got: outputs.len(),
            });
        }
        let values = self.run(inputs, state)?;
        for (slot, value) in outputs.iter_mut().zip(values) {
            *slot = value;
        }
        Ok(())
    }
}
