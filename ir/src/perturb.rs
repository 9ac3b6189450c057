//! Perturbation: the conditioning probe of the test oracle (docs/testing.md, "Tolerances").
//!
//! The oracle judges a backend's element by how far the reference interpreter moves it when every
//! float entering the computation is nudged by a tiny relative amount: an element that moves far
//! is ill-conditioned, and a backend that sums in another order may differ there by as much. This
//! module is that nudge, and the deterministic generator that draws its signs (also the test
//! generators' source of randomness, so tests need no dependency).
//!
//! Guarantees: [`perturb`] multiplies every finite, nonzero float by `1 ± s·rel` (`s` in [1/2, 1]
//! and a sign drawn per element) unless the result would overflow; zeros (with their sign), infinities, NaN, integers and bools
//! are unchanged, so the perturbation never changes a value's class. Same seed, same result.

use crate::host::{ArrayData, HostArray};

/// A deterministic pseudo-random source (SplitMix64).
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (0 if `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
    /// A value in [-2, 2).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
    }
}

/// `a` with every finite, nonzero float multiplied by `1 ± s·rel`, `s` in [1/2, 1] (random sign
/// and size per element, drawn from `seed`; a value that would overflow is kept). Integers, bools, zeros, infinities and NaN
/// are unchanged.
pub fn perturb(a: &HostArray, rel: f64, seed: u64) -> HostArray {
    perturb_towards(a, rel, seed, None)
}

/// [`perturb`] with every nudge in one direction: up (`Some(true)`) or down, each of a random
/// size; `None` is [`perturb`] itself (random signs). For results a backend only
/// approximates: two runs nudging them opposite ways make any near-tie with such a result
/// (`tanh(x) > x` for tiny x, where the two sides differ by an ulp) come out both ways, so the
/// oracle sees it is ill-conditioned; random signs miss that whenever both runs happen to draw
/// the same sign.
pub fn perturb_towards(a: &HostArray, rel: f64, seed: u64, up: Option<bool>) -> HostArray {
    let mut r = SplitMix(seed);
    let data = map_finite(a.data(), |_, x| {
        // A random size in [rel/2, rel], not ±rel: two equal values nudged the same way would
        // still cancel exactly, and hide the cancellation the probe is there to see.
        let size = rel * (0.75 + r.unit() / 8.0);
        let coin = r.chance(50);
        let sign = if up.unwrap_or(coin) { 1.0 } else { -1.0 };
        if x == 0.0 {
            x
        } else {
            x * (1.0 + sign * size)
        }
    });
    HostArray::new(a.axes().clone(), a.shape().to_vec(), data).expect("same shape")
}

/// `data` with `f(i, x)` applied to every float element `x` (at flat index `i`, in f64, every
/// element in order, so a generator `f` draws from stays in step); an element that is not
/// finite, or whose image is not finite in the element's own type, is kept. Integers and
/// bools are unchanged. The one way the oracle's perturbed runs move float results.
pub fn map_finite(data: &ArrayData, mut f: impl FnMut(usize, f64) -> f64) -> ArrayData {
    match data {
        ArrayData::F32(v) => ArrayData::F32(
            v.iter()
                .enumerate()
                .map(|(i, &x)| {
                    let y = f(i, f64::from(x)) as f32;
                    if x.is_finite() && y.is_finite() {
                        y
                    } else {
                        x
                    }
                })
                .collect(),
        ),
        ArrayData::F64(v) => ArrayData::F64(
            v.iter()
                .enumerate()
                .map(|(i, &x)| {
                    let y = f(i, x);
                    if x.is_finite() && y.is_finite() {
                        y
                    } else {
                        x
                    }
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axis::Axes;
    use crate::graph::Graph;

    #[test]
    fn perturbation_keeps_classes_and_moves_finite_values() {
        let v = [1.0, -0.0, f64::NAN, f64::INFINITY, f64::MAX, 3.0];
        let axis = Graph::new().axis("N", v.len()).unwrap();
        let a = HostArray::new(
            Axes::new([axis]).unwrap(),
            vec![v.len()],
            ArrayData::F64(v.to_vec()),
        )
        .unwrap();
        let p = perturb(&a, 1.0 / 1099511627776.0, 7);
        let v = p.to_vec::<f64>().unwrap();
        assert_ne!(v[0], 1.0);
        assert!(v[1] == 0.0 && v[1].is_sign_negative());
        assert!(v[2].is_nan() && v[3] == f64::INFINITY);
        assert!(v[4].is_finite() && v[5] != 3.0);
        let again = perturb(&a, 1.0 / 1099511627776.0, 7)
            .to_vec::<f64>()
            .unwrap();
        assert!(again
            .iter()
            .zip(&v)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}
