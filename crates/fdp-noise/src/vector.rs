//! The classic vector mechanisms on `R^m`, with the secure lattice samplers: the Gaussian mechanism
//! for an l2 sensitivity (analytic calibration) and the Laplace mechanism for an l1 sensitivity.

use serde::{Deserialize, Serialize};

use crate::calibration::Calibration;
use crate::calibration::analytic_gaussian_multiplier;
use crate::error::{Result, check_len};
use crate::privacy::{Delta, Epsilon, PrivacyGuarantee, Sensitivity};
use crate::rng::NoiseRng;
use crate::secure::{GAUSSIAN_LATTICE_BITS, LAPLACE_LATTICE_BITS, LatticeGaussian, LatticeLaplace, lattice_step};

/// **Gaussian mechanism on `R^m`.** For `||f(D) - f(D')||_2 <= Δ₂`, releasing `f(D) + σ N(0, I)` with
/// `σ = s(ε, δ) Δ₂` (`s` the analytic multiplier of Balle & Wang) is (ε, δ)-DP. On the lattice each
/// coordinate moves by at most its step r more, so `Δ₂ + sqrt(m) r` is what σ is calibrated to.
///
/// ```
/// use fdp_noise::{Delta, Epsilon, NoiseRng, Sensitivity, vector::GaussianVector};
/// let mechanism = GaussianVector::new(3, Sensitivity::new(0.1)?, Epsilon::new(1.0)?, Delta::new(1e-6)?)?;
/// let released = mechanism.release(&[1.0, 2.0, 3.0], &mut NoiseRng::from_os()?)?;
/// assert_eq!(released.len(), 3);
/// assert!(mechanism.sigma() > 0.1 * 4.0);
/// # Ok::<(), fdp_noise::NoiseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaussianVector {
    dim: usize,
    noise: LatticeGaussian,
    multiplier: f64,
    sensitivity: f64,
    guarantee: PrivacyGuarantee,
}

impl GaussianVector {
    /// The mechanism for vectors of length `dim >= 1`.
    pub fn new(dim: usize, l2_sensitivity: Sensitivity, epsilon: Epsilon, delta: Delta) -> Result<Self> {
        let s = analytic_gaussian_multiplier(epsilon, delta)?;
        let d = l2_sensitivity.get();
        let step = lattice_step(s * d, GAUSSIAN_LATTICE_BITS);
        let noise = LatticeGaussian::new(s * (d + (dim.max(1) as f64).sqrt() * step), step)?;
        Ok(Self { dim, noise, multiplier: s, sensitivity: d, guarantee: PrivacyGuarantee::approximate(epsilon, delta) })
    }

    /// The noise standard deviation per coordinate.
    pub fn sigma(&self) -> f64 {
        self.noise.sigma()
    }

    /// The lattice noise every coordinate gets.
    pub fn noise(&self) -> LatticeGaussian {
        self.noise
    }

    /// The analytic multiplier `s(ε, δ)` the noise was calibrated with (`σ >= s Δ₂`).
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// How the noise was calibrated (for release metadata).
    pub fn calibration(&self) -> Calibration {
        Calibration::GaussianVector {
            sensitivity: self.sensitivity,
            epsilon: self.guarantee.epsilon(),
            delta: self.guarantee.delta(),
            multiplier: self.multiplier,
            sigma: self.sigma(),
        }
    }

    /// The guarantee of one release.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        self.guarantee
    }

    /// The exact loss of releasing `a` rather than `b` as a ratio: at most 1 iff (ε, δ)-DP on the pair
    /// ([`crate::exact_loss::gaussian_loss`]).
    pub fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        check_len("vector", self.dim, a.len())?;
        crate::exact_loss::gaussian_loss(&vec![self.noise; self.dim], self.multiplier, a, b)
    }

    /// `x + σ N(0, I)` on the lattice.
    pub fn release(&self, x: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>> {
        check_len("vector", self.dim, x.len())?;
        Ok(x.iter().map(|v| self.noise.release(*v, rng)).collect())
    }
}

/// **Laplace mechanism on `R^m`.** For `||f(D) - f(D')||_1 <= Δ₁`, releasing `f(D) + b L` with iid
/// standard Laplace L and `b = (Δ₁ + m r) / ε` (lattice charge included) is pure ε-DP.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LaplaceVector {
    dim: usize,
    noise: LatticeLaplace,
    sensitivity: f64,
    guarantee: PrivacyGuarantee,
}

impl LaplaceVector {
    /// The mechanism for vectors of length `dim >= 1`.
    pub fn new(dim: usize, l1_sensitivity: Sensitivity, epsilon: Epsilon) -> Result<Self> {
        let (d, eps) = (l1_sensitivity.get(), epsilon.get());
        let step = lattice_step(d / eps, LAPLACE_LATTICE_BITS);
        let noise = LatticeLaplace::new((d + dim.max(1) as f64 * step) / eps, step)?;
        Ok(Self { dim, noise, sensitivity: d, guarantee: PrivacyGuarantee::pure(epsilon) })
    }

    /// The length of the vectors it releases.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The Laplace scale b.
    pub fn scale(&self) -> f64 {
        self.noise.scale()
    }

    /// The lattice noise every coordinate gets.
    pub fn noise(&self) -> LatticeLaplace {
        self.noise
    }

    /// How the noise was calibrated (for release metadata).
    pub fn calibration(&self) -> Calibration {
        Calibration::LaplaceVector {
            sensitivity: self.sensitivity,
            epsilon: self.guarantee.epsilon(),
            scale: self.scale(),
        }
    }

    /// The guarantee of one release.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        self.guarantee
    }

    /// The exact privacy loss of releasing `a` rather than `b` (at most ε iff ε-DP on the pair;
    /// [`crate::exact_loss::laplace_loss`]).
    pub fn loss(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        check_len("vector", self.dim, a.len())?;
        crate::exact_loss::laplace_loss(&vec![self.noise; self.dim], a, b)
    }

    /// `x + b L` on the lattice.
    pub fn release(&self, x: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>> {
        check_len("vector", self.dim, x.len())?;
        Ok(x.iter().map(|v| self.noise.release(*v, rng)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrations_and_lengths() {
        let g = GaussianVector::new(
            4,
            Sensitivity::new(2.0).unwrap(),
            Epsilon::new(1.0).unwrap(),
            Delta::new(1e-5).unwrap(),
        )
        .unwrap();
        let s = analytic_gaussian_multiplier(Epsilon::new(1.0).unwrap(), Delta::new(1e-5).unwrap()).unwrap();
        assert!(g.sigma() >= 2.0 * s && g.sigma() < 2.0 * s * (1.0 + 1e-5));
        let l = LaplaceVector::new(4, Sensitivity::new(2.0).unwrap(), Epsilon::new(0.5).unwrap()).unwrap();
        assert!((l.scale() / 4.0 - 1.0).abs() < 1e-9);
        let mut rng = NoiseRng::seeded(1);
        assert!(g.release(&[0.0; 3], &mut rng).is_err() && l.release(&[0.0; 5], &mut rng).is_err());
    }
}
