//! Random Fourier features with `||φ(x)||₂ = 1` exactly, Balog et al.'s Algorithm 2 (the Gaussian
//! mechanism on the mean feature vector), and its reduced-set fit back to weighted points.

use fdp_core::Charge;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, StandardNormal};

use fdp_core::{Accuracy, Coefficients, Descriptor, Mechanism, Release, ReleaseMetadata, SensitivityNorm, Tuning};
use fdp_mercer::{Kernel, Stationary, StationaryShape};
use fdp_noise::{Delta, Epsilon, NoiseRng, PrivacyGuarantee, Sensitivity, vector::GaussianVector};

use crate::error::{KmeError, Result};
use crate::points::{PointSet, WeightedPoints, check_public_n, fixed_row_sums, fourier_features};

/// Random Fourier features of the Gaussian kernel `σ² exp(-||x - y||² / (2ρ²))`:
/// `ω_j ~ N(0, ρ^{-2} I)`, `φ(x) = σ J^{-1/2} (cos ω_1·x, sin ω_1·x, ..., cos ω_J·x, sin ω_J·x)`.
///
/// Then `φ(x)·φ(y) = σ² J^{-1} Σ_j cos(ω_j·(x - y)) → k(x, y)` and `||φ(x)||₂ = σ` **exactly**
/// (`cos² + sin² = 1`), so the mean feature vector has l2 sensitivity `2σ/N`. The common
/// `sqrt(2/J) cos(ω·x + b)` features have norm up to `sqrt(2)σ`, which a `2σ/N` calibration
/// under-noises.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomFourierFeatures {
    dim: usize,
    omegas: Vec<f64>,
    amplitude: f64,
    kernel: Stationary,
    /// The kernel as the release metadata records it, described once here (before any charge).
    kernel_description: Descriptor,
}

impl RandomFourierFeatures {
    /// `features` frequency pairs (output length `2 features`) for a Gaussian kernel on `R^dim`, drawn
    /// from a fixed seed (public randomness).
    pub fn new(kernel: Stationary, dim: usize, features: usize, seed: u64) -> Result<Self> {
        if kernel.shape() != StationaryShape::Gaussian {
            return Err(KmeError::BadParameter {
                name: "kernel",
                value: kernel.spec().name.into(),
                reason: "random Fourier features are implemented for the Gaussian kernel",
            });
        }
        if dim == 0 || features == 0 {
            return Err(KmeError::BadParameter {
                name: "features",
                value: features.into(),
                reason: "need dim >= 1 and features >= 1",
            });
        }
        let reason = "the frequencies (features x dim) must hold at most 2^27 numbers (1 GiB)";
        fdp_core::caps::f64_values("features", &[features, dim], reason)?;
        let mut rng = StdRng::seed_from_u64(seed);
        let omegas =
            (0..features * dim).map(|_| StandardNormal.sample(&mut rng)).map(|g: f64| g / kernel.rho()).collect();
        let kernel_description = fdp_functional::describe::kernel(&kernel)?;
        Ok(Self { dim, omegas, amplitude: kernel.variance().sqrt(), kernel, kernel_description })
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `(cos ω_j·x, sin ω_j·x)_j` without the `σ J^{-1/2}` scaling (the RFF sketch's map).
    pub fn unnormalised_features(&self, x: &[f64]) -> Vec<f64> {
        fourier_features(&self.omegas, self.dim, x, 1.0)
    }

    /// Output length 2J.
    pub fn len(&self) -> usize {
        2 * self.omegas.len() / self.dim
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.omegas.is_empty()
    }

    fn omega(&self, j: usize) -> &[f64] {
        &self.omegas[j * self.dim..(j + 1) * self.dim]
    }

    /// `φ(x)`; a point whose projections overflow gets the features of the origin (`cos 0 = 1`,
    /// `sin 0 = 0`), so `||φ(x)||₂ = σ` for every finite input.
    pub fn features(&self, x: &[f64]) -> Vec<f64> {
        let j_count = self.len() / 2;
        fourier_features(&self.omegas, self.dim, x, self.amplitude / (j_count as f64).sqrt())
    }

    /// `(1/N) Σ_n φ(x_n)`, in parallel, from exact fixed-point sums (`|φ_j(x)| <= σ`): the same
    /// value whatever the thread count, and rounded only by the conversion and the division.
    pub fn mean_features(&self, data: &PointSet) -> Result<Vec<f64>> {
        if data.dim() != self.dim {
            return Err(KmeError::Shape { what: "dimension", expected: self.dim, got: data.dim() });
        }
        let n = data.len().max(1) as f64;
        let e = fdp_core::state::fixed_point_exponent(self.amplitude);
        let sums = fixed_row_sums(data.len(), self.len(), e, |i| self.features(data.point(i)));
        Ok(sums.into_iter().map(|s| fdp_core::state::from_fixed(s, e) / n).collect())
    }

    /// **Algorithm 2 (Balog et al. 2018)** for N = `n` records at (ε, δ): the mean feature vector
    /// with Gaussian noise calibrated to `Δ₂ = 2σ/N` by the analytic Gaussian mechanism.
    pub fn mechanism(&self, n: usize, epsilon: Epsilon, delta: Delta) -> Result<FeatureMean> {
        fdp_core::caps::records(n)?;
        // The summary is an exact fixed-point sum converted and divided by n (2 roundings).
        let sensitivity = Sensitivity::of_mean(2.0 * self.amplitude / n as f64, n, 2)?;
        Ok(FeatureMean { rff: self.clone(), n, noise: GaussianVector::new(self.len(), sensitivity, epsilon, delta)? })
    }
}

/// **Balog et al.'s Algorithm 2 as a mechanism**: the mean random-feature vector `(1/N) Σ φ(x_n)`
/// plus Gaussian noise; `||φ(x)||₂ = σ` exactly, so one replaced record moves it by at most `2σ/N` in
/// l2 and the analytic calibration gives (ε, δ)-DP under replace-one. Fit weighted points to the
/// release with [`RandomFourierFeatures::reduced_set`] (post-processing).
#[derive(Debug, Clone)]
pub struct FeatureMean {
    rff: RandomFourierFeatures,
    n: usize,
    noise: GaussianVector,
}

impl FeatureMean {
    /// The Gaussian noise on the features.
    pub fn noise(&self) -> &GaussianVector {
        &self.noise
    }
}

impl Mechanism<PointSet> for FeatureMean {
    type Output = Coefficients;

    fn name(&self) -> &'static str {
        "balog_alg2"
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.noise.guarantee()
    }

    fn summarize(&self, data: &PointSet) -> Result<Vec<f64>> {
        check_public_n(data, self.n)?;
        self.rff.mean_features(data)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Coefficients>> {
        let metadata = ReleaseMetadata {
            components: self.rff.len(),
            kernel: Some(self.rff.kernel_description.clone()),
            calibration: Some(self.noise.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            tuning: Tuning::Fixed,
            ..ReleaseMetadata::new(
                "balog_alg2",
                self.guarantee(),
                2.0 * self.rff.amplitude / self.n.max(1) as f64,
                SensitivityNorm::L2,
                self.n,
            )
        };
        Ok(Release::new(Coefficients(self.noise.release(summary, rng)?), metadata))
    }

    fn accuracy(&self) -> Accuracy {
        let s = self.noise.sigma();
        Accuracy::independent(&vec![s * s; self.rff.len()], 3.0)
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        Some(self.noise.loss_ratio(a, b).map(|ratio| vec![("release", ratio)]).map_err(Into::into))
    }
}

/// Options of the reduced-set fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReducedSetOptions {
    /// Outer iterations (one weight step and one point step each).
    pub iterations: usize,
    /// Bound on `Σ |w_m|`.
    pub l1_bound: f64,
}

impl Default for ReducedSetOptions {
    fn default() -> Self {
        Self { iterations: 200, l1_bound: 1.0 }
    }
}

/// Backtracking with an adaptive step: halves `step` until `attempt(step)` does not increase `value`
/// and returns that attempt (growing `step` by 1.5 for the next call); `None` when no step above
/// 1e-12 helps.
fn adaptive_step<T>(step: &mut f64, value: f64, attempt: impl Fn(f64) -> (f64, T)) -> Option<(f64, T)> {
    loop {
        let (v, out) = attempt(*step);
        if v <= value {
            *step *= 1.5;
            return Some((v, out));
        }
        if *step < 1e-12 {
            return None;
        }
        *step *= 0.5;
    }
}

/// Euclidean projection onto `{w : Σ |w_i| <= r}` (Duchi et al. 2008).
pub fn project_l1_ball(w: &[f64], r: f64) -> Vec<f64> {
    if w.iter().map(|v| v.abs()).sum::<f64>() <= r {
        return w.to_vec();
    }
    let mut u: Vec<f64> = w.iter().map(|v| v.abs()).collect();
    u.sort_by(|a, b| b.total_cmp(a));
    let (mut cumulative, mut theta) = (0.0, 0.0);
    for (i, &ui) in u.iter().enumerate() {
        cumulative += ui;
        let t = (cumulative - r) / (i + 1) as f64;
        if ui > t {
            theta = t;
        }
    }
    w.iter().map(|v| v.signum() * (v.abs() - theta).max(0.0)).collect()
}

impl RandomFourierFeatures {
    /// **Reduced-set fit** of a released feature vector (post-processing, no further privacy cost):
    /// weighted points `(z_m, w_m)` with `Σ|w_m| <= l1_bound` minimising `||Σ_m w_m φ(z_m) - μ̃||²`,
    /// by alternating a projected gradient step on the weights and a gradient step on the points,
    /// each with backtracking. `start` holds the initial points (chosen without the data).
    pub fn reduced_set(&self, released: &[f64], start: PointSet, options: ReducedSetOptions) -> Result<WeightedPoints> {
        let rff = self;
        if released.len() != rff.len() {
            return Err(KmeError::Shape { what: "released features", expected: rff.len(), got: released.len() });
        }
        if start.dim() != rff.dim || start.is_empty() {
            return Err(KmeError::Shape { what: "start points", expected: rff.dim, got: start.dim() });
        }
        if !(options.l1_bound.is_finite() && options.l1_bound > 0.0) {
            return Err(KmeError::BadParameter {
                name: "l1_bound",
                value: options.l1_bound.into(),
                reason: "must be finite and > 0",
            });
        }
        let (m, d) = (start.len(), rff.dim);
        let mut z = start.data().to_vec();
        let mut w = vec![options.l1_bound / m as f64; m];
        let objective = |z: &[f64], w: &[f64]| -> (f64, Vec<f64>, Vec<Vec<f64>>) {
            let feats: Vec<Vec<f64>> = (0..m).map(|i| rff.features(&z[i * d..(i + 1) * d])).collect();
            let mut r: Vec<f64> = released.iter().map(|v| -v).collect();
            for (f, wi) in feats.iter().zip(w) {
                r.iter_mut().zip(f).for_each(|(a, b)| *a += wi * b);
            }
            (r.iter().map(|v| v * v).sum(), r, feats)
        };
        let (mut value, mut resid, mut feats) = objective(&z, &w);
        let (mut step_w, mut step_z) = (1.0, 1.0);
        for _ in 0..options.iterations {
            // Weights: ∇_w = 2 Φ^T r, projected onto the l1 ball.
            let grad: Vec<f64> =
                feats.iter().map(|f| 2.0 * f.iter().zip(&resid).map(|(a, b)| a * b).sum::<f64>()).collect();
            let attempt = |step: f64| {
                let cand = project_l1_ball(
                    &w.iter().zip(&grad).map(|(a, g)| a - step * g).collect::<Vec<_>>(),
                    options.l1_bound,
                );
                let (v, r, f) = objective(&z, &cand);
                (v, (cand, r, f))
            };
            if let Some((v, (cand, r, f))) = adaptive_step(&mut step_w, value, attempt) {
                (w, value, resid, feats) = (cand, v, r, f);
            }
            // Points: ∂/∂z_m = 2 w_m J(z_m)^T r, with d cos(ω·z)/dz = -sin(ω·z) ω, d sin/dz = cos(ω·z) ω.
            let j_count = rff.len() / 2;
            let scale = rff.amplitude / (j_count as f64).sqrt();
            let mut grad_z = vec![0.0; m * d];
            for i in 0..m {
                for j in 0..j_count {
                    let om = rff.omega(j);
                    let a: f64 = om.iter().zip(&z[i * d..(i + 1) * d]).map(|(x, y)| x * y).sum();
                    let g = 2.0 * w[i] * scale * (-a.sin() * resid[2 * j] + a.cos() * resid[2 * j + 1]);
                    for k in 0..d {
                        grad_z[i * d + k] += g * om[k];
                    }
                }
            }
            let attempt = |step: f64| {
                let cand: Vec<f64> = z.iter().zip(&grad_z).map(|(a, g)| a - step * g).collect();
                let (v, r, f) = objective(&cand, &w);
                (v, (cand, r, f))
            };
            if let Some((v, (cand, r, f))) = adaptive_step(&mut step_z, value, attempt) {
                (z, value, resid, feats) = (cand, v, r, f);
            }
        }
        WeightedPoints::new(PointSet::new(d, z)?, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_have_unit_norm_and_approximate_the_kernel() {
        let k = Stationary::gaussian(0.8).unwrap();
        let rff = RandomFourierFeatures::new(k, 2, 4000, 3).unwrap();
        let (x, y) = ([0.3, -0.2], [0.9, 0.4]);
        let (fx, fy) = (rff.features(&x), rff.features(&y));
        assert!((fx.iter().map(|v| v * v).sum::<f64>() - 1.0).abs() < 1e-12);
        let approx: f64 = fx.iter().zip(&fy).map(|(a, b)| a * b).sum();
        assert!((approx - k.eval(&x, &y)).abs() < 0.05, "{approx} vs {}", k.eval(&x, &y));
        assert!(RandomFourierFeatures::new(Stationary::matern32(1.0).unwrap(), 2, 10, 1).is_err());
    }

    #[test]
    fn l1_projection_and_reduced_set_fit() {
        let p = project_l1_ball(&[3.0, -1.0, 0.5], 2.0);
        assert!((p.iter().map(|v| v.abs()).sum::<f64>() - 2.0).abs() < 1e-12);
        assert_eq!(project_l1_ball(&[0.1, -0.2], 1.0), vec![0.1, -0.2]);
        // Fit two weighted points to the feature mean of a two-point dataset.
        let k = Stationary::gaussian(1.0).unwrap();
        let rff = RandomFourierFeatures::new(k, 1, 200, 5).unwrap();
        let data = PointSet::new(1, vec![-1.0, 1.0]).unwrap();
        let target = rff.mean_features(&data).unwrap();
        let fit =
            rff.reduced_set(&target, PointSet::new(1, vec![-0.3, 0.4]).unwrap(), ReducedSetOptions::default()).unwrap();
        assert!(fit.weights.iter().map(|w| w.abs()).sum::<f64>() <= 1.0 + 1e-12);
        let before = {
            let f0 = [rff.features(&[-0.3]), rff.features(&[0.4])];
            (0..400).map(|i| (0.5 * f0[0][i] + 0.5 * f0[1][i] - target[i]).powi(2)).sum::<f64>()
        };
        let after: f64 = {
            let f: Vec<Vec<f64>> = (0..2).map(|m| rff.features(fit.points.point(m))).collect();
            (0..400).map(|i| (fit.weights[0] * f[0][i] + fit.weights[1] * f[1][i] - target[i]).powi(2)).sum()
        };
        assert!(after < 0.1 * before, "the fit should improve a lot: {before} -> {after}");
    }
}
