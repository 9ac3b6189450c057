//! The plan as data: `Computation::plan()` is the `weft_runtime::Program` the runtime runs —
//! storages, steps by typed id, and each input, output, state read and assign with its binding
//! and, when copied, why — read from the computation without compiling it again; its text form
//! is the dump's `program` stage, and `Computation::explain()` is `weft explain` of the same
//! executable.

use weft::prelude::*;
use weft::runtime::program::{Binding, Step, StorageKind};

fn parse(text: &str) -> Graph {
    weft::ir::text::parse(text, "program.weft").unwrap()
}

fn named(g: &Graph, names: &[&str]) -> Vec<NodeId> {
    names.iter().map(|n| g.find(n).unwrap()).collect()
}

const TRAIN: &str = "
axis R = 33
axis C = 17
placeholder a: f32[R, C]
variable v: f32[R, C] = 0.25
constant two: f32[] = 2.0
s = add(a, v)
n = assign(v, s)
t = multiply(s, two)
output n, t
";

#[test]
fn the_program_says_how_each_array_moves_and_why_it_is_copied() {
    let g = parse(TRAIN);
    let (outs, ps) = (named(&g, &["n", "t"]), named(&g, &["a"]));
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let p = c.plan().expect("a JIT computation has a program");
    assert_eq!(p.inputs.len(), 1);
    assert_eq!(p.inputs[0].binding, Binding::InPlace, "{p}");
    assert_eq!(p.state_reads.len(), 1);
    assert_eq!(p.state_reads[0].binding, Binding::InPlace, "{p}");
    assert_eq!(p.assigns.len(), 1);
    assert_eq!(p.assigns[0].binding, Binding::InPlace, "swapped: {p}");
    // Output `n` is the assigned value itself: copied from the spare, and the plan says why.
    let n = &p.outputs[0];
    assert_eq!(
        n.binding,
        Binding::Copy("an assigned value shares its storage"),
        "{p}"
    );
    assert_eq!(p.outputs[1].binding, Binding::InPlace, "{p}");
    // Every step names an entry of its table; every kernel argument a storage.
    for step in &p.steps {
        if let Step::Kernel(k) = step {
            assert!(p.kernels[k.index()]
                .args
                .iter()
                .all(|s| s.index() < p.storages.len()));
        }
    }
    let text = p.to_string();
    for section in [
        "# storages",
        "# kernels",
        "# steps",
        "# inputs",
        "# outputs",
        "# state",
    ] {
        assert!(text.contains(section), "{section} in\n{text}");
    }
    assert!(
        text.contains("copy (an assigned value shares its storage)"),
        "{text}"
    );
    // explain reads the same executable.
    let explain = c.explain().unwrap();
    assert!(explain.contains(&p.bindings_text()), "{explain}");
}

#[test]
fn an_input_in_another_layout_is_copied_and_the_plan_says_so() {
    let g = parse(
        "
axis R = 5
axis C = 7
placeholder a: f32[R, C]
s = exp(a)
output s
",
    );
    let ps = named(&g, &["a"]);
    let order: Vec<Axis> = g.node(ps[0]).axes.iter().rev().copied().collect();
    let options = JitOptions {
        layouts: vec![(ps[0], order)],
        ..JitOptions::default()
    };
    let t = Transformer::with_jit_options(g.clone(), options).unwrap();
    let c = t.computation(&named(&g, &["s"]), &ps).unwrap();
    let p = c.plan().unwrap();
    assert_eq!(
        p.inputs[0].binding,
        Binding::Copy("stored in another axes order")
    );
    assert!(p.inputs[0].order.is_some());
}

#[test]
fn softmax_exponentials_held_a_block_at_a_time_take_no_storage() {
    let g = parse(
        "
axis R = 4096
axis C = 64
placeholder a: f32[R, C]
m = max(a, [C])
shifted = subtract(a, m)
e = exp(shifted)
total = sum(e, [C])
out = divide(e, total)
output out
",
    );
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t
        .computation(&named(&g, &["out"]), &named(&g, &["a"]))
        .unwrap();
    let p = c.plan().unwrap();
    let jit = c.jit().unwrap();
    // Whatever the schedule, an elided storage is empty and no step binds it.
    for (i, s) in p.storages.iter().enumerate() {
        if s.kind == StorageKind::Elided {
            assert_eq!(s.bytes(), 0);
            assert!(p
                .kernels
                .iter()
                .all(|k| k.args.iter().all(|a| a.index() != i)));
        }
    }
    assert_eq!(p.kernels.len(), jit.lowered().len());
    assert_eq!(
        p.workspace_bytes(),
        p.storages.iter().map(|s| s.bytes()).sum::<u64>()
    );
}

#[test]
fn the_interpreter_and_call_time_lengths_have_no_program() {
    let g = parse(
        "
axis N = 3
placeholder x: f64[N]
y = tanh(x)
output y
",
    );
    let t = Transformer::new(g.clone(), Backend::Interpreter).unwrap();
    let c = t
        .computation(&named(&g, &["y"]), &named(&g, &["x"]))
        .unwrap();
    assert!(c.plan().is_none() && c.explain().is_none());
    let b = GraphBuilder::new();
    let batch = b.axis_unbound("B").unwrap();
    let x = b.placeholder("x", &[batch], DType::F32).unwrap();
    let (x, y) = (x.id(), x.relu().unwrap().id());
    let t = Transformer::new(b.finish(), Backend::Jit).unwrap();
    assert!(t.computation(&[y], &[x]).unwrap().plan().is_none());
}

#[test]
fn a_program_with_an_id_or_a_home_out_of_range_is_refused_not_run() {
    let g = parse(TRAIN);
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t
        .computation(&named(&g, &["n", "t"]), &named(&g, &["a"]))
        .unwrap();
    let good = c.plan().unwrap();
    assert_eq!(good.check(), Ok(()));
    let past = weft::runtime::program::StorageId::new(good.storages.len());
    let mut bad = good.clone();
    bad.kernels[0].args[0] = past;
    assert!(bad.check().unwrap_err().contains("is not a storage"));
    let mut bad = good.clone();
    bad.outputs[1].home.strides[0] *= 2;
    let why = bad.check().unwrap_err();
    assert!(why.contains("reaches elements"), "{why}");
    let mut bad = good.clone();
    bad.outputs[1].home.dtype = DType::F64;
    assert!(bad.check().unwrap_err().contains("storage"));
}
