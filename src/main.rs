//! The `weft` command line: check, print and run `.weft` graphs.

use std::process::ExitCode;

fn main() -> ExitCode {
    weft::cli::main()
}
