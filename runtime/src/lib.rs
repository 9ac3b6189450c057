//! weft-runtime: running graphs. It holds the state of variables and persistent tensors
//! ([`State`]), the contract every backend's compiled form meets ([`Executable`]), the set of
//! nodes one computation evaluates ([`Plan`]) and the reference interpreter ([`interp`]), the
//! correctness oracle for every other backend. It depends on weft-ir only.

pub mod error;
pub mod executable;
pub mod interp;
pub mod plan;
pub mod state;

pub use error::RunError;
pub use executable::Executable;
pub use interp::Interpreter;
pub use plan::Plan;
pub use state::State;
