//! The `weft` command line as a new user runs it: every example runs, bad input gives a clear
//! error on stderr with a non-zero exit and never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use weft::prelude::*;

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the weft binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Runs a failing command and returns its stderr after checking the failure is clean.
fn fails(args: &[&str]) -> String {
    let o = weft(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} succeeded: {}", stdout(&o));
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

#[test]
fn every_example_checks_prints_and_runs() {
    let mut n = 0;
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")).unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "weft") {
            continue;
        }
        n += 1;
        let p = path.display().to_string();
        for cmd in ["check", "print", "run"] {
            let o = weft(&[cmd, &p]);
            assert!(o.status.success(), "weft {cmd} {p}: {}", stderr(&o));
        }
    }
    assert!(n >= 5, "expected the bundled examples, found {n}");
}

#[test]
fn the_seed_003_equality_example_prints_all_true() {
    let o = weft(&["run", "tests/axes_examples/seed003_equal.weft"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("bool (H=2, W=3)"), "{out}");
    assert_eq!(out.matches("true").count(), 6, "{out}");
    assert!(!out.contains("false"), "{out}");
}

#[test]
fn both_orders_of_x_plus_y_give_twos_in_their_own_shapes() {
    let xy = stdout(&weft(&["run", "tests/axes_examples/seed003_add_xy.weft"]));
    let yx = stdout(&weft(&["run", "tests/axes_examples/seed003_add_yx.weft"]));
    assert!(
        xy.contains("(H=2, W=3)") && xy.matches('2').count() >= 6,
        "{xy}"
    );
    assert!(
        yx.contains("(W=3, H=2)") && yx.matches('2').count() >= 6,
        "{yx}"
    );
}

#[test]
fn check_prints_every_tensors_inferred_axes() {
    let out = stdout(&weft(&["check", "examples/softmax.weft"]));
    for line in out.lines().filter(|l| !l.starts_with("ok:")) {
        assert!(
            line.contains('(') && line.contains(')'),
            "no axes on: {line}"
        );
    }
    assert!(out.lines().last().unwrap().starts_with("ok:"), "{out}");
}

#[test]
fn print_is_canonical_and_reparses_to_the_same_graph() {
    let dir = scratch("print");
    let first = stdout(&weft(&["print", "examples/layernorm.weft"]));
    let p = write(&dir, "again.weft", &first);
    let second = stdout(&weft(&["print", &p]));
    assert_eq!(first, second);
}

#[test]
fn run_writes_outputs_that_match_the_interpreter_on_given_inputs() {
    let dir = scratch("run");
    let src = "axis N = 3\nplaceholder x: f32[N]\nplaceholder y: f32[N]\nd = subtract(x, y)\ns = multiply(d, d)\noutput s\n";
    let file = write(&dir, "sq.weft", src);
    let mut g = weft_ir::text::parse(src, "sq.weft").unwrap();
    let n = g.find_axis("N").unwrap();
    let axes = Axes::new([n]).unwrap();
    let x = HostArray::from_vec(axes.clone(), vec![3], vec![1.0f32, 2.0, 4.0]).unwrap();
    let y = HostArray::from_vec(axes, vec![3], vec![0.5f32, 2.0, 1.0]).unwrap();
    let xp = dir.join("x.npy");
    let yp = dir.join("y.npy");
    x.write_npy(&xp).unwrap();
    y.write_npy(&yp).unwrap();
    let out_dir = dir.join("out");
    let o = weft(&[
        "run",
        &file,
        "--input",
        &format!("x={}", xp.display()),
        "--input",
        &format!("y={}", yp.display()),
        "--output-dir",
        &out_dir.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s_axes = g.node(g.find("s").unwrap()).axes.clone();
    let got = HostArray::read_npy(&out_dir.join("s.npy"), s_axes).unwrap();
    assert_eq!(got.to_vec::<f32>().unwrap(), vec![0.25, 0.0, 9.0]);
    // And the seeded generator is deterministic.
    let a = stdout(&weft(&["run", &file, "--seed", "7"]));
    let b = stdout(&weft(&["run", &file, "--seed", "7"]));
    let c = stdout(&weft(&["run", &file, "--seed", "8"]));
    assert_eq!(a, b);
    assert_ne!(a, c);
    g.bind(n, 3).unwrap();
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = scratch("bad");
    // Malformed text: file:line:col and what was expected.
    let f = write(
        &dir,
        "typo.weft",
        "axis N = 3\nplaceholder x: f32[N]\ny = exp(x\n",
    );
    let e = fails(&["check", &f]);
    assert!(e.contains("typo.weft:3:"), "{e}");
    assert!(e.contains("expected"), "{e}");
    // A duplicate axis (an axis at most once per tensor: docs/design.md, "Axes").
    let f = write(&dir, "dup.weft", "axis H = 2\nplaceholder x: f32[H, H]\n");
    let e = fails(&["check", &f]);
    assert!(e.contains("dup.weft:2:") && e.contains('H'), "{e}");
    // Mismatched lengths.
    let f = write(
        &dir,
        "len.weft",
        "axis A = 2\naxis B = 3\nplaceholder x: f32[A]\nz = cast_axes(x, [B])\noutput z\n",
    );
    let e = fails(&["check", &f]);
    assert!(
        e.contains("cast_axes") && e.contains("`A`") && e.contains("`B`"),
        "{e}"
    );
    // An unbound axis length, then a --bind of an axis that does not exist.
    let f = write(
        &dir,
        "unbound.weft",
        "axis N\nplaceholder x: f32[N]\ny = exp(x)\noutput y\n",
    );
    let e = fails(&["run", &f]);
    assert!(e.contains("`N`") && e.contains("--bind"), "{e}");
    let e = fails(&["run", &f, "--bind", "M=3"]);
    assert!(e.contains("`M`"), "{e}");
    let e = fails(&["run", &f, "--bind", "N=zero"]);
    assert!(e.contains("zero"), "{e}");
    // A .npy of the wrong shape, then of the wrong rank, then not a .npy at all.
    let ok = weft(&["run", &f, "--bind", "N=3"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let x4 = dir.join("x4.npy");
    HostArray::from_vec(
        Axes::new([weft_ir::text::parse("axis N = 4\n", "a")
            .unwrap()
            .find_axis("N")
            .unwrap()])
        .unwrap(),
        vec![4],
        vec![1.0f32; 4],
    )
    .unwrap()
    .write_npy(&x4)
    .unwrap();
    let e = fails(&[
        "run",
        &f,
        "--bind",
        "N=3",
        "--input",
        &format!("x={}", x4.display()),
    ]);
    assert!(
        e.contains("`x`") && e.contains("length 4") && e.contains("`N`"),
        "{e}"
    );
    let junk = write(&dir, "junk.npy", "not a numpy file");
    let e = fails(&["run", &f, "--bind", "N=3", "--input", &format!("x={junk}")]);
    assert!(e.contains("junk.npy"), "{e}");
    let e = fails(&["run", &f, "--bind", "N=3", "--input", "nope=x.npy"]);
    assert!(e.contains("`nope`"), "{e}");
    // A missing file.
    let e = fails(&["check", "no/such/file.weft"]);
    assert!(e.contains("no/such/file.weft"), "{e}");
}

/// `weft target` prints the host `Target` in one line, as `explain` and `bench` name it.
#[test]
fn target_prints_the_host_in_one_line() {
    let o = weft(&["target"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = weft::runtime::Target::host().to_string();
    assert_eq!(stdout(&o), format!("{want}\n"));
    assert!(
        want.starts_with("host: ") && want.contains(" f32 lanes; "),
        "{want}"
    );
}

/// The demo's headline table times only graphs scaled to a size where the fused/unfused ratio
/// means something: no row at 0.000 ms, and graphs whose literal values fix their lengths are
/// named as not timed.
#[test]
fn demo_headline_table_has_no_empty_rows() {
    let o = weft(&["demo", "examples"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = out
        .split("== fused vs unfused JIT")
        .nth(1)
        .expect("the demo prints its headline table");
    let rows: Vec<&str> = table.lines().filter(|l| l.contains(" fused ")).collect();
    assert!(rows.len() >= 3, "{table}");
    for row in rows {
        assert!(row.contains("axes at"), "{row}");
        assert!(!row.contains(" 0.000 ms"), "{row}");
    }
    assert!(
        table.contains("not timed") && table.contains("mlp.weft"),
        "{table}"
    );
}

#[test]
fn parse_errors_show_the_line_a_caret_and_a_suggestion() {
    let dir = scratch("caret");
    let f = write(
        &dir,
        "typo.weft",
        "axis Batch = 2\nplaceholder input: f32[Batch]\nout = tahn(input)\noutput out\n",
    );
    let err = fails(&["check", &f]);
    let expected = format!(
        "error: expected an op name (e.g. add, dot, sum, slice; see docs/text-format.md), found `tahn`\n \
         --> {f}:3:7\n  |\n3 | out = tahn(input)\n  |       ^^^^ did you mean `tanh`?\n"
    );
    assert_eq!(err, expected);
    // An undeclared axis, misspelt.
    let f = write(
        &dir,
        "axis.weft",
        "axis Batch = 2\nplaceholder x: f32[Bathc]\n",
    );
    let err = fails(&["check", &f]);
    assert!(err.contains("^^^^^ did you mean `Batch`?"), "{err}");
}

#[test]
fn run_saves_its_inputs_and_runs_again_on_them() {
    let dir = scratch("save-inputs");
    let (ins, first, second) = (dir.join("in"), dir.join("o1"), dir.join("o2"));
    let s = |p: &Path| p.display().to_string();
    let o = weft(&[
        "run",
        "examples/l2.weft",
        "--seed",
        "5",
        "--save-inputs",
        &s(&ins),
        "-o",
        &s(&first),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (x, y) = (s(&ins.join("x.npy")), s(&ins.join("y.npy")));
    let o = weft(&[
        "run",
        "examples/l2.weft",
        "--input",
        &format!("x={x}"),
        "--input",
        &format!("y={y}"),
        // The old spelling of `-o` still works.
        "--output-dir",
        &s(&second),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let read = |d: &Path| std::fs::read(d.join("s.npy")).unwrap();
    assert_eq!(read(&first), read(&second));
    // And the inputs are what the seed drew: another seed gives another output.
    let third = dir.join("o3");
    let o = weft(&["run", "examples/l2.weft", "--seed", "6", "-o", &s(&third)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(read(&first), read(&third));
}

#[test]
fn run_past_the_memory_budget_is_refused_before_its_inputs_are_made() {
    // A run the budget refuses must not first draw (or save) inputs it cannot use: a 60000²
    // input alone is 14 GB, and drawing it was half of what got `weft run` killed.
    let dir = scratch("budget");
    let ins = dir.join("in");
    for backend in ["jit", "unfused", "interp"] {
        let o = Command::new(env!("CARGO_BIN_EXE_weft"))
            .args([
                "run",
                "examples/l2.weft",
                "--backend",
                backend,
                "--save-inputs",
            ])
            .arg(&ins)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("WEFT_MAX_BYTES", "100")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert!(!o.status.success(), "{backend}: {}", stdout(&o));
        assert!(
            err.contains("more than the memory budget of 100 bytes"),
            "{backend}: {err}"
        );
        assert!(!ins.exists(), "{backend}: inputs were saved");
    }
}

#[test]
fn the_command_list_is_one_short_line_per_command() {
    let help = stdout(&weft(&["--help"]));
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(commands.len() >= 8, "{help}");
    for line in commands {
        assert!(line.len() <= 80, "too long: {line}");
    }
    // Value names say what a value looks like.
    let run = stdout(&weft(&["run", "--help"]));
    for part in [
        "<NAME=PATH>",
        "<AXIS=LEN>",
        "-o, --output <DIR>",
        "--save-inputs <DIR>",
    ] {
        assert!(run.contains(part), "{part} missing from:\n{run}");
    }
    let compile = stdout(&weft(&["compile", "--help"]));
    assert!(compile.contains("-o, --output <DIR>"), "{compile}");
}

/// The per-epoch training losses `weft train` printed.
fn epoch_losses(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("epoch "))
        .map(|l| {
            let loss = l.split("loss ").nth(1).unwrap();
            loss.split(',').next().unwrap().trim().parse().unwrap()
        })
        .collect()
}

/// The test accuracy (percent) `weft train` printed for epoch `epoch`.
fn epoch_accuracy(out: &str, epoch: usize) -> f64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("epoch {epoch}:")))
        .unwrap();
    line.rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap()
}

#[test]
fn train_digits_mlp_lowers_the_loss_and_saves_every_variable() {
    let dir = scratch("train");
    let train = [
        "train",
        "examples/digits_mlp.weft",
        "--epochs",
        "2",
        "--batch",
        "50",
        "--seed",
        "3",
    ];
    let save = dir.display().to_string();
    let o = weft(&[&train[..], &["--save", &save]].concat());
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let losses = epoch_losses(&out);
    assert_eq!(losses.len(), 2, "{out}");
    assert!(losses[1] < losses[0] && losses[0] < 2.3, "{out}"); // ln 10 ≈ 2.3 at chance
    assert!(epoch_accuracy(&out, 2) > 85.0, "{out}");
    // Parameters and momentum state, each loadable over its axes.
    for name in ["W1", "b1", "W2", "b2", "vW1", "vb1", "vW2", "vb2"] {
        assert!(
            dir.join(format!("{name}.npy")).is_file(),
            "{name}.npy: {out}"
        );
    }
    let g = weft::ir::text::parse(
        &std::fs::read_to_string("examples/digits_mlp.weft").unwrap(),
        "digits_mlp.weft",
    )
    .unwrap();
    let w1 = g.find("W1").unwrap();
    let saved = HostArray::read_npy(&dir.join("W1.npy"), g.node(w1).axes.clone()).unwrap();
    assert_eq!(saved.shape(), &[64, 128]);
    // Deterministic in the seed: the same run prints the same losses.
    let again = weft(&train);
    assert_eq!(epoch_losses(&stdout(&again)), losses);
}

#[test]
fn train_digits_cnn_from_the_text_format_learns() {
    // Convolutions, a max pool and their gradients written as a .weft file, trained by the CLI.
    let o = weft(&[
        "train",
        "examples/train/digits_cnn.weft",
        "--epochs",
        "3",
        "--seed",
        "0",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let losses = epoch_losses(&out);
    assert_eq!(losses.len(), 3, "{out}");
    assert!(losses[2] < losses[0] && losses[0] < 2.3, "{out}");
    assert!(epoch_accuracy(&out, 3) > 90.0, "{out}");
}

#[test]
fn train_refuses_a_file_that_breaks_its_conventions_naming_the_tensor() {
    let dir = scratch("train-errors");
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/digits_mlp.weft"),
    )
    .unwrap();
    // Each variant still parses (a renamed tensor is renamed where it is used too).
    let cases = [
        (model.replace("i64", "i32"), "`labels`"),
        (model.replace("f32", "f64"), "`x`"),
        (model.replace("axis P = 64", "axis P = 63"), "`x`"),
        (model.replace("loss", "lossy"), "`loss`"),
        (model.replace("logits", "logit"), "`logits`"),
    ];
    for (renamed, named) in cases {
        let file = write(&dir, "m.weft", &renamed);
        let err = fails(&["train", &file, "--epochs", "1"]);
        assert!(
            err.contains("weft train") && err.contains("m.weft") && err.contains(named),
            "{err}"
        );
    }
    // No assign: nothing to train.
    let frozen = &model[..model.find("# backward").unwrap()];
    let err = fails(&[
        "train",
        &write(&dir, "frozen.weft", &format!("{frozen}\noutput loss\n")),
        "--epochs",
        "1",
    ]);
    assert!(err.contains("assign"), "{err}");
    // Options out of range.
    let err = fails(&["train", "examples/digits_mlp.weft", "--batch", "0"]);
    assert!(err.contains("--batch"), "{err}");
    let err = fails(&["train", "examples/digits_mlp.weft", "--test-fraction", "1"]);
    assert!(err.contains("--test-fraction"), "{err}");
    let err = fails(&["train", "examples/digits_mlp.weft", "--test-fraction", "2"]);
    assert!(err.contains("test fraction"), "{err}");
}

/// The messages a new user met (issue 47): each says what is wrong in the user's terms.
#[test]
fn misspellings_nesting_arity_and_empty_benches_get_messages_that_help() {
    let dir = scratch("help");
    let f = write(
        &dir,
        "batch.weft",
        "axis Batch\naxis C = 2\nplaceholder input: f32[Batch, C]\ny = exp(input)\noutput y\n",
    );
    // A misspelled axis or placeholder on the command line: did you mean.
    let e = fails(&["run", &f, "--bind", "Bacth=3"]);
    assert!(e.contains("did you mean `Batch`?"), "{e}");
    let e = fails(&["run", &f, "--bind", "Batch=2", "--input", "inptu=x.npy"]);
    assert!(
        e.contains("did you mean `input`?") && e.contains("placeholders: input"),
        "{e}"
    );
    // A length is a whole number, 0 included; an empty graph runs but has nothing to time.
    let e = fails(&["run", &f, "--bind", "Batch=abc"]);
    assert!(e.contains("a whole number, 0 or more"), "{e}");
    let ok = weft(&["run", &f, "--bind", "Batch=0"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let e = fails(&["bench", &f, "--bind", "Batch=0"]);
    assert!(
        e.contains("nothing to time") && e.contains("Batch=0"),
        "{e}"
    );
    // A nested call: ops do not nest, and the message says so (not "not declared").
    let f = write(
        &dir,
        "nested.weft",
        "axis N = 3\nplaceholder x: f32[N]\nm = max(x, [N])\ny = exp(subtract(x, m))\n",
    );
    let e = fails(&["check", &f]);
    assert!(
        e.contains("ops do not nest") && e.contains("`t = subtract(...)`"),
        "{e}"
    );
    assert!(!e.contains("not declared"), "{e}");
    // One operand for a binary op: an arity message naming the op.
    let f = write(
        &dir,
        "arity.weft",
        "axis N = 3\nplaceholder a: f32[N]\ny = add(a)\n",
    );
    let e = fails(&["check", &f]);
    assert!(e.contains("`add` takes two"), "{e}");
}

#[test]
fn profile_times_every_step_of_the_program_and_lists_the_slowest() {
    let o = weft(&[
        "profile",
        "examples/layernorm.weft",
        "--rounds",
        "2",
        "--top",
        "50",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("# by kind") && out.contains("JIT kernels"),
        "{out}"
    );
    // One line per step of the program, the same steps `weft compile`'s `steps` stage lists.
    let steps = out.lines().filter(|l| l.starts_with("step ")).count();
    let head = out.lines().nth(1).unwrap_or_default();
    assert!(head.starts_with(&format!("{steps} steps")), "{out}");
    // Unfused: one kernel per op, so more steps than fused.
    let o = weft(&[
        "profile",
        "examples/layernorm.weft",
        "--unfused",
        "--top",
        "500",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let unfused = stdout(&o)
        .lines()
        .filter(|l| l.starts_with("step "))
        .count();
    assert!(unfused > steps, "unfused {unfused} steps, fused {steps}");
    fails(&["profile", "examples/no-such-file.weft"]);
}

#[test]
fn import_writes_an_onnx_models_graph_as_text_and_refuses_a_foreign_file() {
    let dir = scratch("import");
    let bogus = write(
        &dir,
        "bogus.onnx",
        "this is not a protobuf message at all \u{1}\u{2}",
    );
    let err = fails(&["import", &bogus]);
    assert!(err.contains("bogus.onnx"), "{err}");
    let err = fails(&["run", &bogus]);
    assert!(
        err.contains("not an ONNX model") || err.contains("bogus.onnx"),
        "{err}"
    );
}
