//! Balog, Tolstikhin & Schölkopf (2018), Algorithm 1: a private projection of the kernel mean
//! embedding onto the span of public synthetic points, released as a weighted synthetic dataset.

use faer::Mat;
use fdp_core::Charge;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, StandardNormal};

use fdp_core::{
    Accuracy, Descriptor, Mechanism, MergeableMechanism, Release, ReleaseMetadata, SensitivityNorm, SummaryState,
    Tuning, WeightedSample,
};
use fdp_mercer::linalg::{cholesky, solve_lower, solve_lower_transposed};
use fdp_mercer::{Kernel, Stationary, kernel_matrix};
use fdp_noise::{Delta, Epsilon, NoiseRng, PrivacyGuarantee, Sensitivity, vector::GaussianVector};

use crate::error::{KmeError, Result};
use crate::points::{PointSet, check_public_n, fixed_row_sums};

/// **Algorithm 1 (Balog et al. 2018).** Public synthetic points `z_1..z_M` span a subspace of the
/// RKHS with orthonormal basis `e = L^{-1} [k(z_1,·), ..., k(z_M,·)]` (`G + jI = L L^T`). The
/// projection of `μ_X` has coordinates `α = L^{-1} v`, `v_m = (1/N) Σ_n k(z_m, x_n)`.
///
/// **Sensitivity.** Replacing `x` by `x'` moves α by the coordinates of the projection of
/// `(k(x,·) - k(x',·))/N`, so `||α - α'||₂ <= ||k(x,·) - k(x',·)||_H / N`. For a kernel with
/// `k >= 0` (every built-in one) `||k(x,·) - k(x',·)||² = k(x,x) + k(x',x') - 2k(x,x') <= 2 sup k`,
/// so `Δ₂ = sqrt(2 sup k) / N` — tighter by sqrt(2) than the triangle-inequality `2 sqrt(sup k) / N`.
/// The jitter j only shrinks the coordinates' sensitivity (`(G + jI)^{-1} <= G^+` on the span).
/// Releasing `β = α + σ N(0, I)` with the analytic σ is (ε, δ)-DP, and the weights `w = L^{-T} β`
/// are post-processing.
///
/// **Rounding of the whitening.** The coordinates are computed in f64 with the computed factor L̂,
/// and an ill-conditioned Gram matrix (close points, a tiny jitter) amplifies rounding by
/// `||L̂^{-1}||`, an error that does not shrink with N: at N = 10^10 it exceeded `Δ₂` several times
/// over. The noise is therefore calibrated to `Δ₂ / sqrt(1 - ρ) + 2m` (see
/// [`calibrated_sensitivity`](Self::calibrated_sensitivity) and docs/design-notes/caps.md), with
/// `a = λ_lo^{-1/2} >= ||L̂^{-1}||₂` (λ_lo: the smallest eigenvalue of the computed `L̂ L̂ᵀ` less
/// its rounding, `(γ_M + 4Mu) ℓ²`), `ℓ = ||L̂||_F`, `γ_k = k u / (1 - k u)`, `e` the error of one
/// kernel value and u the unit roundoff:
/// - the Cholesky factor solves a nearby problem, `L̂ L̂ᵀ = G + jI + F` with
///   `||F||₂ <= f = γ_{M+1} ℓ² + M (e + u (1 + j) κ)`, so with `t = a² f < 1/2` and
///   `ρ = t / (1 - t)`, `(L̂ L̂ᵀ)^{-1} <= (G + jI)^{-1} / (1 - ρ)` and the exact map
///   `D ↦ L̂^{-1} v(D)` has sensitivity `Δ₂ / sqrt(1 - ρ)`;
/// - the computed `α̂ = fl(L̂^{-1} v̂)` is within `m = s B / (1 - s) + a e_v` of `L̂^{-1} v` for every
///   dataset, with `s = a γ_M ℓ` (forward substitution's backward error `|δL| <= γ_M |L̂|`),
///   `e_v = sqrt(M) (e + 2u κ)` (the kernel means' error) and `B = sqrt(κ / (1 - ρ)) + a e_v` (a
///   bound on `||L̂^{-1} v̂||`, since `||μ_X||²_H <= κ`).
///
/// A configuration with `t >= 1/2` or `s >= 1/2` is refused when it is built: f64 cannot whiten
/// that Gram matrix reliably (spread the points or raise the jitter).
///
/// ```
/// use fdp_kme::{PointSet, SyntheticSubspace};
/// use fdp_mercer::Stationary;
/// use fdp_noise::{Delta, Epsilon, NeighbourRelation};
/// let kernel = Stationary::gaussian(1.0)?;
/// let synthetic = SyntheticSubspace::from_wide_gaussian(kernel, &[0.0, 0.0], 3.0, 30, 7)?;
/// let data = PointSet::new(2, (0..2000).map(|i| ((i * 37) % 101) as f64 / 25.0 - 2.0).collect())?;
/// let mechanism = synthetic.mechanism(data.len(), Epsilon::new(1.0)?, Delta::new(1e-6)?)?;
/// let release = fdp_core::Session::new(NeighbourRelation::ReplaceOne, Epsilon::new(1.0)?, Some(Delta::new(1e-6)?))?.release(&mechanism, &data)?;
/// assert_eq!(release.output().weights.len(), 30);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SyntheticSubspace {
    kernel: Stationary,
    /// The kernel as the release metadata records it, described once here (before any charge).
    kernel_description: Descriptor,
    z: PointSet,
    l: Mat<f64>,
    whitening: Whitening,
}

/// The rounding terms of the whitening solve (see [`SyntheticSubspace`]): the sensitivity of the
/// exact map through L̂ is `inflation · Δ₂`, and every computed coordinate vector is within `margin`
/// of it in l2.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Whitening {
    inflation: f64,
    margin: f64,
}

impl Whitening {
    /// The terms for the computed factor `l` of `G + jitter κ I` (see [`SyntheticSubspace`]).
    fn of(l: &Mat<f64>, kappa: f64, dim: usize, jitter: f64) -> Result<Self> {
        const U: f64 = f64::EPSILON / 2.0;
        let m = l.nrows();
        let mf = m as f64;
        let gamma = |k: f64| k * U / (1.0 - k * U);
        let ell = (0..m).map(|c| (c..m).map(|r| l[(r, c)] * l[(r, c)]).sum::<f64>()).sum::<f64>().sqrt();
        // σ_min(L̂)² = λ_min(L̂ L̂ᵀ), from the eigenvalues of the computed product: the product is
        // within γ_M ℓ² of L̂ L̂ᵀ in the 2-norm, and the symmetric eigensolver's backward error is
        // taken as 4 M u ||·||₂ <= 4 M u ℓ² (a generous multiple of its O(M u) bound).
        let product = fdp_mercer::linalg::matmul(l.as_ref(), l.transpose());
        let smallest = fdp_mercer::linalg::symmetric_eigenvalues(product.as_ref())?.last().copied().unwrap_or(0.0);
        let lower = smallest - (gamma(mf) + 4.0 * mf * U) * ell * ell;
        let a = if lower > 0.0 { 1.0 / lower.sqrt() } else { f64::INFINITY };
        let value = crate::points::kernel_value_error(kappa, dim);
        let f = gamma(mf + 1.0) * ell * ell + mf * (value + U * (1.0 + jitter) * kappa);
        let (t, s) = (a * a * f, a * gamma(mf) * ell);
        if !(t < 0.5 && s < 0.5) {
            return Err(KmeError::BadParameter {
                name: "jitter",
                value: jitter.into(),
                reason: "the Gram matrix of the synthetic points is too ill-conditioned for f64: the \
                         rounding of the whitening solve, ||L^-1||² times the Cholesky and kernel errors, \
                         must stay below 1/2 (spread the points, use fewer, or raise the jitter)",
            });
        }
        let rho = t / (1.0 - t);
        let inflation = 1.0 / (1.0 - rho).sqrt();
        let e_v = mf.sqrt() * (value + 2.0 * U * kappa);
        let b = kappa.sqrt() * inflation + a * e_v;
        Ok(Self { inflation, margin: s * b / (1.0 - s) + a * e_v })
    }
}

impl SyntheticSubspace {
    /// Synthetic points chosen without the data (a publishable subset, or draws from a public
    /// distribution); `jitter >= 0` is added to the Gram diagonal, relative to `sup k`.
    /// At most [`MAX_POINTS`](Self::MAX_POINTS) of them.
    pub fn new(kernel: Stationary, z: PointSet, jitter: f64) -> Result<Self> {
        if z.is_empty() {
            return Err(KmeError::Shape { what: "synthetic points", expected: 1, got: 0 });
        }
        fdp_core::caps::at_most("synthetic points", z.len(), Self::MAX_POINTS, Self::MAX_POINTS_REASON)?;
        if !(jitter.is_finite() && jitter >= 0.0) {
            return Err(KmeError::BadParameter {
                name: "jitter",
                value: jitter.into(),
                reason: "must be finite and >= 0",
            });
        }
        let mut g = kernel_matrix(&kernel, z.data(), z.data(), z.dim());
        for i in 0..z.len() {
            g[(i, i)] += jitter * kernel.variance();
        }
        let l = cholesky(g.as_ref()).ok_or(KmeError::BadParameter {
            name: "jitter",
            value: jitter.into(),
            reason: "the Gram matrix of the synthetic points is singular; increase the jitter or spread the points",
        })?;
        let whitening = Whitening::of(&l, kernel.variance(), z.dim(), jitter)?;
        let kernel_description = fdp_functional::describe::kernel(&kernel)?;
        Ok(Self { kernel, kernel_description, l, z, whitening })
    }

    /// The most synthetic points M: the Gram matrix, its factor and the spectrum of `L̂ L̂ᵀ` bounding
    /// the whitening's rounding take `M² · 8` bytes each (128 MiB at the cap) and `O(M³)` operations.
    pub const MAX_POINTS: usize = 4096;
    const MAX_POINTS_REASON: &'static str = "at most 4096: the M x M Gram matrix, its Cholesky factor and the \
                                             spectrum of L L^T bounding its rounding take M² · 8 bytes each \
                                             (128 MiB at the cap) and O(M³) operations each";

    /// M synthetic points drawn from the public distribution `N(centre, scale² I)` with a fixed seed
    /// (public randomness: it does not see the data), jitter 1e-8.
    pub fn from_wide_gaussian(kernel: Stationary, centre: &[f64], scale: f64, m: usize, seed: u64) -> Result<Self> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(KmeError::BadParameter { name: "scale", value: scale.into(), reason: "need scale > 0" });
        }
        if m == 0 {
            return Err(KmeError::BadParameter {
                name: "synthetic points",
                value: m.into(),
                reason: "need at least one",
            });
        }
        // The cap before the points are drawn (M · D values), not after.
        fdp_core::caps::at_most("synthetic points", m, Self::MAX_POINTS, Self::MAX_POINTS_REASON)?;
        let mut rng = StdRng::seed_from_u64(seed);
        let data: Vec<f64> = (0..m)
            .flat_map(|_| {
                centre
                    .iter()
                    .map(|c| c + scale * Distribution::<f64>::sample(&StandardNormal, &mut rng))
                    .collect::<Vec<f64>>()
            })
            .collect();
        Self::new(kernel, PointSet::new(centre.len(), data)?, 1e-8)
    }

    /// The synthetic points.
    pub fn points(&self) -> &PointSet {
        &self.z
    }

    /// `v_m = (1/N) Σ_n k(z_m, x_n)`, summed record by record (parallel, in fixed blocks).
    ///
    /// Each record contributes its kernel row `(k(z_m, x_n))_m`; a row that is not finite (possible
    /// only for a kernel that is not total) is replaced by the row of the public default point, the
    /// origin, before it is summed. The built-in kernels are total (a far-away point gives 0), so
    /// with them every row is finite and `||row||_H`-bounded.
    ///
    /// The sum is exact: fixed-point integers scaled to `sup k` ([`fdp_core::state`]), so partial
    /// sums over parts of the data merge into the same summary.
    fn kernel_row_sums(&self, data: &PointSet) -> Result<Vec<i128>> {
        if data.dim() != self.z.dim() {
            return Err(KmeError::Shape { what: "dimension", expected: self.z.dim(), got: data.dim() });
        }
        let row = |x: &[f64]| -> Vec<f64> { (0..self.z.len()).map(|m| self.kernel.eval(self.z.point(m), x)).collect() };
        let origin = vec![0.0; self.z.dim()];
        Ok(fixed_row_sums(data.len(), self.z.len(), self.kernel_exponent(), |i| {
            let r = row(data.point(i));
            if r.iter().all(|v| v.is_finite()) { r } else { row(&origin) }
        }))
    }

    /// Fixed-point exponent of the kernel values, `|k| <= sup k = σ²`.
    fn kernel_exponent(&self) -> i32 {
        fdp_core::state::fixed_point_exponent(self.kernel.variance())
    }

    /// `α = L^{-1} v` from the exact kernel sums of `n` records.
    fn coordinates_from_sums(&self, sums: &[i128], n: usize) -> Vec<f64> {
        let (e, n) = (self.kernel_exponent(), n.max(1) as f64);
        let v: Vec<f64> = sums.iter().map(|s| fdp_core::state::from_fixed(*s, e) / n).collect();
        solve_lower(self.l.as_ref(), &v)
    }

    /// The coordinates `α = L^{-1} v` of the projected embedding (not private).
    pub fn coordinates(&self, data: &PointSet) -> Result<Vec<f64>> {
        Ok(self.coordinates_from_sums(&self.kernel_row_sums(data)?, data.len()))
    }

    /// Weights `w = L^{-T} β` of the synthetic points for coordinates β.
    pub fn weights(&self, coordinates: &[f64]) -> Vec<f64> {
        solve_lower_transposed(self.l.as_ref(), coordinates)
    }

    /// `Δ₂ = sqrt(2 sup k) / N`, in exact arithmetic.
    pub fn sensitivity(&self, n: usize) -> f64 {
        (2.0 * self.kernel.variance()).sqrt() / n.max(1) as f64
    }

    /// What the noise is calibrated to: `Δ₂ / sqrt(1 - ρ) + 2m`, the sensitivity of the coordinates
    /// as computed in f64 (see [`SyntheticSubspace`]; the rounding terms are public, from the
    /// synthetic points alone).
    pub fn calibrated_sensitivity(&self, n: usize) -> f64 {
        self.sensitivity(n) * self.whitening.inflation + 2.0 * self.whitening.margin
    }

    /// **l1-regularised weights (Balog et al., Theorem 11), post-processing.** The weights closest to
    /// a release's in the RKHS metric with `Σ |w_m| <= bound`:
    /// `argmin_w (w - w̃)ᵀ G (w - w̃)` over the l1 ball, by projected gradient with step `1/λ_max(G)`.
    /// Large private weights of opposite signs (noise the Gram inverse amplifies) are damped.
    pub fn l1_regularised(
        &self,
        release: &Release<WeightedSample>,
        bound: f64,
        iterations: usize,
    ) -> Result<Release<WeightedSample>> {
        if !(bound.is_finite() && bound > 0.0) {
            return Err(KmeError::BadParameter {
                name: "bound",
                value: bound.into(),
                reason: "must be finite and > 0",
            });
        }
        let m = self.z.len();
        if release.output().weights.len() != m {
            return Err(KmeError::Shape { what: "weights", expected: m, got: release.output().weights.len() });
        }
        let g = kernel_matrix(&self.kernel, self.z.data(), self.z.data(), self.z.dim());
        // Gershgorin bound on the largest eigenvalue of G.
        let lmax = (0..m).map(|i| (0..m).map(|j| g[(i, j)].abs()).sum::<f64>()).fold(0.0, f64::max);
        let target = &release.output().weights;
        let mut w = crate::features::project_l1_ball(target, bound);
        for _ in 0..iterations {
            let grad: Vec<f64> =
                (0..m).map(|i| 2.0 * (0..m).map(|j| g[(i, j)] * (w[j] - target[j])).sum::<f64>()).collect();
            w = crate::features::project_l1_ball(
                &w.iter().zip(&grad).map(|(a, b)| a - b / (2.0 * lmax)).collect::<Vec<_>>(),
                bound,
            );
        }
        let output = WeightedSample { dim: self.z.dim(), points: self.z.data().to_vec(), weights: w };
        Ok(Release::new(output, release.metadata().clone()))
    }

    /// Algorithm 1 for N = `n` records at (ε, δ): the Gaussian mechanism on the M coordinates
    /// calibrated to `Δ₂ = sqrt(2 sup k)/N` plus the whitening's rounding
    /// ([`calibrated_sensitivity`](Self::calibrated_sensitivity)).
    pub fn mechanism(&self, n: usize, epsilon: Epsilon, delta: Delta) -> Result<SyntheticData> {
        fdp_core::caps::records(n)?;
        let sensitivity = Sensitivity::new(self.calibrated_sensitivity(n))?;
        let noise = GaussianVector::new(self.z.len(), sensitivity, epsilon, delta)?;
        Ok(SyntheticData { subspace: self.clone(), n, noise })
    }
}

/// **Balog et al.'s Algorithm 1 as a mechanism**: `β = α + σ N(0, I)` on the coordinates of the
/// projected embedding, released as the weighted synthetic dataset `(z_m, (L^{-T} β)_m)`.
/// (ε, δ)-DP under replace-one (N public); see [`SyntheticSubspace`] for the sensitivity.
#[derive(Debug, Clone)]
pub struct SyntheticData {
    subspace: SyntheticSubspace,
    n: usize,
    noise: GaussianVector,
}

impl SyntheticData {
    /// The Gaussian noise on the coordinates.
    pub fn noise(&self) -> &GaussianVector {
        &self.noise
    }

    /// The public geometry.
    pub fn subspace(&self) -> &SyntheticSubspace {
        &self.subspace
    }
}

impl SyntheticData {
    /// Name, kernel and the synthetic points (public).
    fn fingerprint(&self) -> u64 {
        let sub = &self.subspace;
        let mut words: Vec<u64> = b"balog_alg1".iter().map(|b| u64::from(*b)).collect();
        words.extend([sub.kernel.rho().to_bits(), sub.kernel.variance().to_bits(), sub.z.dim() as u64]);
        words.extend(sub.z.data().iter().map(|v| v.to_bits()));
        fdp_core::state::fingerprint_of(words)
    }
}

/// Partial states hold the exact kernel sums at the synthetic points; see [`fdp_core::state`].
impl MergeableMechanism<PointSet> for SyntheticData {
    fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint(), self.subspace.z.len())
    }

    fn update_state(&self, state: &mut SummaryState, part: &PointSet) -> Result<()> {
        state.add(part.len() as u64, &self.subspace.kernel_row_sums(part)?)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        fdp_core::state::check_state_layout(state, &self.empty_state(), Some(self.n))?;
        Ok(self.subspace.coordinates_from_sums(state.sums(), self.n))
    }
}

impl Mechanism<PointSet> for SyntheticData {
    type Output = WeightedSample;

    fn name(&self) -> &'static str {
        "balog_alg1"
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.noise.guarantee()
    }

    /// The coordinates `α = L^{-1} v` (N must be the public n).
    fn summarize(&self, data: &PointSet) -> Result<Vec<f64>> {
        check_public_n(data, self.n)?;
        self.subspace.coordinates(data)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<WeightedSample>> {
        let beta = self.noise.release(summary, rng)?;
        let z = &self.subspace.z;
        let output = WeightedSample { dim: z.dim(), points: z.data().to_vec(), weights: self.subspace.weights(&beta) };
        let metadata = ReleaseMetadata {
            components: z.len(),
            kernel: Some(self.subspace.kernel_description.clone()),
            calibration: Some(self.noise.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            tuning: Tuning::Fixed,
            ..ReleaseMetadata::new(
                "balog_alg1",
                self.guarantee(),
                self.subspace.calibrated_sensitivity(self.n),
                SensitivityNorm::L2,
                self.n,
            )
        };
        Ok(Release::new(output, metadata))
    }

    /// The noise on the coordinates, whose l2 norm is the RKHS norm of the embedding's error.
    fn accuracy(&self) -> Accuracy {
        let s = self.noise.sigma();
        Accuracy::independent(&vec![s * s; self.subspace.z.len()], 3.0)
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        Some(self.noise.loss_ratio(a, b).map(|ratio| vec![("release", ratio)]).map_err(Into::into))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedding::rkhs_distance_sq;
    use crate::points::WeightedPoints;

    #[test]
    fn non_private_weights_are_the_rkhs_projection() {
        let kernel = Stationary::gaussian(1.0).unwrap();
        let s = SyntheticSubspace::new(kernel, PointSet::new(1, vec![-1.0, 0.0, 1.5]).unwrap(), 0.0).unwrap();
        let data = PointSet::new(1, vec![-0.5, 0.2, 0.9, 1.1]).unwrap();
        let w = s.weights(&s.coordinates(&data).unwrap());
        // The residual of the projection is orthogonal to every k(z_m, ·): G w = v.
        let g = kernel_matrix(&kernel, s.points().data(), s.points().data(), 1);
        let v: Vec<f64> = (0..3)
            .map(|m| (0..4).map(|i| kernel.eval(s.points().point(m), data.point(i))).sum::<f64>() / 4.0)
            .collect();
        for m in 0..3 {
            let gw: f64 = (0..3).map(|j| g[(m, j)] * w[j]).sum();
            assert!((gw - v[m]).abs() < 1e-12);
        }
        // With the data points themselves as synthetic points the projection is exact.
        let exact = SyntheticSubspace::new(kernel, data.clone(), 0.0).unwrap();
        let we = exact.weights(&exact.coordinates(&data).unwrap());
        let d = rkhs_distance_sq(
            &kernel,
            &WeightedPoints::new(data.clone(), we).unwrap(),
            &WeightedPoints::uniform(data),
            None,
        )
        .unwrap();
        assert!(d < 1e-12, "{d}");
    }

    #[test]
    fn l1_regularisation_respects_the_bound_and_keeps_feasible_weights() {
        let kernel = Stationary::gaussian(1.0).unwrap();
        let s = SyntheticSubspace::new(kernel, PointSet::new(1, vec![-1.0, 0.0, 1.0]).unwrap(), 1e-8).unwrap();
        let data = PointSet::new(1, vec![-0.5, 0.5]).unwrap();
        let mechanism = s.mechanism(2, Epsilon::new(0.5).unwrap(), Delta::new(1e-6).unwrap()).unwrap();
        let release = mechanism.release(&data, &mut NoiseRng::seeded(3), Charge::unaccounted()).unwrap();
        let reg = s.l1_regularised(&release, 1.0, 500).unwrap();
        assert!(reg.output().weights.iter().map(|w| w.abs()).sum::<f64>() <= 1.0 + 1e-12);
        // Weights already inside the ball are a fixed point.
        let weights = vec![0.2, 0.3, -0.1];
        let inside = Release::new(
            WeightedSample { weights: weights.clone(), ..release.output().clone() },
            release.metadata().clone(),
        );
        let same = s.l1_regularised(&inside, 1.0, 50).unwrap();
        assert!(same.output().weights.iter().zip(&weights).all(|(a, b)| (a - b).abs() < 1e-12));
        assert!(s.l1_regularised(&release, 0.0, 10).is_err());
    }

    /// Regression (issue 29): twelve synthetic points 0.02 apart with jitter 1e-12 make the Gram
    /// matrix nearly singular, and at N = 10^10 the rounding of the whitening solve dwarfed the
    /// sensitivity: the exact loss of the computed coordinates was 3x the budget. Now the
    /// calibration carries the rounding term (or the configuration is refused at build time).
    #[test]
    fn an_ill_conditioned_gram_matrix_is_accounted_for_in_the_calibration() {
        let kernel = Stationary::gaussian(1.0).unwrap();
        let z = PointSet::new(1, (0..12).map(|i| 0.02 * i as f64).collect()).unwrap();
        let n = 10_000_000_000usize;
        let mut built = 0;
        for jitter in [1e-12, 1e-10, 1e-9, 1e-8] {
            // Refused before anything is charged, or calibrated for its rounding.
            let Ok(s) = SyntheticSubspace::new(kernel, z.clone(), jitter) else { continue };
            let Ok(mechanism) = s.mechanism(n, Epsilon::new(1.0).unwrap(), Delta::new(1e-6).unwrap()) else {
                continue;
            };
            built += 1;
            // Neighbours D = {x} + (N - 1) copies of y, D' = {x'} + the same rest, from exact sums.
            let rest = s.kernel_row_sums(&PointSet::new(1, vec![0.1]).unwrap()).unwrap();
            let coordinates = |x: f64| {
                let own = s.kernel_row_sums(&PointSet::new(1, vec![x]).unwrap()).unwrap();
                let sums: Vec<i128> = own.iter().zip(&rest).map(|(a, r)| a + (n as i128 - 1) * r).collect();
                s.coordinates_from_sums(&sums, n)
            };
            let records = [-50.0, -1.0, 0.0, 0.013, 0.05, 0.11, 0.2, 0.23, 1.0, 3.0];
            let summaries: Vec<Vec<f64>> = records.iter().map(|x| coordinates(*x)).collect();
            let noise = vec![mechanism.noise().noise(); 12];
            let mut worst = 0.0f64;
            for a in &summaries {
                for b in &summaries {
                    let multiplier = mechanism.noise().multiplier();
                    worst = worst.max(fdp_noise::exact_loss::gaussian_loss(&noise, multiplier, a, b).unwrap());
                }
            }
            eprintln!(
                "DBG jitter {jitter} worst {worst} sens {} cal {}",
                s.sensitivity(n),
                s.calibrated_sensitivity(n)
            );
            assert!(worst <= 1.0, "jitter {jitter}: whitened distance x multiplier = {worst}");
        }
        assert_eq!(built, 4, "the adversarial pass's jitter 1e-12 included");
        // Coincident points and a jitter below the rounding of the factor: refused when built.
        assert!(SyntheticSubspace::new(kernel, PointSet::new(1, vec![0.0; 12]).unwrap(), 1e-15).is_err());
    }

    #[test]
    fn bad_parameters() {
        let k = Stationary::gaussian(1.0).unwrap();
        assert!(SyntheticSubspace::new(k, PointSet::new(1, vec![]).unwrap(), 0.0).is_err());
        assert!(
            SyntheticSubspace::new(k, PointSet::new(1, vec![0.0, 0.0]).unwrap(), 0.0).is_err(),
            "duplicate points, no jitter"
        );
        assert!(SyntheticSubspace::new(k, PointSet::new(1, vec![0.0, 0.0]).unwrap(), 1e-6).is_ok());
        assert!(SyntheticSubspace::from_wide_gaussian(k, &[0.0], -1.0, 5, 1).is_err());
        let s = SyntheticSubspace::from_wide_gaussian(k, &[0.0], 2.0, 5, 1).unwrap();
        let data = PointSet::new(1, vec![0.1, 0.2]).unwrap();
        let mut rng = NoiseRng::seeded(1);
        let mechanism = s.mechanism(2, Epsilon::new(1.0).unwrap(), Delta::new(1e-6).unwrap()).unwrap();
        assert!(mechanism.release(&data, &mut rng, Charge::unaccounted()).is_ok());
        assert!(mechanism.release(&PointSet::new(2, vec![0.0; 4]).unwrap(), &mut rng, Charge::unaccounted()).is_err());
        assert!(
            mechanism.release(&PointSet::new(1, vec![0.0; 3]).unwrap(), &mut rng, Charge::unaccounted()).is_err(),
            "wrong n"
        );
    }
}
