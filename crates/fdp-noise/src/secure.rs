//! Release noise on a power-of-two lattice with exact integer samplers (docs/DESIGN.md section 5).
//!
//! **Why.** `x + b·(float Laplace)` leaks `x` through the set of floats it can reach (Mironov 2012).
//! Here a value is snapped to the lattice `rZ`, `r = 2^(⌊log2 b⌋ - BITS)`, an exact discrete Laplace
//! (or Gaussian) integer is added to the lattice index, and the integer is converted back: the output
//! is a function of an integer whose law is exactly known, so its low-order bits carry nothing else.
//!
//! **The charge.** Snapping moves a value by at most `r/2`, so neighbouring inputs' lattice indices
//! differ by at most `|d| + r` (in value units). Mechanisms add `r_k` to each component's sensitivity
//! before calibrating, which costs a relative `≈ 2^-BITS` per component.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::calibration::Calibration;
use crate::discrete::{MAX_GAUSSIAN_SIGMA, discrete_gaussian, discrete_gaussian_fill, discrete_laplace};
use crate::error::{NoiseError, Result};
use crate::rng::NoiseRng;

/// Resolution of the Laplace lattice: `r ≈ b · 2^-40`.
pub const LAPLACE_LATTICE_BITS: i32 = 40;
/// Resolution of the Gaussian lattice: `r ≈ σ · 2^-20` (keeps CKS's rational arithmetic in u128).
pub const GAUSSIAN_LATTICE_BITS: i32 = 20;
/// Lattice indices are clamped to `±2^100` (a 1-Lipschitz, data-independent map).
const INDEX_LIMIT: f64 = 1.2676506002282294e30;

/// The power of two `2^(⌊log2 scale⌋ - bits)`.
pub fn lattice_step(scale: f64, bits: i32) -> f64 {
    2f64.powi(scale.log2().floor() as i32 - bits)
}

/// Whether `x` is a positive normal power of two (`2^e`, no mantissa bits): products by it are
/// exact wherever they stay normal. The lattice steps are; so are the soft tail's weights.
pub fn is_power_of_two(x: f64) -> bool {
    x.is_normal() && x > 0.0 && x.to_bits() & ((1u64 << 52) - 1) == 0
}

fn check_scale(name: &'static str, scale: f64) -> Result<()> {
    if scale.is_finite() && scale > 0.0 && scale > f64::MIN_POSITIVE * 2f64.powi(64) {
        Ok(())
    } else {
        Err(NoiseError::BadParameter { name, value: scale, reason: "must be finite and > 0 (and not subnormal)" })
    }
}

/// Lattice index of `x`: round to nearest, huge values clamped to ±2^100 (a 1-Lipschitz map).
///
/// **No non-finite value may reach this point.** Every mechanism replaces a record whose
/// contribution is not finite by the public default *before* it is summed, and bounds its sums, so a
/// summary is finite by construction; a NaN here would mean a record escaped that rule, and NaN → 0
/// moves the output by more than the sensitivity allows (the 98ε of a Matérn kernel at 10^154). Debug
/// builds — every test — panic on it, so the adversarial exact-loss tests fail loudly if any path
/// lets one through; release builds keep a deterministic fallback (0) rather than an error, since an
/// error that depends on the data would leak too.
#[inline]
fn snap(x: f64, step: f64) -> i128 {
    debug_assert!(x.is_finite(), "a non-finite value reached a lattice snap: {x}");
    let v = (x / step).round();
    if v.is_nan() { 0 } else { v.clamp(-INDEX_LIMIT, INDEX_LIMIT) as i128 }
}

/// Writes a positive float exactly as a rational `t / s` with power-of-two `s`.
fn exact_rational(f: f64) -> (u128, u128) {
    let bits = f.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1075;
    let mantissa = ((bits & ((1u64 << 52) - 1)) | (1u64 << 52)) as u128;
    if exponent >= 0 { (mantissa << exponent, 1) } else { (mantissa, 1u128 << (-exponent)) }
}

/// Laplace noise of scale `b` on the lattice `rZ`: the release of `x` is `r (round(x/r) + Z)` with
/// `P(Z = z) ∝ exp(-|z| r / b)` sampled exactly. Its scale is exactly `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatticeLaplace {
    step: f64,
    scale: f64,
    t: u128,
    s: u128,
}

impl LatticeLaplace {
    /// Noise of scale `scale` on the lattice of step `step` (a power of two at most `scale · 2^-20`).
    pub fn new(scale: f64, step: f64) -> Result<Self> {
        check_scale("laplace scale", scale)?;
        check_scale("lattice step", step)?;
        if !is_power_of_two(step) || step > scale * 2f64.powi(-20) {
            return Err(NoiseError::BadParameter {
                name: "lattice step",
                value: step,
                reason: "must be a power of two at most scale · 2^-20",
            });
        }
        let (t, s) = exact_rational(scale / step);
        Ok(Self { step, scale, t, s })
    }

    /// Noise of scale `scale` on its default lattice `2^(⌊log2 scale⌋ - 40)`.
    pub fn with_scale(scale: f64) -> Result<Self> {
        check_scale("laplace scale", scale)?;
        Self::new(scale, lattice_step(scale, LAPLACE_LATTICE_BITS))
    }

    /// The Laplace scale b (standard deviation `sqrt(2) b`).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The lattice step r.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// The lattice index `round(x/r)` (clamped to ±2^100) that the release of `x` is centred at:
    /// what the exact privacy loss of two inputs is computed from.
    pub fn lattice_index(&self, x: f64) -> i128 {
        snap(x, self.step)
    }

    /// `r (round(x/r) + Z)`.
    #[inline]
    pub fn release<R: Rng + ?Sized>(&self, x: f64, rng: &mut R) -> f64 {
        let k = snap(x, self.step).saturating_add(discrete_laplace(rng, self.t, self.s));
        k as f64 * self.step
    }

    /// A noise draw `r Z` (the release of 0).
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.release(0.0, rng)
    }

    /// Whether `y` can be output at all (from any input): the support is the lattice, for every input.
    pub fn is_reachable(&self, y: f64) -> bool {
        let k = y / self.step;
        k.is_finite() && k == k.round() && k.abs() <= 2.0 * INDEX_LIMIT
    }
}

/// Gaussian noise on the lattice `rZ`: the release of `x` is `r (round(x/r) + Z)` with `Z` an exact
/// discrete Gaussian of integer parameter `σ_units = ⌈σ / r⌉ >= 2^20`, so the standard deviation is
/// `r σ_units ∈ [σ, σ (1 + 2^-20)]`. At that resolution the discrete Gaussian's privacy curve equals the
/// continuous one up to terms of order `exp(-2π² σ_units²)` (Canonne, Kamath & Steinke 2020, §2-4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LatticeGaussianParts")]
pub struct LatticeGaussian {
    step: f64,
    sigma_units: u64,
}

/// A [`LatticeGaussian`] as read, checked by `TryFrom` before it can draw: rebuilt by
/// [`LatticeGaussian::new`] from its exact standard deviation `step · σ_units` (a power-of-two
/// step times an integer ≤ 2^31: exact in f64), so it passes exactly `new`'s checks.
#[derive(Deserialize)]
struct LatticeGaussianParts {
    step: f64,
    sigma_units: u64,
}

impl TryFrom<LatticeGaussianParts> for LatticeGaussian {
    type Error = NoiseError;

    fn try_from(parts: LatticeGaussianParts) -> Result<Self> {
        Self::new(parts.step * parts.sigma_units as f64, parts.step)
    }
}

impl LatticeGaussian {
    /// Noise of standard deviation at least `sigma` on the lattice of step `step` (a power of two
    /// at most `sigma · 2^-20`).
    pub fn new(sigma: f64, step: f64) -> Result<Self> {
        check_scale("gaussian sigma", sigma)?;
        check_scale("lattice step", step)?;
        if !is_power_of_two(step) || step > sigma * 2f64.powi(-GAUSSIAN_LATTICE_BITS) {
            return Err(NoiseError::BadParameter {
                name: "lattice step",
                value: step,
                reason: "must be a power of two at most sigma · 2^-20",
            });
        }
        let units = (sigma / step).ceil();
        // The discrete Gaussian's acceptance test works on 2 σ² (σ + 1)² in u128: at σ_units <= 2^31
        // that is < 2^126; above ~2^31.5 it overflows, every proposal would be rejected and the
        // sampler would never return.
        if units > MAX_GAUSSIAN_SIGMA as f64 {
            return Err(NoiseError::BadParameter {
                name: "lattice step",
                value: step,
                reason: "too fine for sigma (more than 2^31 lattice steps per standard deviation)",
            });
        }
        Ok(Self { step, sigma_units: units as u64 })
    }

    /// Standard deviation at least `sigma` on its default lattice `2^(⌊log2 σ⌋ - 20)`.
    pub fn with_sigma(sigma: f64) -> Result<Self> {
        check_scale("gaussian sigma", sigma)?;
        Self::new(sigma, lattice_step(sigma, GAUSSIAN_LATTICE_BITS))
    }

    /// The standard deviation actually used, `r σ_units` (never below the requested σ).
    pub fn sigma(&self) -> f64 {
        self.step * self.sigma_units as f64
    }

    /// The lattice step r.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// The lattice index `round(x/r)` (clamped to ±2^100) that the release of `x` is centred at.
    pub fn lattice_index(&self, x: f64) -> i128 {
        snap(x, self.step)
    }

    /// `r (round(x/r) + Z)`.
    #[inline]
    pub fn release<R: Rng + ?Sized>(&self, x: f64, rng: &mut R) -> f64 {
        // σ_units ≤ MAX_GAUSSIAN_SIGMA by construction: `new` and deserialisation refuse more.
        let z = discrete_gaussian(rng, self.sigma_units).expect("σ_units is checked when built or read");
        let k = snap(x, self.step).saturating_add(z);
        k as f64 * self.step
    }

    /// A noise draw `r Z` (the release of 0).
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.release(0.0, rng)
    }

    /// `out.len()` noise draws `r Z`: the same values, from the same draws in the same order, as
    /// `out.len()` calls of [`sample`](Self::sample), with the sampler's setup (the constants of σ)
    /// done once for the batch
    /// ([`crate::discrete::discrete_gaussian_fill`]).
    pub fn fill_samples<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [f64]) {
        discrete_gaussian_fill(rng, self.sigma_units, out, |z| z as f64 * self.step)
            .expect("σ_units is checked when built or read");
    }
}

/// One coefficient's release noise.
pub trait ComponentNoise: Copy + Send + Sync {
    /// `E e⁴ / (E e²)²` of the noise: 6 for Laplace, 3 for Gaussian (for accuracy bounds).
    const KURTOSIS: f64;
    /// The secure release of `x`: snapped to the lattice, plus exact discrete noise.
    fn release(&self, x: f64, rng: &mut NoiseRng) -> f64;
    /// The standard deviation of the noise.
    fn std_dev(&self) -> f64;
    /// **The exact privacy loss** of releasing `a` rather than `b` with `noise` on each component,
    /// calibrated as `calibration`, **as a ratio to the budget** — at most 1 iff the release is DP
    /// on the pair at its guarantee ([`crate::exact_loss`]).
    fn loss_ratio(noise: &[Self], calibration: Calibration, a: &[f64], b: &[f64]) -> Result<f64>;
}

impl ComponentNoise for LatticeLaplace {
    const KURTOSIS: f64 = 6.0;
    #[inline]
    fn release(&self, x: f64, rng: &mut NoiseRng) -> f64 {
        LatticeLaplace::release(self, x, rng)
    }
    fn std_dev(&self) -> f64 {
        std::f64::consts::SQRT_2 * self.scale()
    }
    fn loss_ratio(noise: &[Self], calibration: Calibration, a: &[f64], b: &[f64]) -> Result<f64> {
        let epsilon =
            calibration.guarantee().map(|g| g.epsilon()).filter(|e| *e > 0.0).ok_or(NoiseError::BadParameter {
                name: "calibration",
                value: f64::NAN,
                reason: "has no ε to compare a loss with",
            })?;
        Ok(crate::exact_loss::laplace_loss(noise, a, b)? / epsilon)
    }
}

impl ComponentNoise for LatticeGaussian {
    const KURTOSIS: f64 = 3.0;
    #[inline]
    fn release(&self, x: f64, rng: &mut NoiseRng) -> f64 {
        LatticeGaussian::release(self, x, rng)
    }
    fn std_dev(&self) -> f64 {
        self.sigma()
    }
    fn loss_ratio(noise: &[Self], calibration: Calibration, a: &[f64], b: &[f64]) -> Result<f64> {
        let multiplier = match calibration {
            Calibration::GaussianProcess { multiplier, .. } | Calibration::GaussianVector { multiplier, .. } => {
                multiplier
            }
            _ => {
                return Err(NoiseError::BadParameter {
                    name: "calibration",
                    value: f64::NAN,
                    reason: "is not a Gaussian calibration (no analytic multiplier)",
                });
            }
        };
        crate::exact_loss::gaussian_loss(noise, multiplier, a, b)
    }
}

#[cfg(test)]
mod tests {

    /// A `LatticeGaussian` read from JSON is checked as `new` checks it: σ_units past the exact
    /// sampler's range (which would never return) or a step that is not a power of two is refused.
    #[test]
    fn a_lattice_gaussian_is_checked_when_read() {
        let good = LatticeGaussian::with_sigma(3.0).unwrap();
        let json = serde_json::to_string(&good).unwrap();
        assert_eq!(serde_json::from_str::<LatticeGaussian>(&json).unwrap(), good);
        for bad in [
            r#"{"step":0.5,"sigma_units":4294967296}"#,
            r#"{"step":0.3,"sigma_units":2000000}"#,
            r#"{"step":0.5,"sigma_units":7}"#,
        ] {
            assert!(serde_json::from_str::<LatticeGaussian>(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn lattice_scale_is_exact_and_step_is_fine() {
        for b in [1e-9, 0.37, 1.0, 3.5e4, 7.123456789e12] {
            let l = LatticeLaplace::with_scale(b).unwrap();
            assert_eq!(l.step() * l.t as f64 / l.s as f64, b);
            assert!(l.step() <= b * 2f64.powi(-40) && l.step() > b * 2f64.powi(-42));
            let g = LatticeGaussian::with_sigma(b).unwrap();
            assert!(g.sigma() >= b && g.sigma() <= b * (1.0 + 2f64.powi(-19)));
        }
        assert!(LatticeLaplace::with_scale(0.0).is_err());
        assert!(LatticeLaplace::with_scale(f64::NAN).is_err());
        assert!(LatticeLaplace::new(1.0, 0.3).is_err());
        assert!(LatticeLaplace::new(1.0, 0.5).is_err());
        assert!(LatticeGaussian::with_sigma(-1.0).is_err());
    }

    #[test]
    fn a_gaussian_lattice_too_fine_for_the_exact_sampler_is_refused() {
        // 2^35 steps per standard deviation: the acceptance test's 2 σ² (σ + 1)² overflowed u128 and
        // the sampler rejected forever. Refused when built; at the largest allowed resolution a draw
        // returns.
        assert!(LatticeGaussian::new(1.0, 2f64.powi(-35)).is_err());
        let finest = LatticeGaussian::new(1.0, 2f64.powi(-31)).unwrap();
        let mut rng = crate::NoiseRng::seeded(5);
        assert!(finest.sample(&mut rng).abs() < 10.0);
    }

    #[test]
    fn a_batch_of_lattice_gaussians_is_the_single_samples() {
        crate::timing::tests::in_mode(crate::timing::SamplerTiming::Variable, || {
            for (sigma, step) in [(1.0, 2f64.powi(-20)), (0.37, 2f64.powi(-24)), (3.0e3, 2f64.powi(-9))] {
                let noise = LatticeGaussian::new(sigma, step).unwrap();
                let (mut a, mut b) = (crate::NoiseRng::seeded(8), crate::NoiseRng::seeded(8));
                let mut batch = vec![0.0; 500];
                noise.fill_samples(&mut a, &mut batch);
                let single: Vec<u64> = (0..500).map(|_| noise.sample(&mut b).to_bits()).collect();
                assert_eq!(batch.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), single);
                assert_eq!(rand::Rng::next_u64(&mut a), rand::Rng::next_u64(&mut b));
            }
        });
    }

    #[test]
    fn huge_inputs_release_finite_values() {
        let mut rng = crate::NoiseRng::seeded(5);
        let l = LatticeLaplace::with_scale(1.0).unwrap();
        assert!(l.release(1e300, &mut rng).is_finite());
        assert!(l.release(-f64::MAX, &mut rng).is_finite());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a non-finite value reached a lattice snap")]
    fn a_non_finite_value_at_a_snap_fails_every_test() {
        let l = LatticeLaplace::with_scale(1.0).unwrap();
        l.release(f64::NAN, &mut crate::NoiseRng::seeded(5));
    }
}
