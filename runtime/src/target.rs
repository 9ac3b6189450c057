//! The machine weft runs on, described once: the instruction-set level its native routines
//! distinguish, the feature flags behind it, cache sizes and the CPU's model name.
//!
//! Assumes: on Linux, sysfs (`/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`)
//! for cache sizes and `/proc/cpuinfo` for the model name; anywhere else, or where those are
//! missing or unreadable, a size or the model is `None` and shown as "unknown" (nothing guessed).
//!
//! Guarantees: [`Target::host`] is detected on its first call and shared afterwards; its
//! features come from the standard library's run-time detection (this module holds the
//! runtime's only `is_x86_feature_detected!`), so a feature it reports is one the
//! CPU has. Every native routine's dispatch (`vmath`, `span_sum`, `extreme`, `extreme_rows`,
//! `gemm`'s scans, `stream`, `transpose`) and the compiler's code generation read it and nothing
//! else, so they cannot disagree. A named target ([`Target::named`]) is a description only: no
//! routine dispatches on it; [`Target::runnable`] refuses one needing a feature the host lacks
//! ([`TargetError::AboveHost`]), so a test runs a lower path only where the CPU has it.

use std::fmt;
use std::sync::OnceLock;

/// The vector levels the native routines distinguish, widest last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// One element at a time (no AVX2 with FMA, or not x86-64).
    Scalar,
    /// AVX2 with FMA: eight f32 lanes.
    Avx2Fma,
    /// AVX-512F (with AVX2 and FMA): sixteen f32 lanes.
    Avx512F,
}

impl Isa {
    /// f32 lanes of one vector of the native routines at this level.
    pub fn f32_lanes(self) -> usize {
        match self {
            Isa::Scalar => 1,
            Isa::Avx2Fma => 8,
            Isa::Avx512F => 16,
        }
    }

    /// The level's name as `weft explain` prints it: `"AVX-512"`, `"AVX2"`, `"scalar"`.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2Fma => "AVX2",
            Isa::Avx512F => "AVX-512",
        }
    }
}

/// The x86-64 extensions some routine or the code generator chooses by. SSE2 is part of
/// x86-64 and not listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Features {
    /// SSE4.1 (the code generator's vector rounding, `pcmpeqq`, blends).
    pub sse41: bool,
    /// AVX (the transpose's blocks, the streamed copy's 32-byte stores).
    pub avx: bool,
    /// AVX2.
    pub avx2: bool,
    /// FMA3.
    pub fma: bool,
    /// AVX-512F.
    pub avx512f: bool,
}

impl Features {
    /// Each flag with its name, in the order [`fmt::Display`] lists them.
    fn flags(&self) -> [(&'static str, bool); 5] {
        [
            ("sse4.1", self.sse41),
            ("avx", self.avx),
            ("avx2", self.avx2),
            ("fma", self.fma),
            ("avx512f", self.avx512f),
        ]
    }

    /// The first feature `self` has and `host` lacks.
    fn first_missing_from(&self, host: &Features) -> Option<&'static str> {
        let theirs = host.flags();
        self.flags()
            .iter()
            .zip(theirs)
            .find(|((_, want), (_, has))| *want && !has)
            .map(|((name, _), _)| *name)
    }

    fn detect() -> Features {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            Features {
                sse41: has!("sse4.1"),
                avx: has!("avx"),
                avx2: has!("avx2"),
                fma: has!("fma"),
                avx512f: has!("avx512f"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Features::default()
    }
}

/// Data cache sizes in bytes, as cpu0 sees them (its L3 is the slice its core shares, not the
/// package's total); `None` where unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Caches {
    /// Level-1 data cache.
    pub l1d: Option<usize>,
    /// Level-2 cache.
    pub l2: Option<usize>,
    /// Level-3 cache.
    pub l3: Option<usize>,
}

impl Caches {
    fn detect() -> Caches {
        let mut caches = Caches::default();
        let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else {
            return caches;
        };
        for entry in dir.flatten() {
            let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).ok();
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
            else {
                continue;
            };
            let (Some(size), kind) = (parse_size(size.trim()), kind.trim()) else {
                continue;
            };
            match (level.trim(), kind) {
                (_, "Instruction") => {}
                ("1", _) => caches.l1d = Some(size),
                ("2", _) => caches.l2 = Some(size),
                ("3", _) => caches.l3 = Some(size),
                _ => {}
            }
        }
        caches
    }
}

/// A sysfs size: `"32K"`, `"16384K"`, `"1M"`, or bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift)
}

/// The CPU's model name from `/proc/cpuinfo`.
fn detect_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, name)| name.trim().to_string())
        .filter(|name| !name.is_empty())
}

/// A machine description: detected ([`Target::host`]) or named ([`Target::named`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// `"host"`, or the name it was made from.
    pub name: String,
    /// The extensions present.
    pub features: Features,
    /// Cache sizes (all `None` for a named target).
    pub caches: Caches,
    /// The CPU's model name (`None` for a named target, or where unknown).
    pub model: Option<String>,
}

/// Why a target is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Not one of [`Target::NAMES`].
    #[error("unknown target {name:?} (known: {})", Target::NAMES.join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// The target needs a feature this CPU lacks: nothing may run on it here.
    #[error("target {name} needs {missing}, which this CPU lacks")]
    AboveHost {
        /// The target's name.
        name: String,
        /// The first feature missing.
        missing: &'static str,
    },
}

impl Target {
    /// The names [`Target::named`] knows, lowest first.
    pub const NAMES: [&'static str; 4] = ["scalar", "x86-64-v2", "x86-64-v3", "x86-64-v4"];

    /// This machine, detected on the first call.
    pub fn host() -> &'static Target {
        static HOST: OnceLock<Target> = OnceLock::new();
        HOST.get_or_init(Target::detect)
    }

    /// Detects this machine now (use [`Target::host`]: the same, once).
    pub fn detect() -> Target {
        Target {
            name: "host".to_string(),
            features: Features::detect(),
            caches: Caches::detect(),
            model: detect_model(),
        }
    }

    /// A target by name ([`Target::NAMES`]): `scalar` (no extension), or an x86-64
    /// micro-architecture level with the extensions of it weft uses (`v2`: SSE4.1; `v3`: AVX,
    /// AVX2, FMA; `v4`: AVX-512F). Caches and model unknown.
    pub fn named(name: &str) -> Result<Target, TargetError> {
        let level = Target::NAMES
            .iter()
            .position(|&n| n == name)
            .ok_or_else(|| TargetError::Unknown {
                name: name.to_string(),
            })?;
        let features = Features {
            sse41: level >= 1,
            avx: level >= 2,
            avx2: level >= 2,
            fma: level >= 2,
            avx512f: level >= 3,
        };
        Ok(Target {
            name: name.to_string(),
            features,
            caches: Caches::default(),
            model: None,
        })
    }

    /// `self`, if the host has every feature it has; [`TargetError::AboveHost`] otherwise.
    pub fn runnable(self) -> Result<Target, TargetError> {
        match self.features.first_missing_from(&Target::host().features) {
            None => Ok(self),
            Some(missing) => Err(TargetError::AboveHost {
                name: self.name,
                missing,
            }),
        }
    }

    /// The named targets this CPU can run, lowest first: the paths a test compares.
    pub fn runnable_named() -> Vec<Target> {
        Target::NAMES
            .iter()
            .filter_map(|n| Target::named(n).ok()?.runnable().ok())
            .collect()
    }

    /// The native routines' levels this CPU can run, lowest first: the paths a test of a
    /// routine with a hook per level compares.
    pub fn runnable_isas() -> Vec<Isa> {
        let mut isas: Vec<Isa> = Target::runnable_named().iter().map(Target::isa).collect();
        isas.dedup();
        isas
    }

    /// The native routines' level: AVX-512F needs AVX2 and FMA too, as its routines use both.
    pub fn isa(&self) -> Isa {
        let f = &self.features;
        match (f.avx2 && f.fma, f.avx512f) {
            (true, true) => Isa::Avx512F,
            (true, false) => Isa::Avx2Fma,
            (false, _) => Isa::Scalar,
        }
    }

    /// f32 lanes of the native routines' vectors ([`Isa::f32_lanes`]).
    pub fn f32_lanes(&self) -> usize {
        self.isa().f32_lanes()
    }
}

/// A size in KiB or MiB, or "unknown".
fn show_size(size: Option<usize>) -> String {
    match size {
        None => "unknown".to_string(),
        Some(b) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        Some(b) if b % 1024 == 0 => format!("{} KiB", b >> 10),
        Some(b) => format!("{b} B"),
    }
}

/// One line: `host: AVX2 (8 f32 lanes; sse4.1 avx avx2 fma), L1d 32 KiB, L2 512 KiB,
/// L3 16 MiB, AMD EPYC`.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let isa = self.isa();
        let flags: Vec<&str> = self
            .features
            .flags()
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        let flags = if flags.is_empty() {
            "no extension".to_string()
        } else {
            flags.join(" ")
        };
        write!(
            f,
            "{}: {} ({} f32 lanes; {flags}), L1d {}, L2 {}, L3 {}, {}",
            self.name,
            isa.name(),
            isa.f32_lanes(),
            show_size(self.caches.l1d),
            show_size(self.caches.l2),
            show_size(self.caches.l3),
            self.model.as_deref().unwrap_or("model unknown")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's features are the standard library's, and its level follows from them.
    #[test]
    fn host_agrees_with_the_feature_macros() {
        let host = Target::host();
        assert_eq!(host, &Target::detect());
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let f = host.features;
            assert_eq!(f.sse41, has!("sse4.1"));
            assert_eq!(f.avx, has!("avx"));
            assert_eq!(f.avx2, has!("avx2"));
            assert_eq!(f.fma, has!("fma"));
            assert_eq!(f.avx512f, has!("avx512f"));
            let want = if has!("avx2") && has!("fma") {
                if has!("avx512f") {
                    Isa::Avx512F
                } else {
                    Isa::Avx2Fma
                }
            } else {
                Isa::Scalar
            };
            assert_eq!(host.isa(), want);
        }
        assert_eq!(host.f32_lanes(), host.isa().f32_lanes());
    }

    /// Cache sizes are known and ordered where sysfs has them (Linux), else `None`.
    #[test]
    fn caches_are_nonzero_or_unknown() {
        let c = Target::host().caches;
        for size in [c.l1d, c.l2, c.l3].into_iter().flatten() {
            assert!(size > 0);
        }
        if std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0").exists() {
            let (l1, l2) = (c.l1d.expect("L1d from sysfs"), c.l2.expect("L2 from sysfs"));
            assert!(l1 < l2, "{c:?}");
        }
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("16384K"), Some(16 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("3X"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn names_parse_in_order_and_unknown_ones_are_refused() {
        let levels: Vec<Isa> = Target::NAMES
            .iter()
            .map(|n| Target::named(n).unwrap().isa())
            .collect();
        assert_eq!(
            levels,
            [Isa::Scalar, Isa::Scalar, Isa::Avx2Fma, Isa::Avx512F]
        );
        assert!(Target::named("x86-64-v2").unwrap().features.sse41);
        assert_eq!(
            Target::named("scalar").unwrap().features,
            Features::default()
        );
        let err = Target::named("x86-64-v5").unwrap_err();
        assert_eq!(
            err,
            TargetError::Unknown {
                name: "x86-64-v5".into()
            }
        );
        assert!(err.to_string().contains("x86-64-v3"), "{err}");
    }

    /// A named target runs here exactly when the host has its features; `scalar` always.
    #[test]
    fn targets_above_the_host_are_refused() {
        let host = Target::host();
        let runnable = Target::runnable_named();
        assert_eq!(runnable[0].name, "scalar");
        for name in Target::NAMES {
            let t = Target::named(name).unwrap();
            let fits = t.features.first_missing_from(&host.features).is_none();
            match t.clone().runnable() {
                Ok(r) => assert!(fits && r == t && runnable.contains(&t)),
                Err(TargetError::AboveHost { name: n, missing }) => {
                    assert!(!fits && n == name && !runnable.contains(&t), "{missing}");
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(runnable.iter().all(|t| t.isa() <= host.isa()));
        let isas = Target::runnable_isas();
        assert_eq!((isas[0], isas.last()), (Isa::Scalar, Some(&host.isa())));
    }

    #[test]
    fn display_names_level_lanes_caches_and_model() {
        let t = Target::named("x86-64-v3").unwrap();
        assert_eq!(
            t.to_string(),
            "x86-64-v3: AVX2 (8 f32 lanes; sse4.1 avx avx2 fma), L1d unknown, L2 unknown, \
             L3 unknown, model unknown"
        );
        let s = Target::host().to_string();
        assert!(s.starts_with("host: "), "{s}");
    }
}
