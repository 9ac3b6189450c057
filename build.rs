//! Gathers the doc examples of the inner crates so `cargo test --doc -p weft` runs them.
//!
//! Rustdoc runs an example as a doc-test of the crate that defines the item, never of a crate
//! that re-exports it; weft's examples are written as a weft user writes them (against
//! `weft::`), so they belong to weft's doc-tests. This script copies every fenced code block
//! of the `///` and `//!` comments under `ir/src`, `nn/src`, `compiler/src` and `runtime/src`
//! into one markdown file per crate in `OUT_DIR` (`ir.md`, `nn.md`, `compiler.md`,
//! `runtime.md`), each block after a heading naming its source file and line; `src/lib.rs`
//! includes them as the docs of `#[cfg(doctest)]` modules. The inner crates set `doctest = false`, so each example compiles
//! once. A block keeps its info string (`ignore`, `no_run`, `text`, `should_panic`,
//! `compile_fail`, ...) and its hidden `# ` lines; each line loses the comment marker and
//! exactly one following space. Examples on items behind a feature (`ndarray`) compile because
//! weft's tests enable every feature (its dev-dependency on itself). tests/docs_paste.rs
//! checks that no block is lost. Without the sibling directories (a packaged crate) the files
//! are empty.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The crates whose examples are gathered: (directory, output file stem, crate name).
const CRATES: [(&str, &str, &str); 4] = [
    ("ir/src", "ir", "weft-ir"),
    ("nn/src", "nn", "weft-nn"),
    ("compiler/src", "compiler", "weft-compiler"),
    ("runtime/src", "runtime", "weft-runtime"),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    for (dir, stem, name) in CRATES {
        let src = root.join(dir);
        let mut md = String::new();
        if src.is_dir() {
            println!("cargo:rerun-if-changed={}", src.display());
            let mut files = Vec::new();
            rust_files(&src, &mut files);
            files.sort();
            let _ = writeln!(
                md,
                "Doc examples of {name} ({dir}), gathered by weft's build.rs so they run as \
                 weft's doc-tests.\n"
            );
            for f in files {
                let text = std::fs::read_to_string(&f)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
                let rel = f.strip_prefix(&root).unwrap_or(&f);
                let rel = rel.to_string_lossy().replace('\\', "/");
                for block in doc_blocks(&text) {
                    let _ = write!(md, "## `{rel}:{}`\n\n{}\n", block.line, block.text);
                }
            }
        }
        let path = out.join(format!("{stem}.md"));
        std::fs::write(&path, md).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// One fenced code block of a doc comment: the 1-based line of its opening fence and its
/// text, fences included, each line ending in a newline.
struct Block {
    line: usize,
    text: String,
}

/// The doc-comment text of a source line (the comment marker and one space stripped), if the
/// line is a `///` or `//!` comment (not `////`, an ordinary comment).
fn doc_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let rest = if t.starts_with("////") {
        return None;
    } else {
        t.strip_prefix("///").or_else(|| t.strip_prefix("//!"))?
    };
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// Every fenced code block in the doc comments of `text`. A block left open where its doc
/// comment ends is closed there, as rustdoc closes it.
fn doc_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let Some(doc) = doc_text(line) else {
            if let Some(mut b) = open.take() {
                b.text.push_str("```\n");
                blocks.push(b);
            }
            continue;
        };
        let fence = doc.trim_start().starts_with("```");
        match open.take() {
            None if fence => {
                open = Some(Block {
                    line: i + 1,
                    text: format!("{}\n", doc.trim()),
                })
            }
            None => {}
            Some(mut b) if fence => {
                b.text.push_str("```\n");
                blocks.push(b);
            }
            Some(mut b) => {
                b.text.push_str(doc);
                b.text.push('\n');
                open = Some(b);
            }
        }
    }
    if let Some(mut b) = open {
        b.text.push_str("```\n");
        blocks.push(b);
    }
    blocks
}
