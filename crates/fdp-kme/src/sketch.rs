//! Private sketches and sketch-to-model estimation (M2M; Houssiau et al.).
//!
//! A sketch is the noisy average of a feature map, `S = (Σ_i Φ(x_i) + ξ) / (n + ζ)`, with Laplace
//! noise ξ calibrated to `Δ₁ = max_x ||Φ(x)||₁` and a noisy count `n + ζ`: under add/remove
//! neighbours the sum moves by at most Δ₁ in l1 and the count by 1, so spending `ε_num = 0.98 ε` on
//! the sum and `ε_den = 0.02 ε` on the count is ε-DP. Anything computed from S afterwards is free.
//!
//! **M2M.** To estimate `E f(X)` for a query f, fit `f ≈ Σ_j a_j Φ_j` by ridge regression on points
//! `u_1..u_s` drawn from a public prior ψ — `a = argmin (1/s) ||P a - F||² + λ ||a||²`, `P_tj = Φ_j(u_t)`,
//! with the noise-aware `λ = 2 Δ₁² / (ε_num² (n + ζ))` — and return `aᵀ S`. Equivalently
//! `E f ≈ Σ_t ω_t f(u_t)` with the *implicit weights* `ω = P (PᵀP/s + λ I)^{-1} S / s`, which turn any
//! weighted estimator (here logistic regression) into a sketch-based one.

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, StandardNormal, Uniform};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use fdp_noise::{Epsilon, NeighbourRelation, NoiseRng, PrivacyGuarantee, Sensitivity, vector::LaplaceVector};

use crate::error::{KmeError, Result};
use crate::points::{PointSet, parallel_row_sum};

/// Share of ε spent on the sum (the rest buys the noisy count).
pub const NUMERATOR_SHARE: f64 = 0.98;

/// A feature map of `[0, 1]^d` with a known bound on `||Φ(x)||₁`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FeatureMap {
    /// Random Fourier features `(cos ω_j·x, sin ω_j·x)`, `ω_j ~ N(0, σ^{-2} I)`: `||Φ||₁ <= sqrt(2) m'`.
    Rff { omegas: Vec<f64>, dim: usize },
    /// RACE: R repetitions of a p-stable LSH `⌊(a_r·x + b_r)/w⌋ mod W`, one-hot each: `||Φ||₁ = R`.
    Race { projections: Vec<f64>, offsets: Vec<f64>, width: f64, buckets: usize, dim: usize },
    /// Marginal histograms with B bins per coordinate, one-hot each: `||Φ||₁ = d`.
    Hist { bins: usize, dim: usize },
}

impl FeatureMap {
    /// `pairs` random Fourier frequency pairs of bandwidth `sigma` on `[0, 1]^dim` (public seed).
    pub fn rff(dim: usize, pairs: usize, sigma: f64, seed: u64) -> Result<Self> {
        if dim == 0 || pairs == 0 || !(sigma.is_finite() && sigma > 0.0) {
            return Err(KmeError::BadParameter {
                name: "rff",
                value: sigma,
                reason: "need dim, pairs >= 1 and sigma > 0",
            });
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let omegas = (0..pairs * dim).map(|_| Distribution::<f64>::sample(&StandardNormal, &mut rng) / sigma).collect();
        Ok(Self::Rff { omegas, dim })
    }

    /// `repetitions` p-stable hashes of bucket width `width` folded into `buckets` buckets.
    pub fn race(dim: usize, repetitions: usize, buckets: usize, width: f64, seed: u64) -> Result<Self> {
        if dim == 0 || repetitions == 0 || buckets == 0 || !(width.is_finite() && width > 0.0) {
            return Err(KmeError::BadParameter {
                name: "race",
                value: width,
                reason: "need dim, repetitions, buckets >= 1 and width > 0",
            });
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let projections =
            (0..repetitions * dim).map(|_| Distribution::<f64>::sample(&StandardNormal, &mut rng)).collect();
        let uniform = Uniform::new(0.0, width).map_err(|e| KmeError::Write(e.to_string()))?;
        let offsets = (0..repetitions).map(|_| uniform.sample(&mut rng)).collect();
        Ok(Self::Race { projections, offsets, width, buckets, dim })
    }

    /// Marginal histograms of `bins` equal bins of `[0, 1]` per coordinate.
    pub fn hist(dim: usize, bins: usize) -> Result<Self> {
        if dim == 0 || bins == 0 {
            return Err(KmeError::BadParameter { name: "hist", value: bins as f64, reason: "need dim, bins >= 1" });
        }
        Ok(Self::Hist { bins, dim })
    }

    /// Input dimension d.
    pub fn dim(&self) -> usize {
        match self {
            Self::Rff { dim, .. } | Self::Race { dim, .. } | Self::Hist { dim, .. } => *dim,
        }
    }

    /// Output length.
    pub fn len(&self) -> usize {
        match self {
            Self::Rff { omegas, dim } => 2 * omegas.len() / dim,
            Self::Race { offsets, buckets, .. } => offsets.len() * buckets,
            Self::Hist { bins, dim } => bins * dim,
        }
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `Δ₁ = max_x ||Φ(x)||₁`.
    pub fn l1_bound(&self) -> f64 {
        match self {
            Self::Rff { .. } => std::f64::consts::SQRT_2 * (self.len() / 2) as f64,
            Self::Race { offsets, .. } => offsets.len() as f64,
            Self::Hist { dim, .. } => *dim as f64,
        }
    }

    /// `Φ(x)` (coordinates outside [0, 1] are clamped for the histogram).
    pub fn features(&self, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.len()];
        match self {
            Self::Rff { omegas, dim } => {
                for (j, om) in omegas.chunks(*dim).enumerate() {
                    let a: f64 = om.iter().zip(x).map(|(w, v)| w * v).sum();
                    out[2 * j] = a.cos();
                    out[2 * j + 1] = a.sin();
                }
            }
            Self::Race { projections, offsets, width, buckets, dim } => {
                for (r, (a, b)) in projections.chunks(*dim).zip(offsets).enumerate() {
                    let h = ((a.iter().zip(x).map(|(p, v)| p * v).sum::<f64>() + b) / width).floor();
                    let bucket = (h.rem_euclid(*buckets as f64) as usize).min(buckets - 1);
                    out[r * buckets + bucket] = 1.0;
                }
            }
            Self::Hist { bins, .. } => {
                for (j, v) in x.iter().enumerate() {
                    let b = ((v.clamp(0.0, 1.0) * *bins as f64) as usize).min(bins - 1);
                    out[j * bins + b] = 1.0;
                }
            }
        }
        out
    }

    /// `Σ_i Φ(x_i)`, in parallel.
    pub fn feature_sum(&self, data: &PointSet) -> Result<Vec<f64>> {
        if data.dim() != self.dim() {
            return Err(KmeError::Shape { what: "dimension", expected: self.dim(), got: data.dim() });
        }
        Ok(parallel_row_sum(data.len(), self.len(), |i| self.features(data.point(i))))
    }
}

/// A released sketch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrivateSketch {
    /// `S = (Σ Φ + ξ) / (n + ζ)`.
    pub sketch: Vec<f64>,
    /// `n + ζ`, at least 1 (post-processing).
    pub noisy_count: f64,
    /// `Δ₁` and the ε spent on the sum.
    pub l1_sensitivity: f64,
    pub epsilon_numerator: f64,
    pub guarantee: PrivacyGuarantee,
}

/// The two noisy pieces of a sketch before division: `(Σ Φ + ξ, n + ζ)` (what audits look at).
pub fn noisy_parts(
    map: &FeatureMap,
    sum: &[f64],
    n: usize,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<(Vec<f64>, f64)> {
    let eps = Epsilon::new(epsilon)?;
    let numerator =
        LaplaceVector::new(map.len(), Sensitivity::new(map.l1_bound())?, Epsilon::new(NUMERATOR_SHARE * eps.get())?)?;
    let count = LaplaceVector::new(1, Sensitivity::new(1.0)?, Epsilon::new((1.0 - NUMERATOR_SHARE) * eps.get())?)?;
    Ok((numerator.release(sum, rng)?, count.release(&[n as f64], rng)?[0]))
}

impl PrivateSketch {
    /// The ε-DP sketch of `data` (add/remove neighbours; n is private and released noisily).
    pub fn new(map: &FeatureMap, data: &PointSet, epsilon: f64, rng: &mut NoiseRng) -> Result<Self> {
        let sum = map.feature_sum(data)?;
        let (numerator, count) = noisy_parts(map, &sum, data.len(), epsilon, rng)?;
        let noisy_count = count.max(1.0);
        Ok(Self {
            sketch: numerator.iter().map(|v| v / noisy_count).collect(),
            noisy_count,
            l1_sensitivity: map.l1_bound(),
            epsilon_numerator: NUMERATOR_SHARE * epsilon,
            guarantee: PrivacyGuarantee { epsilon, delta: 0.0, relation: NeighbourRelation::AddRemoveOne },
        })
    }
}

/// M2M estimation from a sketch with prior points `u_1..u_s`.
#[derive(Debug, Clone)]
pub struct M2mEstimator {
    prior: PointSet,
    /// `P (PᵀP/s + λI)^{-1} / s`, s x m: implicit weights are this times S.
    hat: Mat<f64>,
    weights: Vec<f64>,
}

impl M2mEstimator {
    /// Fits the ridge system for `sketch` on the prior points (drawn from a public ψ).
    pub fn new(map: &FeatureMap, sketch: &PrivateSketch, prior: PointSet) -> Result<Self> {
        if prior.dim() != map.dim() || prior.is_empty() {
            return Err(KmeError::Shape { what: "prior points", expected: map.dim(), got: prior.dim() });
        }
        let (s, m) = (prior.len(), map.len());
        let rows: Vec<Vec<f64>> = (0..s).into_par_iter().map(|t| map.features(prior.point(t))).collect();
        let p = Mat::from_fn(s, m, |t, j| rows[t][j]);
        let lambda = 2.0 * sketch.l1_sensitivity.powi(2) / (sketch.epsilon_numerator.powi(2) * sketch.noisy_count);
        let mut a = p.transpose() * &p;
        for j in 0..m {
            for i in 0..m {
                a[(i, j)] /= s as f64;
            }
            a[(j, j)] += lambda;
        }
        let llt = a.llt(Side::Lower).map_err(|_| KmeError::BadParameter {
            name: "lambda",
            value: lambda,
            reason: "the ridge system is singular",
        })?;
        // hat = P A^{-1} / s, via A^{-1} Pᵀ.
        let a_inv_pt = llt.solve(p.transpose().to_owned());
        let hat = Mat::from_fn(s, m, |t, j| a_inv_pt[(j, t)] / s as f64);
        let sk = Mat::from_fn(m, 1, |j, _| sketch.sketch[j]);
        let w = &hat * &sk;
        let weights = (0..s).map(|t| w[(t, 0)]).collect();
        Ok(Self { prior, hat, weights })
    }

    /// The implicit weights `ω_t` of the prior points: `E f ≈ Σ_t ω_t f(u_t)`.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The prior points.
    pub fn prior(&self) -> &PointSet {
        &self.prior
    }

    /// `E f(X)` estimated from the sketch.
    pub fn estimate(&self, f: impl Fn(&[f64]) -> f64) -> f64 {
        (0..self.prior.len()).map(|t| self.weights[t] * f(self.prior.point(t))).sum()
    }

    /// The s x m matrix `P (PᵀP/s + λI)^{-1} / s`.
    pub fn hat(&self) -> &Mat<f64> {
        &self.hat
    }
}

/// `s` points uniform on `[0, 1]^dim` from a fixed seed: the public prior ψ.
pub fn uniform_prior(dim: usize, s: usize, seed: u64) -> Result<PointSet> {
    let mut rng = StdRng::seed_from_u64(seed);
    let u = Uniform::new(0.0, 1.0).map_err(|e| KmeError::Write(e.to_string()))?;
    PointSet::new(dim, (0..s * dim).map(|_| u.sample(&mut rng)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_maps_respect_their_l1_bounds() {
        let maps = [
            FeatureMap::rff(3, 20, 0.3, 1).unwrap(),
            FeatureMap::race(3, 15, 8, 0.4, 2).unwrap(),
            FeatureMap::hist(3, 10).unwrap(),
        ];
        for map in &maps {
            for x in [[0.0, 0.5, 1.0], [0.9, 0.1, 0.3], [2.0, -1.0, 0.5]] {
                let f = map.features(&x);
                assert_eq!(f.len(), map.len());
                assert!(f.iter().map(|v| v.abs()).sum::<f64>() <= map.l1_bound() + 1e-12);
            }
        }
        assert!(FeatureMap::hist(0, 3).is_err() && FeatureMap::race(2, 1, 0, 1.0, 1).is_err());
    }

    #[test]
    fn m2m_recovers_means_with_little_noise() {
        let mut rng = StdRng::seed_from_u64(4);
        let u = Uniform::new(0.2, 0.6).unwrap();
        let data = PointSet::new(2, (0..20000).map(|_| u.sample(&mut rng)).collect()).unwrap();
        let map = FeatureMap::hist(2, 20).unwrap();
        let sketch = PrivateSketch::new(&map, &data, 100.0, &mut NoiseRng::seeded(2)).unwrap();
        let m2m = M2mEstimator::new(&map, &sketch, uniform_prior(2, 4000, 3).unwrap()).unwrap();
        let mean0 = m2m.estimate(|x| x[0]);
        assert!((mean0 - 0.4).abs() < 0.02, "{mean0}");
        let cdf = m2m.estimate(|x| f64::from(x[1] <= 0.4));
        assert!((cdf - 0.5).abs() < 0.05, "{cdf}");
        assert!((sketch.noisy_count - 10000.0).abs() < 50.0, "{}", sketch.noisy_count);
    }
}
