//! weft's C interface: the functions of `include/weft.h`, built as `libweft_c.a` and
//! `libweft_c.so` (docs/c-api.md).
//!
//! Each entry point checks its pointers, turns them into the safe objects of [`model`] and
//! [`buffer`], and runs inside [`status::guard`], so a failure is a `weft_status` with a message
//! (`weft_last_error`) and a panic never unwinds into C.
//!
//! Assumes (weft.h's contract): pointers are NULL or valid for what the header says; handles
//! are ones this library made and did not free; `weft_model_destroy` runs while no other call
//! uses the model.
//! Guarantees: nothing here aborts the process or reads memory the caller did not describe;
//! `unsafe` is confined to dereferencing the caller's pointers (each block says why it holds).

#![deny(unsafe_op_in_unsafe_fn)]

mod buffer;
mod model;
mod status;

use std::ffi::{c_char, c_int, CStr};

use buffer::{Buffer, BufferMut, RawBuffer};
use model::{dtype_of, Context, Model, Tensor, TensorInfo};
use status::{guard, Failure, Status};

pub use status::weft_last_error;

/// weft.h's `WEFT_API_VERSION`.
const API_VERSION: u32 = 1;

/// `weft_api_version` of weft.h.
#[no_mangle]
pub extern "C" fn weft_api_version() -> u32 {
    API_VERSION
}

/// `weft_dtype_size` of weft.h.
#[no_mangle]
pub extern "C" fn weft_dtype_size(dtype: c_int) -> usize {
    dtype_of(dtype).map_or(0, |d| d.size_bytes())
}

/// A NULL `what` is the caller's mistake.
fn non_null<T>(p: *const T, what: &str) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::argument(format!("{what} is NULL")));
    }
    Ok(())
}

/// `weft_context_create` of weft.h.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn weft_context_create(
    threads: usize,
    memory_budget: u64,
    out: *mut *mut Context,
) -> Status {
    guard(|| {
        non_null(out, "weft_context_create: out")?;
        let context = Box::new(Context::new(threads, memory_budget)?);
        // SAFETY: `out` is non-NULL and valid for a write (the caller's contract).
        unsafe { *out = Box::into_raw(context) };
        Ok(())
    })
}

/// `weft_context_destroy` of weft.h.
///
/// # Safety
/// `context` is NULL or a context this library made and has not freed.
#[no_mangle]
pub unsafe extern "C" fn weft_context_destroy(context: *mut Context) {
    if !context.is_null() {
        // SAFETY: made by `Box::into_raw` in `weft_context_create`, freed once (the contract).
        drop(unsafe { Box::from_raw(context) });
    }
}

/// The UTF-8 string at `p`, named `what` in messages.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
unsafe fn string(p: *const c_char, what: &str) -> Result<String, Failure> {
    non_null(p, what)?;
    // SAFETY: non-NULL and NUL-terminated (the caller's contract).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| Failure::argument(format!("{what} is not UTF-8")))
}

/// `weft_model_load` of weft.h.
///
/// # Safety
/// `context` is NULL or a live context; `path` NULL or a NUL-terminated string; `bindings`
/// NULL or `binding_count` pointers to NUL-terminated strings; `out` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn weft_model_load(
    context: *const Context,
    path: *const c_char,
    bindings: *const *const c_char,
    binding_count: usize,
    out: *mut *mut Model,
) -> Status {
    guard(|| {
        non_null(context, "weft_model_load: context")?;
        non_null(out, "weft_model_load: out")?;
        // SAFETY: as this function's contract says.
        let path = unsafe { string(path, "weft_model_load: path")? };
        let mut binds = Vec::with_capacity(binding_count.min(64));
        if binding_count > 0 {
            non_null(bindings, "weft_model_load: bindings")?;
            for i in 0..binding_count {
                // SAFETY: `bindings` holds `binding_count` string pointers (the contract).
                let b = unsafe { *bindings.add(i) };
                // SAFETY: as above.
                binds.push(unsafe { string(b, &format!("weft_model_load: bindings[{i}]"))? });
            }
        }
        // SAFETY: a live context (the contract), only read.
        let context = unsafe { &*context };
        let model = Box::new(Model::load(context, &path, &binds)?);
        // SAFETY: non-NULL, valid for a write (the contract).
        unsafe { *out = Box::into_raw(model) };
        Ok(())
    })
}

/// `weft_model_destroy` of weft.h.
///
/// # Safety
/// `model` is NULL or a model this library made and has not freed, used by no other call.
#[no_mangle]
pub unsafe extern "C" fn weft_model_destroy(model: *mut Model) {
    if !model.is_null() {
        // SAFETY: made by `Box::into_raw` in `weft_model_load`, freed once, unused (the
        // contract). Dropping runs no user code that could panic into C: a panic in a
        // destructor here would be a bug, caught below.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(model) })
        }));
    }
}

/// The model behind `model`, or [`Failure`] when it is NULL.
///
/// # Safety
/// `model` is NULL or a live model.
unsafe fn model_ref<'a>(model: *const Model, what: &str) -> Result<&'a Model, Failure> {
    non_null(model, what)?;
    // SAFETY: a live model (the contract), shared: every method takes `&self`.
    Ok(unsafe { &*model })
}

/// The count of `list` of a model, 0 for NULL.
///
/// # Safety
/// `model` is NULL or a live model.
unsafe fn count(model: *const Model, list: fn(&Model) -> &[Tensor]) -> usize {
    // SAFETY: forwarded.
    match unsafe { model_ref(model, "model") } {
        Ok(m) => list(m).len(),
        Err(_) => 0,
    }
}

/// `weft_model_input_count` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model.
#[no_mangle]
pub unsafe extern "C" fn weft_model_input_count(model: *const Model) -> usize {
    // SAFETY: forwarded.
    unsafe { count(model, |m| &m.inputs) }
}

/// `weft_model_output_count` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model.
#[no_mangle]
pub unsafe extern "C" fn weft_model_output_count(model: *const Model) -> usize {
    // SAFETY: forwarded.
    unsafe { count(model, |m| &m.outputs) }
}

/// `weft_model_variable_count` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model.
#[no_mangle]
pub unsafe extern "C" fn weft_model_variable_count(model: *const Model) -> usize {
    // SAFETY: forwarded.
    unsafe { count(model, |m| &m.variables) }
}

/// Tensor `index` of `list`, or why not (`what` names the list).
fn tensor<'a>(list: &'a [Tensor], index: usize, what: &str) -> Result<&'a Tensor, Failure> {
    list.get(index).ok_or_else(|| {
        Failure::argument(format!(
            "{what} {index}: the model has {} {what}s",
            list.len()
        ))
    })
}

/// Writes the info of tensor `index` of `list` to `info`.
///
/// # Safety
/// `model` is NULL or a live model; `info` NULL or valid for a write.
unsafe fn describe(
    model: *const Model,
    index: usize,
    info: *mut TensorInfo,
    list: fn(&Model) -> &[Tensor],
    what: &str,
) -> Status {
    guard(|| {
        // SAFETY: forwarded.
        let m = unsafe { model_ref(model, "model")? };
        non_null(info, "info")?;
        let t = tensor(list(m), index, what)?;
        // SAFETY: non-NULL and valid for a write (the contract).
        unsafe { *info = t.info() };
        Ok(())
    })
}

/// `weft_model_input` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model; `info` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn weft_model_input(
    model: *const Model,
    index: usize,
    info: *mut TensorInfo,
) -> Status {
    // SAFETY: forwarded.
    unsafe { describe(model, index, info, |m| &m.inputs, "input") }
}

/// `weft_model_output` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model; `info` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn weft_model_output(
    model: *const Model,
    index: usize,
    info: *mut TensorInfo,
) -> Status {
    // SAFETY: forwarded.
    unsafe { describe(model, index, info, |m| &m.outputs, "output") }
}

/// `weft_model_variable` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model; `info` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn weft_model_variable(
    model: *const Model,
    index: usize,
    info: *mut TensorInfo,
) -> Status {
    // SAFETY: forwarded.
    unsafe { describe(model, index, info, |m| &m.variables, "variable") }
}

/// The `count` buffers at `buffers` (NULL when 0), after checking their number against the
/// `expected` of the model.
///
/// # Safety
/// `buffers` is NULL or valid for `count` reads.
unsafe fn buffers<'a>(
    buffers: *const RawBuffer,
    count: usize,
    expected: usize,
    what: &str,
) -> Result<&'a [RawBuffer], Failure> {
    if count != expected {
        return Err(Failure::argument(format!(
            "{count} {what} buffers; the model has {expected} {what}s"
        )));
    }
    if count == 0 {
        return Ok(&[]);
    }
    non_null(buffers, what)?;
    // SAFETY: non-NULL, `count` buffers (the contract).
    Ok(unsafe { std::slice::from_raw_parts(buffers, count) })
}

/// Refuses output buffers that overlap each other or an input: weft writes them while it
/// reads the inputs.
fn apart(inputs: &[RawBuffer], outputs: &[RawBuffer]) -> Result<(), Failure> {
    let range = |b: &RawBuffer| (b.data as usize, (b.data as usize).saturating_add(b.bytes));
    for (i, o) in outputs.iter().enumerate().filter(|(_, o)| o.bytes > 0) {
        let (o0, o1) = range(o);
        let others = inputs.iter().map(|b| ("input", b)).enumerate().chain(
            outputs
                .iter()
                .map(|b| ("output", b))
                .enumerate()
                .filter(|&(j, _)| j != i),
        );
        for (j, (what, b)) in others {
            let (b0, b1) = range(b);
            if b.bytes > 0 && o0 < b1 && b0 < o1 {
                return Err(Failure::argument(format!(
                    "output buffer {i} overlaps {what} buffer {j}"
                )));
            }
        }
    }
    Ok(())
}

/// `weft_model_run` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model; `inputs` NULL or `input_count` buffers, each valid for
/// reads of its bytes; `outputs` NULL or `output_count` buffers, each valid for writes of its
/// bytes and apart from every other buffer of the call.
#[no_mangle]
pub unsafe extern "C" fn weft_model_run(
    model: *const Model,
    inputs: *const RawBuffer,
    input_count: usize,
    outputs: *const RawBuffer,
    output_count: usize,
) -> Status {
    guard(|| {
        // SAFETY: forwarded.
        let m = unsafe { model_ref(model, "weft_model_run: model")? };
        // SAFETY: forwarded.
        let raw_in = unsafe { buffers(inputs, input_count, m.inputs.len(), "input")? };
        // SAFETY: forwarded.
        let raw_out = unsafe { buffers(outputs, output_count, m.outputs.len(), "output")? };
        apart(raw_in, raw_out)?;
        let ins = raw_in
            .iter()
            .zip(&m.inputs)
            // SAFETY: each input buffer is readable for the call (the contract).
            .map(|(r, t)| unsafe { Buffer::new(r, t, "input") })
            .collect::<Result<Vec<_>, _>>()?;
        let outs = raw_out
            .iter()
            .zip(&m.outputs)
            // SAFETY: each output buffer is writable and apart from the others (the contract).
            .map(|(r, t)| unsafe { BufferMut::new(r, t, "output") })
            .collect::<Result<Vec<_>, _>>()?;
        m.run(&ins, outs)
    })
}

/// `weft_model_read_variable` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model; `value` valid for writes of its bytes.
#[no_mangle]
pub unsafe extern "C" fn weft_model_read_variable(
    model: *const Model,
    index: usize,
    value: RawBuffer,
) -> Status {
    guard(|| {
        // SAFETY: forwarded.
        let m = unsafe { model_ref(model, "weft_model_read_variable: model")? };
        let t = tensor(&m.variables, index, "variable")?;
        // SAFETY: writable for the call (the contract).
        let out = unsafe { BufferMut::new(&value, t, "variable")? };
        m.read_variable(index, out)
    })
}

/// `weft_model_write_variable` of weft.h.
///
/// # Safety
/// `model` is NULL or a live model; `value` valid for reads of its bytes.
#[no_mangle]
pub unsafe extern "C" fn weft_model_write_variable(
    model: *const Model,
    index: usize,
    value: RawBuffer,
) -> Status {
    guard(|| {
        // SAFETY: forwarded.
        let m = unsafe { model_ref(model, "weft_model_write_variable: model")? };
        let t = tensor(&m.variables, index, "variable")?;
        // SAFETY: readable for the call (the contract).
        let value = unsafe { Buffer::new(&value, t, "variable")? };
        m.write_variable(index, &value)
    })
}

#[cfg(test)]
mod tests {
    //! The entry points' refusals: every bad argument is a status and a message, never a crash.

    use super::*;
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    fn last_error() -> String {
        // SAFETY: weft_last_error returns a valid NUL-terminated string.
        unsafe { CStr::from_ptr(weft_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    /// A model of `source` (a .weft text) loaded with `bindings`, or the status and message.
    fn load(source: &str, bindings: &[&str]) -> Result<*mut Model, (Status, String)> {
        let dir = std::env::temp_dir().join(format!("weft-capi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("{n}.weft"));
        std::fs::write(&path, source).unwrap();
        let path = CString::new(path.to_str().unwrap()).unwrap();
        let binds: Vec<CString> = bindings.iter().map(|b| CString::new(*b).unwrap()).collect();
        let pointers: Vec<*const c_char> = binds.iter().map(|b| b.as_ptr()).collect();
        let mut context = null_mut();
        // SAFETY: valid out-pointer.
        assert_eq!(
            unsafe { weft_context_create(1, 0, &mut context) },
            Status::Ok
        );
        let mut model = null_mut();
        // SAFETY: live context, valid strings and out-pointer.
        let status = unsafe {
            weft_model_load(
                context,
                path.as_ptr(),
                pointers.as_ptr(),
                pointers.len(),
                &mut model,
            )
        };
        // SAFETY: made above; models outlive their context.
        unsafe { weft_context_destroy(context) };
        match status {
            Status::Ok => Ok(model),
            s => Err((s, last_error())),
        }
    }

    /// `NAME = value` of weft.h's `typedef enum {name} { ... }`, in order.
    fn header_enum(name: &str) -> Vec<(String, i64)> {
        let header = include_str!("../include/weft.h");
        let open = format!("typedef enum {name} {{");
        let body = header.split(&open).nth(1).expect("the enum in weft.h");
        let body = body.split('}').next().expect("the enum's end");
        body.lines()
            .map(|l| l.split("/*").next().unwrap_or_default().trim())
            .filter(|l| l.starts_with("WEFT_"))
            .map(|l| {
                let (k, v) = l
                    .trim_end_matches(',')
                    .split_once('=')
                    .expect("NAME = value");
                (k.trim().to_owned(), v.trim().parse().expect("a number"))
            })
            .collect()
    }

    #[test]
    fn the_header_and_the_library_agree_on_every_code() {
        let statuses = [
            ("WEFT_OK", Status::Ok),
            ("WEFT_ERROR_ARGUMENT", Status::Argument),
            ("WEFT_ERROR_IO", Status::Io),
            ("WEFT_ERROR_MODEL", Status::Model),
            ("WEFT_ERROR_COMPILE", Status::Compile),
            ("WEFT_ERROR_MEMORY", Status::Memory),
            ("WEFT_ERROR_RUN", Status::Run),
            ("WEFT_ERROR_INTERNAL", Status::Internal),
        ];
        let expected: Vec<(String, i64)> = statuses
            .iter()
            .map(|(k, s)| (k.to_string(), *s as i64))
            .collect();
        assert_eq!(header_enum("weft_status"), expected);
        let dtypes = [
            ("WEFT_F32", weft_api::DType::F32),
            ("WEFT_F64", weft_api::DType::F64),
            ("WEFT_I32", weft_api::DType::I32),
            ("WEFT_I64", weft_api::DType::I64),
            ("WEFT_BOOL", weft_api::DType::Bool),
        ];
        let expected: Vec<(String, i64)> = dtypes
            .iter()
            .map(|(k, d)| (k.to_string(), i64::from(model::dtype_code(*d))))
            .collect();
        assert_eq!(header_enum("weft_dtype"), expected);
        for (_, d) in dtypes {
            assert_eq!(dtype_of(model::dtype_code(d)), Some(d));
        }
        let version = format!("#define WEFT_API_VERSION {API_VERSION}\n");
        assert!(include_str!("../include/weft.h").contains(&version));
    }

    const MASKED: &str = "axis N = 4\nplaceholder m: bool[N]\nplaceholder x: f32[N]\n\
                          constant zero: f32 = 0\ny = select(m, x, zero)\noutput y\n";

    #[test]
    fn bad_loads_name_what_is_wrong() {
        let (s, m) = load(
            "axis N = 4\nplaceholder x: f32[N]\ny = exp(x\noutput y\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(s, Status::Model, "{m}");
        let (s, m) =
            load("axis N\nplaceholder x: f32[N]\ny = exp(x)\noutput y\n", &[]).unwrap_err();
        assert_eq!(s, Status::Model);
        assert!(m.contains('N'), "{m}");
        let (s, m) = load(MASKED, &["M=3"]).unwrap_err();
        assert!(s == Status::Model && m.contains("`M`"), "{s:?} {m}");
        let (s, m) = load(MASKED, &["N"]).unwrap_err();
        assert!(s == Status::Argument && m.contains("AXIS=LEN"), "{s:?} {m}");
        let mut context = null_mut();
        // SAFETY: valid out-pointer.
        let s = unsafe { weft_context_create(1 << 20, 0, &mut context) };
        assert!(s == Status::Argument && last_error().contains("threads"));
        // SAFETY: NULL pointers are refused before any use.
        let s = unsafe { weft_model_load(null(), null(), null(), 0, null_mut()) };
        assert!(s == Status::Argument && last_error().contains("NULL"));
    }

    #[test]
    fn bad_buffers_are_refused_before_a_run() {
        let model = load(MASKED, &[]).unwrap();
        let mut m = [1u8, 0, 1, 1];
        let mut x = [1.0f32, 2.0, 3.0, 4.0];
        let mut y = [0.0f32; 4];
        let buf = |p: *mut u8, bytes| RawBuffer {
            data: p.cast(),
            bytes,
        };
        let run = |ins: &[RawBuffer], outs: &[RawBuffer]| {
            // SAFETY: every buffer describes live memory of its size.
            unsafe { weft_model_run(model, ins.as_ptr(), ins.len(), outs.as_ptr(), outs.len()) }
        };
        let (bm, bx, by) = (
            buf(m.as_mut_ptr(), 4),
            buf(x.as_mut_ptr().cast(), 16),
            buf(y.as_mut_ptr().cast(), 16),
        );
        assert_eq!(run(&[bm, bx], &[by]), Status::Ok);
        assert_eq!(y, [1.0, 0.0, 3.0, 4.0]);
        assert_eq!(run(&[bm], &[by]), Status::Argument);
        assert!(last_error().contains("1 input buffers"));
        assert_eq!(
            run(&[bm, buf(x.as_mut_ptr().cast(), 12)], &[by]),
            Status::Argument
        );
        assert!(last_error().contains("`x`") && last_error().contains("16"));
        // Inside an array of its own: one byte past `y` could be another array's first
        // (the stack's layout varies with optimisation), which is an overlap, not this.
        let mut room = [0.0f32; 8];
        let misaligned = buf(room.as_mut_ptr().cast::<u8>().wrapping_add(1), 16);
        assert_eq!(run(&[bm, bx], &[misaligned]), Status::Argument);
        assert!(last_error().contains("aligned"));
        assert_eq!(run(&[bm, buf(null_mut(), 16)], &[by]), Status::Argument);
        assert_eq!(run(&[bm, bx], &[bx]), Status::Argument);
        assert!(last_error().contains("output buffer 0 overlaps input buffer 1"));
        // SAFETY: element 2 of `m`, written through the pointer the buffer holds.
        unsafe { bm.data.cast::<u8>().add(2).write(2) };
        assert_eq!(run(&[bm, bx], &[by]), Status::Argument);
        assert!(
            last_error().contains("bool element 2 is 2"),
            "{}",
            last_error()
        );
        let mut info = std::mem::MaybeUninit::<TensorInfo>::uninit();
        // SAFETY: a live model and a writable info.
        assert_eq!(
            unsafe { weft_model_input(model, 2, info.as_mut_ptr()) },
            Status::Argument
        );
        // SAFETY: as above.
        assert_eq!(
            unsafe { weft_model_input(model, 0, info.as_mut_ptr()) },
            Status::Ok
        );
        // SAFETY: written by the call above.
        let info = unsafe { info.assume_init() };
        assert_eq!(
            (info.dtype, info.rank, info.elements, info.bytes),
            (4, 1, 4, 4)
        );
        // SAFETY: the model is not used again.
        unsafe { weft_model_destroy(model) };
    }
}
