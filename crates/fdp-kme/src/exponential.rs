//! Balog, Tolstikhin & Schölkopf (2018), Section 3: the **exponential-mechanism instance** of the
//! KME release framework — release a synthetic dataset R with probability
//! `∝ exp(-ε ||μ_D - μ_R||_H / (2Δ))` over a public family of candidates. With the family "every
//! dataset of M points from a public pool" it is the SmallDB algorithm of Blum, Ligett & Roth
//! (2008) with the RKHS distance as its score.
//!
//! It is the paper's *illustrative* baseline: exact sampling needs the score of every candidate, and
//! the family has `C(P + M - 1, M)` members (P pool points). [`CandidateFamily`] refuses a family
//! larger than a cap (default `2^25`) instead of approximating — approximate sampling would void
//! the guarantee.

use faer::Mat;
use fdp_core::Charge;
use rayon::prelude::*;

use fdp_core::state::{fixed_scale, to_fixed_scaled};
use fdp_core::{Accuracy, Descriptor, Mechanism, Release, ReleaseMetadata, SensitivityNorm, Tuning, WeightedSample};
use fdp_mercer::{Kernel, Stationary, kernel_matrix};
use fdp_noise::exponential::ExponentialMechanism;
use fdp_noise::{Epsilon, NoiseRng, PrivacyGuarantee, Sensitivity};

use crate::error::{KmeError, Result};
use crate::points::{PointSet, check_public_n, fixed_row_sums};

/// The unit roundoff of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// **The candidate family**: every synthetic dataset of `M` points drawn with repetition from a
/// public pool `p_1..p_P` — equivalently every weighting of the pool with weights in multiples of
/// `1/M` — `C(P + M - 1, M)` candidates, enumerated in lexicographic order of their sorted pool
/// indices.
///
/// **Scores from P + 1 numbers.** For a candidate with pool multiplicities `c_j`,
/// `||μ_D - μ_R||²_H = A - (2/M) Σ_j c_j h_j + (1/M²) Σ_ij c_i c_j G_ij`, with the data statistics
/// `A = ||μ_D||²_H = (1/N²) Σ_nm k(x_n, x_m)` and `h_j = (1/N) Σ_n k(x_n, p_j)` (exact fixed-point
/// sums, the same on any thread count) and the public pool Gram matrix G. The enumeration walks the
/// family depth-first, updating the linear and quadratic terms incrementally (`O(P)` per internal
/// node, `O(1)` per candidate), in parallel over the first pool index.
#[derive(Debug, Clone)]
pub struct CandidateFamily {
    kernel: Stationary,
    /// The kernel as the release metadata records it, described once here (before any charge).
    kernel_description: Descriptor,
    pool: PointSet,
    size: usize,
    gram: Mat<f64>,
    count: usize,
}

impl CandidateFamily {
    /// The largest family enumerated by default: `2^25` candidates (256 MB of levels).
    pub const DEFAULT_MAX_CANDIDATES: usize = 1 << 25;

    /// The most points M of a candidate dataset: the enumeration is depth-first, one stack frame per
    /// point (a few hundred bytes each: well inside a 2 MiB thread stack at the cap).
    pub const MAX_SIZE: usize = 1024;
    const MAX_SIZE_REASON: &'static str = "at most 1024 points per candidate dataset: the enumeration \
                                           recurses once per point and must fit a thread's stack";
    const MAX_POOL_REASON: &'static str = "the pool's P x P Gram matrix and each enumeration task's \
                                           M x P partial sums must each hold at most 2^27 numbers (1 GiB)";

    /// Datasets of `size` points from `pool` (public: chosen without the data), at most
    /// [`DEFAULT_MAX_CANDIDATES`](Self::DEFAULT_MAX_CANDIDATES) of them, `size` at most
    /// [`MAX_SIZE`](Self::MAX_SIZE), and the pool's `P²` Gram entries and `size · P` partial sums
    /// each at most [`MAX_F64_VALUES`](fdp_core::caps::MAX_F64_VALUES).
    pub fn new(kernel: Stationary, pool: PointSet, size: usize) -> Result<Self> {
        Self::with_max_candidates(kernel, pool, size, Self::DEFAULT_MAX_CANDIDATES)
    }

    /// As [`new`](Self::new) with another cap on the number of candidates.
    pub fn with_max_candidates(kernel: Stationary, pool: PointSet, size: usize, max_candidates: usize) -> Result<Self> {
        if pool.is_empty() {
            return Err(KmeError::Shape { what: "pool points", expected: 1, got: 0 });
        }
        if size == 0 {
            return Err(KmeError::BadParameter {
                name: "size",
                value: 0usize.into(),
                reason: "a synthetic dataset needs >= 1 point",
            });
        }
        // The enumeration recurses once per point of a candidate (P = 2, M = 10^5 overflowed the
        // stack), and the pool's Gram matrix and each task's partial sums are P x P and M x P.
        fdp_core::caps::at_most("size", size, Self::MAX_SIZE, Self::MAX_SIZE_REASON)?;
        fdp_core::caps::f64_values("pool points", &[pool.len(), pool.len()], Self::MAX_POOL_REASON)?;
        fdp_core::caps::f64_values("size", &[size, pool.len()], Self::MAX_POOL_REASON)?;
        let count = exact_family_size(pool.len(), size).filter(|c| *c <= max_candidates as u128).ok_or(
            KmeError::BadParameter {
                name: "candidates",
                value: (family_size(pool.len(), size)).into(),
                reason: "the family is larger than max_candidates: exact sampling scores every candidate (use fewer pool points or a smaller size)",
            },
        )? as usize;
        let gram = kernel_matrix(&kernel, pool.data(), pool.data(), pool.dim());
        let kernel_description = fdp_functional::describe::kernel(&kernel)?;
        Ok(Self { kernel, kernel_description, pool, size, gram, count })
    }

    /// The number of candidates, `C(P + M - 1, M)`.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Never true: a family has at least one candidate.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// M, the size of every candidate dataset.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The public pool.
    pub fn pool(&self) -> &PointSet {
        &self.pool
    }

    /// The data statistics `[A, h_1, ..., h_P]` (not private). Records are points made total by
    /// [`PointSet`]; the built-in kernels are bounded by `sup k` and vanish at infinite distance, so
    /// every kernel value is finite.
    pub fn statistics(&self, data: &PointSet) -> Result<Vec<f64>> {
        if data.dim() != self.pool.dim() {
            return Err(KmeError::Shape { what: "dimension", expected: self.pool.dim(), got: data.dim() });
        }
        let e = fdp_core::state::fixed_point_exponent(self.kernel.variance());
        let (n, p) = (data.len().max(1) as f64, self.pool.len());
        let h = fixed_row_sums(data.len(), p, e, |i| {
            let x = data.point(i);
            (0..p).map(|j| self.kernel.eval(self.pool.point(j), x)).collect()
        });
        let mut out = vec![fdp_core::state::from_fixed(self_sum(&self.kernel, data, e), e) / (n * n)];
        out.extend(h.iter().map(|s| fdp_core::state::from_fixed(*s, e) / n));
        Ok(out)
    }

    /// `||μ_D - μ_R||_H` for every candidate, in enumeration order, from the statistics (not
    /// private: for experiments and the oracle "best candidate").
    pub fn distances(&self, statistics: &[f64]) -> Result<Vec<f64>> {
        self.map_squared_distances(statistics, |x| x.max(0.0).sqrt())
    }

    /// Candidate `index` (in enumeration order) as a weighted sample: the whole pool, in order,
    /// with weights `c_j / M` (0 for the pool points it does not use).
    pub fn candidate(&self, index: usize) -> Result<WeightedSample> {
        if index >= self.count {
            return Err(KmeError::Shape { what: "candidate index", expected: self.count, got: index });
        }
        let (p, m) = (self.pool.len(), self.size);
        let mut counts = vec![0usize; p];
        let (mut rest, mut start) = (index as u128, 0);
        for slot in 0..m {
            let remaining = m - slot - 1;
            // Skip the next indices j whose blocks (multisets of `remaining` indices from j..p) lie
            // before `rest`; the family size bounds `index`, so some j < p takes it.
            while start + 1 < p {
                let block = exact_family_size(p - start, remaining).unwrap_or(u128::MAX);
                if rest < block {
                    break;
                }
                rest -= block;
                start += 1;
            }
            counts[start] += 1;
        }
        Ok(WeightedSample {
            dim: self.pool.dim(),
            points: self.pool.data().to_vec(),
            weights: counts.iter().map(|c| *c as f64 / m as f64).collect(),
        })
    }

    /// The exponential mechanism over this family for N = `n` records at ε.
    pub fn mechanism(&self, n: usize, epsilon: Epsilon) -> Result<ExponentialSynthetic> {
        fdp_core::caps::records(n)?;
        // The score's floor is the sensitivity itself (see `ExponentialSynthetic`).
        let sensitivity = (2.0 * self.kernel.variance()).sqrt() / n as f64;
        let margin = self.float_margin(sensitivity);
        let selection = ExponentialMechanism::new(Sensitivity::new(sensitivity + 2.0 * margin)?, epsilon)?;
        Ok(ExponentialSynthetic { family: self.clone(), n, sensitivity, selection })
    }

    /// A bound on `|d̂ - d|` for every candidate, where d̂ is the computed score `max(d̂, floor)` and
    /// d the exact one (same floor), with `κ = sup k`, u the unit roundoff:
    /// kernel values are within `η = (D + 16) 2^-50 κ` of exact (a few ulps per coordinate — all
    /// built-in shapes are `exp` of a rounded argument times a polynomial), fixed-point truncation
    /// adds `2^-61 κ` a term, and forming A, the M-term and M²-term sums, and `A - 2B + C` adds
    /// `(M² + 2M + 32) u κ`; together `|d̂² - d²| <= x = 4(η + 2^-61 κ) + (M² + 2M + 32) u κ`. Above
    /// the floor f, `|d̂ - d| <= x / (2f)`; the square root and the clamp add `4u sqrt(κ)`.
    fn float_margin(&self, floor: f64) -> f64 {
        let (kappa, m) = (self.kernel.variance(), self.size as f64);
        let value = crate::points::kernel_value_error(kappa, self.pool.dim());
        let x = 4.0 * value + (m * m + 2.0 * m + 32.0) * UNIT_ROUNDOFF * kappa;
        x / (2.0 * floor) + 4.0 * UNIT_ROUNDOFF * kappa.sqrt()
    }

    fn check_statistics(&self, statistics: &[f64]) -> Result<()> {
        if statistics.len() != self.pool.len() + 1 {
            return Err(KmeError::Shape { what: "statistics", expected: self.pool.len() + 1, got: statistics.len() });
        }
        if let Some(bad) = statistics.iter().find(|v| !v.is_finite()) {
            return Err(KmeError::BadParameter {
                name: "statistics",
                value: (*bad).into(),
                reason: "must be finite (as computed by `statistics`)",
            });
        }
        Ok(())
    }

    /// `f(d̂²)` for every candidate in enumeration order, `d̂² = A - 2 L/M + Q/M²`.
    fn map_squared_distances<T: Send>(&self, statistics: &[f64], f: impl Fn(f64) -> T + Sync) -> Result<Vec<T>> {
        self.check_statistics(statistics)?;
        let (a, h) = (statistics[0], &statistics[1..]);
        let (p, m) = (self.pool.len(), self.size as f64);
        let score = |linear: f64, quadratic: f64| f(a - 2.0 * linear / m + quadratic / (m * m));
        let parts: Vec<Vec<T>> = (0..p)
            .into_par_iter()
            .map(|first| {
                let mut out = Vec::new();
                let mut cross = vec![vec![0.0; p]; self.size];
                cross[0].iter_mut().enumerate().for_each(|(j, c)| *c = self.gram[(first, j)]);
                let (linear, quadratic) = (h[first], self.gram[(first, first)]);
                self.descend(1, first, linear, quadratic, &mut cross, h, &score, &mut out);
                out
            })
            .collect();
        Ok(parts.into_iter().flatten().collect())
    }

    /// Depth-first over the remaining slots: `cross[depth - 1][j] = Σ_{chosen a} G_{a j}`.
    #[allow(clippy::too_many_arguments)]
    fn descend<T>(
        &self,
        depth: usize,
        start: usize,
        linear: f64,
        quadratic: f64,
        cross: &mut [Vec<f64>],
        h: &[f64],
        score: &impl Fn(f64, f64) -> T,
        out: &mut Vec<T>,
    ) {
        let p = self.pool.len();
        if depth == self.size {
            out.push(score(linear, quadratic));
            return;
        }
        for j in start..p {
            let (l, q) = (linear + h[j], quadratic + 2.0 * cross[depth - 1][j] + self.gram[(j, j)]);
            if depth + 1 == self.size {
                out.push(score(l, q));
                continue;
            }
            let (done, next) = cross.split_at_mut(depth);
            for k in j..p {
                next[0][k] = done[depth - 1][k] + self.gram[(j, k)];
            }
            self.descend(depth + 1, j, l, q, cross, h, score, out);
        }
    }
}

/// `Σ_n Σ_m trunc(k(x_n, x_m) 2^e)` over all ordered pairs, exactly: rows in parallel blocks,
/// the pairs `m > n` once and doubled (the kernel is symmetric in floating point too).
fn self_sum(kernel: &Stationary, data: &PointSet, e: i32) -> i128 {
    const BLOCK: usize = 64;
    let (n, scale) = (data.len(), fixed_scale(e));
    (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let mut total: i128 = 0;
            for i in b * BLOCK..((b + 1) * BLOCK).min(n) {
                let x = data.point(i);
                let row: i128 = (i + 1..n).map(|j| to_fixed_scaled(kernel.eval(x, data.point(j)), scale)).sum();
                total += 2 * row + to_fixed_scaled(kernel.eval(x, x), scale);
            }
            total
        })
        .sum()
}

/// `C(p + m - 1, m)`, the number of multisets of size m from p items, exactly (`None` past u128).
fn exact_family_size(p: usize, m: usize) -> Option<u128> {
    if p == 0 {
        return Some(u128::from(m == 0));
    }
    // C(p - 1 + i, i) = C(p - 2 + i, i - 1) (p - 1 + i) / i, an integer at every step.
    (1..=m as u128).try_fold(1u128, |c, i| c.checked_mul(p as u128 - 1 + i).map(|v| v / i))
}

/// `C(P + M - 1, M)` as a float (for feasibility tables: 1e30 and beyond are fine).
pub fn family_size(pool: usize, size: usize) -> f64 {
    (1..=size).map(|i| ((pool - 1 + i) as f64 / i as f64).ln()).sum::<f64>().exp()
}

/// **The exponential mechanism on synthetic datasets** (Balog et al. 2018, Section 3): release
/// candidate R of a public [`CandidateFamily`] with probability `∝ exp(-ε d(D, R) / (2Δ))`,
/// `d = ||μ_D - μ_R||_H`.
///
/// **Sensitivity.** Under replace-one with N public, `||μ_D - μ_D'||_H = ||k(x,·) - k(x',·)||_H / N
/// <= sqrt(2 sup k) / N` for a kernel with `k >= 0` (every built-in one), and by the triangle
/// inequality every candidate's distance moves by at most that: `Δ = sqrt(2 sup k) / N`. The score
/// is the computed distance clamped below at `f = Δ` (1-Lipschitz, and a candidate within Δ of
/// `μ_D` is as good as any other at this privacy level), whose floating-point error is at most a
/// margin m (see the family's `float_margin`: `2m ≈ 5e-4 Δ` at N = 10^5, D = 5, M = 10): the selection
/// is calibrated to `Δ + 2m`. **Proof sketch**: the computed score has sensitivity `<= Δ + 2m`;
/// [`ExponentialMechanism`] snaps it to a lattice and samples `∝ exp(-c l)` exactly with
/// `2 c K <= ε`; the released dataset is the chosen candidate (post-processing).
///
/// The summary is the statistics `[A, h_1..h_P]` of [`CandidateFamily::statistics`]; the release is
/// the chosen candidate as a [`WeightedSample`].
///
/// ```
/// use fdp_kme::{CandidateFamily, PointSet};
/// use fdp_mercer::Stationary;
/// use fdp_noise::Epsilon;
/// let kernel = Stationary::gaussian(1.0)?;
/// let pool = PointSet::new(1, vec![-1.0, 0.0, 1.0, 2.0])?;
/// let family = CandidateFamily::new(kernel, pool, 3)?; // C(6, 3) = 20 datasets of 3 points
/// let data = PointSet::new(1, (0..500).map(|i| (i % 7) as f64 / 3.0 - 1.0).collect())?;
/// let release = fdp_core::Session::pure(Epsilon::new(1.0)?)?.release(&family.mechanism(500, Epsilon::new(1.0)?)?, &data)?;
/// assert!((release.output().weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ExponentialSynthetic {
    family: CandidateFamily,
    n: usize,
    /// Δ, also the floor the scores are clamped at.
    sensitivity: f64,
    selection: ExponentialMechanism,
}

impl ExponentialSynthetic {
    /// The exact selection (lattice, rate, sensitivity with its margin).
    pub fn selection(&self) -> &ExponentialMechanism {
        &self.selection
    }

    /// The public family.
    pub fn family(&self) -> &CandidateFamily {
        &self.family
    }

    /// The candidates' lattice levels for the statistics of a dataset (what the selection sees; the
    /// exact-loss checks compare them between neighbours).
    pub fn levels(&self, statistics: &[f64]) -> Result<Vec<i64>> {
        let (floor, selection) = (self.sensitivity, &self.selection);
        // Every score is finite (the statistics are checked finite); the worst level is a safe
        // default all the same.
        self.family
            .map_squared_distances(statistics, |x| selection.level(x.max(0.0).sqrt().max(floor)).unwrap_or(i64::MAX))
    }
}

impl Mechanism<PointSet> for ExponentialSynthetic {
    type Output = WeightedSample;

    fn name(&self) -> &'static str {
        "kme_exponential"
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.selection.guarantee()
    }

    /// `[A, h_1..h_P]` (N must be the public n).
    fn summarize(&self, data: &PointSet) -> Result<Vec<f64>> {
        check_public_n(data, self.n)?;
        self.family.statistics(data)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<WeightedSample>> {
        let chosen = self.selection.sample(&self.levels(summary)?, rng)?;
        let output = self.family.candidate(chosen)?;
        let metadata = ReleaseMetadata {
            components: self.family.pool.len(),
            kernel: Some(self.family.kernel_description.clone()),
            calibration: Some(self.selection.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            tuning: Tuning::Fixed,
            ..ReleaseMetadata::new(
                "kme_exponential",
                self.guarantee(),
                self.sensitivity,
                SensitivityNorm::Score,
                self.n,
            )
        };
        Ok(Release::new(output, metadata))
    }

    /// The squared excess distance over the family's best candidate: with temperature T
    /// (`P ∝ e^{-d/T}`, `T ≈ 2Δ/ε`) and C candidates, `P(d_R >= d_best + T (ln C + t)) <= e^{-t}`
    /// (up to the lattice step), so `E (d_R - d_best)² <= T² ((ln C)² + 2 ln C + 2)`. The family's
    /// own approximation error `d_best` depends on the data and is not counted.
    fn accuracy(&self) -> Accuracy {
        let (t, ln_c) = (self.selection.temperature(), (self.family.count as f64).ln());
        Accuracy::expected(t * t * (ln_c * ln_c + 2.0 * ln_c + 2.0))
    }

    /// The selection's loss on the candidates' levels of the two summaries, over ε.
    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        let ratio = || -> Result<f64> {
            let (la, lb) = (self.levels(a)?, self.levels(b)?);
            Ok(fdp_noise::exact_loss::exponential_loss(&self.selection, &la, &lb)? / self.guarantee().epsilon())
        };
        Some(ratio().map(|r| vec![("release", r)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedding::rkhs_distance_sq;
    use crate::points::WeightedPoints;

    fn setup() -> (Stationary, PointSet, PointSet) {
        let kernel = Stationary::gaussian(0.8).unwrap();
        let pool = PointSet::new(2, vec![0.0, 0.0, 1.0, 0.5, -0.5, 1.0, 0.3, -0.8]).unwrap();
        let data = PointSet::new(2, (0..120).map(|i| ((i * 29) % 53) as f64 / 26.0 - 1.0).collect()).unwrap();
        (kernel, pool, data)
    }

    #[test]
    fn the_enumeration_visits_every_multiset_once_with_its_exact_distance() {
        let (kernel, pool, data) = setup();
        let family = CandidateFamily::new(kernel, pool.clone(), 3).unwrap();
        assert_eq!(family.len(), 20, "C(4 + 3 - 1, 3)");
        let stats = family.statistics(&data).unwrap();
        let distances = family.distances(&stats).unwrap();
        assert_eq!(distances.len(), 20);
        let empirical = WeightedPoints::uniform(data.clone());
        let mut seen = std::collections::HashSet::new();
        for (i, d) in distances.iter().enumerate() {
            let c = family.candidate(i).unwrap();
            assert!(seen.insert(c.weights.iter().map(|w| w.to_bits()).collect::<Vec<_>>()));
            let direct =
                rkhs_distance_sq(&kernel, &WeightedPoints::from_sample(&c).unwrap(), &empirical, None).unwrap();
            assert!((d * d - direct).abs() < 1e-13, "candidate {i}: {} vs {direct}", d * d);
        }
        // Lexicographic order: first {p0, p0, p0}, last {p3, p3, p3}.
        assert_eq!(family.candidate(0).unwrap().weights, vec![1.0, 0.0, 0.0, 0.0]);
        assert_eq!(family.candidate(1).unwrap().weights, vec![2.0 / 3.0, 1.0 / 3.0, 0.0, 0.0]);
        assert_eq!(family.candidate(19).unwrap().weights, vec![0.0, 0.0, 0.0, 1.0]);
        assert_eq!(family.candidate(19).unwrap().points, pool.data().to_vec());
        assert!(family.candidate(20).is_err());
        // The statistics are A = ||μ_D||² and h_j = mean kernel to p_j.
        let a = crate::embedding::kernel_sum(&kernel, &empirical, &empirical).unwrap();
        assert!((stats[0] - a).abs() < 1e-14);
    }

    /// Regression (issue 29): two pool points and M = 10^5 make a family of only 100001 candidates,
    /// but the depth-first enumeration recursed 10^5 deep and aborted on a stack overflow; a pool of
    /// 2^20 points and M = 1 asked for a 2^40-entry Gram matrix. Both are refused when built.
    #[test]
    fn the_recursion_depth_and_the_gram_matrix_are_capped() {
        let kernel = Stationary::gaussian(1.0).unwrap();
        let two = PointSet::new(1, vec![0.0, 1.0]).unwrap();
        assert!(CandidateFamily::new(kernel, two.clone(), 100_000).is_err());
        assert!(CandidateFamily::new(kernel, two.clone(), CandidateFamily::MAX_SIZE + 1).is_err());
        let family = CandidateFamily::new(kernel, two, CandidateFamily::MAX_SIZE).unwrap();
        let data = PointSet::new(1, vec![0.2, 0.7, 0.9]).unwrap();
        let release = family.mechanism(3, Epsilon::new(1.0).unwrap()).unwrap().release(
            &data,
            &mut NoiseRng::seeded(2),
            Charge::unaccounted(),
        );
        assert!(release.is_ok());
        let wide = PointSet::new(1, (0..20_000).map(|i| i as f64).collect()).unwrap();
        assert!(CandidateFamily::new(kernel, wide, 1).is_err(), "a 20000 x 20000 Gram matrix is 3.2 GB");
    }

    #[test]
    fn family_sizes_and_the_feasibility_cap() {
        assert_eq!(exact_family_size(20, 10), Some(20_030_010));
        assert_eq!(exact_family_size(1, 7), Some(1));
        assert_eq!(exact_family_size(500, 500), None);
        assert!((family_size(20, 10) / 20_030_010.0 - 1.0).abs() < 1e-12);
        let (kernel, pool, _) = setup();
        assert!(CandidateFamily::with_max_candidates(kernel, pool.clone(), 3, 19).is_err());
        assert!(CandidateFamily::new(kernel, pool.clone(), 0).is_err());
        assert!(CandidateFamily::new(kernel, PointSet::new(2, vec![]).unwrap(), 2).is_err());
        assert!(CandidateFamily::new(kernel, pool, 1000).is_err(), "C(1003, 3) = 1.7e8 is past the cap");
    }

    #[test]
    fn large_epsilon_picks_the_best_candidate_and_bad_inputs_are_refused() {
        let (kernel, pool, data) = setup();
        let family = CandidateFamily::new(kernel, pool, 4).unwrap();
        let distances = family.distances(&family.statistics(&data).unwrap()).unwrap();
        let best = (0..distances.len()).min_by(|a, b| distances[*a].total_cmp(&distances[*b])).unwrap();
        let mechanism = family.mechanism(data.len(), Epsilon::new(1e4).unwrap()).unwrap();
        let mut rng = NoiseRng::seeded(5);
        for _ in 0..5 {
            assert_eq!(
                mechanism.release(&data, &mut rng, Charge::unaccounted()).unwrap().output(),
                &family.candidate(best).unwrap()
            );
        }
        let release = mechanism.release(&data, &mut rng, Charge::unaccounted()).unwrap();
        assert_eq!(release.metadata().mechanism, "kme_exponential");
        assert!(mechanism.accuracy().expected_sq_error > 0.0);
        assert!(
            mechanism.release(&PointSet::new(2, vec![0.0; 4]).unwrap(), &mut rng, Charge::unaccounted()).is_err(),
            "n is public"
        );
        assert!(
            mechanism.release(&PointSet::new(1, vec![0.0; 120]).unwrap(), &mut rng, Charge::unaccounted()).is_err()
        );
        assert!(mechanism.privatize(&[0.0; 3], &mut rng, Charge::unaccounted()).is_err());
        assert!(mechanism.privatize(&[f64::NAN, 0.0, 0.0, 0.0, 0.0], &mut rng, Charge::unaccounted()).is_err());
        assert!(family.mechanism(0, Epsilon::new(1.0).unwrap()).is_err());
    }
}
