//! Noise calibration for the Gaussian mechanism: the analytic calibration of Balle & Wang (2018),
//! and the classic constants for comparison.

use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;

use crate::error::{NoiseError, Result};
use crate::privacy::{Delta, Epsilon, PrivacyGuarantee};

/// How a sampler's scales were set; recorded with releases.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Calibration {
    /// Covariance equal to the kernel C (simulation and plots; no privacy claim).
    UnitVariance,
    /// Pure ε-DP ICLP for an `||.||_{1,C}` sensitivity Δ: `b_k = (Δ + R) sqrt(λ_k) / ε`, with
    /// `R = Σ_k r_k / sqrt(λ_k)` the lattice rounding charge.
    Iclp { sensitivity: f64, epsilon: f64, rounding_charge: f64 },
    /// (ε, δ)-DP Gaussian process for a Cameron-Martin sensitivity Δ₂:
    /// `σ_k >= s(ε, δ) (Δ₂ + R₂) sqrt(λ_k)`, `s` the analytic multiplier and
    /// `R₂ = (Σ_k r_k² / λ_k)^{1/2}` the rounding charge.
    GaussianProcess { sensitivity: f64, epsilon: f64, delta: f64, multiplier: f64, rounding_charge: f64 },
    /// Pure ε-DP Laplace with one scale for every component, for an l1 sensitivity Δ₁ of the
    /// coefficient vector: `b = (Δ₁ + Σ_k r_k) / ε`.
    IidLaplace { sensitivity: f64, epsilon: f64, rounding_charge: f64 },
    /// (ε, δ)-DP Gaussian mechanism on a vector for an l2 sensitivity Δ₂: `σ = s(ε, δ)(Δ₂ + sqrt(m) r)`.
    GaussianVector { sensitivity: f64, epsilon: f64, delta: f64, multiplier: f64, sigma: f64 },
    /// Pure ε-DP Laplace mechanism on a vector for an l1 sensitivity Δ₁: `b = (Δ₁ + m r)/ε`.
    LaplaceVector { sensitivity: f64, epsilon: f64, scale: f64 },
    /// Pure ε-DP exponential mechanism for a score of sensitivity Δ (including any margin for the
    /// score's floating-point error), on levels of step g: `P(i) ∝ exp(-s_i / temperature)`,
    /// `temperature = g / c ≈ 2(Δ + g)/ε` (see [`crate::exponential`]).
    Exponential { sensitivity: f64, epsilon: f64, step: f64, temperature: f64 },
}

impl Calibration {
    /// The privacy guarantee of a release with these scales, if they are calibrated (`None` for
    /// [`UnitVariance`](Self::UnitVariance)).
    pub fn guarantee(&self) -> Option<PrivacyGuarantee> {
        let pure = |e: f64| Epsilon::new(e).ok().map(PrivacyGuarantee::pure);
        match *self {
            Calibration::UnitVariance => None,
            Calibration::Iclp { epsilon, .. }
            | Calibration::IidLaplace { epsilon, .. }
            | Calibration::LaplaceVector { epsilon, .. }
            | Calibration::Exponential { epsilon, .. } => pure(epsilon),
            Calibration::GaussianProcess { epsilon, delta, .. }
            | Calibration::GaussianVector { epsilon, delta, .. } => {
                Some(PrivacyGuarantee::approximate(Epsilon::new(epsilon).ok()?, Delta::new(delta).ok()?))
            }
        }
    }
}

/// `ln Φ(x)` for the standard normal CDF, accurate in both tails and finite for every finite x:
/// `ln(1 - Q)` with `Q = erfc(x/√2)/2` above 0, `ln(erfc(-x/√2)/2)` down to -30, and below that
/// `-x²/2 - ln √(2π) + ln R(-x)` with the Mills ratio `R(z) = Φ(-z)/φ(z)` by its continued fraction
/// `1/(z + 1/(z + 2/(z + 3/(z + ...))))` (60 terms: far beyond f64 precision for z >= 30).
pub fn ln_normal_cdf(x: f64) -> f64 {
    if x >= 0.0 {
        (-0.5 * erfc(x / std::f64::consts::SQRT_2)).ln_1p()
    } else if x > -30.0 {
        (0.5 * erfc(-x / std::f64::consts::SQRT_2)).ln()
    } else {
        let z = -x;
        let mut tail = z;
        for k in (1..=60).rev() {
            tail = z + k as f64 / tail;
        }
        -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln() - tail.ln()
    }
}

/// `ln δ(s)` for the Gaussian mechanism with noise multiplier `s = σ/Δ` (Balle & Wang 2018,
/// Theorem 8): `δ(s) = Φ(1/(2s) - εs) - e^ε Φ(-1/(2s) - εs)`, computed as
/// `ln Φ(x₁) + ln(1 - e^r)` with `r = ε + ln Φ(x₂) - ln Φ(x₁)`, so that neither `e^ε` (infinite from
/// ε ≈ 710) nor a CDF that underflows can turn it into NaN. `-∞` where δ(s) = 0.
pub fn ln_gaussian_delta(s: f64, epsilon: Epsilon) -> f64 {
    let e = epsilon.get();
    let a = 0.5 / s;
    let (first, second) = (ln_normal_cdf(a - e * s), ln_normal_cdf(-a - e * s));
    if first == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let r = e + second - first;
    if r >= 0.0 { f64::NEG_INFINITY } else { first + (-r.exp_m1()).ln() }
}

/// The smallest δ for which the Gaussian mechanism with noise multiplier `s = σ/Δ` is (ε, δ)-DP
/// (Balle & Wang 2018, Theorem 8): `δ(s) = Φ(1/(2s) - εs) - e^ε Φ(-1/(2s) - εs)`.
pub fn gaussian_delta(s: f64, epsilon: Epsilon) -> f64 {
    ln_gaussian_delta(s, epsilon).exp()
}

/// Relative safety margin on δ: the multiplier meets `δ(s) <= δ (1 - 1e-9)`, which absorbs the
/// round-off of the log-space evaluation (about 1e-10 relative at ε = 10^6).
const DELTA_MARGIN: f64 = 1e-9;

/// The analytic Gaussian noise multiplier: the smallest `s = σ/Δ` with `δ(s) <= δ` (Balle & Wang
/// 2018, Algorithm 1 solved by bisection on `ln δ(s)` to relative precision 1e-14; the upper end is
/// returned, so the multiplier never under-noises). Valid for every ε > 0, unlike the classic
/// constant, and computed in log space, so ε = 10^6 answers in microseconds.
///
/// The multiplier stays finite as ε → 0 (δ alone needs `s ≈ 1/(δ sqrt(2π))`); the error branch only
/// guards the search against a δ so small that no f64 multiplier meets it.
///
/// ```
/// use fdp_noise::{Delta, Epsilon, calibration::analytic_gaussian_multiplier};
/// let s = analytic_gaussian_multiplier(Epsilon::new(1.0)?, Delta::new(1e-5)?)?;
/// assert!((s - 3.730631634815942).abs() < 1e-6 * s);
/// assert!(analytic_gaussian_multiplier(Epsilon::new(1e6)?, Delta::new(1e-5)?)?.is_finite());
/// # Ok::<(), fdp_noise::NoiseError>(())
/// ```
pub fn analytic_gaussian_multiplier(epsilon: Epsilon, delta: Delta) -> Result<f64> {
    let target = delta.get().ln() + (-DELTA_MARGIN).ln_1p();
    let too_small = |s: f64| ln_gaussian_delta(s, epsilon) > target;
    let unreachable = || NoiseError::BadParameter {
        name: "epsilon",
        value: epsilon.get(),
        reason: "the Gaussian noise multiplier for this (epsilon, delta) is not a finite number",
    };
    let (mut lo, mut hi) = (1e-3, 1.0);
    while !too_small(lo) {
        lo /= 2.0;
        if lo == 0.0 {
            return Err(unreachable());
        }
    }
    while too_small(hi) {
        hi *= 2.0;
        if !hi.is_finite() {
            return Err(unreachable());
        }
    }
    // At most ~100 halvings of [lo, hi] reach relative precision 1e-14.
    for _ in 0..200 {
        if hi - lo <= 1e-14 * hi {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if too_small(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// The classic multiplier `sqrt(2 ln(1.25/δ)) / ε` (Dwork & Roth, Theorem A.1), valid only for ε < 1.
/// For comparison; releases use [`analytic_gaussian_multiplier`].
pub fn classic_gaussian_multiplier(epsilon: Epsilon, delta: Delta) -> Result<f64> {
    if epsilon.get() >= 1.0 {
        return Err(NoiseError::BadParameter {
            name: "epsilon",
            value: epsilon.get(),
            reason: "the classic Gaussian calibration holds only for epsilon < 1",
        });
    }
    Ok((2.0 * (1.25 / delta.get()).ln()).sqrt() / epsilon.get())
}

/// Hall, Rinaldo & Wasserman's (2013) multiplier `sqrt(2 ln(2/δ)) / ε`. For comparison.
pub fn hall_gaussian_multiplier(epsilon: Epsilon, delta: Delta) -> f64 {
    (2.0 * (2.0 / delta.get()).ln()).sqrt() / epsilon.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// σ/Δ for (ε, δ), computed from Balle & Wang's eq. (6) with 50-digit arithmetic (mpmath) by an
    /// independent bisection. ε = 1, δ = 1e-5 gives the σ ≈ 3.73 that Balle & Wang's comparison with
    /// the classic 4.84 refers to.
    const REFERENCE: [(f64, f64, f64); 10] = [
        (0.01, 1e-6, 306.350376153818),
        (0.05, 1e-5, 57.7706952445645),
        (0.1, 1e-5, 30.7495661319774),
        (0.5, 1e-5, 7.03182667558249),
        (1.0, 1e-5, 3.73063163481594),
        (1.0, 1e-6, 4.22467888932684),
        (2.0, 1e-5, 1.99381244564354),
        (4.0, 1e-6, 1.19351858715799),
        (8.0, 1e-10, 0.833989229537989),
        (10.0, 1e-3, 0.406059558024139),
    ];

    #[test]
    fn analytic_multiplier_matches_reference_values() {
        for (e, d, want) in REFERENCE {
            let s = analytic_gaussian_multiplier(Epsilon::new(e).unwrap(), Delta::new(d).unwrap()).unwrap();
            assert!((s - want).abs() <= 1e-6 * want, "ε = {e}, δ = {d}: {s} vs {want}");
        }
    }

    #[test]
    fn analytic_beats_classic_and_hall() {
        let (e, d) = (Epsilon::new(0.5).unwrap(), Delta::new(1e-5).unwrap());
        let a = analytic_gaussian_multiplier(e, d).unwrap();
        assert!(a < classic_gaussian_multiplier(e, d).unwrap());
        assert!(a < hall_gaussian_multiplier(e, d));
        assert!(classic_gaussian_multiplier(Epsilon::new(2.0).unwrap(), d).is_err());
        // δ(s) is decreasing and the returned multiplier meets the target.
        assert!(gaussian_delta(a, e) <= 1e-5 && gaussian_delta(a * 0.999, e) > 1e-5);
    }

    #[test]
    fn log_cdf_is_accurate_in_both_tails() {
        // Φ(-40) = 3.655893540915e-350 underflows f64; its log does not.
        assert!((ln_normal_cdf(-40.0) - (-804.608442013754)).abs() < 1e-9, "{}", ln_normal_cdf(-40.0));
        assert!((ln_normal_cdf(-29.0) - (0.5 * erfc(29.0 / std::f64::consts::SQRT_2)).ln()).abs() < 1e-12);
        assert!((ln_normal_cdf(-31.0) - (-484.853963627179)).abs() < 1e-9);
        // statrs' erfc is good to about 2e-11 here, well inside the 1e-9 margin on δ.
        assert!((ln_normal_cdf(1.0) - 0.8413447460685429f64.ln()).abs() < 1e-10);
        assert!(ln_normal_cdf(40.0) <= 0.0 && ln_normal_cdf(-1e200) == f64::NEG_INFINITY);
        for s in [1e-300, 1e-3, 1.0, 1e3, 1e300] {
            for e in [1e-300, 1.0, 1e6, Epsilon::MAX] {
                assert!(!ln_gaussian_delta(s, Epsilon::new(e).unwrap()).is_nan(), "s = {s}, ε = {e}");
            }
        }
    }

    #[test]
    fn huge_epsilon_answers_and_meets_delta() {
        let d = Delta::new(1e-6).unwrap();
        let mut previous = f64::INFINITY;
        for e in [709.0, 710.0, 1e3, 1e4, 1e5, 1e6, 1e9] {
            let eps = Epsilon::new(e).unwrap();
            let s = analytic_gaussian_multiplier(eps, d).unwrap();
            assert!(s.is_finite() && s > 0.0 && s < previous, "ε = {e}: {s}");
            assert!(ln_gaussian_delta(s, eps) <= d.get().ln(), "ε = {e}");
            assert!(ln_gaussian_delta(s * (1.0 - 1e-6), eps) > d.get().ln() - 1e-6, "ε = {e}: not the smallest");
            previous = s;
        }
        // As ε → 0 only δ remains: 2Φ(1/(2s)) - 1 = δ, s = 1/(2 Φ^{-1}((1 + δ)/2)) ≈ 1/(δ sqrt(2π)).
        let tiny = analytic_gaussian_multiplier(Epsilon::new(1e-300).unwrap(), d).unwrap();
        let limit = 1.0 / (1e-6 * (2.0 * std::f64::consts::PI).sqrt());
        assert!((tiny / limit - 1.0).abs() < 1e-6, "{tiny} vs {limit}");
    }
}
