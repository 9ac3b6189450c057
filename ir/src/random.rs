//! Seeded random initial values: the text form's `= uniform(seed, lo, hi)` and
//! `= normal(seed, mean, std)` (docs/text-format.md), also the training helpers' `Random`
//! (`weft::nn::Random`).
//!
//! Assumes nothing beyond the parameters checked by [`Random::values`]. Guarantees: the values
//! depend only on the distribution, the seed, the count and the dtype, so the same seed gives
//! the same values on every machine and run.

use crate::dtype::DType;
use crate::graph::GraphError;
use crate::host::ArrayData;
use crate::perturb::SplitMix;

/// A seeded distribution of initial values, for tensors other than a dense layer's weight
/// (`weft::nn::dense`): the text form's `= uniform(seed, lo, hi)` and
/// `= normal(seed, mean, std)`, docs/text-format.md.
///
/// ```
/// use weft::ir::{random::Random, ArrayData, DType};
/// let u = Random::Uniform { lo: -0.5, hi: 0.5 }.values(3, 1000, DType::F64)?;
/// assert_eq!(u, Random::Uniform { lo: -0.5, hi: 0.5 }.values(3, 1000, DType::F64)?);
/// let ArrayData::F64(u) = u else { panic!() };
/// assert!(u.iter().all(|x| (-0.5..0.5).contains(x)));
/// let ArrayData::F32(n) = Random::Normal { mean: 0.0, std: 0.1 }.values(3, 1000, DType::F32)? else { panic!() };
/// let mean = n.iter().sum::<f32>() / 1000.0;
/// assert!(mean.abs() < 0.02);
/// assert!(Random::Normal { mean: 0.0, std: -1.0 }.values(3, 4, DType::F32).is_err());
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Random {
    /// Uniform in `[lo, hi)`: `lo + (hi − lo)·u`, `u` uniform in `[0, 1)` with 53 random bits.
    Uniform {
        /// The lower bound (included).
        lo: f64,
        /// The upper bound (excluded); above `lo`.
        hi: f64,
    },
    /// Normal: `mean + std·z`, `z` standard normal by the Box–Muller transform (two uniform
    /// draws per value, its cosine branch).
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation, at least 0.
        std: f64,
    },
}

impl Random {
    /// `n` values in `dtype` (f32 or f64; f32 values are the f64 draws rounded once), drawn in
    /// order from SplitMix64 seeded with `seed` (`crate::perturb::SplitMix`), so the same
    /// seed gives the same values on every machine. Non-finite parameters, `hi ≤ lo`, a
    /// negative `std` or an integer or bool dtype are a [`GraphError::Argument`].
    pub fn values(&self, seed: u64, n: usize, dtype: DType) -> Result<ArrayData, GraphError> {
        let bad = |message: String| GraphError::Argument {
            op: self.name().to_string(),
            message,
        };
        match *self {
            Random::Uniform { lo, hi } if !(lo.is_finite() && hi.is_finite() && lo < hi) => {
                return Err(bad(format!(
                    "the bounds {lo}, {hi} must be finite with lo < hi"
                )))
            }
            Random::Normal { mean, std }
                if !(mean.is_finite() && std.is_finite() && std >= 0.0) =>
            {
                return Err(bad(format!(
                    "the mean {mean} and standard deviation {std} must be finite, std ≥ 0"
                )))
            }
            _ if !dtype.is_float() => {
                return Err(bad(format!("draws floats; the tensor is {dtype}")))
            }
            _ => {}
        }
        let mut rng = SplitMix(seed);
        let mut u01 = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let draws = (0..n).map(|_| match *self {
            Random::Uniform { lo, hi } => lo + (hi - lo) * u01(),
            Random::Normal { mean, std } => {
                let (r, a) = (1.0 - u01(), u01()); // r in (0, 1]: its log is finite
                mean + std * (-2.0 * r.ln()).sqrt() * (std::f64::consts::TAU * a).cos()
            }
        });
        Ok(match dtype {
            DType::F32 => ArrayData::F32(draws.map(|x| x as f32).collect()),
            _ => ArrayData::F64(draws.collect()),
        })
    }

    /// `uniform` or `normal`: the distribution's name in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Random::Uniform { .. } => "uniform",
            Random::Normal { .. } => "normal",
        }
    }
}
