//! Every rustdoc example pastes into a program that depends on `weft` (issue 47): examples in
//! the doc comments of every crate of the workspace are written against `weft::` (its prelude
//! and re-exported modules: `weft::ir`, `weft::compiler`, `weft::runtime`), never the inner
//! crates' names, and each crate's doc-tests compile them (`weft` is a dev-dependency of the
//! inner crates for that).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of doc-comment code blocks in `text` that name an inner crate, with line numbers.
fn inner_crate_lines(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_code = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let Some(doc) = trimmed
            .strip_prefix("///")
            .or_else(|| trimmed.strip_prefix("//!"))
        else {
            in_code = false;
            continue;
        };
        if doc.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let inner = ["weft_ir", "weft_compiler", "weft_runtime"];
        if in_code && inner.iter().any(|c| doc.contains(c)) {
            found.push((i + 1, line.to_string()));
        }
    }
    found
}

#[test]
fn no_doc_example_names_an_inner_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "ir/src", "compiler/src", "runtime/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "{}", files.len());
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, l) in inner_crate_lines(&text) {
            bad.push(format!("{}:{line}: {}", f.display(), l.trim()));
        }
    }
    assert!(
        bad.is_empty(),
        "doc examples naming an inner crate:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_a_planted_inner_crate_name() {
    let text = "/// ```\n/// use weft_ir::Graph;\n/// ```\n/// weft_ir in prose is fine\n";
    assert_eq!(inner_crate_lines(text).len(), 1);
}
