//! The loop IR the JIT compiles for the bundled examples (snapshots), and the properties the
//! issue asks of it: L2, softmax and layernorm are one kernel each, and L2 stores no `x − y`.

use std::path::Path;
use weft_compiler::{compile_plan, lower_plan, LowerOptions, PlanOptions};
use weft_ir::Graph;

fn example(name: &str) -> Graph {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(format!("{name}.weft"));
    let src = std::fs::read_to_string(&path).unwrap();
    weft_ir::text::parse(&src, &path.display().to_string()).unwrap()
}

/// The lowered kernels of an example as text, after checking it is one kernel.
fn one_kernel(name: &str) -> String {
    let g = example(name);
    let plan = compile_plan(&g, &PlanOptions::default()).unwrap();
    let kernels = lower_plan(&plan, &LowerOptions::default()).unwrap();
    assert_eq!(kernels.len(), 1, "{name} should be one kernel");
    let text = kernels[0].kernel.to_string();
    // The printed form reads back as the same kernel.
    let back = weft_ir::loop_ir::parse_kernel(name, &text).unwrap();
    assert_eq!(back.to_string(), text);
    text
}

#[test]
fn l2_is_one_kernel_with_no_buffer_for_x_minus_y() {
    let g = example("l2");
    let plan = compile_plan(&g, &PlanOptions::default()).unwrap();
    let t = g.find("t").unwrap();
    let t = plan.map().get(t);
    assert!(
        t.is_none() || plan.buffers.tensor_of(t.unwrap()).is_none(),
        "x - y must not be stored:\n{}",
        plan.buffers.display(&plan.simplified.graph)
    );
    insta::assert_snapshot!(one_kernel("l2"));
}

#[test]
fn softmax_is_one_kernel() {
    insta::assert_snapshot!(one_kernel("softmax"));
}

#[test]
fn layernorm_is_one_kernel() {
    insta::assert_snapshot!(one_kernel("layernorm"));
}

/// The lowered kernel of softmax at `rows × cols`.
fn softmax_kernel(rows: usize, cols: usize) -> weft_ir::loop_ir::Kernel {
    let mut g = example("softmax");
    let (r, c) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
    g.bind(r, rows).unwrap();
    g.bind(c, cols).unwrap();
    let plan = compile_plan(&g, &PlanOptions::default()).unwrap();
    let mut kernels = lower_plan(&plan, &LowerOptions::default()).unwrap();
    assert_eq!(kernels.len(), 1);
    kernels.remove(0).kernel
}

#[test]
fn large_row_kernels_are_parallel_over_chunks_of_rows_with_one_scratch_row_each() {
    // 256 rows: 64 parallel chunks of 4 rows; the row scratch holds one row per chunk.
    for (rows, cols, chunks) in [
        (256, 300, 64),
        (4096, 4096, 64),
        (300, 301, 60),
        (6, 40000, 6),
    ] {
        let k = softmax_kernel(rows, cols);
        let par = k.parallel_loop().expect("a parallel outer loop");
        assert_eq!(k.loops[par].extent, chunks as u64, "{rows} x {cols}");
        assert!(
            k.buffers
                .values()
                .any(|b| b.name.starts_with("rows_") && b.len == (chunks * cols) as u64),
            "{rows} x {cols}:\n{k}"
        );
    }
    // A prime row count has no chunking: the kernel stays serial rather than take a scratch
    // row per row.
    assert!(softmax_kernel(4099, 4096).parallel_loop().is_none());
}

#[test]
fn a_dot_contiguous_along_its_result_is_register_blocked_over_the_result() {
    // X[B, I]·W[I, O]: W is contiguous along O, not along the contracted I, so the O loop is
    // vectorised and unrolled (16 outputs in accumulators per step) around the I loop.
    let src = "axis B = 8\naxis I = 64\naxis O = 64\nplaceholder x: f32[B, I]\n\
               placeholder w: f32[I, O]\nh = dot(x, w)\noutput h\n";
    let g = weft_ir::text::parse(src, "dot.weft").unwrap();
    let plan = compile_plan(&g, &PlanOptions::default()).unwrap();
    let lowered = &lower_plan(&plan, &LowerOptions::default()).unwrap()[0];
    assert!(
        lowered
            .notes
            .iter()
            .any(|n| n.starts_with("register-blocked")),
        "{:?}",
        lowered.notes
    );
    let k = &lowered.kernel;
    let text = k.to_string();
    let blocked = text
        .lines()
        .position(|l| l.contains("in 0..64 vectorize unroll(4)"))
        .unwrap_or_else(|| panic!("no blocked result loop:\n{text}"));
    let reduction = text
        .lines()
        .position(|l| l.contains("loop") && l.contains("in 0..64 {"))
        .unwrap_or_else(|| panic!("no scalar reduction loop:\n{text}"));
    assert!(
        blocked < reduction,
        "the reduction runs inside the blocked loop:\n{text}"
    );
}

/// A chain of `n` cheap elementwise ops over a vector (one reduction-free line of work).
fn chain(n: usize) -> Graph {
    let mut s = String::from("axis N = 64\nplaceholder x: f32[N]\nconstant h: f32[] = 0.5\n");
    let mut prev = "x".to_string();
    for i in 0..n {
        let op = ["add", "multiply", "subtract", "maximum"][i % 4];
        s += &format!("v{i} = {op}({prev}, h)\n");
        prev = format!("v{i}");
    }
    s += &format!("output {prev}\n");
    weft_ir::text::parse(&s, "chain.weft").unwrap()
}

/// Every fused kernel computes at most `MAX_KERNEL_NODES` ops: a 2,000-op chain splits into
/// kernels of at most that many (code generation's cost is superlinear in a function's size;
/// docs/benchmarks.md, "Compile time at scale"), while a 100-op chain stays one kernel.
#[test]
fn a_long_chain_splits_into_kernels_of_bounded_size() {
    use weft_compiler::passes::fusion::MAX_KERNEL_NODES;
    let short = compile_plan(&chain(100), &PlanOptions::default()).unwrap();
    assert_eq!(short.fusion.groups.len(), 1);
    let long = compile_plan(&chain(2000), &PlanOptions::default()).unwrap();
    let sizes: Vec<usize> = long.fusion.groups.iter().map(|g| g.nodes.len()).collect();
    assert!(sizes.iter().all(|n| *n <= MAX_KERNEL_NODES), "{sizes:?}");
    assert!(sizes.len() >= 2000 / MAX_KERNEL_NODES, "{sizes:?}");
    assert!(sizes.len() <= 2 * 2000 / MAX_KERNEL_NODES + 1, "{sizes:?}");
}
