//! Noise calibration for the Gaussian mechanism: the analytic calibration of Balle & Wang (2018),
//! and the classic constants for comparison.

use statrs::function::erf::erfc;

use crate::error::{NoiseError, Result};
use crate::privacy::{Delta, Epsilon};

/// Standard normal CDF, accurate in both tails.
fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The smallest δ for which the Gaussian mechanism with noise multiplier `s = σ/Δ` is (ε, δ)-DP
/// (Balle & Wang 2018, Theorem 8): `δ(s) = Φ(1/(2s) - εs) - e^ε Φ(-1/(2s) - εs)`.
pub fn gaussian_delta(s: f64, epsilon: Epsilon) -> f64 {
    let e = epsilon.get();
    let a = 0.5 / s;
    (normal_cdf(a - e * s) - e.exp() * normal_cdf(-a - e * s)).max(0.0)
}

/// The analytic Gaussian noise multiplier: the smallest `s = σ/Δ` with `δ(s) <= δ` (Balle & Wang
/// 2018, Algorithm 1 solved by bisection to relative precision 1e-14; the upper end is returned, so
/// the multiplier never under-noises). Valid for every ε > 0, unlike the classic constant.
///
/// ```
/// use fdp_noise::{Delta, Epsilon, calibration::analytic_gaussian_multiplier};
/// let s = analytic_gaussian_multiplier(Epsilon::new(1.0)?, Delta::new(1e-5)?);
/// assert!((s - 3.730631634815942).abs() < 1e-6 * s);
/// # Ok::<(), fdp_noise::NoiseError>(())
/// ```
pub fn analytic_gaussian_multiplier(epsilon: Epsilon, delta: Delta) -> f64 {
    let d = delta.get();
    let (mut lo, mut hi) = (1e-3, 1.0);
    while gaussian_delta(lo, epsilon) <= d {
        lo /= 2.0;
    }
    while gaussian_delta(hi, epsilon) > d {
        hi *= 2.0;
    }
    while hi - lo > 1e-14 * hi {
        let mid = 0.5 * (lo + hi);
        if gaussian_delta(mid, epsilon) > d {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
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
            let s = analytic_gaussian_multiplier(Epsilon::new(e).unwrap(), Delta::new(d).unwrap());
            assert!((s - want).abs() <= 1e-6 * want, "ε = {e}, δ = {d}: {s} vs {want}");
        }
    }

    #[test]
    fn analytic_beats_classic_and_hall() {
        let (e, d) = (Epsilon::new(0.5).unwrap(), Delta::new(1e-5).unwrap());
        let a = analytic_gaussian_multiplier(e, d);
        assert!(a < classic_gaussian_multiplier(e, d).unwrap());
        assert!(a < hall_gaussian_multiplier(e, d));
        assert!(classic_gaussian_multiplier(Epsilon::new(2.0).unwrap(), d).is_err());
        // δ(s) is decreasing and the returned multiplier meets the target.
        assert!(gaussian_delta(a, e) <= 1e-5 && gaussian_delta(a * 0.999, e) > 1e-5);
    }
}
