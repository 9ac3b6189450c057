//! Before/after filetests of the loop-IR passes (`weft_compiler::loop_passes`), after
//! Cranelift's filetests.
//!
//! Each `tests/loop_passes/*.lir` file opens with a line `; pass: NAME` (a name of
//! `loop_passes::PASSES`, or `all` for the whole list in order), then the input kernel's text,
//! a line `; expected:`, and the expected output: the kernel's canonical printing after the
//! pass, a `; note:` line per note it gave, a `; scratch:` line naming the buffers it declared,
//! and the verifier's verdict. The pass runs with the default `PassOptions` whatever they
//! enable. Run with `WEFT_BLESS=1` to rewrite the expected sections from the actual output.

use std::fs;
use std::path::{Path, PathBuf};

use weft_compiler::loop_passes::{self, PassContext, PassOutcome};
use weft_ir::loop_ir::{parse_kernel, verify};

const SEPARATOR: &str = "; expected:\n";

/// The output of the file's pass over its input, or why it cannot run.
fn run_one(name: &str, input: &str) -> Result<String, String> {
    let pass = input
        .lines()
        .find_map(|l| l.strip_prefix("; pass: "))
        .ok_or("no `; pass:` line")?
        .trim();
    let mut k = parse_kernel(name, input).map_err(|e| format!("input does not read: {e}"))?;
    verify(&k).map_err(|e| format!("input does not verify: {e}"))?;
    let cx = PassContext::default();
    let done: PassOutcome = match pass {
        "all" => loop_passes::run_all(&mut k, &cx),
        name => (loop_passes::pass(name)
            .ok_or_else(|| format!("no pass `{name}`"))?
            .run)(&mut k, &cx),
    };
    let mut out = k.to_string();
    for note in &done.notes {
        out.push_str(&format!("; note: {note}\n"));
    }
    if !done.scratch.is_empty() {
        let names: Vec<String> = done
            .scratch
            .iter()
            .map(|b| format!("%{}", k.buffers[*b].name))
            .collect();
        out.push_str(&format!("; scratch: {}\n", names.join(", ")));
    }
    out.push_str(&format!("; changed: {}\n", done.changed));
    match verify(&k) {
        Ok(()) => out.push_str("; verify: ok\n"),
        Err(errors) => {
            for e in errors.0 {
                out.push_str(&format!("; verify error: {e}\n"));
            }
        }
    }
    Ok(out)
}

/// Checks one file's text: `Err` with the difference when its expectation is not the output.
fn check(path: &Path, text: &str) -> Result<(), String> {
    let name = path
        .file_stem()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let (input, expected) = text.split_once(SEPARATOR).unwrap_or((text, ""));
    let actual = run_one(&name, input).map_err(|e| format!("{}: {e}", path.display()))?;
    if actual == expected {
        return Ok(());
    }
    if std::env::var_os("WEFT_BLESS").is_some_and(|v| v == "1") {
        fs::write(path, format!("{input}{SEPARATOR}{actual}")).expect("writable filetest");
        return Ok(());
    }
    Err(format!(
        "{}:\n--- expected\n{expected}--- actual\n{actual}",
        path.display()
    ))
}

fn files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/loop_passes");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("tests/loop_passes exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lir"))
        .collect();
    files.sort();
    files
}

#[test]
fn loop_pass_filetests() {
    let files = files();
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| check(p, &fs::read_to_string(p).expect("readable filetest")).err())
        .collect();
    // Every pass of the list has a file of its own.
    for pass in &loop_passes::PASSES {
        assert!(
            files
                .iter()
                .any(|p| p.file_stem().is_some_and(|s| s == pass.name)),
            "no filetest tests/loop_passes/{}.lir",
            pass.name
        );
    }
    assert!(
        failures.is_empty(),
        "{} filetest(s) differ (re-bless with WEFT_BLESS=1):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The runner can fail: a file whose expectation is changed by one character differs.
#[test]
fn a_wrong_expectation_fails() {
    if std::env::var_os("WEFT_BLESS").is_some() {
        return;
    }
    for path in files() {
        let text = fs::read_to_string(&path).expect("readable filetest");
        let wrong = text.replacen("; verify: ok", "; verify: ok!", 1);
        assert!(check(&path, &wrong).is_err(), "{}", path.display());
    }
}

/// Every buffer of `k` filled with values from `seed` (floats with a fractional part, so a
/// term dropped or added shows; integers small).
fn filled(k: &weft_ir::loop_ir::Kernel, seed: u64) -> Vec<weft_ir::loop_ir::BufferData> {
    use weft_ir::loop_ir::{BufferData, ScalarType};
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    k.buffers
        .values()
        .map(|b| {
            let n = b.len as usize;
            let f = |x: u64| (x % 2001) as f64 / 16.0 - 62.5;
            match b.ty {
                ScalarType::F32 => BufferData::F32((0..n).map(|_| f(next()) as f32).collect()),
                ScalarType::F64 => BufferData::F64((0..n).map(|_| f(next())).collect()),
                ScalarType::I32 => BufferData::I32((0..n).map(|_| (next() % 17) as i32).collect()),
                ScalarType::I64 => BufferData::I64((0..n).map(|_| (next() % 17) as i64).collect()),
                ScalarType::Bool => BufferData::Bool((0..n).map(|_| next() % 2 == 0).collect()),
            }
        })
        .collect()
}

/// Peeling changes no result: each `peel_masks` filetest's kernel, run by the loop-IR
/// interpreter before and after the pass over the same buffers, writes the same bits.
#[test]
fn peeled_kernels_compute_what_they_computed() {
    for path in files() {
        let text = fs::read_to_string(&path).expect("readable filetest");
        let (input, _) = text.split_once(SEPARATOR).unwrap_or((&text, ""));
        if !input.contains("; pass: peel_masks") {
            continue;
        }
        let before = parse_kernel("k", input).expect("the input reads");
        let mut after = before.clone();
        let cx = PassContext::default();
        (loop_passes::pass("peel_masks").expect("the pass").run)(&mut after, &cx);
        for seed in 1..4 {
            let mut want = filled(&before, seed);
            let mut got = want.clone();
            weft_ir::loop_ir::interpret(&before, &mut want).expect("the input runs");
            weft_ir::loop_ir::interpret(&after, &mut got).expect("the peeled kernel runs");
            assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "{}: seed {seed}",
                path.display()
            );
        }
    }
}
