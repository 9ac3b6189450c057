//! Code for the plans of [`jam_plan`](crate::codegen::jam_plan): a loop run four iterations
//! at a time around its vector loop, 4 × 4 blocks transposed in registers, and a transposing
//! copy as one call of the native transpose. That module says which loops take them and why
//! the results equal the loop nest's.
//!
//! Assumes the kernel's strategy chose each plan (its conditions hold). Guarantees: every
//! iteration runs exactly once with the same index values, in the order `jam_plan` states.

use super::*;
pub(crate) use crate::codegen::jam_plan::*;

impl Translator<'_, '_> {
    /// The loop the call starts at and those inside it as one call of the native transpose
    /// ([`TransposeCall`]).
    pub(super) fn emit_transpose_call(&mut self, call: &TransposeCall) -> Result<()> {
        let outer: Vec<LoopId> = call
            .cols_outer
            .into_iter()
            .chain(call.o)
            .chain([call.l])
            .collect();
        for &m in &outer {
            let (start, _) = self.loop_range(m);
            self.loop_vals[m.index()] = Some(start);
        }
        let first = self.first_index(call.inner, &call.store)?;
        let dst = self.address(&call.store, first);
        let first = self.first_index(call.inner, &call.load)?;
        let src = self.address(&call.load, first);
        for &m in &outer {
            self.loop_vals[m.index()] = None;
        }
        // A run of `inner`'s (or `l`'s) length per iteration of the loop continuing it.
        let run = |t: &mut Self, m: LoopId, outer: Option<LoopId>| {
            let len = t.range_len(m);
            match outer {
                Some(o) => {
                    let times = t.range_len(o);
                    t.b.ins().imul(times, len)
                }
                None => len,
            }
        };
        let rows = run(self, call.inner, call.o);
        let cols = run(self, call.l, call.cols_outer);
        let [ld, ls, stream] =
            [call.ld, call.ls, i64::from(call.stream)].map(|v| self.b.ins().iconst(types::I64, v));
        self.b.ins().call(
            self.pow.transpose_32,
            &[dst, ld, src, ls, rows, cols, stream],
        );
        self.streamed |= call.stream;
        Ok(())
    }

    /// Emits loop `l`, whose body is `jam`'s vector loop with body `inner_body`, four
    /// iterations of `l` at a time (see the module docs).
    pub(super) fn emit_jammed(&mut self, l: LoopId, jam: &Jam, inner_body: &[Stmt]) -> Result<()> {
        let (start, end) = self.loop_range(l);
        let counter = self.b.declare_var(types::I64);
        self.b.def_var(counter, start);
        self.counted_loop(counter, end, 4, |t, lv| {
            t.loop_vals[l.index()] = Some(lv);
            let inner = jam.inner;
            let (istart, iend) = t.loop_range(inner);
            let icounter = t.b.declare_var(types::I64);
            t.b.def_var(icounter, istart);
            t.counted_loop(icounter, iend, 4 * jam.parts, |t, iv| {
                t.loop_vals[inner.index()] = Some(iv);
                t.wide = Some(WideCtx {
                    loop_id: inner,
                    lanes: 4,
                    parts: jam.parts,
                });
                let result = t.jammed_step(l, jam, inner_body);
                t.wide = None;
                t.wide_offset[l.index()] = 0;
                t.jam_loads.clear();
                result
            })?;
            t.loop_vals[inner.index()] = None;
            Ok(())
        })?;
        self.loop_vals[l.index()] = None;
        Ok(())
    }

    /// One vector step of the inner loop for four iterations of `l`: the blocks of every
    /// transposed load, then the body once per iteration of `l`.
    fn jammed_step(&mut self, l: LoopId, jam: &Jam, inner_body: &[Stmt]) -> Result<()> {
        // Per load, per row `u` of the block: the vectors of that row's step.
        let mut columns: Vec<(ValueId, [Vec<Value>; 4])> = Vec::with_capacity(jam.loads.len());
        for (value, access) in &jam.loads {
            let mut rows_of: [Vec<Value>; 4] = Default::default();
            for part in 0..jam.parts {
                let mut block = [None; 4];
                for (m, row) in block.iter_mut().enumerate() {
                    let lane = i64::from(part * 4) + m as i64;
                    let index = self.affine(&access.index, lane)?;
                    let addr = self.address(access, index);
                    *row = Some(self.b.ins().load(
                        types::F32X4,
                        MemFlagsData::new().with_notrap(),
                        addr,
                        0,
                    ));
                }
                let block = block.map(|r| r.expect("every row is loaded"));
                for (u, column) in self.transpose4(block).into_iter().enumerate() {
                    rows_of[u].push(column);
                }
            }
            columns.push((*value, rows_of));
        }
        for u in 0..4 {
            self.wide_offset[l.index()] = u as i64;
            self.jam_loads = columns
                .iter()
                .map(|(v, rows_of)| (*v, Repr::Wide(rows_of[u].clone())))
                .collect();
            self.stmts(inner_body)?;
        }
        Ok(())
    }

    /// The transpose of four `f32x4` rows: column `u` holds lane `u` of each row, in row order.
    fn transpose4(&mut self, rows: [Value; 4]) -> [Value; 4] {
        let le = MemFlagsData::new().with_endianness(Endianness::Little);
        let mut mask = |lanes: &[u8], width: u8| {
            // Lanes of `width` bytes, from the 32 bytes of both operands.
            let bytes: Vec<u8> = lanes
                .iter()
                .flat_map(|&lane| (0..width).map(move |b| lane * width + b))
                .collect();
            self.b.func.dfg.immediates.push(ConstantData::from(bytes))
        };
        let (lo32, hi32) = (mask(&[0, 4, 1, 5], 4), mask(&[2, 6, 3, 7], 4));
        let (lo64, hi64) = (mask(&[0, 2], 8), mask(&[1, 3], 8));
        let bytes = rows.map(|r| self.b.ins().bitcast(types::I8X16, le, r));
        let t0 = self.b.ins().shuffle(bytes[0], bytes[1], lo32);
        let t1 = self.b.ins().shuffle(bytes[0], bytes[1], hi32);
        let t2 = self.b.ins().shuffle(bytes[2], bytes[3], lo32);
        let t3 = self.b.ins().shuffle(bytes[2], bytes[3], hi32);
        let columns = [
            self.b.ins().shuffle(t0, t2, lo64),
            self.b.ins().shuffle(t0, t2, hi64),
            self.b.ins().shuffle(t1, t3, lo64),
            self.b.ins().shuffle(t1, t3, hi64),
        ];
        columns.map(|c| self.b.ins().bitcast(types::F32X4, le, c))
    }
}
