//! The JIT compiler: verified loop-IR kernel in, callable [`CompiledKernel`] out.
//!
//! Guarantees: every kernel is verified before translation; each compiled kernel lives in its
//! own JIT module, owned by the returned handle and freed when it drops; the handle's entry
//! point honours the contract of [`CompiledKernel::from_code`] because the translator emits
//! only accesses the verifier proved in bounds. The hand-off itself is in `handoff.rs`, the
//! crate's only `unsafe` code.

use cranelift_codegen::ir::{
    types, AbiParam, FuncRef, Function, Signature, UserExternalName, UserFuncName,
};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module, ModuleError, ModuleReloc};
use std::sync::Arc;
use weft_ir::loop_ir::{verify, Kernel, LoopId};
use weft_runtime::{CompiledKernel, ThreadPool};

use super::handoff::hand_over;
use super::host::host_isa;
use super::leaf_asm::LeafWidth;
use super::parallel::compile_all;
use super::strategy::{self, KernelStrategy, OutlinePolicy, TranslateOptions};
use super::stream_min_bytes;
use super::translate::outline::{outlined_signature, OUTLINED_NAMESPACE};
use super::translate::{kernel_signature, translate, Imports, PowRefs};
use super::{CodegenError, HostFeatures};

/// Switches of the code generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Honour `vectorize` annotations (off: every loop is scalar; for testing and debugging).
    pub vectorize: bool,
    /// Use fused multiply-add in polynomials when the host has FMA.
    pub fma: bool,
    /// Keep the disassembly of each kernel in its [`KernelListing`].
    pub disassemble: bool,
    /// Let a vector loop that stores an f32 `exp`, `tanh`, `sigmoid` or `log` into a contiguous span
    /// store the argument and call the native span routine (`weft_runtime::vmath`, the same
    /// bits) after it, when the host has AVX2 and FMA (`translate/span.rs`).
    pub span_math: bool,
    /// Write buffers at least this many bytes long through a 16 KiB staging area and
    /// non-temporal stores (`weft_runtime::stream`), where a vector loop's one store writes
    /// them contiguously (`translate/span.rs`); `None`: never. Default
    /// [`stream_min_bytes`](crate::codegen::stream_min_bytes) of the host: half its L3, at
    /// least 16 MiB.
    pub stream_min_bytes: Option<u64>,
    /// Let a tiled transposing copy of f32s call the native transpose
    /// (`weft_runtime::transpose`: blocks in AVX registers, whole lines stored at a time,
    /// streamed for outputs of at least `stream_min_bytes`) per parallel chunk, when the host
    /// has AVX
    /// (`translate/jam.rs`).
    pub native_transpose: bool,
    /// Which loop nests of a kernel are compiled as functions of their own, at once on the
    /// compiler's threads ([`JitCompiler::with_pool`], `translate/outline.rs`).
    pub outline: Outline,
    /// Assemble plain f32 vector loops (straight-line arithmetic over contiguous loads,
    /// stored contiguously) as leaf loops at the host's full width when it has AVX2
    /// (`codegen/leaf.rs`; the same bits as Cranelift's 4-lane code).
    pub leaf_loops: bool,
    /// Assemble leaf loops 16 lanes wide (`zmm`) when the host has AVX-512F; off: 8 lanes
    /// (`ymm`) there too, and the native span routines (16 lanes) keep the function loops
    /// they can take. The same bits either way (`tools/avx512-emu` runs the tests on an
    /// emulated AVX-512F CPU where the host has none).
    pub wide_leaves: bool,
}

/// Which loop nests of a kernel become Cranelift functions of their own, so that they compile
/// on several threads at once (`translate/outline.rs`). The results are the same bits either
/// way: only compile time and a call per nest differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outline {
    /// When the compiler has two threads or more: about half a kernel's cost, in its largest
    /// nests of at least 1024 iterations per entry, when it has two such nests or more.
    #[default]
    WhenThreaded,
    /// None.
    Never,
    /// Every nest where they are sought, whatever its size and the threads (tests: small
    /// kernels take the outlined path).
    Every,
}

impl Outline {
    /// The translator's policy for a compiler with `threads` threads; `None`: no outlining.
    pub(crate) fn policy(self, threads: usize) -> Option<OutlinePolicy> {
        match self {
            Outline::Never => None,
            Outline::WhenThreaded => (threads > 1).then_some(OutlinePolicy::THREADED),
            Outline::Every => Some(OutlinePolicy::EVERY),
        }
    }
}

impl Default for CodegenOptions {
    fn default() -> Self {
        Self {
            vectorize: true,
            fma: true,
            disassemble: false,
            span_math: true,
            stream_min_bytes: Some(stream_min_bytes(weft_runtime::Target::host())),
            native_transpose: true,
            outline: Outline::WhenThreaded,
            leaf_loops: true,
            wide_leaves: true,
        }
    }
}

/// Debug views of one compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelListing {
    /// The Cranelift IR handed to the backend.
    pub clif: String,
    /// The machine code, disassembled (when [`CodegenOptions::disassemble`] is set).
    pub disassembly: Option<String>,
    /// Size of the machine code in bytes.
    pub code_size: usize,
}

/// Compiles loop-IR kernels for the host CPU.
pub struct JitCompiler {
    isa: OwnedTargetIsa,
    features: HostFeatures,
    options: CodegenOptions,
    /// Threads to compile a kernel's functions on ([`JitCompiler::with_pool`]).
    pool: Option<Arc<ThreadPool>>,
}

impl std::fmt::Debug for JitCompiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitCompiler")
            .field("target", &self.isa.triple().to_string())
            .field("features", &self.features)
            .field("options", &self.options)
            .field("threads", &self.pool.as_ref().map_or(1, |p| p.threads()))
            .finish()
    }
}

/// The parameters of the span routines (`weft_{exp,tanh,sigmoid}_f32_span`): dst, len,
/// prefetch address, prefetch bytes, src, sums, sums width (i64), shift (f32), argument form
/// (i64: `weft_runtime::vmath::ArgForm`'s code), scale (f32).
const SPAN_PARAMS: [types::Type; 10] = [
    types::I64,
    types::I64,
    types::I64,
    types::I64,
    types::I64,
    types::I64,
    types::I64,
    types::F32,
    types::I64,
    types::F32,
];

impl JitCompiler {
    /// A compiler for the host with default options.
    pub fn new() -> Result<Self, CodegenError> {
        Self::with_options(CodegenOptions::default())
    }

    /// A compiler for the host with `options`.
    pub fn with_options(options: CodegenOptions) -> Result<Self, CodegenError> {
        let (isa, features) = host_isa()?;
        Ok(Self {
            isa,
            features,
            options,
            pool: None,
        })
    }

    /// This compiler, compiling each kernel's sizeable loop nests as functions of their own
    /// on `pool`'s threads at once (`translate/outline.rs`; nothing changes with one thread).
    pub fn with_pool(mut self, pool: Arc<ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The host features detected.
    pub fn host_features(&self) -> HostFeatures {
        self.features
    }

    /// Whether kernels may run an f32 `exp`, `tanh`, `sigmoid` or `log` over a stored span natively:
    /// [`CodegenOptions::span_math`], with FMA allowed and the host having AVX2 and FMA.
    pub fn span_math(&self) -> bool {
        self.translate_options().span_math
    }

    /// Whether a tiled transposing copy may call the native transpose:
    /// [`CodegenOptions::native_transpose`], and the host has AVX.
    pub fn native_transpose(&self) -> bool {
        self.translate_options().native_transpose
    }

    /// The options in use.
    pub fn options(&self) -> CodegenOptions {
        self.options
    }

    fn translate_options(&self) -> TranslateOptions {
        let fma = self.options.fma && self.features.fma && self.features.avx;
        let leaf_width =
            if self.options.wide_leaves && self.features.isa >= weft_runtime::Isa::Avx512F {
                LeafWidth::Zmm
            } else {
                LeafWidth::Ymm
            };
        TranslateOptions {
            fma,
            vectorize: self.options.vectorize,
            span_math: self.options.span_math && fma && self.features.avx2,
            stream_min_bytes: self.options.stream_min_bytes,
            native_transpose: self.options.native_transpose && self.features.avx,
            outline: self
                .options
                .outline
                .policy(self.pool.as_ref().map_or(1, |p| p.threads())),
            leaf_loops: self.options.leaf_loops && self.features.avx2,
            leaf_width,
            spans_wider: self.features.isa.f32_lanes() > leaf_width.lanes() as usize,
        }
    }

    fn new_module(&self) -> JITModule {
        let mut builder = JITBuilder::with_isa(self.isa.clone(), default_libcall_names());
        for r in weft_runtime::routines::ROUTINES {
            builder.symbol(r.name, (r.address)());
        }
        JITModule::new(builder)
    }

    /// Declares the kernel and its imports in `module` and translates it into `func`, which
    /// calls the functions it returns (the loops it outlined, each declared in `module`).
    fn build<M: Module>(
        &self,
        kernel: &Kernel,
        strategy: &KernelStrategy,
        module: &mut M,
        func: &mut Function,
        name: &str,
    ) -> Result<(FuncId, Vec<(FuncId, Function)>), CodegenError> {
        verify(kernel)?;
        let module_error = module_error(kernel);
        let call_conv = module.isa().default_call_conv();
        let sig = kernel_signature(call_conv);
        let id = module
            .declare_function(name, Linkage::Export, &sig)
            .map_err(module_error)?;
        func.signature = sig;
        func.name = UserFuncName::user(0, id.as_u32());
        let pow = import_routines(kernel, module, func, call_conv)?;
        let leaves = define_leaves(kernel, strategy, module, func)?;
        let imports = Imports { pow, leaves };
        let mut fctx = FunctionBuilderContext::new();
        let outlined = translate(
            kernel,
            strategy,
            func,
            &mut fctx,
            &imports,
            self.translate_options(),
            self.isa.frontend_config(),
        )?;
        let declared = declare_outlined(kernel, module, func, outlined)?;
        Ok((id, declared))
    }

    /// The Cranelift IR of `kernel` as it is handed to the backend: its function, then those
    /// of the loops it outlined.
    pub fn clif_text(&self, kernel: &Kernel) -> Result<String, CodegenError> {
        let mut module = self.new_module();
        let mut func = Function::new();
        let strategy = self.strategy(kernel);
        let (_, outlined) = self.build(kernel, &strategy, &mut module, &mut func, "weft_kernel")?;
        Ok(clif_listing(&func, &outlined))
    }

    /// How this compiler emits each loop of `kernel` (a [`KernelStrategy`],
    /// `codegen/strategy.rs`), decided once: compile it with [`JitCompiler::compile_by`] and
    /// explain it from the same record.
    pub fn strategy(&self, kernel: &Kernel) -> KernelStrategy {
        strategy::decide(kernel, &self.translate_options())
    }

    /// Verifies and compiles `kernel`.
    pub fn compile(&self, kernel: &Kernel) -> Result<CompiledKernel, CodegenError> {
        self.compile_by(kernel, &self.strategy(kernel))
    }

    /// Verifies and compiles `kernel` by `strategy`, which must be this compiler's
    /// [`JitCompiler::strategy`] of it.
    pub fn compile_by(
        &self,
        kernel: &Kernel,
        strategy: &KernelStrategy,
    ) -> Result<CompiledKernel, CodegenError> {
        self.compile_inner(kernel, strategy, false).map(|(k, _)| k)
    }

    /// Verifies and compiles `kernel`, also returning its Cranelift IR, code size and (if
    /// enabled) disassembly.
    pub fn compile_with_listing(
        &self,
        kernel: &Kernel,
    ) -> Result<(CompiledKernel, KernelListing), CodegenError> {
        self.compile_inner(kernel, &self.strategy(kernel), true)
    }

    /// Compiles `kernel`; the Cranelift IR text is printed only when `listing` asks for it
    /// (printing costs about as much as translating).
    fn compile_inner(
        &self,
        kernel: &Kernel,
        strategy: &KernelStrategy,
        listing: bool,
    ) -> Result<(CompiledKernel, KernelListing), CodegenError> {
        let mut module = self.new_module();
        let (id, listing) = self.define(kernel, strategy, &mut module, "weft_kernel", listing)?;
        module
            .finalize_definitions()
            .map_err(|e| CodegenError::Cranelift {
                kernel: kernel.name.clone(),
                message: e.to_string(),
            })?;
        let code = module.get_finalized_function(id);
        let compiled = hand_over(kernel, module, code, listing.code_size)?;
        Ok((compiled, listing))
    }

    /// Translates `kernel` by `strategy` and defines it in `module` as the exported function
    /// `name`, with the loops it outlines and its leaf loops as local functions; returns its id
    /// and listing (the Cranelift IR only when `listing` asks for it).
    pub(crate) fn define<M: Module>(
        &self,
        kernel: &Kernel,
        strategy: &KernelStrategy,
        module: &mut M,
        name: &str,
        listing: bool,
    ) -> Result<(FuncId, KernelListing), CodegenError> {
        let mut func = Function::new();
        let (id, outlined) = self.build(kernel, strategy, module, &mut func, name)?;
        let clif = if listing {
            clif_listing(&func, &outlined)
        } else {
            String::new()
        };
        let cranelift_error = |message: String| CodegenError::Cranelift {
            kernel: kernel.name.clone(),
            message,
        };
        let mut ids = vec![id];
        let mut funcs = vec![func];
        for (fid, f) in outlined {
            ids.push(fid);
            funcs.push(f);
        }
        let disasm = listing && self.options.disassemble;
        let compiled = compile_all(module.isa(), funcs, disasm, self.pool.as_deref())
            .map_err(cranelift_error)?;
        let mut code_size = 0;
        let mut disassembly: Option<String> = None;
        for (fid, c) in ids.into_iter().zip(compiled) {
            let relocs: Vec<ModuleReloc> = c
                .relocs
                .iter()
                .map(|r| ModuleReloc::from_mach_reloc(r, &c.func, fid))
                .collect();
            module
                .define_function_bytes(fid, c.alignment, &c.code, &relocs)
                .map_err(|e| cranelift_error(format!("{e:?}")))?;
            code_size += c.code.len();
            if let Some(text) = c.disassembly {
                let all = disassembly.get_or_insert_with(String::new);
                if !all.is_empty() {
                    // Each outlined function after the kernel's, named as in the CLIF.
                    all.push_str(&format!("\n; function u0:{}\n", fid.as_u32()));
                }
                all.push_str(&text);
            }
        }
        Ok((
            id,
            KernelListing {
                clif,
                disassembly,
                code_size,
            },
        ))
    }
}

/// The text of a kernel's function and then its outlined functions'.
fn clif_listing(func: &Function, outlined: &[(FuncId, Function)]) -> String {
    let mut text = func.display().to_string();
    for (_, f) in outlined {
        text.push('\n');
        text.push_str(&f.display().to_string());
    }
    text
}

/// A module error of compiling `kernel`, as the compiler's error naming it.
fn module_error(kernel: &Kernel) -> impl Fn(ModuleError) -> CodegenError + Copy + '_ {
    |e| CodegenError::Cranelift {
        kernel: kernel.name.clone(),
        message: e.to_string(),
    }
}

/// Declares the scalar functions and native routines kernels call in `module`, imported
/// into `func`.
fn import_routines<M: Module>(
    kernel: &Kernel,
    module: &mut M,
    func: &mut Function,
    call_conv: CallConv,
) -> Result<PowRefs, CodegenError> {
    let module_error = module_error(kernel);
    let mut import = |name: &str, conv, params: &[types::Type], returns: &[types::Type]| {
        let mut s = Signature::new(conv);
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(returns.iter().map(|&t| AbiParam::new(t)));
        let f = module
            .declare_function(name, Linkage::Import, &s)
            .map_err(&module_error)?;
        Ok::<_, CodegenError>(module.declare_func_in_func(f, func))
    };
    let (f32, f64, i64) = (types::F32, types::F64, types::I64);
    // Clobbers nothing: a call inside a vector loop keeps its registers.
    let preserve_all = cranelift_codegen::isa::CallConv::PreserveAll;
    Ok(PowRefs {
        f32: import("weft_pow_f32", call_conv, &[f32, f32], &[f32])?,
        f64: import("weft_pow_f64", call_conv, &[f64, f64], &[f64])?,
        sin_f32: import("weft_sin_f32", call_conv, &[f32], &[f32])?,
        sin_f64: import("weft_sin_f64", call_conv, &[f64], &[f64])?,
        cos_f32: import("weft_cos_f32", call_conv, &[f32], &[f32])?,
        cos_f64: import("weft_cos_f64", call_conv, &[f64], &[f64])?,
        exp_span_f32: import("weft_exp_f32_span", call_conv, &SPAN_PARAMS, &[])?,
        tanh_span_f32: import("weft_tanh_f32_span", call_conv, &SPAN_PARAMS, &[])?,
        sigmoid_span_f32: import("weft_sigmoid_f32_span", call_conv, &SPAN_PARAMS, &[])?,
        log_span_f32: import("weft_log_f32_span", call_conv, &SPAN_PARAMS, &[])?,
        stream_copy: import("weft_stream_copy", call_conv, &[i64; 3], &[])?,
        prefetch_line: import("weft_prefetch_line", preserve_all, &[i64], &[])?,
        // (dst, src, len, step, r, s, d)
        stream_scaled: import(
            "weft_stream_scaled_f32",
            call_conv,
            &[i64, i64, i64, i64, f32, f32, f32],
            &[],
        )?,
        // (dst, ld, src, ls, rows, cols, stream)
        transpose_32: import("weft_transpose_32", call_conv, &[i64; 7], &[])?,
        // (src, len, min, scale) -> the extreme
        extreme_span_f32: import(
            "weft_extreme_f32_span",
            call_conv,
            &[i64, i64, i64, f32],
            &[f32],
        )?,
        // (acc, src, stride, rows, len, min, ahead): columns folded into a row
        extreme_rows_f32: import("weft_extreme_rows_f32", call_conv, &[i64; 7], &[])?,
        // (src, len, min, out): the first best and first NaN indices into out[0..2]
        arg_extreme_span_f32: import("weft_arg_extreme_f32_span", call_conv, &[i64; 4], &[])?,
        // (src, len, mode, acc, at, bytes, shift); keeps every register, so values live
        // across it stay put.
        sum_span_f32: import(
            "weft_sum_f32_span",
            preserve_all,
            &[i64, i64, i64, i64, i64, i64, f32],
            &[],
        )?,
    })
}

/// Each leaf loop of `strategy` assembled and defined into `module` as a function of its own,
/// imported into `func`, by loop.
fn define_leaves<M: Module>(
    kernel: &Kernel,
    strategy: &KernelStrategy,
    module: &mut M,
    func: &mut Function,
) -> Result<Vec<(LoopId, FuncRef)>, CodegenError> {
    let module_error = module_error(kernel);
    let leaf_sig = outlined_signature(module.isa().default_call_conv());
    let mut leaves = Vec::new();
    for (l, s) in strategy.leaves() {
        let code =
            s.leaf
                .assemble(s.vector.prefetch.is_some())
                .map_err(|e| CodegenError::Cranelift {
                    kernel: kernel.name.clone(),
                    message: format!("assembling leaf loop %{l}: {e}"),
                })?;
        let fid = module
            .declare_anonymous_function(&leaf_sig)
            .map_err(module_error)?;
        module
            .define_function_bytes(fid, s.leaf.width().align() as u64, &code, &[])
            .map_err(module_error)?;
        leaves.push((l, module.declare_func_in_func(fid, func)));
    }
    Ok(leaves)
}

/// Declares each of the functions `outlined` from `func` in `module`, and points `func`'s
/// calls of the `i`th (named `(OUTLINED_NAMESPACE, i)`) at it.
fn declare_outlined<M: Module>(
    kernel: &Kernel,
    module: &mut M,
    func: &mut Function,
    outlined: Vec<Function>,
) -> Result<Vec<(FuncId, Function)>, CodegenError> {
    let sig = outlined_signature(module.isa().default_call_conv());
    let mut declared = Vec::with_capacity(outlined.len());
    for (i, mut f) in outlined.into_iter().enumerate() {
        let fid = module
            .declare_anonymous_function(&sig)
            .map_err(module_error(kernel))?;
        f.name = UserFuncName::user(0, fid.as_u32());
        let placeholder = UserExternalName::new(OUTLINED_NAMESPACE, i as u32);
        let callee = UserExternalName::new(0, fid.as_u32());
        let named: Vec<_> = func
            .params
            .user_named_funcs()
            .iter()
            .filter(|(_, n)| **n == placeholder)
            .map(|(r, _)| r)
            .collect();
        for r in named {
            func.params.reset_user_func_name(r, callee.clone());
        }
        declared.push((fid, f));
    }
    Ok(declared)
}
