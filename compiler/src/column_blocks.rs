//! Column blocks for a GEMM epilogue: the kernel after a GEMM whose result C is wider than tall
//! — cut into column blocks, so each work item computes all rows of a block of columns —
//! rewritten so that one iteration of its parallel loop covers one such block.
//!
//! Lowering makes an elementwise kernel over C a parallel loop over C's rows around a
//! vectorised loop over its columns. For a GEMM cut into row blocks that is what the fused step
//! needs (crate::epilogue); for column blocks the kernel is instead strip-mined: its column
//! loop `I` (extent `n`) becomes `J` (extent `n / width`, parallel, outermost) and `I'`
//! (extent `width`, innermost, keeping `I`'s vectorisation and unrolling), the row loop `P`
//! runs between them serially, and every index of `I` reads `width·J + I'`. Iteration `j` of
//! the new parallel loop is then column block `j`, which the runtime runs right after the
//! GEMM's block `j` (`weft_runtime::GemmEpilogue`, which checks the accesses again).
//!
//! Assumes a verified kernel. Guarantees: applied only to a perfect nest of exactly two loops,
//! the outer one parallel, around a flat body of lets and stores (no accumulator, no loop
//! index read as a value, so no iteration depends on another or on where it runs), with the
//! inner extent a multiple of `width`; every iteration of the original nest runs exactly once
//! with the same index values, only in another order and split, so results are unchanged.
//! The result is verified again; otherwise the reason, for `weft explain`.

use weft_ir::loop_ir::{self, verify, AffineExpr, Kernel, LoopAnnotations};

/// `k` with its column loop cut into strips of `width` and the strips made the parallel loop
/// (module docs), or why not.
pub fn strip_columns(k: &Kernel, width: u64) -> Result<Kernel, String> {
    let name = &k.name;
    let (nest, body) = loop_ir::perfect_nest(&k.body);
    let [rows, cols] = nest[..] else {
        return Err(format!(
            "kernel @{name} is not a nest of two loops, rows around columns"
        ));
    };
    if !loop_ir::elementwise_body(body) {
        return Err(format!(
            "kernel @{name} is not elementwise (a reduction or a loop index in its body)"
        ));
    }
    if !k.loops[rows].annotations.parallel {
        return Err(format!(
            "kernel @{name} has no parallel loop (too small to split)"
        ));
    }
    let n = k.loops[cols].extent;
    if width == 0 || !n.is_multiple_of(width) {
        return Err(format!(
            "blocks of {width} columns do not divide kernel @{name}'s {n}"
        ));
    }
    let overflow = || format!("kernel @{name}'s indices overflow in strips");
    let mut out = k.clone();
    let strips = out.add_loop(
        n / width,
        LoopAnnotations {
            parallel: true,
            ..LoopAnnotations::default()
        },
    );
    out.loops[rows].annotations.parallel = false;
    out.loops[cols].extent = width;
    let by = AffineExpr::new(
        [
            (strips, i64::try_from(width).map_err(|_| overflow())?),
            (cols, 1),
        ],
        0,
    );
    let body = body
        .iter()
        .cloned()
        .map(|s| crate::loop_passes::tile::substitute(s, &[(cols, &by)]))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(overflow)?;
    out.body = loop_ir::nest(&[strips, rows, cols], body);
    verify(&out).map_err(|e| format!("kernel @{name} in strips does not verify: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::loop_ir::parse_kernel;

    const BIAS_RELU: &str = "kernel @k1 {
  buffer %h: f32[24] read
  buffer %b: f32[8] read
  buffer %out: f32[24] write
  loop %i0 in 0..3 parallel {
    loop %i1 in 0..8 vectorize unroll(2) {
      %v0: f32 = load %h[8*%i0 + %i1]
      %v1: f32 = load %b[%i1]
      %v2: f32 = add %v0, %v1
      %v3: f32 = const 0.0
      %v4: f32 = max %v2, %v3
      store %out[8*%i0 + %i1], %v4
    }
  }
}
";

    #[test]
    fn the_column_loop_becomes_parallel_strips_around_the_rows() {
        let k = parse_kernel("k.lir", BIAS_RELU).unwrap();
        let strips = strip_columns(&k, 4).unwrap();
        insta::assert_snapshot!(strips.to_string(), @r"
        kernel @k1 {
          buffer %h: f32[24] read
          buffer %b: f32[8] read
          buffer %out: f32[24] write
          loop %i2 in 0..2 parallel {
            loop %i0 in 0..3 {
              loop %i1 in 0..4 vectorize unroll(2) {
                %v0: f32 = load %h[8*%i0 + %i1 + 4*%i2]
                %v1: f32 = load %b[%i1 + 4*%i2]
                %v2: f32 = add %v0, %v1
                %v3: f32 = const 0.0
                %v4: f32 = max %v2, %v3
                store %out[8*%i0 + %i1 + 4*%i2], %v4
              }
            }
          }
        }
        ");
    }

    #[test]
    fn other_nests_and_widths_are_left_alone() {
        let k = parse_kernel("k.lir", BIAS_RELU).unwrap();
        assert!(strip_columns(&k, 3).unwrap_err().contains("do not divide"));
        assert!(strip_columns(&k, 0).is_err());
        let serial = parse_kernel("k.lir", &BIAS_RELU.replace(" parallel", "")).unwrap();
        assert!(strip_columns(&serial, 4)
            .unwrap_err()
            .contains("no parallel loop"));
        let index = BIAS_RELU.replace("%v3: f32 = const 0.0", "%v3: i64 = index %i1");
        let index = index.replace("max %v2, %v3", "add %v2, %v2");
        let index = parse_kernel("k.lir", &index).unwrap();
        assert!(strip_columns(&index, 4)
            .unwrap_err()
            .contains("not elementwise"));
    }
}
