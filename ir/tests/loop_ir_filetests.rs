//! Filetests for the loop-IR reader, printer and verifier.
//!
//! Each `tests/loop_ir/*.lir` file holds loop-IR text, a line `; expected:`, and the expected
//! output: the canonical printing of the parsed kernel followed by the verifier's verdict (or
//! the read error). Run with `WEFT_BLESS=1` to rewrite the expected sections from the actual
//! output. Every file that parses must also survive print → read → print unchanged.

use std::fs;
use std::path::Path;

use weft_ir::loop_ir::{parse_kernel, verify};

const SEPARATOR: &str = "; expected:\n";

fn run_one(path: &Path, input: &str) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match parse_kernel(&name, input) {
        Err(e) => format!("; read error: {e}\n"),
        Ok(kernel) => {
            let printed = kernel.to_string();
            let reread = parse_kernel("printed", &printed).unwrap_or_else(|e| {
                panic!("{name}: printed text does not read back: {e}\n{printed}")
            });
            assert_eq!(reread, kernel, "{name}: print → read changed the kernel");
            assert_eq!(
                reread.to_string(),
                printed,
                "{name}: printing is not stable"
            );
            let verdict = match verify(&kernel) {
                Ok(()) => "; verify: ok\n".to_string(),
                Err(errors) => errors
                    .0
                    .iter()
                    .map(|e| format!("; verify error: {e}\n"))
                    .collect(),
            };
            format!("{printed}{verdict}")
        }
    }
}

#[test]
fn loop_ir_filetests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/loop_ir");
    let bless = std::env::var_os("WEFT_BLESS").is_some_and(|v| v == "1");
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .expect("tests/loop_ir exists")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for path in entries
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "lir"))
    {
        count += 1;
        let text = fs::read_to_string(&path).expect("readable filetest");
        let (input, expected) = match text.split_once(SEPARATOR) {
            Some((i, e)) => (i.to_string(), e.to_string()),
            None => (text.clone(), String::new()),
        };
        let actual = run_one(&path, &input);
        if actual != expected {
            if bless {
                fs::write(&path, format!("{input}{SEPARATOR}{actual}")).expect("writable filetest");
            } else {
                failures.push(format!(
                    "{}:\n--- expected\n{expected}--- actual\n{actual}",
                    path.display()
                ));
            }
        }
    }
    assert!(count > 0, "no filetests found in {}", dir.display());
    assert!(
        failures.is_empty(),
        "{} filetest(s) differ (re-bless with WEFT_BLESS=1):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
