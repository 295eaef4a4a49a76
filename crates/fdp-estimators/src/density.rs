//! Private density estimates (Lin & Reimherr 2023, Section 4.4, Theorem 14) and their baselines:
//! the ICLP KDE with an operator power `K^η` of the kernel, Hall et al.'s Gaussian-process KDE,
//! IID Laplace on a truncated basis, and the Bernstein mechanism.
//!
//! Records are points of the domain, each mapped to its nearest grid point (a per-record map), so
//! every sensitivity below is a maximum over grid points and is computed exactly.

use fdp_core::Charge;
use rayon::prelude::*;

use fdp_mercer::{Grid, Kernel, MercerBasis, Stationary, StationaryShape};
use fdp_noise::{
    ComponentNoise, Delta, Epsilon, LatticeGaussian, LatticeLaplace, NoiseRng, PrivacyGuarantee, Sensitivity,
    vector::LaplaceVector,
};

use crate::error::{EstimatorError, Result, positive};
use fdp_core::state::{check_state_layout, fingerprint_of};
use fdp_core::{
    Accuracy, Descriptor, Mechanism, MergeableMechanism, Regularisation, Release, ReleaseMetadata, SensitivityNorm,
    SummaryState,
};
use fdp_functional::numerics::{
    bernstein_laplace_noise_sd, bernstein_squared_weights, bernstein_value, check_bernstein_domain,
};

use crate::mechanism::{CurveMechanism, basis_curve_mechanism, delegate_to_basis_output, leading_block};
use fdp_functional::{BasisOutput, BasisSampler, Curve, GaussianProcessSampler, IclpSampler, Representation};

/// The grid index of each of n points (flat, `grid.dim()` numbers each): the nearest grid point.
/// Points outside the domain go to the nearest boundary point; a point with a non-finite coordinate
/// goes to the public default point (the grid point nearest the centre of the domain) — never an
/// error, never dropped, so n is kept.
pub fn snap_to_grid(grid: &Grid, points: &[f64]) -> Result<Vec<usize>> {
    let dim = grid.dim();
    if !points.len().is_multiple_of(dim) {
        return Err(EstimatorError::Shape {
            what: "point coordinates (a multiple of the dimension)",
            expected: dim,
            got: points.len(),
        });
    }
    let centre: Vec<f64> = grid.domain().iter().map(|(a, b)| 0.5 * (a + b)).collect();
    let default = grid.nearest(&centre).unwrap_or(0);
    Ok(points.chunks(dim).map(|p| grid.nearest(p).unwrap_or(default)).collect())
}

/// n points of a grid's domain snapped to grid points, kept as counts per grid point (all a density
/// estimate needs, and small even for millions of records).
#[derive(Debug, Clone, PartialEq)]
pub struct GridPoints {
    grid: Grid,
    counts: Vec<usize>,
    n: usize,
}

impl GridPoints {
    /// Snaps points with [`snap_to_grid`].
    pub fn snap(grid: &Grid, points: &[f64]) -> Result<Self> {
        Self::from_indices(grid, snap_to_grid(grid, points)?)
    }

    /// Points given as grid indices (each `< K`).
    pub fn from_indices(grid: &Grid, index: Vec<usize>) -> Result<Self> {
        let mut counts = vec![0; grid.len()];
        for &i in &index {
            *counts.get_mut(i).ok_or(EstimatorError::Shape { what: "grid index", expected: grid.len(), got: i })? += 1;
        }
        Ok(Self { grid: grid.clone(), n: index.len(), counts })
    }

    /// Points given as counts per grid point (length K), e.g. binned data spread over grid cells.
    /// n is the sum of the counts; a total that overflows `usize` is an error (it wrapped before).
    pub fn from_counts(grid: &Grid, counts: Vec<usize>) -> Result<Self> {
        if counts.len() != grid.len() {
            return Err(EstimatorError::Shape { what: "counts", expected: grid.len(), got: counts.len() });
        }
        let n =
            counts.iter().try_fold(0usize, |total, c| total.checked_add(*c)).ok_or(EstimatorError::BadParameter {
                name: "counts",
                value: "more than usize::MAX in total".into(),
                reason: "their total (n) overflows usize",
            })?;
        Ok(Self { grid: grid.clone(), n, counts })
    }

    /// n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// How many points sit on each grid point.
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }
}

/// A stationary kernel normalised to integrate to one over `R^d` (d ∈ {1, 2}), as a KDE needs:
/// Gaussian `(2π)^{-d/2} h^{-d} exp(-r²/(2h²))`, exponential `exp(-r/h) / (2h)` in 1-D and
/// `exp(-r/h) / (2π h²)` in 2-D.
pub fn density_kernel(shape: StationaryShape, bandwidth: f64, dim: usize) -> Result<Stationary> {
    let h = positive("bandwidth", bandwidth)?;
    let d = dim as i32;
    let mass = match (shape, dim) {
        (StationaryShape::Gaussian, 1 | 2) => (2.0 * std::f64::consts::PI).powf(dim as f64 / 2.0) * h.powi(d),
        (StationaryShape::Exponential, 1) => 2.0 * h,
        (StationaryShape::Exponential, 2) => 2.0 * std::f64::consts::PI * h * h,
        _ => {
            return Err(EstimatorError::BadParameter {
                name: "density kernel",
                value: dim.into(),
                reason: "normalised kernels: Gaussian or exponential, in 1 or 2 dimensions",
            });
        }
    };
    Ok(Stationary::new(shape, h)?.with_variance(1.0 / mass)?)
}

/// The plug-in bandwidth `h = scale · n^{-1/(4+d)}` (the rate of Theorem 14; `scale` is public, e.g.
/// a fraction of the domain's width).
pub fn plug_in_bandwidth(n: usize, dim: usize, scale: f64) -> f64 {
    scale * (n.max(1) as f64).powf(-1.0 / (4.0 + dim as f64))
}

/// `max_{g, g'} ||a_g - a_g'||_p` over the rows `a_g = (w_k φ_k(g))_k` of a basis (p ∈ {1, 2}),
/// computed over all pairs when that is at most 2·10^8 operations, else bounded by `2 max_g ||a_g||_p`.
/// Returns the value, the maximising pair, whether it is exact, and `max_g ||a_g||_p`: the largest
/// summary of one point, which bounds the summary of any n points computed on absolute values (a
/// convex combination of rows), the magnitude its rounding is charged on.
fn max_pair_distance(basis: &MercerBasis, weights: &[f64], p: u8) -> (f64, (usize, usize), bool, f64) {
    let (k, j) = (basis.n_points(), weights.len());
    let phi = basis.eigenfunctions();
    let rows: Vec<Vec<f64>> = (0..k).map(|g| (0..j).map(|c| weights[c] * phi[(g, c)]).collect()).collect();
    let norm = |v: &mut dyn Iterator<Item = f64>| -> f64 {
        if p == 1 { v.map(f64::abs).sum() } else { v.map(|x| x * x).sum::<f64>().sqrt() }
    };
    let largest = rows.iter().map(|r| norm(&mut r.iter().copied())).fold(0.0, f64::max);
    if (k * k) as f64 * j as f64 <= 2e8 {
        let best = (0..k)
            .into_par_iter()
            .map(|g| {
                (g + 1..k)
                    .map(|h| (norm(&mut rows[g].iter().zip(&rows[h]).map(|(a, b)| a - b)), (g, h)))
                    .fold((0.0, (g, g)), |acc, x| if x.0 > acc.0 { x } else { acc })
            })
            .reduce(|| (0.0, (0, 0)), |a, b| if b.0 > a.0 { b } else { a });
        (best.0, best.1, true, largest)
    } else {
        let (g, v) = (0..k)
            .map(|g| (g, norm(&mut rows[g].iter().copied())))
            .fold((0, 0.0), |acc, x| if x.1 > acc.1 { x } else { acc });
        (2.0 * v, (g, g), false, largest)
    }
}

/// The sensitivity of a basis KDE: the exact value on the grid, and (for the ICLP KDE) the paper's
/// Cauchy-Schwarz bound `2 sqrt(sup K^η(x,x)) sqrt(tr K^{η-1}) / n`, reported beside it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KdeSensitivity {
    /// What the noise is calibrated to.
    pub calibrated: f64,
    /// True when `calibrated` is the exact maximum over pairs of grid points (else the triangle bound).
    pub exact: bool,
    /// The paper's closed-form bound, where it has one.
    pub paper_bound: Option<f64>,
    /// The pair of grid points where the maximum is attained (for audits).
    pub worst_pair: (usize, usize),
}

/// A KDE that releases basis coefficients `s_k (1/n) Σ_i φ_k(x_i)` with independent noise.
///
/// ```
/// use fdp_estimators::{BasisKde, CurveReleaseExt, GridPoints, Mechanism, density_kernel, normalise_density};
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, StationaryShape};
///
/// let grid = Grid::midpoint(0.0, 1.0, 100)?;
/// let kernel = density_kernel(StationaryShape::Gaussian, 0.05, 1)?;
/// let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
/// let ages: Vec<f64> = (0..500).map(|i| (i as f64 * 0.618) % 1.0).collect();
/// let points = GridPoints::snap(&grid, &ages)?;
/// let kde = BasisKde::iclp(&basis, points.n(), fdp_noise::Epsilon::new(1.0)?, 1.25)?;
/// assert!(kde.sensitivity().calibrated <= kde.sensitivity().paper_bound.unwrap());
/// let release = fdp_core::Session::pure(fdp_noise::Epsilon::new(1.0)?)?.release(&kde, &points)?;
/// let density = normalise_density(release.curve(), &grid); // post-processing is free
/// assert!(density.iter().all(|v| *v >= 0.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct BasisKde<N> {
    name: &'static str,
    n: usize,
    factors: Vec<f64>,
    output: BasisOutput<N>,
    sensitivity: KdeSensitivity,
}

fn kde_metadata(
    name: &str,
    guarantee: PrivacyGuarantee,
    sensitivity: f64,
    norm: SensitivityNorm,
    eta: Option<f64>,
    n: usize,
) -> ReleaseMetadata {
    // A KDE's kernel power η has no penalty: recorded as (η, ψ = 0).
    let regularisation = eta.and_then(|eta| Regularisation::new(eta, 0.0).ok());
    ReleaseMetadata { regularisation, ..ReleaseMetadata::new(name, guarantee, sensitivity, norm, n) }
}

/// The summary factors `λ_k^η` and the sensitivity weights `λ_k^η / sqrt(λ_k)` computed *from those
/// same factors*, so that calibration and summary agree even where `λ^η` is subnormal (computing
/// `λ^{η - 1/2}` separately can come out below the factor actually applied).
fn power_factors(basis: &MercerBasis, eta: f64) -> (Vec<f64>, Vec<f64>) {
    let l = basis.eigenvalues();
    let factors: Vec<f64> = l.iter().map(|l| l.powf(eta)).collect();
    let weights = factors.iter().zip(l).map(|(f, l)| f / l.sqrt()).collect();
    (factors, weights)
}

/// The sensitivity of a basis KDE with the rounding of its summary charged
/// ([`Sensitivity::with_rounding`]): from the exact counts, each coefficient takes K products, a
/// K-term sum, the division by n and the factor `λ_k^η` (K + 2 roundings, K grid points); on
/// absolute values the summary is a convex combination of single points' summaries, so its
/// magnitude is at most `largest`.
fn kde_rounding(sensitivity: f64, largest: f64, basis: &MercerBasis) -> Result<Sensitivity> {
    Ok(Sensitivity::new(sensitivity)?.with_rounding(largest, basis.n_points() as u32 + 2)?)
}

/// A KDE sensitivity of 0 means `λ_k^η` underflowed on every component (a large η, or a bandwidth
/// far from the grid's scale, whose kernel matrix is then the identity or all ones): say so in the
/// user's terms, naming both.
fn check_kde_sensitivity(sensitivity: f64, eta: f64) -> Result<f64> {
    if sensitivity > 0.0 && sensitivity.is_finite() {
        Ok(sensitivity)
    } else {
        Err(EstimatorError::BadParameter {
            name: "eta",
            value: eta.into(),
            reason: "with this bandwidth, lambda_k^eta is 0 (or its sensitivity not finite) on every component, so \
                     nothing would be released: choose a bandwidth on the scale of the domain's spacing to its \
                     width (the default 0.15 (hi - lo) n^(-1/5)), or a lower eta",
        })
    }
}

fn check_n(n: usize) -> Result<()> {
    fdp_core::caps::records(n).map(|_| ())
}

impl BasisKde<LatticeLaplace> {
    /// **ICLP KDE (Theorem 14).** With the basis of a (normalised) kernel K, the summary is
    /// `f = (1/n) Σ_i K^η(·, x_i)`, coefficients `f_k = λ_k^η (1/n) Σ_i φ_k(x_i)`. Moving one point
    /// from x to x' changes `||f||_{1,K}` by `Σ_k λ_k^{η-1/2} |φ_k(x) - φ_k(x')| / n`; its maximum over
    /// pairs of grid points is Δ, and the ICLP calibrated to it is pure ε-DP. It never exceeds the
    /// paper's bound `2 sqrt(sup_x K^η(x,x)) sqrt(tr K^{η-1}) / n` (Cauchy-Schwarz), reported beside.
    pub fn iclp(basis: &MercerBasis, n: usize, epsilon: Epsilon, eta: f64) -> Result<Self> {
        check_n(n)?;
        let eps = epsilon;
        positive("eta", eta)?;
        let (factors, weights) = power_factors(basis, eta);
        let (d, pair, exact, largest) = max_pair_distance(basis, &weights, 1);
        let sensitivity = check_kde_sensitivity(d / n as f64, eta)?;
        let sup_diag = basis.power_diagonal(eta).into_iter().fold(0.0, f64::max);
        let paper = 2.0 * sup_diag.sqrt() * basis.trace_power(eta - 1.0).sqrt() / n as f64;
        let sampler = IclpSampler::calibrated(basis, kde_rounding(sensitivity, largest, basis)?, eps)?;
        let meta =
            kde_metadata("iclp_kde", PrivacyGuarantee::pure(eps), sensitivity, SensitivityNorm::L1C, Some(eta), n);
        Ok(Self {
            name: "iclp_kde",
            n,
            factors,
            output: BasisOutput::new(sampler, None, meta)?,
            sensitivity: KdeSensitivity { calibrated: sensitivity, exact, paper_bound: Some(paper), worst_pair: pair },
        })
    }

    /// **IID Laplace on a truncated basis.** The first M coefficients of the empirical measure,
    /// `(1/n) Σ_i φ_k(x_i)`, with one Laplace scale for the l1 sensitivity
    /// `max_{g,g'} Σ_{k<M} |φ_k(g) - φ_k(g')| / n`.
    pub fn iid_laplace(basis: &MercerBasis, n: usize, epsilon: Epsilon, components: usize) -> Result<Self> {
        check_n(n)?;
        let eps = epsilon;
        let released = leading_block(basis, components)?;
        let (d, pair, exact, largest) = max_pair_distance(&released, &vec![1.0; components], 1);
        let sensitivity = d / n as f64;
        let sampler = IclpSampler::iid(&released, kde_rounding(sensitivity, largest, basis)?, eps)?;
        let meta =
            kde_metadata("iid_laplace_kde", PrivacyGuarantee::pure(eps), sensitivity, SensitivityNorm::L1, None, n);
        Ok(Self {
            name: "iid_laplace_kde",
            n,
            factors: vec![1.0; components],
            output: BasisOutput::new(sampler, None, meta)?,
            sensitivity: KdeSensitivity { calibrated: sensitivity, exact, paper_bound: None, worst_pair: pair },
        })
    }
}

impl BasisKde<LatticeGaussian> {
    /// **Gaussian-process KDE (Hall, Rinaldo & Wasserman 2013), (ε, δ)-DP.** The same summary as the
    /// ICLP KDE; one moved point changes its Cameron-Martin norm by
    /// `(Σ_k λ_k^{2η-1} (φ_k(x) - φ_k(x'))²)^{1/2} / n` (for η = 1, Hall's `||K(·,x) - K(·,x')||_H / n`),
    /// maximised exactly over grid pairs and calibrated by the analytic Gaussian mechanism.
    pub fn gaussian_process(basis: &MercerBasis, n: usize, epsilon: Epsilon, eta: f64, delta: Delta) -> Result<Self> {
        check_n(n)?;
        let eps = epsilon;
        positive("eta", eta)?;
        let (factors, weights) = power_factors(basis, eta);
        let (d, pair, exact, largest) = max_pair_distance(basis, &weights, 2);
        let sensitivity = check_kde_sensitivity(d / n as f64, eta)?;
        let sampler =
            GaussianProcessSampler::calibrated(basis, kde_rounding(sensitivity, largest, basis)?, eps, delta)?;
        let meta = kde_metadata(
            "gaussian_process_kde",
            PrivacyGuarantee::approximate(eps, delta),
            sensitivity,
            SensitivityNorm::CameronMartin,
            Some(eta),
            n,
        );
        Ok(Self {
            name: "gaussian_process_kde",
            n,
            factors,
            output: BasisOutput::new(sampler, None, meta)?,
            sensitivity: KdeSensitivity { calibrated: sensitivity, exact, paper_bound: None, worst_pair: pair },
        })
    }
}

impl<N: ComponentNoise> BasisKde<N> {
    /// The sensitivity (exact on the grid) and the paper's bound.
    pub fn sensitivity(&self) -> KdeSensitivity {
        self.sensitivity
    }

    /// The sampler of the released block.
    pub fn sampler(&self) -> &BasisSampler<N> {
        self.output.sampler()
    }
}

basis_curve_mechanism!(BasisKde<N>, GridPoints);

impl<N: ComponentNoise> Mechanism<GridPoints> for BasisKde<N> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn summarize(&self, points: &GridPoints) -> Result<Vec<f64>> {
        let basis = self.output.sampler().basis();
        if points.n() != self.n {
            return Err(EstimatorError::Shape { what: "number of points", expected: self.n, got: points.n() });
        }
        if points.grid() != basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        Ok(self.summary_from_counts(&points.counts().iter().map(|&c| c as f64).collect::<Vec<_>>()))
    }

    delegate_to_basis_output!();
}

/// Lattice values released by a Bernstein mechanism of `degree` per axis in `dim` dimensions,
/// `(degree + 1)^dim`, at most 65536 as for the Bernstein mean (each is a secure sample per release,
/// and the summary evaluates the kernel at each for every occupied grid point; beyond that the noise
/// swamps any density).
fn bernstein_lattice_size(degree: usize, dim: usize) -> Result<usize> {
    match degree.checked_add(1).and_then(|d| d.checked_pow(dim as u32)) {
        Some(count) if degree >= 1 && count <= crate::BernsteinMean::MAX_LATTICE + 1 => Ok(count),
        _ => Err(EstimatorError::BadParameter {
            name: "degree",
            value: degree.into(),
            reason: "must be at least 1, with (degree + 1)^dim at most 65536 lattice values",
        }),
    }
}

/// **Bernstein KDE (Aldà & Rubinstein 2017).** The ordinary KDE `(1/n) Σ_i K(t, x_i)` on the
/// `(k + 1)^d` lattice of the domain; a moved point changes each value by at most `sup K / n` (K >= 0),
/// so Laplace noise of scale `(k + 1)^d sup K / (n ε)` per value is ε-DP (plus the lattice charge),
/// and the release is the tensor Bernstein polynomial through the noisy values.
#[derive(Debug, Clone)]
pub struct BernsteinKde {
    kernel: Stationary,
    /// The kernel as the release metadata records it, described once here (before any charge).
    kernel_description: Descriptor,
    grid: Grid,
    degree: usize,
    n: usize,
    epsilon: Epsilon,
    noise: LaplaceVector,
    sensitivity: f64,
}

impl BernsteinKde {
    /// Degree `k >= 1` per axis on the grid's box, with `(k + 1)^d · K <= 2^27`.
    pub fn new(kernel: Stationary, grid: &Grid, n: usize, epsilon: Epsilon, degree: usize) -> Result<Self> {
        check_n(n)?;
        let eps = epsilon;
        let count = bernstein_lattice_size(degree, grid.dim())?;
        // The summary evaluates the kernel at every lattice point for every occupied grid point, and
        // the release every lattice value's weight at every grid point.
        fdp_core::caps::f64_values("degree", &[count, grid.len()], crate::mean::BERNSTEIN_REASON)?;
        check_bernstein_domain(grid)?;
        let values = count as f64;
        let per_value = kernel.at_distance(0.0) / n as f64;
        // Rounding: each lattice value is a sum over at most K occupied grid points of count × kernel
        // value, divided by n (K + 1 roundings), of size at most sup K.
        let charged = Sensitivity::new(values * per_value)?
            .with_rounding(values * kernel.at_distance(0.0), grid.len() as u32 + 1)?;
        let noise = LaplaceVector::new(count, charged, eps)?;
        let kernel_description = fdp_functional::describe::kernel(&kernel)?;
        Ok(Self {
            kernel,
            kernel_description,
            grid: grid.clone(),
            degree,
            n,
            epsilon: eps,
            noise,
            sensitivity: values * per_value,
        })
    }

    /// The Laplace noise on the `(k + 1)^d` lattice values.
    pub fn noise(&self) -> &LaplaceVector {
        &self.noise
    }

    fn lattice(&self) -> Vec<Vec<f64>> {
        let axes: Vec<Vec<f64>> = self
            .grid
            .domain()
            .iter()
            .map(|(a, b)| (0..=self.degree).map(|j| a + (b - a) * j as f64 / self.degree as f64).collect())
            .collect();
        let mut points: Vec<Vec<f64>> = vec![vec![]];
        for axis in &axes {
            points = points.iter().flat_map(|p| axis.iter().map(move |t| [p.as_slice(), &[*t]].concat())).collect();
        }
        points
    }
}

impl Mechanism<GridPoints> for BernsteinKde {
    type Output = Curve;

    fn name(&self) -> &'static str {
        "bernstein_kde"
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::pure(self.epsilon)
    }

    fn summarize(&self, points: &GridPoints) -> Result<Vec<f64>> {
        if points.n() != self.n {
            return Err(EstimatorError::Shape { what: "number of points", expected: self.n, got: points.n() });
        }
        if points.grid() != &self.grid {
            return Err(EstimatorError::GridMismatch);
        }
        Ok(self.summary_from_counts(&points.counts().iter().map(|&c| c as f64).collect::<Vec<_>>()))
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Curve>> {
        let expected = (self.degree + 1).pow(self.grid.dim() as u32);
        if summary.len() != expected {
            return Err(EstimatorError::Shape { what: "summary length", expected, got: summary.len() });
        }
        let values = self.noise.release(summary, rng)?;
        let mut metadata =
            kde_metadata("bernstein_kde", self.guarantee(), self.sensitivity, SensitivityNorm::L1Lattice, None, self.n);
        metadata.components = expected;
        metadata.rng = rng.provenance();
        metadata.sampler_timing = fdp_noise::timing::current();
        metadata.calibration = Some(self.noise.calibration());
        metadata.kernel = Some(self.kernel_description.clone());
        let domain = self.grid.domain().to_vec();
        // Each lattice value carries Laplace noise of scale b: sd √2 b (public).
        let sd = bernstein_laplace_noise_sd(&self.grid, self.degree, &domain, self.noise.scale());
        let representation = Representation::Bernstein { values, degree: self.degree, domain };
        let mut curve = Curve::new(self.grid.clone(), None, representation)?;
        if let Some(sd) = sd {
            curve = curve.with_noise_sd(sd)?;
        }
        Ok(Release::new(curve, metadata))
    }

    /// The Bernstein basis is not orthogonal: only the mean of the squared error is known.
    fn accuracy(&self) -> Accuracy {
        // E||Σ_j e_j B_j||² = 2 b² Σ_i w_i Σ_j B_j(t_i)² for independent Laplace e_j of scale b (the
        // tensor sum factorised by axis, [`bernstein_squared_weights`]).
        let squares = bernstein_squared_weights(&self.grid, self.degree, self.grid.domain());
        let total: f64 = self.grid.weights().iter().zip(&squares).map(|(w, sq)| w * sq).sum();
        Accuracy::expected(2.0 * self.noise.scale().powi(2) * total)
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<fdp_core::Result<Vec<(&'static str, f64)>>> {
        let epsilon = self.guarantee().epsilon();
        Some(self.noise.loss(a, b).map(|loss| vec![("release", loss / epsilon)]).map_err(Into::into))
    }
}

impl CurveMechanism<GridPoints> for BernsteinKde {
    fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>> {
        let domain = self.grid.domain();
        Ok((0..self.grid.len()).map(|i| bernstein_value(summary, self.degree, domain, self.grid.point(i))).collect())
    }
}

/// Post-processing (free under DP): clamps negative values to 0 and rescales to integrate to one on
/// the grid; a release with no positive mass becomes the uniform density.
pub fn normalise_density(values: &[f64], grid: &Grid) -> Vec<f64> {
    let clamped: Vec<f64> = values.iter().map(|v| v.max(0.0)).collect();
    let mass: f64 = clamped.iter().zip(grid.weights()).map(|(v, w)| v * w).sum();
    if mass > 0.0 {
        clamped.iter().map(|v| v / mass).collect()
    } else {
        let volume: f64 = grid.weights().iter().sum();
        vec![1.0 / volume; values.len()]
    }
}

/// Density states: the counts of points per grid point (integers, so exact already).
trait CountsState: Mechanism<GridPoints> {
    fn counts_grid(&self) -> &Grid;
    /// The summary from the counts per grid point (with the public n), linear in the counts: it is
    /// computed from a merged state's counts as they are — negative ones included — so a crafted
    /// partial state only shifts it by a fixed vector and no error can depend on whether a victim's
    /// point cancels a crafted count.
    fn summary_from_counts(&self, counts: &[f64]) -> Vec<f64>;
    /// Public parameters beside the name and the grid that tell two mechanisms apart.
    fn fingerprint_extra(&self) -> Vec<u64>;

    fn counts_fingerprint(&self) -> u64 {
        let grid = self.counts_grid();
        let mut words: Vec<u64> = self.name().bytes().map(u64::from).collect();
        words.extend(grid.points().iter().chain(grid.weights()).map(|v| v.to_bits()));
        words.extend(self.fingerprint_extra());
        fingerprint_of(words)
    }
}

impl<N: ComponentNoise> CountsState for BasisKde<N> {
    fn counts_grid(&self) -> &Grid {
        self.output.sampler().basis().grid()
    }

    fn summary_from_counts(&self, counts: &[f64]) -> Vec<f64> {
        let phi = self.output.sampler().basis().eigenfunctions();
        let n = self.n as f64;
        self.factors
            .iter()
            .enumerate()
            .map(|(k, f)| f * counts.iter().enumerate().map(|(g, &c)| c * phi[(g, k)]).sum::<f64>() / n)
            .collect()
    }

    fn fingerprint_extra(&self) -> Vec<u64> {
        let eigenvalues = self.output.sampler().basis().eigenvalues();
        self.factors.iter().chain(eigenvalues).map(|v| v.to_bits()).collect()
    }
}

impl CountsState for BernsteinKde {
    fn counts_grid(&self) -> &Grid {
        &self.grid
    }

    fn summary_from_counts(&self, counts: &[f64]) -> Vec<f64> {
        let occupied: Vec<(usize, f64)> =
            counts.iter().enumerate().filter(|(_, c)| **c != 0.0).map(|(g, c)| (g, *c)).collect();
        self.lattice()
            .par_iter()
            .map(|t| {
                occupied.iter().map(|(g, c)| c * self.kernel.eval(t, self.grid.point(*g))).sum::<f64>() / self.n as f64
            })
            .collect()
    }

    fn fingerprint_extra(&self) -> Vec<u64> {
        let kernel = [self.kernel.rho(), self.kernel.variance()].map(f64::to_bits);
        kernel.into_iter().chain([self.degree as u64]).collect()
    }
}

/// Implements [`MergeableMechanism`] on points for a density mechanism whose summary reads counts.
macro_rules! mergeable_by_counts {
    ($t:ty $(, $g:ident)?) => {
        impl$(<$g: ComponentNoise>)? MergeableMechanism<GridPoints> for $t {
            fn empty_state(&self) -> SummaryState {
                SummaryState::new(self.counts_fingerprint(), self.counts_grid().len())
            }

            fn update_state(&self, state: &mut SummaryState, points: &GridPoints) -> Result<()> {
                if points.grid() != self.counts_grid() {
                    return Err(EstimatorError::GridMismatch);
                }
                let counts: Vec<i128> = points.counts().iter().map(|&c| c as i128).collect();
                state.add(points.n() as u64, &counts)
            }

            fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
                check_state_layout(state, &self.empty_state(), self.n())?;
                // The same f64 counts `summarize` uses (`c as f64` of a usize or of an i128 is the
                // same number), so the summary is bit-identical to the one-pass one.
                let counts: Vec<f64> = state.sums().iter().map(|&c| c as f64).collect();
                Ok(self.summary_from_counts(&counts))
            }
        }
    };
}

mergeable_by_counts!(BasisKde<N>, N);
mergeable_by_counts!(BernsteinKde);
