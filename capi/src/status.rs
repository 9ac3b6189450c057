//! What a C call returns: a [`Status`] code, and the message of the last failure on the calling
//! thread ([`weft_last_error`]).
//!
//! Guarantees: [`guard`] is the only way the entry points run Rust code — a panic inside is
//! caught there and becomes [`Status::Internal`], so nothing unwinds into C.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use weft_api::{Error, RunError};

/// `weft_status` of weft.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok = 0,
    Argument = 1,
    Io = 2,
    Model = 3,
    Compile = 4,
    Memory = 5,
    Run = 6,
    Internal = 7,
}

/// A failure: its code and message.
#[derive(Debug)]
pub struct Failure {
    pub status: Status,
    pub message: String,
}

impl Failure {
    /// A caller's mistake ([`Status::Argument`]).
    pub fn argument(message: impl Into<String>) -> Failure {
        Failure {
            status: Status::Argument,
            message: message.into(),
        }
    }

    /// weft's error `e`, coded by what it is about; `stage` says what was being done when the
    /// error is not specific (loading, compiling or running).
    pub fn of(e: Error, stage: Status) -> Failure {
        let status = match &e {
            Error::Io { .. } => Status::Io,
            Error::Parse(_)
            | Error::ParseSource { .. }
            | Error::Onnx(_)
            | Error::UnknownAxis { .. }
            | Error::NoOutputs
            | Error::Graph(_)
            | Error::Axes(_) => Status::Model,
            Error::Run(RunError::MemoryBudget { .. }) => Status::Memory,
            Error::Compile(_) => Status::Compile,
            Error::InputCount { .. }
            | Error::InputAxes { .. }
            | Error::InputLength { .. }
            | Error::InputDType { .. }
            | Error::OutputCount { .. }
            | Error::OutputAxes { .. }
            | Error::OutputLength { .. }
            | Error::OutputDType { .. }
            | Error::Host(_) => Status::Argument,
            _ => stage,
        };
        Failure {
            status,
            message: e.to_string(),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs `f`, returning [`Status::Ok`] or the failure's code with its message recorded for
/// [`weft_last_error`]; a panic becomes [`Status::Internal`].
pub fn guard(f: impl FnOnce() -> Result<(), Failure>) -> Status {
    let failure = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return Status::Ok,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Failure {
                status: Status::Internal,
                message: format!("internal error (a bug in weft, please report it): {what}"),
            }
        }
    };
    // A message with a NUL in it is cut there.
    let bytes: Vec<u8> = failure.message.bytes().take_while(|&b| b != 0).collect();
    let message = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    failure.status
}

/// `weft_last_error` of weft.h.
#[no_mangle]
pub extern "C" fn weft_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}
