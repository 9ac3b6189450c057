//! The `weft` command line: check, print and run `.weft` graphs.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    weft::cli::main()
}
