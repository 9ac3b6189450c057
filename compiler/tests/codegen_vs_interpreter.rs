//! Code generation against the loop-IR interpreter: each hand-written kernel runs through the
//! JIT (vectorised and scalar, single-threaded and on thread pools) and through
//! `weft_ir::loop_ir::interpret` on the same pseudo-random inputs. Integers and `bool` must
//! match exactly; floats within a tolerance covering polynomial error and reduction order.

use std::sync::Arc;

use weft_compiler::codegen::{CodegenOptions, JitCompiler};
use weft_ir::loop_ir::{interpret, parse_kernel, BufferData, Kernel, ScalarType};
use weft_runtime::{DeviceBufferReference, DeviceBufferStorage, ThreadPool};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random_buffer(rng: &mut Rng, ty: ScalarType, len: usize, range: f64) -> BufferData {
    let mut f = || (rng.unit() * 2.0 - 1.0) * range;
    match ty {
        ScalarType::F32 => BufferData::F32((0..len).map(|_| f() as f32).collect()),
        ScalarType::F64 => BufferData::F64((0..len).map(|_| f()).collect()),
        ScalarType::I32 => BufferData::I32((0..len).map(|_| f().round() as i32).collect()),
        ScalarType::I64 => BufferData::I64((0..len).map(|_| f().round() as i64).collect()),
        ScalarType::Bool => BufferData::Bool((0..len).map(|_| f() > 0.0).collect()),
    }
}

fn to_storage(data: &BufferData) -> Arc<DeviceBufferStorage> {
    match data {
        BufferData::F32(v) => DeviceBufferStorage::from_slice(v),
        BufferData::F64(v) => DeviceBufferStorage::from_slice(v),
        BufferData::I32(v) => DeviceBufferStorage::from_slice(v),
        BufferData::I64(v) => DeviceBufferStorage::from_slice(v),
        BufferData::Bool(v) => DeviceBufferStorage::from_slice(v),
    }
    .expect("storage")
}

fn from_storage(ty: ScalarType, s: &DeviceBufferStorage) -> BufferData {
    match ty {
        ScalarType::F32 => BufferData::F32(s.to_vec().unwrap()),
        ScalarType::F64 => BufferData::F64(s.to_vec().unwrap()),
        ScalarType::I32 => BufferData::I32(s.to_vec().unwrap()),
        ScalarType::I64 => BufferData::I64(s.to_vec().unwrap()),
        ScalarType::Bool => BufferData::Bool(s.to_vec().unwrap()),
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

fn assert_same(name: &str, label: &str, expected: &BufferData, actual: &BufferData) {
    let mismatch = |i: usize, e: String, a: String| {
        panic!("{name} [{label}]: element {i}: interpreter {e}, compiled {a}")
    };
    match (expected, actual) {
        (BufferData::F32(e), BufferData::F32(a)) => {
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                if !close(f64::from(*x), f64::from(*y), 2e-5) {
                    mismatch(i, x.to_string(), y.to_string());
                }
            }
        }
        (BufferData::F64(e), BufferData::F64(a)) => {
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                if !close(*x, *y, 1e-12) {
                    mismatch(i, x.to_string(), y.to_string());
                }
            }
        }
        _ => assert_eq!(expected, actual, "{name} [{label}]"),
    }
}

/// Runs compiled `kernel` on copies of `inputs` (on `pool` if given) and returns every buffer
/// afterwards.
fn run_compiled(
    compiled: &weft_runtime::CompiledKernel,
    kernel: &Kernel,
    inputs: &[BufferData],
    pool: Option<&ThreadPool>,
) -> Vec<BufferData> {
    let storages: Vec<_> = inputs.iter().map(to_storage).collect();
    let refs: Vec<DeviceBufferReference> = storages
        .iter()
        .map(|s| DeviceBufferReference::to_storage("b", Arc::clone(s)))
        .collect();
    let ref_list: Vec<&DeviceBufferReference> = refs.iter().collect();
    match pool {
        Some(p) => compiled.call_on(p, &ref_list).unwrap(),
        None => compiled.call(&ref_list).unwrap(),
    }
    kernel
        .buffers
        .values()
        .zip(&storages)
        .map(|(decl, s)| from_storage(decl.ty, s))
        .collect()
}

/// Runs `text` on random inputs (values in `[-range, range]`) in every configuration.
fn check_kernel(text: &str, range: f64) -> Kernel {
    let kernel = parse_kernel("test", text).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ kernel.name.len() as u64);
    let inputs: Vec<BufferData> = kernel
        .buffers
        .values()
        .map(|b| random_buffer(&mut rng, b.ty, b.len as usize, range))
        .collect();
    let mut expected = inputs.clone();
    interpret(&kernel, &mut expected).unwrap_or_else(|e| panic!("{e}"));
    let pools = [ThreadPool::new(1), ThreadPool::new(2), ThreadPool::new(3)];
    for vectorize in [true, false] {
        let compiler = JitCompiler::with_options(CodegenOptions {
            vectorize,
            ..CodegenOptions::default()
        })
        .unwrap();
        let compiled = compiler.compile(&kernel).unwrap_or_else(|e| panic!("{e}"));
        for pool in [None].into_iter().chain(pools.iter().map(Some)) {
            let actual = run_compiled(&compiled, &kernel, &inputs, pool);
            let label = format!(
                "vectorize={vectorize}, threads={}",
                pool.map_or(0, |p| p.threads())
            );
            for (e, a) in expected.iter().zip(&actual) {
                assert_same(&kernel.name, &label, e, a);
            }
        }
    }
    kernel
}

#[test]
fn softmax_rows_in_one_kernel() {
    for (rows, cols) in [(3, 5), (1, 1), (4, 4), (7, 19)] {
        let text = format!(
            "kernel @softmax {{
  buffer %x: f32[{n}] read
  buffer %y: f32[{n}] write
  loop %r in 0..{rows} parallel {{
    acc %m: max f32
    loop %j in 0..{cols} vectorize unroll(2) {{
      %xj: f32 = load %x[{cols}*%r + %j]
      reduce %m, %xj
    }}
    %max: f32 = acc.value %m
    acc %s: sum f32
    loop %k in 0..{cols} vectorize unroll(4) {{
      %xk: f32 = load %x[{cols}*%r + %k]
      %d: f32 = sub %xk, %max
      %e: f32 = exp %d
      reduce %s, %e
    }}
    %sum: f32 = acc.value %s
    %inv: f32 = reciprocal %sum
    loop %n in 0..{cols} vectorize {{
      %xn: f32 = load %x[{cols}*%r + %n]
      %dn: f32 = sub %xn, %max
      %en: f32 = exp %dn
      %out: f32 = mul %en, %inv
      store %y[{cols}*%r + %n], %out
    }}
  }}
}}",
            n = rows * cols
        );
        check_kernel(&text, 5.0);
    }
}

/// An `if` runs its body only on the rows whose condition holds: a row's f32 sum is stored,
/// then summed again in f64 (a vector loop with its own accumulator, inside the `if`) where it
/// came out positive — the shape of `reduce_in_memory`'s re-run of f32 rows.
#[test]
fn an_if_runs_its_body_only_where_its_condition_holds() {
    for (rows, cols) in [(1, 1), (5, 7), (16, 33)] {
        let text = format!(
            "kernel @branch {{
  buffer %x: f32[{n}] read
  buffer %s: f32[{rows}] write
  loop %r in 0..{rows} parallel {{
    acc %a: sum f32
    loop %c in 0..{cols} vectorize unroll(2) {{
      %v: f32 = load %x[{cols}*%r + %c]
      reduce %a, %v
    }}
    %t: f32 = acc.value %a
    store %s[%r], %t
    %zero: f32 = const 0.0
    %pos: bool = gt %t, %zero
    if %pos {{
      acc %b: sum f64
      loop %d in 0..{cols} vectorize {{
        %y: f32 = load %x[{cols}*%r + %d]
        %w: f64 = convert %y
        reduce %b, %w
      }}
      %q: f64 = acc.value %b
      %m: f32 = convert %q
      %neg: f32 = neg %m
      store %s[%r], %neg
    }}
  }}
}}",
            n = rows * cols
        );
        check_kernel(&text, 5.0);
    }
}

#[test]
fn elementwise_broadcast_reversed_and_padded() {
    for ty in ["f32", "f64"] {
        let text = format!(
            "kernel @elementwise {{
  buffer %x: {ty}[8] read
  buffer %b: {ty}[3] read
  buffer %c: {ty}[2] read
  buffer %y: {ty}[10] write
  loop %i in 0..2 {{
    loop %j in 0..5 vectorize unroll(2) {{
      %xv: {ty} = load %x[4*%i - %j + 3] mask(0 <= %j < 4)
      %bv: {ty} = load %b[%j - 1] mask(0 <= %j - 1 < 3)
      %cv: {ty} = load %c[%i]
      %s: {ty} = add %xv, %bv
      %t: {ty} = mul %s, %cv
      %u: {ty} = relu %t
      store %y[5*%i + %j], %u
    }}
  }}
}}"
        );
        check_kernel(&text, 3.0);
    }
}

#[test]
fn masked_contiguous_loads_take_whole_vectors_inside_the_mask() {
    // A pad: rows 1..4 of 5 and columns 3..43 of 46 read the input, the rest is zero. Steps of
    // 8 (f32) or 4 (f64) lanes lie wholly inside the mask (one vector load each), straddle its
    // edges (lane by lane) or lie outside it; the scalar tail covers the last columns.
    for ty in ["f32", "f64"] {
        let text = format!(
            "kernel @pad {{
  buffer %x: {ty}[120] read
  buffer %y: {ty}[230] write
  loop %i in 0..5 {{
    loop %j in 0..46 vectorize unroll(2) {{
      %v: {ty} = load %x[40*%i + %j - 43] mask(1 <= %i < 4, 3 <= %j < 43)
      store %y[46*%i + %j], %v
    }}
  }}
}}"
        );
        check_kernel(&text, 3.0);
    }
}

#[test]
fn several_accumulators_over_odd_lengths() {
    for len in [1u64, 3, 4, 5, 8, 17, 33] {
        for ty in ["f32", "f64"] {
            let text = format!(
                "kernel @stats {{
  buffer %x: {ty}[{len}] read
  buffer %out: {ty}[4] write
  acc %sum: sum {ty}
  acc %prod: prod {ty}
  acc %max: max {ty}
  acc %min: min {ty}
  loop %i in 0..{len} vectorize unroll(4) {{
    %v: {ty} = load %x[%i]
    reduce %sum, %v
    %one: {ty} = const 1.0
    %p: {ty} = add %v, %one
    reduce %prod, %p
    reduce %max, %v
    reduce %min, %v
  }}
  %s: {ty} = acc.value %sum
  store %out[0], %s
  %q: {ty} = acc.value %prod
  store %out[1], %q
  %mx: {ty} = acc.value %max
  store %out[2], %mx
  %mn: {ty} = acc.value %min
  store %out[3], %mn
}}"
            );
            check_kernel(&text, 0.9);
        }
    }
}

#[test]
fn argmax_and_argmin_rows() {
    let text = "kernel @argmax {
  buffer %x: f32[21] read
  buffer %hi: i64[3] write
  buffer %lo: i64[3] write
  buffer %best: f32[3] write
  loop %r in 0..3 parallel {
    acc %am: argmax f32
    acc %an: argmin f32
    loop %j in 0..7 vectorize {
      %v: f32 = load %x[7*%r + %j]
      %idx: i64 = index %j
      reduce %am, %v, %idx
      reduce %an, %v, %idx
    }
    %i: i64 = acc.index %am
    store %hi[%r], %i
    %k: i64 = acc.index %an
    store %lo[%r], %k
    %b: f32 = acc.value %am
    store %best[%r], %b
  }
}";
    check_kernel(text, 10.0);
}

#[test]
fn matmul_with_register_blocking() {
    // C[8, 13] = A[8, 5] · B[5, 13]: 4 rows × (2 vectors) of accumulators per k loop.
    let (m, n, k) = (8, 13, 5);
    let mut text = format!(
        "kernel @matmul {{
  buffer %a: f32[{ak}] read
  buffer %b: f32[{bk}] read
  buffer %c: f32[{ck}] write
  loop %ib in 0..{mb} parallel {{
    loop %j in 0..{n} vectorize unroll(2) {{
      acc %s0: sum f32
      acc %s1: sum f32
      acc %s2: sum f32
      acc %s3: sum f32
      loop %p in 0..{k} {{
        %bv: f32 = load %b[{n}*%p + %j]
",
        ak = m * k,
        bk = k * n,
        ck = m * n,
        mb = m / 4
    );
    for r in 0..4 {
        text += &format!(
            "        %a{r}: f32 = load %a[{rk}*%ib + %p + {off}]\n        %m{r}: f32 = mul %a{r}, %bv\n        reduce %s{r}, %m{r}\n",
            rk = 4 * k,
            off = k * r
        );
    }
    text += "      }\n";
    for r in 0..4 {
        text += &format!(
            "      %c{r}: f32 = acc.value %s{r}\n      store %c[{rn}*%ib + %j + {off}], %c{r}\n",
            rn = 4 * n,
            off = n * r
        );
    }
    text += "    }\n  }\n}\n";
    let kernel = check_kernel(&text, 1.0);
    let clif = JitCompiler::new().unwrap().clif_text(&kernel).unwrap();
    assert!(clif.contains("f32x4"), "the j loop is vectorised:\n{clif}");
}

#[test]
fn integer_and_bool_operations() {
    for ty in ["i32", "i64"] {
        let text = format!(
            "kernel @ints {{
  buffer %p: {ty}[11] read
  buffer %q: {ty}[11] read
  buffer %quot: {ty}[11] write
  buffer %misc: {ty}[66] write
  buffer %flags: bool[33] write
  buffer %conv: f64[22] write
  loop %i in 0..11 {{
    %a: {ty} = load %p[%i]
    %b: {ty} = load %q[%i]
    %d: {ty} = div %a, %b
    store %quot[%i], %d
    %s: {ty} = add %a, %b
    store %misc[6*%i], %s
    %m: {ty} = mul %a, %b
    store %misc[6*%i + 1], %m
    %n: {ty} = neg %a
    %sg: {ty} = sign %n
    store %misc[6*%i + 2], %sg
    %r: {ty} = relu %a
    %sq: {ty} = square %r
    store %misc[6*%i + 3], %sq
    %mx: {ty} = max %a, %b
    %ab: {ty} = abs %mx
    store %misc[6*%i + 4], %ab
    %lt: bool = lt %a, %b
    %eq: bool = eq %a, %b
    %nz: bool = convert %b
    %both: bool = and %lt, %nz
    %either: bool = or %both, %eq
    %not: bool = not %either
    store %flags[3*%i], %lt
    store %flags[3*%i + 1], %either
    store %flags[3*%i + 2], %not
    %pick: {ty} = select %lt, %a, %b
    store %misc[6*%i + 5], %pick
    %f: f64 = convert %a
    store %conv[2*%i], %f
    %fb: f64 = convert %not
    store %conv[2*%i + 1], %fb
  }}
}}"
        );
        check_kernel(&text, 3.0);
    }
}

#[test]
fn integer_division_edge_cases_never_trap() {
    let compiler = JitCompiler::new().unwrap();
    let kernel = parse_kernel(
        "div",
        "kernel @div {
  buffer %p: i32[4] read
  buffer %q: i32[4] read
  buffer %r: i32[4] write
  loop %i in 0..4 {
    %a: i32 = load %p[%i]
    %b: i32 = load %q[%i]
    %d: i32 = div %a, %b
    store %r[%i], %d
  }
}",
    )
    .unwrap();
    let compiled = compiler.compile(&kernel).unwrap();
    let p = DeviceBufferStorage::from_slice(&[7i32, i32::MIN, -7, 0]).unwrap();
    let q = DeviceBufferStorage::from_slice(&[0i32, -1, 2, 0]).unwrap();
    let r = DeviceBufferStorage::new(ScalarType::I32, 4).unwrap();
    let refs = [p, q, Arc::clone(&r)].map(|s| DeviceBufferReference::to_storage("b", s));
    compiled.call(&[&refs[0], &refs[1], &refs[2]]).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![0, i32::MIN, -3, 0]);
}

#[test]
fn float_conversions_saturate() {
    let text = "kernel @conv {
  buffer %x: f32[9] read
  buffer %i: i32[9] write
  buffer %l: i64[9] write
  buffer %d: f64[9] write
  buffer %b: bool[9] write
  loop %k in 0..9 {
    %v: f32 = load %x[%k]
    %big: f32 = const 3e9
    %w: f32 = mul %v, %big
    %vi: i32 = convert %w
    store %i[%k], %vi
    %vl: i64 = convert %w
    store %l[%k], %vl
    %vd: f64 = convert %v
    store %d[%k], %vd
    %vb: bool = convert %v
    store %b[%k], %vb
  }
}";
    check_kernel(text, 2.0);
}

fn unary_kernel(op: &str, ty: &str, len: usize) -> String {
    format!(
        "kernel @{op}_{ty} {{
  buffer %x: {ty}[{len}] read
  buffer %y: {ty}[{len}] write
  loop %i in 0..{len} vectorize unroll(2) {{
    %v: {ty} = load %x[%i]
    %r: {ty} = {op} %v
    store %y[%i], %r
  }}
}}"
    )
}

#[test]
fn float_unary_operations() {
    for ty in ["f32", "f64"] {
        // log on random inputs would be mostly NaN: it is checked below.
        for op in FLOAT_UNARY.into_iter().filter(|&op| op != "log") {
            check_kernel(&unary_kernel(op, ty, 37), 6.0);
        }
        // log on positive inputs (the kernel squares first) and its special cases.
        let text = format!(
            "kernel @log_{ty} {{
  buffer %x: {ty}[23] read
  buffer %y: {ty}[23] write
  loop %i in 0..23 vectorize {{
    %v: {ty} = load %x[%i]
    %s: {ty} = square %v
    %l: {ty} = log %s
    store %y[%i], %l
  }}
}}"
        );
        check_kernel(&text, 30.0);
    }
}

#[test]
fn float_binary_operations() {
    for ty in ["f32", "f64"] {
        for op in ["add", "sub", "mul", "div", "max", "min", "pow"] {
            let text = format!(
                "kernel @{op}_{ty} {{
  buffer %x: {ty}[13] read
  buffer %z: {ty}[13] read
  buffer %y: {ty}[13] write
  loop %i in 0..13 vectorize {{
    %a: {ty} = load %x[%i]
    %b: {ty} = load %z[%i]
    %aa: {ty} = abs %a
    %r: {ty} = {op} %aa, %b
    store %y[%i], %r
  }}
}}"
            );
            check_kernel(&text, 4.0);
        }
    }
}

#[test]
fn special_float_values_follow_the_semantics() {
    let compiler = JitCompiler::new().unwrap();
    for op in [
        "exp", "log", "tanh", "sigmoid", "sin", "cos", "relu", "sign",
    ] {
        let kernel = parse_kernel("special", &unary_kernel(op, "f32", 8)).unwrap();
        let inputs = [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
            -1e-40,
            100.0,
        ];
        let mut expected = vec![
            BufferData::F32(inputs.to_vec()),
            BufferData::F32(vec![0.0; 8]),
        ];
        interpret(&kernel, &mut expected).unwrap();
        let compiled = compiler.compile(&kernel).unwrap();
        let x = DeviceBufferStorage::from_slice(&inputs).unwrap();
        let y = DeviceBufferStorage::new(ScalarType::F32, 8).unwrap();
        let refs = [x, Arc::clone(&y)].map(|s| DeviceBufferReference::to_storage("b", s));
        compiled.call(&[&refs[0], &refs[1]]).unwrap();
        let BufferData::F32(want) = &expected[1] else {
            unreachable!()
        };
        let got = y.to_vec::<f32>().unwrap();
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            let ok = (w.is_nan() && g.is_nan())
                || (w == g && w.is_sign_negative() == g.is_sign_negative())
                || (w.is_finite() && (w - g).abs() <= 1e-6 * w.abs().max(1e-30))
                // sin/cos of ±inf: both NaN is required; tiny subnormal results may flush.
                || (w.abs() < 1e-37 && g.abs() < 1e-37);
            assert!(ok, "{op}({}) = {w} expected, got {g}", inputs[i]);
        }
    }
}

#[test]
fn listing_exposes_clif_and_disassembly() {
    let compiler = JitCompiler::with_options(CodegenOptions {
        disassemble: true,
        ..CodegenOptions::default()
    })
    .unwrap();
    let kernel = parse_kernel("exp", &unary_kernel("exp", "f32", 16)).unwrap();
    let (compiled, listing) = compiler.compile_with_listing(&kernel).unwrap();
    assert!(listing.clif.contains("f32x4"));
    assert!(listing.code_size > 0);
    assert_eq!(compiled.code_size(), listing.code_size);
    assert!(!listing.disassembly.unwrap_or_default().is_empty());
}

/// A loop mixing f32 and f64 (an f32 sum accumulated in f64, f64 results demoted back)
/// steps four lanes at a time: f32 values in `f32x4`, f64 values in pairs of `f64x2`.
fn widening_kernel(len: u64) -> String {
    format!(
        "kernel @widen {{
  buffer %x: f32[{len}] read
  buffer %y: f32[{len}] read
  buffer %z: f64[{len}] read
  buffer %w: f64[{len}] write
  buffer %v: f32[{len}] write
  buffer %r: f32[{n2}] write
  buffer %out: f64[2] write
  acc %sum: sum f64
  acc %max: max f64
  loop %i in 0..{len} vectorize unroll(2) {{
    %xv: f32 = load %x[%i]
    %yv: f32 = load %y[%i]
    %d: f32 = sub %xv, %yv
    %dw: f64 = convert %d
    %sq: f64 = mul %dw, %dw
    reduce %sum, %sq
    %zv: f64 = load %z[%i]
    %zs: f64 = load %z[%i - 1] mask(0 <= %i - 1 < {len})
    %t: f64 = add %zv, %dw
    %u: f64 = add %t, %zs
    reduce %max, %u
    store %w[%i], %u
    %back: f32 = convert %u
    store %v[%i], %back
    store %r[2*%i], %back
  }}
  %s: f64 = acc.value %sum
  store %out[0], %s
  %m: f64 = acc.value %max
  store %out[1], %m
}}",
        n2 = 2 * len
    )
}

#[test]
fn mixed_f32_and_f64_loops_vectorise_with_widening() {
    for len in [1u64, 3, 4, 5, 8, 13, 33] {
        check_kernel(&widening_kernel(len), 3.0);
    }
    let compiler = JitCompiler::new().unwrap();
    let kernel = parse_kernel("widen", &widening_kernel(16)).unwrap();
    let (_, listing) = compiler.compile_with_listing(&kernel).unwrap();
    assert!(listing.clif.contains("fvpromote_low"), "{}", listing.clif);
    assert!(listing.clif.contains("fvdemote"), "{}", listing.clif);
}

#[test]
fn an_f32_accumulator_in_an_f64_loop_takes_four_lanes() {
    for len in [3u64, 8, 21] {
        let text = format!(
            "kernel @uniform_f32_sum {{
  buffer %z: f64[{len}] read
  buffer %w: f64[{len}] write
  buffer %out: f32[1] write
  acc %count: sum f32
  loop %i in 0..{len} vectorize unroll(2) {{
    %zv: f64 = load %z[%i]
    %t: f64 = mul %zv, %zv
    store %w[%i], %t
    %one: f32 = const 1.0
    reduce %count, %one
  }}
  %c: f32 = acc.value %count
  store %out[0], %c
}}"
        );
        check_kernel(&text, 2.0);
    }
}

// ----- op by op on special values ---------------------------------------------------------
//
// Every scalar operator on every pair of special values of every type it accepts, compiled
// with its loop scalar and (where the types allow) vectorised, against the interpreter, which
// evaluates `weft_ir::scalar`, the one definition of the rules. Exact ops must agree bit for bit
// (NaN with any NaN); the polynomial ones within a tolerance, with the same NaNs, infinities
// and signs of zero.

/// The special float values both float types share: ±0, ±1, halves, ±inf, NaN, and values
/// where float → integer conversions saturate.
const SHARED_FLOATS: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    3.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    3e9,
    1e19,
];

/// The shared float values plus each type's subnormals, smallest normal and huge values; the
/// integer extremes and their neighbours; both bools.
fn special_values(ty: ScalarType) -> BufferData {
    match ty {
        ScalarType::F32 => {
            let mut v: Vec<f32> = SHARED_FLOATS.iter().map(|&x| x as f32).collect();
            v.extend([
                1e-45,
                -1e-45,
                f32::MIN_POSITIVE,
                1e30,
                -1e30,
                f32::MAX,
                f32::MIN,
            ]);
            BufferData::F32(v)
        }
        ScalarType::F64 => {
            let mut v = SHARED_FLOATS.to_vec();
            v.extend([
                5e-324,
                -5e-324,
                f64::MIN_POSITIVE,
                1e300,
                -1e300,
                f64::MAX,
                f64::MIN,
            ]);
            BufferData::F64(v)
        }
        ScalarType::I32 => BufferData::I32(vec![
            0,
            1,
            -1,
            2,
            -2,
            7,
            -7,
            31,
            32,
            46_341,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
            i32::MAX - 1,
        ]),
        ScalarType::I64 => BufferData::I64(vec![
            0,
            1,
            -1,
            2,
            -2,
            7,
            -7,
            63,
            64,
            1 << 31,
            (1 << 32) + 5,
            3_037_000_500,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            i64::MAX - 1,
        ]),
        ScalarType::Bool => BufferData::Bool(vec![false, true]),
    }
}

/// The elements of `b` at `indices`.
fn gather(b: &BufferData, indices: &[usize]) -> BufferData {
    macro_rules! pick {
        ($variant:ident, $v:expr) => {
            BufferData::$variant(indices.iter().map(|&i| $v[i]).collect())
        };
    }
    match b {
        BufferData::F32(v) => pick!(F32, v),
        BufferData::F64(v) => pick!(F64, v),
        BufferData::I32(v) => pick!(I32, v),
        BufferData::I64(v) => pick!(I64, v),
        BufferData::Bool(v) => pick!(Bool, v),
    }
}

/// Every ordered pair `(a, b)` of `values`, as two buffers.
fn all_pairs(values: &BufferData) -> (BufferData, BufferData) {
    let n = values.len();
    let (firsts, seconds): (Vec<usize>, Vec<usize>) = (0..n * n).map(|k| (k / n, k % n)).unzip();
    (gather(values, &firsts), gather(values, &seconds))
}

/// Whether compiled float `g` may stand for the interpreter's `w`: the same bits (NaN for
/// NaN) for an exact op; for an approximate one also a value within `rel`, but never another
/// NaN-ness, infinity or sign of a zero result.
fn float_agrees(w: f64, g: f64, exact: bool, rel: f64) -> bool {
    if w.is_nan() || g.is_nan() {
        return w.is_nan() && g.is_nan();
    }
    if w.to_bits() == g.to_bits() {
        return true;
    }
    let zeros_of_other_signs = w == 0.0 && g == 0.0;
    !exact && w.is_finite() && g.is_finite() && !zeros_of_other_signs && close(w, g, rel)
}

/// Checks every element of a compiled result against the interpreter's.
fn assert_agrees(
    what: &str,
    inputs: &[BufferData],
    expected: &BufferData,
    actual: &BufferData,
    exact: bool,
) {
    let operands = |i: usize| -> String {
        inputs
            .iter()
            .map(|b| format!("{:?}", element(b, i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (w, g): (Vec<f64>, Vec<f64>) = match (expected, actual) {
        (BufferData::F32(w), BufferData::F32(g)) => (
            w.iter().map(|&x| f64::from(x)).collect(),
            g.iter().map(|&x| f64::from(x)).collect(),
        ),
        (BufferData::F64(w), BufferData::F64(g)) => (w.clone(), g.clone()),
        _ => {
            for i in 0..expected.len() {
                let (w, g) = (element(expected, i), element(actual, i));
                assert_eq!(
                    w,
                    g,
                    "{what}({}): interpreter {w}, compiled {g}",
                    operands(i)
                );
            }
            return;
        }
    };
    let rel = if matches!(expected, BufferData::F32(_)) {
        2e-5
    } else {
        1e-12
    };
    for (i, (w, g)) in w.iter().zip(&g).enumerate() {
        assert!(
            float_agrees(*w, *g, exact, rel),
            "{what}({}): interpreter {w:e}, compiled {g:e}",
            operands(i)
        );
    }
}

/// Element `i` of a buffer, as text-comparable value.
fn element(b: &BufferData, i: usize) -> String {
    match b {
        BufferData::F32(v) => format!("{:e}", v[i]),
        BufferData::F64(v) => format!("{:e}", v[i]),
        BufferData::I32(v) => v[i].to_string(),
        BufferData::I64(v) => v[i].to_string(),
        BufferData::Bool(v) => v[i].to_string(),
    }
}

/// A kernel applying `expr` (which reads `%a` and, for binary ops, `%b`) elementwise over
/// `len` elements, in a loop annotated `vectorize` or not.
fn op_kernel(
    operands: &[ScalarType],
    result: ScalarType,
    expr: &str,
    len: usize,
    vectorize: bool,
) -> String {
    let names = ["a", "b"];
    let mut text = "kernel @op {\n".to_string();
    for (name, ty) in names.iter().zip(operands) {
        text += &format!("  buffer %{name}s: {ty}[{len}] read\n");
    }
    text += &format!("  buffer %out: {result}[{len}] write\n");
    let annotation = if vectorize { " vectorize" } else { "" };
    text += &format!("  loop %i in 0..{len}{annotation} {{\n");
    for (name, ty) in names.iter().zip(operands) {
        text += &format!("    %{name}: {ty} = load %{name}s[%i]\n");
    }
    text += &format!("    %r: {result} = {expr}\n    store %out[%i], %r\n  }}\n}}\n");
    text
}

/// Runs `expr` over `inputs` interpreted and compiled (scalar and vectorised loops) and checks
/// that they agree; returns whether the vectorised loop was compiled to vector code.
fn check_op(expr: &str, inputs: &[BufferData], result: ScalarType, exact: bool) -> bool {
    let len = inputs[0].len();
    let operand_types: Vec<ScalarType> = inputs.iter().map(BufferData::ty).collect();
    let mut vector_code = false;
    // Scalar, Cranelift's vector lanes, and (where the host and the body allow) an assembled
    // leaf loop.
    for (vectorize, leaf_loops) in [(false, false), (true, false), (true, true)] {
        let text = op_kernel(&operand_types, result, expr, len, vectorize);
        let kernel = parse_kernel("op", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut expected = inputs.to_vec();
        expected.push(BufferData::zeros(result, len));
        interpret(&kernel, &mut expected).unwrap();
        let compiler = JitCompiler::with_options(CodegenOptions {
            leaf_loops,
            ..CodegenOptions::default()
        })
        .unwrap();
        let (compiled, listing) = compiler.compile_with_listing(&kernel).unwrap();
        vector_code |= vectorize
            && !leaf_loops
            && (listing.clif.contains("f32x4") || listing.clif.contains("f64x2"));
        let actual = run_compiled(&compiled, &kernel, &expected, None);
        let what = format!(
            "{expr} [{}]",
            match (vectorize, leaf_loops) {
                (false, _) => "scalar",
                (true, false) => "vectorised",
                (true, true) => "vectorised, leaf loops on",
            }
        );
        assert_agrees(
            &what,
            inputs,
            &expected[inputs.len()],
            &actual[inputs.len()],
            exact,
        );
    }
    vector_code
}

const FLOAT_UNARY: [&str; 13] = [
    "neg",
    "abs",
    "sqrt",
    "square",
    "reciprocal",
    "sign",
    "relu",
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
];
const ARITHMETIC: [&str; 6] = ["add", "sub", "mul", "div", "max", "min"];
const COMPARISONS: [&str; 6] = ["eq", "ne", "lt", "le", "gt", "ge"];
/// Polynomials (and sin/cos, which call the scalar rule only for huge arguments): checked
/// within a tolerance; the rest, `pow` included (a call of the scalar rule), bit for bit.
const APPROXIMATE: [&str; 6] = ["exp", "log", "tanh", "sigmoid", "sin", "cos"];

/// Checks each unary `op` on every one of `values`; returns whether all were vectorised.
fn check_unary_ops(ops: &[&str], values: &BufferData) -> bool {
    let mut vectorised = true;
    for op in ops {
        let exact = !APPROXIMATE.contains(op);
        let operand = std::slice::from_ref(values);
        vectorised &= check_op(&format!("{op} %a"), operand, values.ty(), exact);
    }
    vectorised
}

/// Checks each binary `op` (comparisons give `bool`) on every ordered pair of `values`;
/// returns whether all were vectorised.
fn check_binary_ops(ops: &[&str], values: &BufferData) -> bool {
    let (a, b) = all_pairs(values);
    let mut vectorised = true;
    for op in ops {
        let result = if COMPARISONS.contains(op) {
            ScalarType::Bool
        } else {
            values.ty()
        };
        let exact = !APPROXIMATE.contains(op);
        let operands = [a.clone(), b.clone()];
        vectorised &= check_op(&format!("{op} %a, %b"), &operands, result, exact);
    }
    vectorised
}

#[test]
fn float_operators_on_special_values_scalar_and_vectorised() {
    for ty in [ScalarType::F32, ScalarType::F64] {
        let values = special_values(ty);
        assert!(check_unary_ops(&FLOAT_UNARY, &values), "{ty}");
        assert!(check_binary_ops(&ARITHMETIC, &values), "{ty}");
        assert!(check_binary_ops(&["pow"], &values), "{ty}");
        check_binary_ops(&COMPARISONS, &values);
    }
}

#[test]
fn integer_and_bool_operators_on_extreme_values() {
    for ty in [ScalarType::I32, ScalarType::I64] {
        let values = special_values(ty);
        check_unary_ops(&["neg", "abs", "square", "sign", "relu"], &values);
        check_binary_ops(&ARITHMETIC, &values);
        check_binary_ops(&COMPARISONS, &values);
    }
    let values = special_values(ScalarType::Bool);
    check_unary_ops(&["not"], &values);
    check_binary_ops(&["and", "or", "xor", "eq", "ne"], &values);
}

#[test]
fn conversions_of_special_values_between_every_pair_of_types() {
    for from in ScalarType::ALL {
        let values = special_values(from);
        for to in ScalarType::ALL {
            check_op("convert %a", std::slice::from_ref(&values), to, true);
        }
    }
}

#[test]
fn max_and_min_keep_the_left_operand_on_signed_zero_ties() {
    // docs/interpreter.md: NaN propagates; on a tie, including −0 against +0, the left operand
    // (relu(−0) = +0 is checked with the special values). Cranelift's fmax/fmin would give
    // max(−0, +0) = +0 and min(+0, −0) = −0.
    for ty in [ScalarType::F32, ScalarType::F64] {
        let pair = |x: f64, y: f64| match ty {
            ScalarType::F32 => (
                BufferData::F32(vec![x as f32; 8]),
                BufferData::F32(vec![y as f32; 8]),
            ),
            _ => (BufferData::F64(vec![x; 8]), BufferData::F64(vec![y; 8])),
        };
        for (op, x, y, want) in [
            ("max", -0.0, 0.0, -0.0f64),
            ("max", 0.0, -0.0, 0.0),
            ("min", 0.0, -0.0, 0.0),
            ("min", -0.0, 0.0, -0.0),
        ] {
            let (a, b) = pair(x, y);
            check_op(&format!("{op} %a, %b"), &[a.clone(), b.clone()], ty, true);
            let text = op_kernel(&[ty, ty], ty, &format!("{op} %a, %b"), 8, true);
            let kernel = parse_kernel("tie", &text).unwrap();
            let compiled = JitCompiler::new().unwrap().compile(&kernel).unwrap();
            let out = run_compiled(&compiled, &kernel, &[a, b, BufferData::zeros(ty, 8)], None);
            let (w, _) = pair(want, want);
            assert_agrees(&format!("{op}({x:?}, {y:?})"), &[], &w, &out[2], true);
        }
    }
}

/// A kernel reducing each row of `rows × cols` values with `kind` into one value per row.
fn row_reduction_kernel(
    kind: &str,
    ty: ScalarType,
    rows: usize,
    cols: usize,
    vectorize: bool,
) -> String {
    let annotation = if vectorize {
        " vectorize unroll(2)"
    } else {
        ""
    };
    format!(
        "kernel @rows {{
  buffer %x: {ty}[{n}] read
  buffer %out: {ty}[{rows}] write
  loop %r in 0..{rows} {{
    acc %m: {kind} {ty}
    loop %j in 0..{cols}{annotation} {{
      %v: {ty} = load %x[{cols}*%r + %j]
      reduce %m, %v
    }}
    %res: {ty} = acc.value %m
    store %out[%r], %res
  }}
}}",
        n = rows * cols
    )
}

#[test]
fn sums_and_products_of_signed_zeros_keep_their_sign() {
    // A float sum starts from −0 (−0 + x = x), so a sum of −0s is −0 in any order, as in the
    // interpreter (docs/interpreter.md); products of ±0 and ±1 are exact in any order.
    let cols = 19;
    let mut rows = vec![vec![-0.0; cols], vec![1.0; cols]];
    for at in [0, 3, 18] {
        let mut with_plus_zero = vec![-0.0; cols];
        with_plus_zero[at] = 0.0;
        let mut signed_ones = vec![1.0; cols];
        signed_ones[at] = -0.0;
        signed_ones[(at + 5) % cols] = -1.0;
        rows.extend([with_plus_zero, signed_ones]);
    }
    for ty in [ScalarType::F32, ScalarType::F64] {
        let flat: Vec<f64> = rows.concat();
        let x = match ty {
            ScalarType::F32 => BufferData::F32(flat.iter().map(|&v| v as f32).collect()),
            _ => BufferData::F64(flat),
        };
        let sums = check_row_reduction("sum", &x, rows.len(), cols);
        assert_eq!(element(&sums, 0), "-0e0", "a sum of −0s is −0");
        check_row_reduction("prod", &x, rows.len(), cols);
    }
}

/// Checks a `kind` reduction of each row of `x` (`rows × cols`), scalar and vectorised, bit
/// for bit against the interpreter; returns the interpreter's results.
fn check_row_reduction(kind: &str, x: &BufferData, rows: usize, cols: usize) -> BufferData {
    let ty = x.ty();
    let mut results = BufferData::zeros(ty, rows);
    for vectorize in [false, true] {
        let text = row_reduction_kernel(kind, ty, rows, cols, vectorize);
        let kernel = parse_kernel("rows", &text).unwrap();
        let mut expected = vec![x.clone(), BufferData::zeros(ty, rows)];
        interpret(&kernel, &mut expected).unwrap();
        let compiled = JitCompiler::new().unwrap().compile(&kernel).unwrap();
        let actual = run_compiled(&compiled, &kernel, &expected, None);
        let what = format!("{kind} reduction of {ty} rows (vectorize: {vectorize})");
        assert_agrees(&what, &[], &expected[1], &actual[1], true);
        results = expected.swap_remove(1);
    }
    results
}

#[test]
fn max_and_min_reductions_of_special_values_are_order_free() {
    // Rows of zeros of both signs among −inf/+inf (so the extreme is a zero reached in
    // different lanes), and every rotation of the special values (NaN somewhere in each).
    for ty in [ScalarType::F32, ScalarType::F64] {
        let specials: Vec<f64> = match special_values(ty) {
            BufferData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            BufferData::F64(v) => v,
            _ => unreachable!(),
        };
        // One row per rotation; 19 columns also leave a scalar tail after the vector steps.
        let cols = specials.len();
        let mut rows: Vec<Vec<f64>> = (0..cols)
            .map(|k| (0..cols).map(|j| specials[(j + k) % cols]).collect())
            .collect();
        for (zero_at, other_zero_at) in [(1, 4), (4, 1), (0, 9), (9, 17), (3, 2)] {
            for fill in [f64::NEG_INFINITY, f64::INFINITY] {
                let mut row = vec![fill; cols];
                row[zero_at] = 0.0;
                row[other_zero_at] = -0.0;
                rows.push(row);
            }
        }
        let flat: Vec<f64> = rows.concat();
        let x = match ty {
            ScalarType::F32 => BufferData::F32(flat.iter().map(|&v| v as f32).collect()),
            _ => BufferData::F64(flat),
        };
        let maxima = check_row_reduction("max", &x, rows.len(), cols);
        let minima = check_row_reduction("min", &x, rows.len(), cols);
        // The last rows hold +0 and −0 among −inf, then among +inf: the extremes are the zeros,
        // ordered −0 < +0.
        assert_eq!(element(&maxima, rows.len() - 2), "0e0");
        assert_eq!(element(&minima, rows.len() - 1), "-0e0");
    }
}

/// A vector loop whose step (lanes × parts) divides its constant extent gets no scalar tail,
/// which would never run; one it does not divide keeps it; a parallel loop, whose threads take
/// shares of any length, keeps it whatever its extent. All three match the interpreter.
#[test]
fn scalar_tails_only_where_they_can_run() {
    let kernel = |len: u64, parallel: &str| {
        format!(
            "kernel @tail {{
  buffer %x: f32[{len}] read
  buffer %y: f32[{len}] write
  loop %i in 0..{len} {parallel}vectorize unroll(2) {{
    %v: f32 = load %x[%i]
    %e: f32 = exp %v
    store %y[%i], %e
  }}
}}"
        )
    };
    // The inline `exp` (not the span routine's or a leaf loop's call) makes each body copy
    // visible.
    let compiler = JitCompiler::with_options(CodegenOptions {
        span_math: false,
        leaf_loops: false,
        ..CodegenOptions::default()
    })
    .unwrap();
    // Instructions defining a value: each copy of the body (its `exp` is some thirty) adds.
    let instructions = |text: &str| {
        let k = check_kernel(text, 5.0);
        let clif = compiler.clif_text(&k).unwrap();
        clif.lines().filter(|l| l.contains(" = ")).count()
    };
    let (exact, ragged, parallel) = (
        instructions(&kernel(64, "")),
        instructions(&kernel(67, "")),
        instructions(&kernel(64, "parallel ")),
    );
    // 64 = 8 · 8 needs no tail; 67 leaves 3 iterations; a thread's share may end anywhere.
    assert!(
        ragged >= exact + 20,
        "{exact} instructions without a tail, {ragged} with one"
    );
    assert!(parallel >= ragged, "{parallel} in the parallel loop");
}

/// A vector sum whose partials are f32 adds the loaded f32 value itself, so the `convert`
/// to f64 the loop IR reduces is not emitted in its vector step — only in the scalar f64
/// re-run after a non-finite total (`fpromote`, one lane at a time). Dead vector widenings
/// cost code generation time (Cranelift built and then removed them: layernorm's kernel
/// had 16). Results still match the interpreter, a sum and a sum of squares alike (as f32,
/// whose tolerance covers f32 partials).
#[test]
fn f32_partials_leave_their_widenings_out_of_the_vector_step() {
    let text = "kernel @narrow {
  buffer %x: f32[64] read
  buffer %out: f32[2] write
  acc %s: sum f64 partials f32
  acc %q: sum f64 partials f32
  loop %i in 0..64 vectorize unroll(4) {
    %v: f32 = load %x[%i]
    %w: f64 = convert %v
    reduce %s, %w
    %sq: f32 = mul %v, %v
    %wq: f64 = convert %sq
    reduce %q, %wq
  }
  %a: f64 = acc.value %s
  %a32: f32 = convert %a
  store %out[0], %a32
  %b: f64 = acc.value %q
  %b32: f32 = convert %b
  store %out[1], %b32
}";
    // f32 results: the partials' f32 rounding is within the comparison's f32 tolerance.
    let kernel = check_kernel(text, 3.0);
    let clif = JitCompiler::new().unwrap().clif_text(&kernel).unwrap();
    assert!(clif.contains("f32x4"), "{clif}");
    assert!(!clif.contains("fvpromote_low"), "{clif}");
    assert!(clif.contains("fpromote"), "the f64 re-run widens: {clif}");
}

/// Index and bound arithmetic on constants is folded before Cranelift sees it: no `iadd`,
/// `isub` or `imul` of two constants, and no `+ 0` / `− 0` / `· 1` (the printer annotates
/// each constant operand, `; v18 = 4096, v21 = -15`). Layernorm-shaped rows with constant
/// extents, a strided view and a vector tail give every bound a constant to fold.
#[test]
fn constant_index_arithmetic_is_folded_before_cranelift() {
    let text = "kernel @fold {
  buffer %x: f32[1200] read
  buffer %y: f32[1200] write
  loop %r in 0..12 parallel {
    acc %s: sum f64 partials f32
    loop %c in 0..50 vectorize unroll(2) {
      %v: f32 = load %x[100*%r + 2*%c + 1]
      %w: f64 = convert %v
      reduce %s, %w
    }
    %t: f64 = acc.value %s
    %t32: f32 = convert %t
    loop %d in 0..100 vectorize {
      %u: f32 = load %x[100*%r + %d]
      %z: f32 = sub %u, %t32
      store %y[100*%r + %d], %z
    }
  }
}";
    let kernel = check_kernel(text, 3.0);
    let clif = JitCompiler::new().unwrap().clif_text(&kernel).unwrap();
    let unfolded: Vec<&str> = clif
        .lines()
        .filter(|l| {
            [" = iadd", " = isub", " = imul"]
                .iter()
                .any(|op| l.contains(op))
        })
        .filter(|l| {
            let notes = l.split_once(';').map_or("", |(_, n)| n);
            let constants = notes.matches(" = ").count();
            let identity = notes.ends_with(" = 0") && !l.contains(" = imul")
                || notes.ends_with(" = 1") && l.contains(" = imul");
            constants >= 2 || identity
        })
        .collect();
    assert!(unfolded.is_empty(), "{unfolded:#?}\n{clif}");
}
