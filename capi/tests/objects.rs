//! Kernels compiled into an object file (`JitExecutable::emit_object`), linked by the system C
//! compiler into a shared library against libweft_c.so (which exports the runtime functions
//! kernels call), loaded, and run as the program's kernels: the same bits as the JIT's code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use weft_api::prelude::*;
use weft_api::runtime::{
    CompiledKernel, Executable, KernelCode, KernelSignature, NativeExecutable, Plan, State,
};

/// A loaded library and the address of one of its kernels: the code's owner.
struct Loaded {
    _library: Arc<libloading::Library>,
    entry: usize,
}

impl KernelCode for Loaded {
    fn entry_address(&self) -> *const u8 {
        self.entry as *const u8
    }
    fn code_size(&self) -> usize {
        0
    }
}

fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent().expect("target/<profile>/deps").to_path_buf()
}

/// `bytes` (an object file) linked into a shared library in a directory of its own.
fn link(bytes: &[u8], name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let (object, library) = (dir.join("kernels.o"), dir.join("libkernels.so"));
    std::fs::write(&object, bytes).unwrap();
    let deps = deps_dir();
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg("-shared")
        .arg(&object)
        .arg("-o")
        .arg(&library)
        // By path (no soname): this very file, whatever LD_LIBRARY_PATH says.
        .arg(deps.join("libweft_c.so"))
        .arg("-Wl,--no-undefined")
        .status()
        .expect("the system C compiler (cc) runs");
    assert!(status.success(), "cc could not link the kernels' object");
    library
}

/// Inputs for `graph`'s placeholders: positive f32s, varied.
fn inputs(graph: &Graph) -> Vec<HostArray> {
    graph
        .placeholders()
        .iter()
        .map(|&p| {
            let node = graph.node(p);
            let shape = graph.shape_of(&node.axes).unwrap();
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|e| 0.25 + (e * 37 % 101) as f32 / 50.0)
                .collect();
            HostArray::from_vec(node.axes.clone(), shape, data).unwrap()
        })
        .collect()
}

const GRAPH: &str = "
axis R = 48
axis C = 300
placeholder x: f32[R, C]
placeholder y: f32[R, C]
m = max(x, [C])
z = subtract(x, m)
e = exp(z)
s = sum(e, [C])
sm = divide(e, s)
p = power(y, x)
t = tanh(y)
sn = sin(x)
a = add(p, sn)
b = multiply(a, t)
l = log(y)
c = sigmoid(l)
output sm, b, c
";

#[test]
fn kernels_from_an_object_file_compute_the_jits_bits() {
    let graph = weft_api::ir::text::parse(GRAPH, "objects.weft").unwrap();
    let (outputs, placeholders) = (graph.outputs().to_vec(), graph.placeholders());
    let t = Transformer::new(graph.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outputs, &placeholders).unwrap();
    let jit = c.jit().expect("the JIT's executable");
    let object = jit.emit_object("weft_objects_test").unwrap();
    assert_eq!(object.symbols.len(), jit.lowered().len());
    assert!(object.code_size > 0);

    let library =
        Arc::new(unsafe { libloading::Library::new(link(&object.bytes, "objects")) }.unwrap());
    let code: Vec<CompiledKernel> = jit
        .lowered()
        .iter()
        .zip(&object.symbols)
        .map(|(lk, symbol)| {
            // SAFETY: the symbol is a function the object defines.
            let f: libloading::Symbol<'_, unsafe extern "C" fn()> =
                unsafe { library.get(symbol.as_bytes()) }.unwrap();
            let loaded = Loaded {
                _library: Arc::clone(&library),
                entry: *f as usize,
            };
            // SAFETY: the function is `lk.kernel` translated as the JIT translates it, with the
            // kernel entry signature; `loaded` keeps its library mapped.
            unsafe { CompiledKernel::from_code(KernelSignature::of(&lk.kernel), Box::new(loaded)) }
                .unwrap()
        })
        .collect();
    let native = jit.native();
    let from_object = NativeExecutable::new(
        Arc::new(graph.clone()),
        Plan::new(&graph, &outputs, &placeholders).unwrap(),
        native.program().clone(),
        code,
        Arc::clone(native.pool()),
    )
    .unwrap();
    let x = inputs(&graph);
    let want = c.call(&x).unwrap();
    let got = from_object.run(&x, &mut State::default()).unwrap();
    for (w, g) in want.iter().zip(&got) {
        let bits = |a: &HostArray| -> Vec<u32> {
            a.to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(w), bits(g));
    }
}
