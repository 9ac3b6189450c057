//! IR dumps (`weft compile --dump-dir`, `JitOptions::dump`): every example dumps every stage;
//! the dumped graphs re-parse and run to the same results; the buffer plan's buffers are what
//! the executable allocates; the architecture-independent stages are snapshots (re-bless with
//! `INSTA_UPDATE=always cargo test --test dump`, or `cargo insta review`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use weft::prelude::*;
use weft_compiler::dump::dump_stages;
use weft_compiler::JitExecutable;

fn examples() -> Vec<PathBuf> {
    common::example_paths()
}

fn parse(path: &Path) -> Graph {
    let src = std::fs::read_to_string(path).unwrap();
    weft::ir::text::parse(&src, &path.display().to_string()).unwrap()
}

/// Every output, by name, as f64, run on the interpreter with inputs drawn by name.
fn run_by_name(g: &Graph) -> Vec<(String, Vec<f64>)> {
    let ps = g.placeholders();
    let inputs: Vec<HostArray> = ps
        .iter()
        .map(|p| {
            let n = g.node(*p);
            let shape = g.shape_of(&n.axes).unwrap();
            let len: usize = shape.iter().product();
            let seed = g.node_label(*p).len() as f64;
            let x = |i: usize| ((i as f64 + seed) * 0.731).sin();
            let data = match n.dtype {
                DType::F32 => ArrayData::F32((0..len).map(|i| x(i) as f32).collect()),
                DType::F64 => ArrayData::F64((0..len).map(x).collect()),
                DType::I32 => ArrayData::I32((0..len).map(|i| (x(i) * 5.0) as i32).collect()),
                DType::I64 => ArrayData::I64((0..len).map(|i| (x(i) * 5.0) as i64).collect()),
                DType::Bool => ArrayData::Bool((0..len).map(|i| x(i) > 0.0).collect()),
            };
            HostArray::new(n.axes.clone(), shape, data).unwrap()
        })
        .collect();
    let t = Transformer::new(g.clone(), Backend::Interpreter).unwrap();
    let c = t.computation(g.outputs(), &ps).unwrap();
    let out = c.call(&inputs).unwrap();
    g.outputs()
        .iter()
        .zip(out)
        .map(|(o, a)| {
            let d = a.data();
            let v = (0..d.len()).map(|i| d.get(i).unwrap().as_f64()).collect();
            (g.node_label(*o), v)
        })
        .collect()
}

#[test]
fn every_example_dumps_every_stage_and_the_dumped_graphs_run_the_same() {
    for path in examples() {
        let dir = std::env::temp_dir().join(format!(
            "weft-dump-{}-{}",
            std::process::id(),
            path.file_stem().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        common::output_ok(
            common::weft_command()
                .arg("compile")
                .arg(&path)
                .arg("--dump-dir")
                .arg(&dir),
        );
        let index = std::fs::read_to_string(dir.join("index.txt")).unwrap();
        let listed: Vec<&str> = index
            .lines()
            .skip(1)
            .map(|l| l.split('\t').next().unwrap())
            .collect();
        for stage in [
            "input", "simplify", "fusion", "kernels", "layout", "buffers", "steps", "program",
        ] {
            assert!(index.contains(&format!("\t{stage}\n")), "{index}");
        }
        // One loop-IR, Cranelift and machine-code file per kernel (a graph folded to
        // constants has none).
        let count = |ext: &str| listed.iter().filter(|f| f.ends_with(ext)).count();
        assert_eq!(count(".lir"), count(".clif"), "{index}");
        assert_eq!(count(".lir"), count(".s"), "{index}");
        for f in &listed {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            assert!(!text.is_empty() || f.ends_with(".txt"), "{f} is empty");
        }
        // The dumped graphs re-parse and compute what the original computes.
        let original = run_by_name(&parse(&path));
        for f in listed.iter().filter(|f| f.ends_with(".weft")) {
            let g = parse(&dir.join(f));
            assert_eq!(run_by_name(&g), original, "{} {f}", path.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn the_buffer_plans_arena_is_what_the_executable_allocates() {
    for path in examples() {
        let g = Arc::new(parse(&path));
        for options in [JitOptions::default(), JitOptions::unfused()] {
            let exe =
                JitExecutable::new(g.clone(), g.outputs(), &g.placeholders(), &options).unwrap();
            let plan = &exe.compiled_plan().buffers;
            assert_eq!(
                exe.planned_buffer_bytes(),
                plan.buffers.iter().map(|b| b.bytes).sum::<usize>(),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn dump_pass_filters_stages_and_a_bad_pattern_is_an_error() {
    let path = &examples()[0];
    let dir = std::env::temp_dir().join(format!("weft-dump-filter-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let weft = |pattern: &str| {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("compile")
            .arg(path)
            .args(["--unfused", "--dump-pass", pattern, "--dump-dir"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    let out = weft("^(loop-ir|buffers)$");
    assert!(out.status.success());
    let index = std::fs::read_to_string(dir.join("index.txt")).unwrap();
    assert!(index
        .lines()
        .skip(1)
        .all(|l| l.ends_with("\tloop-ir") || l.ends_with("\tbuffers")));
    assert!(index.contains("\tbuffers"), "{index}");
    let bad = weft("(");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--dump-pass `(`"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_api_dump_option_writes_a_numbered_folder_per_computation() {
    let dir = std::env::temp_dir().join(format!("weft-dump-api-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let g = parse(&examples()[0]);
    let options = JitOptions {
        dump: Some(dir.clone()),
        ..JitOptions::default()
    };
    let t = Transformer::with_jit_options(g.clone(), options).unwrap();
    t.computation(g.outputs(), &g.placeholders()).unwrap();
    t.computation(g.outputs(), &g.placeholders()).unwrap();
    let folders: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(folders.len(), 2);
    for f in folders {
        assert!(f.unwrap().path().join("index.txt").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dumps_of_every_example_are_snapshots() {
    for path in examples() {
        let g = Arc::new(parse(&path));
        let exe = common::jit_executable(&g);
        let files = dump_stages(&exe.stages(&g)).unwrap();
        // Cranelift IR and machine code depend on the host's ISA flags: not snapshotted.
        let text: String = files
            .iter()
            .filter(|f| f.stage != "clif" && f.stage != "asm")
            .map(|f| format!("===== {}\n{}", f.name, f.contents))
            .collect();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        insta::assert_snapshot!(format!("dump_{name}"), text);
    }
}

/// A tiled f32 transpose reads 4 × 4 blocks as whole vectors and transposes them with
/// unpacks (`codegen::translate::jam`), instead of gathering each lane with an insert; with
/// the native transpose on (the default, on a host with AVX) the kernel calls it instead.
#[test]
fn a_tiled_transpose_moves_4x4_blocks_through_registers() {
    let src = "axis R = 64\naxis C = 80\nplaceholder x: f32[R, C]\n\
               y = axes_with_order(x, [C, R])\noutput y\n";
    let g = Arc::new(weft::ir::text::parse(src, "transpose.weft").unwrap());
    let jammed = JitOptions {
        codegen: weft::CodegenOptions {
            native_transpose: false,
            ..Default::default()
        },
        ..JitOptions::default()
    };
    let exe = weft_compiler::JitExecutable::new(g.clone(), g.outputs(), &g.placeholders(), &jammed)
        .unwrap();
    let files = dump_stages(&exe.stages(&g)).unwrap();
    let stage = |files: &[weft_compiler::dump::DumpFile], name: &str| -> String {
        files
            .iter()
            .filter(|f| f.stage == name)
            .map(|f| f.contents.clone())
            .collect()
    };
    let asm = stage(&files, "asm");
    assert!(
        asm.contains("punpckldq") && asm.contains("punpckhqdq"),
        "{asm}"
    );
    assert!(
        !asm.contains("insertps"),
        "a lane gathered by insertion:\n{asm}"
    );
    // `weft explain` says so, from the same decision.
    let text = weft_compiler::explain::explain(&exe);
    assert!(
        text.contains("4 x 4 blocks of %x loaded as whole vectors and transposed in registers"),
        "{text}"
    );
    // The default: one call of the native transpose per parallel chunk, no jammed loops.
    let exe = common::jit_executable(&g);
    if exe.native_transpose() {
        let files = dump_stages(&exe.stages(&g)).unwrap();
        let clif = stage(&files, "clif");
        assert!(!stage(&files, "asm").contains("punpckldq"));
        assert_eq!(clif.matches("call fn").count(), 1, "{clif}");
        let text = weft_compiler::explain::explain(&exe);
        assert!(
            text.contains(
                "%x transposed into %y by the native routine, the loops inside in one call"
            ),
            "{text}"
        );
    }
}

#[test]
fn weft_dump_in_the_environment_dumps_without_code_changes() {
    let dir = std::env::temp_dir().join(format!("weft-dump-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    common::output_ok(
        common::weft_command()
            .arg("run")
            .arg(&examples()[0])
            .env("WEFT_DUMP", &dir),
    );
    let index = std::fs::read_to_string(dir.join("c0").join("index.txt")).unwrap();
    assert!(index.contains("\tbuffers"), "{index}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explanations_of_every_example_are_snapshots() {
    // A leaf loop's registers are the machine's too (fewer, wider ones with AVX-512).
    let registers = regex::Regex::new(r"\(\d+ registers, ").expect("a valid pattern");
    for path in examples() {
        let out = common::output_ok(common::weft_command().arg("explain").arg(&path));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("# materialised tensors") && text.contains("# kernels"));
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        // The first line names the machine.
        let (target, text) = text.split_once('\n').unwrap();
        assert_eq!(
            target,
            format!("# target: {}", weft::runtime::Target::host())
        );
        let text = format!("# target: <machine>\n{text}");
        // The thread count is the machine's.
        let text = text.replace(
            &format!(
                "over {} threads",
                weft_compiler::executable::shared_pool().threads()
            ),
            "over N threads",
        );
        // So are the native routines' instruction set (the scalar path never runs them: span
        // routines need AVX2 and FMA, `JitCompiler::span_math`).
        let text = text
            .replace("native AVX-512 ", "native <ISA> ")
            .replace("native AVX2 ", "native <ISA> ");
        // And the leaf loops' width (`CodegenOptions::wide_leaves`).
        let text = text
            .replace("16 lanes (f32x16, AVX-512 zmm)", "<N> lanes (<leaf width>)")
            .replace("8 lanes (f32x8, AVX2 ymm)", "<N> lanes (<leaf width>)");
        let text = registers
            .replace_all(&text, "(<R> registers, ")
            .into_owned();
        // And which engine runs a GEMM call (`GemmCall::engine`: the host's vector width).
        let text = text
            .replace("(weft's AVX2 tiles)", "(<GEMM engine>)")
            .replace("(weft's AVX-512 tiles)", "(<GEMM engine>)")
            .replace("(gemm crate, runtime CPU dispatch)", "(<GEMM engine>)");
        insta::assert_snapshot!(format!("explain_{name}"), text);
    }
}

/// With vectorisation switched off (`CodegenOptions::vectorize`), `weft explain` says every
/// annotated loop runs scalar, as code generation then does, instead of repeating the
/// annotation's "vectorised".
#[test]
fn explain_says_scalar_when_vectorisation_is_off() {
    let src = "axis R = 8\naxis C = 256\nplaceholder x: f32[R, C]\nm = max(x, [C])\n\
               d = subtract(x, m)\ne = exp(d)\nt = sum(e, [C])\ny = divide(e, t)\noutput y\n";
    let g = Arc::new(weft::ir::text::parse(src, "softmax.weft").unwrap());
    let explained = |vectorize: bool| {
        let options = JitOptions {
            codegen: weft::CodegenOptions {
                vectorize,
                ..Default::default()
            },
            ..JitOptions::default()
        };
        let exe = JitExecutable::new(g.clone(), g.outputs(), &g.placeholders(), &options).unwrap();
        weft_compiler::explain::explain(&exe)
    };
    let (on, off) = (explained(true), explained(false));
    assert!(on.contains("vectorised: "), "{on}");
    assert!(
        !off.contains("vectorised") && !off.contains("by the native"),
        "{off}"
    );
    assert!(off.contains("scalar (vectorisation off"), "{off}");
}
