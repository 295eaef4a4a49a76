//! Noise processes in a Mercer basis: the ICLP (Laplace components) and the Gaussian process
//! (Gaussian components), for simulation (unit-variance forms) and for private releases (calibrated).

use faer::Mat;
use rayon::prelude::*;

use fdp_mercer::MercerBasis;
use fdp_noise::calibration::analytic_gaussian_multiplier;
use fdp_noise::secure::{GAUSSIAN_LATTICE_BITS, LAPLACE_LATTICE_BITS, lattice_step};
use fdp_noise::{
    Calibration, ComponentNoise, Delta, Epsilon, LatticeGaussian, LatticeLaplace, NoiseRng, PrivacyGuarantee, Result,
    Sensitivity, check_len,
};

/// Independent noise components over a Mercer basis: coefficient k gets noise of its own scale,
/// and paths are synthesised with one matrix product.
///
/// The two instances are [`IclpSampler`] and [`GaussianProcessSampler`].
#[derive(Debug, Clone)]
pub struct BasisSampler<N> {
    basis: MercerBasis,
    noise: Vec<N>,
    calibration: Calibration,
}

/// The Independent Component Laplace Process over a basis: `Σ_k b_k L_k φ_k`, `L_k` iid standard
/// Laplace (density `e^{-|x|}/2`, variance 2).
///
/// **Calibration (pure ε-DP).** For a summary whose neighbouring values satisfy
/// `||f_D - f_D'||_{1,C} = Σ_k |f_Dk - f_D'k| / sqrt(λ_k) <= Δ`, releasing `f_k + b_k L_k` with
/// `b_k = Δ sqrt(λ_k) / ε` has privacy loss `Σ_k |f_Dk - f_D'k| / b_k <= ε`. With the secure lattice
/// the per-component sensitivity grows by `r_k`, so fdp uses `b_k = (Δ + R) sqrt(λ_k)/ε`,
/// `R = Σ r_k / sqrt(λ_k) <= 2^-40 J Δ / ε`: a relative cost of at most `J · 2^-40 / ε` in the noise scale.
///
/// **The sqrt(2) trap.** Lin & Reimherr's Theorem 7 writes the release as `f + (Δ/ε) Z` with `Z` a
/// *unit-variance* ICLP, whose component scales are `sqrt(λ_k/2)`; that gives `b_k = Δ sqrt(λ_k/2)/ε`
/// and a privacy loss of up to `sqrt(2) ε`. Their Algorithm 1 (σ = sqrt(2) Δ / ε on the unit-variance
/// process) is right, and is what [`IclpSampler::calibrated`] implements; the authors' public R code
/// uses the Theorem-7 form and is under-noised by sqrt(2).
///
/// ```
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
/// use fdp_functional::IclpSampler;
/// use fdp_noise::{Epsilon, NoiseRng, Sensitivity};
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, Grid::midpoint(0.0, 1.0, 100)?, BasisOptions::default())?;
/// let iclp = IclpSampler::calibrated(&basis, Sensitivity::new(0.02)?, Epsilon::new(1.0)?)?;
/// let b = iclp.scales();
/// assert!((b[0] / (0.02 * basis.eigenvalues()[0].sqrt()) - 1.0).abs() < 1e-9);
/// let mut rng = NoiseRng::from_os()?;
/// let summary = vec![0.0; basis.len()];
/// let released = iclp.privatize(&summary, &mut rng)?;   // f_k + b_k L_k
/// assert_eq!(released.len(), basis.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type IclpSampler = BasisSampler<LatticeLaplace>;

/// The Gaussian process over a basis: `Σ_k σ_k N_k φ_k`, `N_k` iid standard normal.
///
/// **Calibration ((ε, δ)-DP; Hall et al. 2013, Mirshani et al. 2019).** For a summary with
/// Cameron-Martin sensitivity `||f_D - f_D'||_C = (Σ_k (f_Dk - f_D'k)² / λ_k)^{1/2} <= Δ₂`, releasing
/// `f_k + σ sqrt(λ_k) N_k` is the Gaussian mechanism in whitened coordinates `f_k / sqrt(λ_k)` with
/// l2 sensitivity Δ₂, so `σ = s(ε, δ) Δ₂` with the analytic multiplier `s` (Balle & Wang 2018) gives
/// (ε, δ)-DP. fdp charges the lattice rounding into Δ₂ and rounds each σ_k up to the lattice.
pub type GaussianProcessSampler = BasisSampler<LatticeGaussian>;

impl BasisSampler<LatticeLaplace> {
    /// The unit-variance ICLP: `b_k = sqrt(λ_k / 2)`, so its covariance is the kernel C.
    pub fn unit_variance(basis: &MercerBasis) -> Result<Self> {
        let noise = basis
            .eigenvalues()
            .iter()
            .map(|l| LatticeLaplace::with_scale((l / 2.0).sqrt()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { basis: basis.clone(), noise, calibration: Calibration::UnitVariance })
    }

    /// The pure ε-DP ICLP for an `||.||_{1,C}` sensitivity Δ (see [`IclpSampler`]).
    pub fn calibrated(basis: &MercerBasis, sensitivity: Sensitivity, epsilon: Epsilon) -> Result<Self> {
        let (delta, eps) = (sensitivity.get(), epsilon.get());
        let roots: Vec<f64> = basis.eigenvalues().iter().map(|l| l.sqrt()).collect();
        let steps: Vec<f64> = roots.iter().map(|r| lattice_step(delta * r / eps, LAPLACE_LATTICE_BITS)).collect();
        let rounding_charge: f64 = steps.iter().zip(&roots).map(|(s, r)| s / r).sum();
        let multiplier = (delta + rounding_charge) / eps;
        let noise = roots
            .iter()
            .zip(&steps)
            .map(|(r, s)| LatticeLaplace::new(multiplier * r, *s))
            .collect::<Result<Vec<_>>>()?;
        let calibration = Calibration::Iclp { sensitivity: delta, epsilon: eps, rounding_charge };
        Ok(Self { basis: basis.clone(), noise, calibration })
    }

    /// IID Laplace on every component of `basis` with the same scale, pure ε-DP for an l1
    /// sensitivity Δ₁ of the coefficient vector (the classic baseline; privacy loss
    /// `Σ_k (|d_k| + r) / b <= (Δ₁ + J r) / b = ε`).
    pub fn iid(basis: &MercerBasis, l1_sensitivity: Sensitivity, epsilon: Epsilon) -> Result<Self> {
        let (delta, eps) = (l1_sensitivity.get(), epsilon.get());
        let step = lattice_step(delta / eps, LAPLACE_LATTICE_BITS);
        let rounding_charge = step * basis.len() as f64;
        let one = LatticeLaplace::new((delta + rounding_charge) / eps, step)?;
        let calibration = Calibration::IidLaplace { sensitivity: delta, epsilon: eps, rounding_charge };
        Ok(Self { basis: basis.clone(), noise: vec![one; basis.len()], calibration })
    }

    /// The Laplace scales `b_k`.
    pub fn scales(&self) -> Vec<f64> {
        self.noise.iter().map(|n| n.scale()).collect()
    }

    /// Upper bound on the privacy loss `Σ_k (|d_k| + r_k) / b_k` between two summaries whose
    /// coefficients differ by `difference` (rounding included).
    pub fn privacy_loss_bound(&self, difference: &[f64]) -> Result<f64> {
        check_len("difference", self.noise.len(), difference.len())?;
        Ok(difference.iter().zip(&self.noise).map(|(d, n)| (d.abs() + n.step()) / n.scale()).sum())
    }
}

impl BasisSampler<LatticeGaussian> {
    /// The Gaussian process with covariance C: `σ_k = sqrt(λ_k)`.
    pub fn unit_variance(basis: &MercerBasis) -> Result<Self> {
        let noise =
            basis.eigenvalues().iter().map(|l| LatticeGaussian::with_sigma(l.sqrt())).collect::<Result<Vec<_>>>()?;
        Ok(Self { basis: basis.clone(), noise, calibration: Calibration::UnitVariance })
    }

    /// The (ε, δ)-DP Gaussian process for a Cameron-Martin sensitivity Δ₂ (see
    /// [`GaussianProcessSampler`]).
    pub fn calibrated(basis: &MercerBasis, sensitivity: Sensitivity, epsilon: Epsilon, delta: Delta) -> Result<Self> {
        let multiplier = analytic_gaussian_multiplier(epsilon, delta)?;
        let d2 = sensitivity.get();
        let roots: Vec<f64> = basis.eigenvalues().iter().map(|l| l.sqrt()).collect();
        let steps: Vec<f64> = roots.iter().map(|r| lattice_step(multiplier * d2 * r, GAUSSIAN_LATTICE_BITS)).collect();
        let rounding_charge = steps.iter().zip(&roots).map(|(s, r)| (s / r).powi(2)).sum::<f64>().sqrt();
        let noise = roots
            .iter()
            .zip(&steps)
            .map(|(r, s)| LatticeGaussian::new(multiplier * (d2 + rounding_charge) * r, *s))
            .collect::<Result<Vec<_>>>()?;
        let calibration = Calibration::GaussianProcess {
            sensitivity: d2,
            epsilon: epsilon.get(),
            delta: delta.get(),
            multiplier,
            rounding_charge,
        };
        Ok(Self { basis: basis.clone(), noise, calibration })
    }

    /// The standard deviations `σ_k`.
    pub fn sigmas(&self) -> Vec<f64> {
        self.noise.iter().map(|n| n.sigma()).collect()
    }
}

impl<N: ComponentNoise> BasisSampler<N> {
    /// The basis the noise lives in.
    pub fn basis(&self) -> &MercerBasis {
        &self.basis
    }

    /// How the scales were set.
    pub fn calibration(&self) -> Calibration {
        self.calibration
    }

    /// The privacy guarantee of [`privatize`](Self::privatize), if the sampler is calibrated.
    pub fn guarantee(&self) -> Option<PrivacyGuarantee> {
        self.calibration.guarantee()
    }

    /// The noise of each released coefficient (its lattice and scale), in component order.
    pub fn components(&self) -> &[N] {
        &self.noise
    }

    /// Standard deviation of each coefficient's noise.
    pub fn std_devs(&self) -> Vec<f64> {
        self.noise.iter().map(ComponentNoise::std_dev).collect()
    }

    /// The private release of a summary given by its J coefficients on the kept components.
    pub fn privatize(&self, coefficients: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>> {
        check_len("coefficients", self.noise.len(), coefficients.len())?;
        Ok(coefficients.iter().zip(&self.noise).map(|(x, n)| n.release(*x, rng)).collect())
    }

    /// `m` independent noise coefficient vectors, m x J, sampled in parallel from child streams.
    pub fn sample_coefficients(&self, m: usize, rng: &mut NoiseRng) -> Mat<f64> {
        self.coefficient_columns(m, rng).transpose().to_owned()
    }

    /// The draws of [`sample_coefficients`](Self::sample_coefficients) as J x m, a column per path
    /// (each written contiguously by its own child stream).
    fn coefficient_columns(&self, m: usize, rng: &mut NoiseRng) -> Mat<f64> {
        let mut columns = Mat::<f64>::zeros(self.noise.len(), m);
        let mut streams = rng.split(m);
        columns.par_col_iter_mut().zip(streams.par_iter_mut()).for_each(|(column, r)| {
            for (v, n) in column.iter_mut().zip(&self.noise) {
                *v = n.release(0.0, r);
            }
        });
        columns
    }

    /// `m` independent noise paths on the grid, m x K: coefficients times `φ^T`, one product.
    pub fn sample_paths(&self, m: usize, rng: &mut NoiseRng) -> Mat<f64> {
        let columns = self.coefficient_columns(m, rng);
        fdp_mercer::linalg::matmul(columns.transpose(), self.basis.eigenfunctions().transpose())
    }

    /// `m` noise paths evaluated at arbitrary points (flat, grid dimension per point), m x P,
    /// through the basis' off-grid extension.
    pub fn sample_paths_at(&self, m: usize, points: &[f64], rng: &mut NoiseRng) -> fdp_core::Result<Mat<f64>> {
        let at = self.basis.eigenfunctions_at(points)?;
        Ok(fdp_mercer::linalg::matmul(self.coefficient_columns(m, rng).transpose(), at.transpose()))
    }
}
