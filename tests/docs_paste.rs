//! Every rustdoc example pastes into a program that depends on `weft` (issue 47): examples in
//! the doc comments of every crate of the workspace are written against `weft::` (its prelude
//! and re-exported modules: `weft::ir`, `weft::nn`, `weft::compiler`, `weft::runtime`), never the inner
//! crates' names, and all of them run as doc-tests of `weft` (`cargo test --doc -p weft`):
//! weft's build.rs copies the code blocks of the inner crates' doc comments into `OUT_DIR`,
//! `src/lib.rs` includes them in `#[cfg(doctest)]` modules, and the inner crates set
//! `doctest = false`. This file checks the names, and that the copy loses no block.

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
        let inner = ["weft_ir", "weft_nn", "weft_compiler", "weft_runtime"];
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
    for dir in ["src", "ir/src", "nn/src", "compiler/src", "runtime/src"] {
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

/// The number of fenced code blocks in the doc comments of `text`: counted here on its own,
/// not with build.rs's code, so a block that build.rs drops shows as a difference.
fn doc_code_blocks(text: &str) -> usize {
    let mut opened = 0;
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let doc = if trimmed.starts_with("////") {
            None
        } else {
            trimmed
                .strip_prefix("///")
                .or_else(|| trimmed.strip_prefix("//!"))
        };
        let Some(doc) = doc else {
            in_code = false;
            continue;
        };
        if doc.trim_start().starts_with("```") {
            if !in_code {
                opened += 1;
            }
            in_code = !in_code;
        }
    }
    opened
}

#[test]
fn every_doc_example_of_the_inner_crates_runs_as_a_weft_doc_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Path::new(env!("OUT_DIR"));
    let mut total = 0;
    for (dir, file) in [
        ("ir/src", "ir.md"),
        ("nn/src", "nn.md"),
        ("compiler/src", "compiler.md"),
        ("runtime/src", "runtime.md"),
    ] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        let in_sources: usize = files
            .iter()
            .map(|f| doc_code_blocks(&std::fs::read_to_string(f).unwrap()))
            .sum();
        let md = std::fs::read_to_string(out.join(file)).unwrap();
        let fences = md.lines().filter(|l| l.starts_with("```")).count();
        assert_eq!(fences % 2, 0, "{file}: an unclosed block");
        assert_eq!(
            fences / 2,
            in_sources,
            "{dir} has {in_sources} doc code blocks, {file} (build.rs) {}",
            fences / 2
        );
        total += in_sources;
    }
    // The inner crates held 124 blocks when this was written (118 runnable, 6 `text`).
    assert!(total >= 120, "{total}");
}

#[test]
fn the_block_count_sees_both_comment_kinds_and_not_ordinary_comments() {
    let text = "//! ```\n//! let a = 1;\n//! ```\n//// ```\n/// ```text\n/// x\n/// ```\n";
    assert_eq!(doc_code_blocks(text), 2);
}
