//! GEMM epilogue fusion (weft_compiler::epilogue, weft_runtime::GemmEpilogue): a GEMM call and
//! the kernel after it run as one step, the kernel on each row block of C right after the
//! block is computed. Against the interpreter's oracle, and bit-identical to the two separate
//! steps (`JitOptions::epilogue: false`) with 1, 2 and 3 threads; the cases the check
//! must refuse (an epilogue reading C by columns, an epilogue whose output reuses an operand's
//! buffer) keep two steps and stay correct; `weft explain` and the dump name the fused step.

mod jit_common;

use jit_common::{compare, explain, jit_executable, mlp_layer, references, run_jit};
use weft::prelude::*;
use weft_compiler::gemm::GemmOptions;
use weft_compiler::lower::LowerOptions;
use weft_oracle::{Run, Tolerance};

/// Every dot of at least 2 rows and columns on the GEMM, blocks of 16 rows (so small
/// matrices have several), every kernel of 2 or more outer points parallel (only a parallel
/// kernel can run on row blocks), `threads` threads, epilogue fusion on or off.
fn options(threads: usize, epilogue: bool) -> JitOptions {
    JitOptions {
        threads: Some(threads),
        lower: LowerOptions {
            parallel_min_points: 1,
            ..LowerOptions::default()
        },
        gemm: Some(GemmOptions {
            min_work: 1,
            min_side: 2,
            min_block: 16,
            ..GemmOptions::default()
        }),
        epilogue,
        ..JitOptions::default()
    }
}

/// Fused steps in `weft explain`'s listing.
fn fused_steps(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("fused step: gemm @"))
        .count()
}

/// Runs `g`'s outputs twice (`call`, then `call_into` over shifted inputs and garbage outputs).
fn run(g: &Graph, inputs: &[HostArray], options: JitOptions) -> Run {
    run_jit(g, g.outputs(), inputs, options).unwrap()
}

/// `g` with epilogue fusion on, for 1, 2 and 3 threads, against the interpreter's oracle and
/// bit for bit against fusion off with as many threads; asserts `fused` fused steps with 2
/// threads.
fn agree(g: &Graph, fused: usize) {
    let text = explain(g, &options(2, true));
    assert_eq!(fused_steps(&text), fused, "{text}");
    agree_fused_or_not(g);
}

/// `g` with epilogue fusion on, for 1, 2 and 3 threads, against the interpreter's oracle and
/// bit for bit against fusion off with as many threads, however many steps fuse.
fn agree_fused_or_not(g: &Graph) {
    let ps = g.placeholders();
    let inputs = weft_oracle::random_inputs(g, &ps, 5, false);
    let tol = Tolerance::for_graph(g);
    let refs = references(g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
    for threads in [1, 2, 3] {
        let apart = run(g, &inputs, options(threads, false));
        let got = run(g, &inputs, options(threads, true));
        if let Err(m) = compare(&got, &refs, &tol) {
            panic!("{threads} threads: {m}\n{}", weft::ir::text::print(g));
        }
        assert_eq!(got.0, apart.0, "{threads} threads: fused and apart differ");
    }
}

/// `relu(X·W + b)`, X over `[B, I]`, W over `[I, O]`.
fn mlp(b: usize, i: usize, o: usize, dtype: DType) -> Graph {
    mlp_layer(b, i, o, dtype, false, false)
}

#[test]
fn bias_and_relu_run_on_each_row_block() {
    for dtype in [DType::F32, DType::F64] {
        for (b, i, o) in [(100, 37, 50), (17, 5, 3), (64, 64, 64), (130, 200, 33)] {
            agree(&mlp(b, i, o, dtype), 1);
        }
        // C wider than tall, 90 columns: the GEMM cuts them into blocks of 48 (2 threads),
        // which the epilogue's strips cannot match; two steps.
        agree(&mlp(20, 8, 90, dtype), 0);
    }
}

#[test]
fn a_row_softmax_epilogue_reduces_each_row_in_its_block() {
    // softmax over O of X·W: max, exp, sum and divide per row — reads only the row's own
    // elements of C, so it fuses. (48 rows: a row kernel's parallel loop runs over at most
    // `LowerOptions::parallel_max_chunks` chunks of rows, and only one row per iteration fits
    // the row-block check.)
    agree(&softmax_layer(48, 24, 40), 1);
}

/// softmax over O of X·W, X over `[B, I]`, W over `[I, O]`, f32.
fn softmax_layer(b: usize, i: usize, o: usize) -> Graph {
    let mut g = Graph::new();
    let (ba, ia, oa) = (
        g.axis("B", b).unwrap(),
        g.axis("I", i).unwrap(),
        g.axis("O", o).unwrap(),
    );
    let x = g.placeholder("X", &[ba, ia], DType::F32).unwrap();
    let w = g.placeholder("W", &[ia, oa], DType::F32).unwrap();
    let h = g.dot(x, w).unwrap();
    let m = g.reduce(weft::ReduceOp::Max, h, &[oa], None).unwrap();
    let z = g.binary(weft::BinaryOp::Subtract, h, m).unwrap();
    let e = g.unary(weft::UnaryOp::Exp, z).unwrap();
    let s = g.reduce(weft::ReduceOp::Sum, e, &[oa], None).unwrap();
    let p = g.binary(weft::BinaryOp::Divide, e, s).unwrap();
    g.mark_output(p).unwrap();
    g
}

/// `gelu(X·W + b)` in tanh form (the dense_gelu workload) with X over `[B, I]`.
fn gelu_layer(b: usize, i: usize, o: usize, dtype: DType) -> Graph {
    let src = format!(
        "axis B = {b}\naxis I = {i}\naxis O = {o}\nplaceholder X: {dtype}[B, I]\n\
         placeholder W: {dtype}[I, O]\nplaceholder b: {dtype}[O]\n\
         constant half: {dtype}[] = 0.5\nconstant one: {dtype}[] = 1\n\
         constant c: {dtype}[] = 0.7978845608\nconstant a: {dtype}[] = 0.044715\n\
         h = dot(X, W)\nx = add(h, b)\nx2 = square(x)\nx3 = multiply(x2, x)\n\
         ax3 = multiply(x3, a)\ninner = add(x, ax3)\nz = multiply(inner, c)\nt = tanh(z)\n\
         onet = add(t, one)\nhx = multiply(x, half)\nout = multiply(hx, onet)\noutput out\n"
    );
    weft::ir::text::parse(&src, "gelu.weft").unwrap()
}

#[test]
fn wide_results_run_the_epilogue_on_each_column_block() {
    // C wider than tall: the GEMM cuts its columns over the threads, and the kernel after
    // it, strip-mined, runs on each column block right after it is computed — bias and relu,
    // and gelu with its tanh (a span routine splitting the strip's loop).
    for dtype in [DType::F32, DType::F64] {
        agree(&mlp(20, 8, 96, dtype), 1);
        agree(&gelu_layer(24, 16, 192, dtype), 1);
    }
    let text = explain(&gelu_layer(24, 16, 192, DType::F32), &options(2, true));
    assert!(
        text.contains("over the same column blocks")
            && text.contains("columns in strips of 96, one per column block"),
        "{text}"
    );
}

#[test]
fn random_layers_fuse_in_row_or_column_blocks_with_the_bits_of_two_steps() {
    // Shapes tall and wide, column counts the blocks divide and not, f32 and f64, bias + relu
    // and gelu: whatever fuses gives the two steps' bits and the interpreter's values.
    let mut r = weft_ir::perturb::SplitMix(2026);
    let (mut rows, mut columns) = (0, 0);
    for case in 0..24 {
        let dtype = if r.chance(50) { DType::F32 } else { DType::F64 };
        let (b, i) = (2 + r.below(60), 1 + r.below(40));
        let o = if r.chance(50) {
            16 * (1 + r.below(12))
        } else {
            2 + r.below(150)
        };
        let g = if case % 2 == 0 {
            mlp(b, i, o, dtype)
        } else {
            gelu_layer(b, i, o, dtype)
        };
        let text = explain(&g, &options(2, true));
        rows += text.matches("over the same row blocks").count();
        columns += text.matches("over the same column blocks").count();
        agree_fused_or_not(&g);
    }
    assert!(
        rows >= 2 && columns >= 2,
        "{rows} layers fused in row blocks, {columns} in column blocks, of 24"
    );
}

#[test]
fn a_row_epilogue_on_column_blocks_stays_a_separate_step() {
    // softmax over O of a wide X·W reads whole rows of C: not an elementwise nest, so it
    // cannot run block by block; two steps, and the reason is named.
    let g = softmax_layer(20, 12, 96);
    let text = explain(&g, &options(2, true));
    assert!(
        text.contains("C is cut into column blocks, and kernel @k1 is not a nest of two loops"),
        "{text}"
    );
    agree(&g, 0);
}

#[test]
fn an_epilogue_reading_c_by_columns_stays_a_separate_step() {
    // `h` over (B, O), read as (O, B) by an add whose first operand is over (O, B): the
    // kernel's parallel loop runs over O, so iteration p reads column p of C, which every
    // block writes. B = O, so the extents match and only the footprint check refuses.
    let mut g = Graph::new();
    let (ba, ia, oa) = (
        g.axis("B", 48).unwrap(),
        g.axis("I", 20).unwrap(),
        g.axis("O", 48).unwrap(),
    );
    let x = g.placeholder("X", &[ba, ia], DType::F32).unwrap();
    let w = g.placeholder("W", &[ia, oa], DType::F32).unwrap();
    let c = g.placeholder("C", &[oa, ba], DType::F32).unwrap();
    let h = g.dot(x, w).unwrap();
    let t = g.binary(weft::BinaryOp::Add, c, h).unwrap();
    let out = g.unary(weft::UnaryOp::Tanh, t).unwrap();
    g.mark_output(out).unwrap();
    let text = explain(&g, &options(2, true));
    assert!(
        text.contains("the next kernel runs after the whole call"),
        "the refusal is named:\n{text}"
    );
    agree(&g, 0);
}

#[test]
fn a_chain_of_layers_overwrites_a_dead_activation_row_by_row() {
    // relu(relu(relu(X·W1 + b1)·W2 + b2)·W3 + b3): layer 2's epilogue output is given layer
    // 1's dead activation buffer, which layer 2's GEMM reads as A. Each work item reads A's
    // rows of its block only, before its epilogue overwrites them, so all three fuse.
    let mut g = Graph::new();
    let n = 40;
    let (ba, i0, i1, i2, i3) = (
        g.axis("B", 96).unwrap(),
        g.axis("I0", n).unwrap(),
        g.axis("I1", n).unwrap(),
        g.axis("I2", n).unwrap(),
        g.axis("I3", n).unwrap(),
    );
    let mut a = g.placeholder("X", &[ba, i0], DType::F32).unwrap();
    for (k, (from, to)) in [(i0, i1), (i1, i2), (i2, i3)].into_iter().enumerate() {
        let w = g
            .placeholder(&format!("W{k}"), &[from, to], DType::F32)
            .unwrap();
        let b = g.placeholder(&format!("b{k}"), &[to], DType::F32).unwrap();
        let h = g.dot(a, w).unwrap();
        let hb = g.binary(weft::BinaryOp::Add, h, b).unwrap();
        a = g.unary(weft::UnaryOp::Relu, hb).unwrap();
    }
    g.mark_output(a).unwrap();
    // The plan does share: layer 2's output buffer is layer 1's.
    let plan = jit_executable(&g, &options(2, true))
        .compiled_plan()
        .buffers
        .display(
            &jit_executable(&g, &options(2, true))
                .compiled_plan()
                .simplified
                .graph,
        );
    assert!(plan.contains("%5") && plan.contains("%10"), "{plan}");
    agree(&g, 3);
}

#[test]
fn an_epilogue_output_in_the_buffer_of_b_stays_a_separate_step() {
    // B = relu(W) is computed, so stored in a planned buffer, dead after the GEMM; the
    // epilogue's output (48 x 48, no larger than B's 64 x 48) is given that buffer. Every
    // work item reads all of B, so a block's epilogue must not write it while another
    // block's GEMM reads it: the check refuses, and the result is still right.
    let mut g = Graph::new();
    let (ba, ia, oa, pa) = (
        g.axis("B", 48).unwrap(),
        g.axis("I", 64).unwrap(),
        g.axis("O", 48).unwrap(),
        g.axis("P", 40).unwrap(),
    );
    let x = g.placeholder("X", &[ba, ia], DType::F32).unwrap();
    let w = g.placeholder("W", &[ia, oa], DType::F32).unwrap();
    let w2 = g.placeholder("W2", &[oa, pa], DType::F32).unwrap();
    let wr = g.unary(weft::UnaryOp::Relu, w).unwrap();
    let h = g.dot(x, wr).unwrap();
    let a = g.unary(weft::UnaryOp::Tanh, h).unwrap();
    let out = g.dot(a, w2).unwrap();
    g.mark_output(out).unwrap();
    // `h` stays live after the epilogue (so the epilogue cannot write in place).
    let s = g.reduce(weft::ReduceOp::Sum, h, &[oa], None).unwrap();
    let s = g.unary(weft::UnaryOp::Exp, s).unwrap();
    g.mark_output(s).unwrap();
    let text = explain(&g, &options(2, true));
    assert!(
        text.contains("is written and shares memory with the GEMM's operands"),
        "{text}"
    );
    // The second dot's epilogue (the sum and exp of `h`, row by row) still fuses.
    agree(&g, 1);
}

#[test]
fn explain_and_the_dump_show_the_gemm_and_its_epilogue_as_one_step() {
    // 512 x 256 results: the epilogue is large enough to be parallel by default.
    let g = mlp(512, 96, 256, DType::F32);
    let exe = jit_executable(
        &g,
        &JitOptions {
            threads: Some(2),
            ..JitOptions::default()
        },
    );
    let text = weft_compiler::explain::explain(&exe);
    assert!(
        text.contains("fused step: gemm @%3 then epilogue kernel @k1 over the same row blocks"),
        "{text}"
    );
    assert!(
        text.contains("each work item runs kernel @k1 on its rows right after computing them"),
        "{text}"
    );
    assert!(text.contains("2 blocks of 256 rows"), "{text}");
    let files = weft_compiler::dump::dump_stages(&exe.stages(&g)).unwrap();
    let steps = files.iter().find(|f| f.stage == "steps").unwrap();
    assert_eq!(steps.contents.lines().count(), 1, "{}", steps.contents);
    assert!(
        steps
            .contents
            .contains("; then epilogue kernel @k1 over the same row blocks"),
        "{}",
        steps.contents
    );
    // Off: two steps, the GEMM's own blocks.
    let apart = jit_executable(
        &g,
        &JitOptions {
            threads: Some(2),
            epilogue: false,
            ..JitOptions::default()
        },
    );
    let text = weft_compiler::explain::explain(&apart);
    assert_eq!(fused_steps(&text), 0, "{text}");
    assert!(text.contains("kernel @k1:"), "{text}");
}

/// A convolution over a batch of images is one GEMM call per image (batch axis `N`); with at
/// least as many images as threads each image is one block, so `relu(y + bias)` runs on each
/// image's result as its epilogue (and its output, read by the next product, never takes the
/// buffer of the padded images still being read); every thread count gets the bits of the
/// separate steps.
#[test]
fn a_batched_convolution_runs_its_epilogue_on_each_image() {
    let text = "axis N = 8\naxis C = 16 : Channel\naxis H = 10 : Height\naxis W = 10 : Width\n\
        axis O = 32 : Channelout\naxis R = 3 : Height\naxis S = 3 : Width\n\
        placeholder x: f32[N, C, H, W]\nplaceholder w: f32[O, C, R, S]\n\
        axis P = 16\nplaceholder b: f32[O]\nplaceholder v: f32[O, P]\n\
        y = convolution(x, w, Height=(pad=(1, 1)), Width=(pad=(1, 1)))\n\
        t = add(y, b)\nz = relu(t)\nq = dot(z, v)\noutput q\n";
    let g = weft_ir::text::parse(text, "batched_conv.weft").unwrap();
    let text = explain(&g, &options(2, true));
    assert!(text.contains("8 work items"), "{text}");
    agree(&g, 1);
}
