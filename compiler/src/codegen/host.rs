//! The Cranelift target for the host, and the extensions code generation chooses by.
//!
//! Guarantees: the target is the host's, with every ISA extension cranelift-native detects
//! enabled and optimisation level `speed`; [`HostFeatures`] are the runtime's host `Target`'s
//! (`weft_runtime::target`, the one detection), and construction fails (`CodegenError::Host`)
//! if cranelift-native's flags disagree with them, so code generation and the runtime's
//! dispatch never assume different machines. Built once per process and shared. Cranelift's
//! own IR verifier runs on every function in debug builds (every test) and is off in release
//! builds, where it cost about 40% of code generation time (docs/benchmarks.md, compile time):
//! weft's loop-IR verifier still checks every kernel before translation.

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use std::sync::OnceLock;
use weft_runtime::target::{Isa, Target};

use super::CodegenError;

/// The host ISA extensions relevant to code generation (from the runtime's `Target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFeatures {
    /// SSE4.1 (vector rounding, `pcmpeqq`, blends).
    pub sse41: bool,
    /// AVX (VEX encodings of 128-bit operations).
    pub avx: bool,
    /// AVX2.
    pub avx2: bool,
    /// FMA3 (fused multiply-add; used only together with AVX, as Cranelift requires).
    pub fma: bool,
    /// AVX-512F (assembled leaf loops in `zmm` registers).
    pub avx512f: bool,
    /// The level the runtime's native routines run at (`Target::isa`): the width leaf loops
    /// are compared with.
    pub isa: Isa,
}

impl Default for HostFeatures {
    /// No extension: scalar code only.
    fn default() -> HostFeatures {
        HostFeatures {
            sse41: false,
            avx: false,
            avx2: false,
            fma: false,
            avx512f: false,
            isa: Isa::Scalar,
        }
    }
}

/// The host target and its features, detected on the first call and shared afterwards.
pub(crate) fn host_isa() -> Result<(OwnedTargetIsa, HostFeatures), CodegenError> {
    static HOST: OnceLock<Result<(OwnedTargetIsa, HostFeatures), String>> = OnceLock::new();
    HOST.get_or_init(|| detect_host(false))
        .clone()
        .map_err(CodegenError::Host)
}

/// [`host_isa`] for position-independent code: what an object file holds (`object.rs`).
pub(crate) fn object_isa() -> Result<(OwnedTargetIsa, HostFeatures), CodegenError> {
    static OBJECT: OnceLock<Result<(OwnedTargetIsa, HostFeatures), String>> = OnceLock::new();
    OBJECT
        .get_or_init(|| detect_host(true))
        .clone()
        .map_err(CodegenError::Host)
}

fn detect_host(pic: bool) -> Result<(OwnedTargetIsa, HostFeatures), String> {
    let mut flags = settings::builder();
    let set = |flags: &mut settings::Builder, name: &str, value: &str| {
        flags
            .set(name, value)
            .map_err(|e| format!("setting {name}={value}: {e}"))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "is_pic", if pic { "true" } else { "false" })?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    set(&mut flags, "enable_verifier", verify)?;
    // Frames larger than a page (a streamed store's 16 KiB staging area) touch each page in
    // order, so they cannot step over a thread's stack guard page.
    set(&mut flags, "enable_probestack", "true")?;
    set(&mut flags, "probestack_strategy", "inline")?;
    let isa_builder = cranelift_native::builder().map_err(|e| e.to_string())?;
    let isa = isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    let flag = |name: &str| {
        isa.isa_flags()
            .iter()
            .any(|v| v.name == name && v.as_bool().unwrap_or(false))
    };
    let features = HostFeatures::of(Target::host());
    let cranelift = HostFeatures {
        sse41: flag("has_sse41"),
        avx: flag("has_avx"),
        avx2: flag("has_avx2"),
        fma: flag("has_fma"),
        avx512f: flag("has_avx512f"),
        isa: features.isa,
    };
    if cranelift != features {
        return Err(format!(
            "cranelift-native detected {cranelift:?}, the runtime's target {features:?}"
        ));
    }
    Ok((isa, features))
}

impl HostFeatures {
    /// The extensions of `target` code generation chooses by.
    pub fn of(target: &Target) -> HostFeatures {
        let f = target.features;
        HostFeatures {
            sse41: f.sse41,
            avx: f.avx,
            avx2: f.avx2,
            fma: f.fma,
            avx512f: f.avx512f,
            isa: target.isa(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cranelift's target builds on this machine, its features the runtime's `Target`'s.
    #[test]
    fn host_features_are_the_targets() {
        let (_, features) = host_isa().expect("the host target builds");
        assert_eq!(features, HostFeatures::of(Target::host()));
        let v3 = HostFeatures::of(&Target::named("x86-64-v3").unwrap());
        assert!(v3.sse41 && v3.avx && v3.avx2 && v3.fma && !v3.avx512f);
        assert_eq!(v3.isa, Isa::Avx2Fma);
        let v4 = HostFeatures::of(&Target::named("x86-64-v4").unwrap());
        assert!(v4.avx512f && v4.isa == Isa::Avx512F);
        assert_eq!(
            HostFeatures::of(&Target::named("scalar").unwrap()),
            HostFeatures::default()
        );
    }
}
