//! **Private means of irregular and sparse curves** ([`SparseCurves`]: each record observed at its
//! own times), released by any of the mean mechanisms — the privately tuned default included.
//!
//! ## The per-record functional
//!
//! On a public grid `t_1..t_G` with quadrature weights `w_g` and a public **design** `p_g > 0`,
//! `Σ_g p_g = 1` (the probability that an observation falls at grid point g; uniform by default,
//! `p_g = w_g / Σ_h w_h`), record i's observations `(t_ij, y_ij)`, `j = 1..m_i`, are snapped to their
//! nearest grid points `g_ij`, clamped to the public range `[lo, hi]` and centred at the public
//! centre `c`: `e_ij = clamp(y_ij, lo, hi) − c(g_ij)`. The record becomes the **pseudo-curve**
//!
//! ```text
//! z_i(t_g) = c(t_g) + (1/m_i) Σ_{j : g_ij = g} e_ij / p_g ,
//! ```
//!
//! (`z_i = c`, the public default, when `m_i = 0`), whose basis coefficients about the centre are
//! the inverse-probability-weighted projection of the record's own observations,
//!
//! ```text
//! x_ik = Σ_g w_g φ_k(t_g) (z_i − c)(t_g) = (1/m_i) Σ_j e_ij φ_k(t_{g_ij}) w_{g_ij} / p_{g_ij} .
//! ```
//!
//! If the observation times are drawn from the design (independently of the curve),
//! `E[x_ik | curve] = Σ_g w_g φ_k(t_g) (x − c)(t_g)`, the coefficient of the dense curve: the mean
//! of the `x_i` estimates the mean curve's coefficients **without bias for any m_i >= 1** (a
//! Horvitz–Thompson estimator), with a variance that falls like `1/(n m̄)`. It is a bounded linear
//! functional of the record's own observations, so the pseudo-curves are records like any other for
//! the dense mean mechanisms, which clip them in their norm and add their noise.
//!
//! Why this smoother: a per-record kernel-ridge fit would shrink each sparse record towards the
//! centre (biased for small m_i, and its norm would need its own bound), and a pooled
//! least-squares fit needs the Gram matrix of all records' observation times, a second private
//! release of J(J+1)/2 numbers whose noise (l1 sensitivity `≈ (Σ_k max|φ_k|)² / n`) swamps the
//! Gram matrix itself at the n of functional datasets. The inverse-probability weights need only
//! the public design, and the mechanism's own smoothing (ψ chosen from the release for the default) does
//! the rest.
//!
//! ## Sensitivity and privacy
//!
//! Neighbouring datasets differ in one record — all of one subject's observations, any number of
//! them, any times and values (user-level DP), n public. The pseudo-curve of a record depends on
//! that record and public quantities only, so neighbouring sparse datasets give neighbouring
//! pseudo-curve sets, and the inner mechanism's guarantee (it clips every record in its norm) holds
//! as it is: **the release is exactly as private as the inner mechanism**. The range clamp of the
//! release is post-processing.
//!
//! Every pseudo-curve's coefficients lie in a **proved ceiling** (used as the tuned default's
//! ceiling, [`SparseFrame::ceiling`]): `‖x_i‖_N <= max_g R_g (w_g / p_g) ‖φ(t_g)‖_N` with
//! `R_g = max(hi − c_g, c_g − lo)` (the triangle inequality over the average of the
//! observations' terms), for the coefficient-l1 norm (`‖φ(t)‖ = Σ_k |φ_k(t)|`) and the L2 norm
//! (`(Σ_k φ_k(t)²)^{1/2}`). The sup norm (Bernstein) has no ceiling for pseudo-curves and is refused.

use fdp_core::Charge;
use fdp_core::params::SensitivityNorm;
use fdp_core::state::{fingerprint_of, fixed_point_exponent, from_fixed, to_fixed};
use fdp_core::{
    ClipNorm, ClippingBound, Descriptor, Mechanism, MergeableMechanism, Release, ReleaseMetadata, StageRecord,
    SummaryState,
};
use fdp_data::{CurveSet, SparseCurves};
use fdp_functional::numerics::interpolate;
use fdp_functional::{Curve, Representation};
use fdp_mercer::{Grid, MercerBasis};
use fdp_noise::exact_loss::laplace_loss;
use fdp_noise::vector::LaplaceVector;
use fdp_noise::{Epsilon, NoiseRng, PrivacyGuarantee, Sensitivity};

use fdp_core::stages::part;
use fdp_core::{Adaptive, Family, Sequential, StageLaw, StageMechanism, StagePlan};

use crate::error::{EstimatorError, Result};
use crate::frame::{RANGE_SEARCH_FLOOR_RATIO, range_radius};
use crate::mean::{MeanMechanism, MeanSetup};
use crate::sums::{CLIP_SLACK, MEAN_ROUNDINGS};
use crate::tuned::{BoundSearch, BoundThenRelease, TunedMean};

/// The public frame of sparse curves on a grid: the range of the values, the centre, and the design
/// of the observation times (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct SparseFrame {
    grid: Grid,
    range: (f64, f64),
    centre: Vec<f64>,
    /// `1 / p_g`.
    inverse_design: Vec<f64>,
    /// Whether the design was stated ([`with_design`](Self::with_design)) rather than assumed
    /// uniform.
    design_stated: bool,
}

impl SparseFrame {
    /// Sparse curves on the 1-D `grid`, values in the public `range = (lo, hi)`, centred at its
    /// middle, with the uniform design `p_g = w_g / Σ_h w_h` (times drawn uniformly on the domain and
    /// snapped to the nearest grid point: the weights are the points' cells for midpoint and
    /// trapezoid grids).
    pub fn new(grid: &Grid, (lo, hi): (f64, f64)) -> Result<Self> {
        if grid.dim() != 1 {
            return Err(EstimatorError::BadParameter {
                name: "grid dimension",
                value: grid.dim().into(),
                reason: "sparse curves are 1-D",
            });
        }
        range_radius(lo, hi, None)?;
        let total: f64 = grid.weights().iter().sum();
        let frame = Self {
            grid: grid.clone(),
            range: (lo, hi),
            centre: vec![lo + (hi - lo) / 2.0; grid.len()],
            inverse_design: grid.weights().iter().map(|w| total / w).collect(),
            design_stated: false,
        };
        frame.checked()
    }

    /// Another public centre curve (on the grid, inside the range), e.g. a curve from an earlier
    /// study or a public standard.
    pub fn centred_at(mut self, centre: Vec<f64>) -> Result<Self> {
        if centre.len() != self.grid.len() {
            return Err(EstimatorError::Shape {
                what: "centre curve length",
                expected: self.grid.len(),
                got: centre.len(),
            });
        }
        for &c in &centre {
            range_radius(self.range.0, self.range.1, Some(c))?;
        }
        self.centre = centre;
        self.checked()
    }

    /// Another public design: `probabilities[g]` is the chance that an observation time snaps to
    /// grid point g (finite, > 0, summing to 1 within 1e-9), e.g. uniform over the grid's indices
    /// when the times are drawn among the grid points.
    pub fn with_design(mut self, probabilities: &[f64]) -> Result<Self> {
        if probabilities.len() != self.grid.len() {
            return Err(EstimatorError::Shape {
                what: "design length",
                expected: self.grid.len(),
                got: probabilities.len(),
            });
        }
        let total: f64 = probabilities.iter().sum();
        if probabilities.iter().any(|p| !(p.is_finite() && *p > 0.0)) || (total - 1.0).abs() > 1e-9 {
            return Err(EstimatorError::BadParameter {
                name: "design probabilities (sum)",
                value: total.into(),
                reason: "need finite probabilities > 0 summing to 1",
            });
        }
        self.inverse_design = probabilities.iter().map(|p| 1.0 / p).collect();
        self.design_stated = true;
        self.checked()
    }

    /// Every pseudo-curve value finite: `max_g |c_g| + R_g / p_g` must be.
    fn checked(self) -> Result<Self> {
        let (lo, hi) = self.range;
        let worst = self
            .centre
            .iter()
            .zip(&self.inverse_design)
            .map(|(c, q)| c.abs() + (hi - c).max(c - lo) * q)
            .fold(0.0f64, f64::max);
        if !worst.is_finite() {
            return Err(EstimatorError::BadParameter {
                name: "largest pseudo-curve value",
                value: worst.into(),
                reason: "the range over the smallest design probability must be finite",
            });
        }
        Ok(self)
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The public range.
    pub fn range(&self) -> (f64, f64) {
        self.range
    }

    /// Whether the design was stated ([`with_design`](Self::with_design)); without it
    /// [`SparseMean`] assumes the uniform design and [`SparseBinnedMean`] estimates the design
    /// privately.
    pub fn design_stated(&self) -> bool {
        self.design_stated
    }

    /// The public centre curve.
    pub fn centre(&self) -> &[f64] {
        &self.centre
    }

    /// The data's public domain must lie inside the grid's (a time beyond the grid would be
    /// snapped to its end): a shape error otherwise.
    pub(crate) fn check_domain(&self, data: &SparseCurves) -> Result<()> {
        let (a, b) = data.domain();
        let (ga, gb) = self.grid.domain()[0];
        if a < ga || b > gb {
            return Err(EstimatorError::BadParameter {
                name: "sparse curves' domain",
                value: (a, b).into(),
                reason: "the curves' public domain must lie inside the grid's domain (map the times with the grid)",
            });
        }
        Ok(())
    }

    /// **The pseudo-curves** of the records ([module docs](self)): one per record, n unchanged. An
    /// error only if the data's public domain is not inside the grid's.
    pub fn pseudo_curves(&self, data: &SparseCurves) -> Result<CurveSet<'static>> {
        self.check_domain(data)?;
        let (lo, hi) = self.range;
        let k = self.grid.len();
        let mut values = Vec::with_capacity(data.n() * k);
        let mut deviation = vec![0.0; k];
        for i in 0..data.n() {
            deviation.iter_mut().for_each(|d| *d = 0.0);
            let (times, ys) = data.record(i);
            let m = times.len() as f64;
            for (t, y) in times.iter().zip(ys) {
                // Times are finite (SparseCurves drops the rest), so `nearest` always answers.
                if let Some(g) = self.grid.nearest(&[*t]) {
                    deviation[g] += (y.clamp(lo, hi) - self.centre[g]) * self.inverse_design[g];
                }
            }
            values.extend(self.centre.iter().zip(&deviation).map(|(c, d)| if m > 0.0 { c + d / m } else { *c }));
        }
        let (curves, _) = CurveSet::from_flat(self.grid.clone(), values, Some(&self.centre))?;
        Ok(curves)
    }

    /// **The proved ceiling** of every pseudo-curve's coefficients (all of `basis`' kept
    /// components) in `norm`: `max_g R_g (w_g / p_g) ‖φ(t_g)‖_N` (module docs). Public: computed
    /// from the frame and the basis only. The sup norm is refused.
    pub fn ceiling(&self, norm: ClipNorm, basis: &MercerBasis) -> Result<ClippingBound> {
        if basis.grid() != &self.grid {
            return Err(EstimatorError::GridMismatch);
        }
        let phi = basis.eigenfunctions();
        let (lo, hi) = self.range;
        let mut worst = 0.0f64;
        for g in 0..self.grid.len() {
            let row = (0..phi.ncols()).map(|k| phi[(g, k)]);
            let size = match norm {
                ClipNorm::CoefficientL1 => row.map(f64::abs).sum::<f64>(),
                ClipNorm::L2 => row.map(|v| v * v).sum::<f64>().sqrt(),
                _ => {
                    return Err(EstimatorError::BadSpec {
                        what: "the clipping norm",
                        spec: format!("{norm:?}"),
                        reason: "sparse curves need a coefficient norm (coefficient_l1 or l2)",
                    });
                }
            };
            let c = self.centre[g];
            worst = worst.max((hi - c).max(c - lo) * self.grid.weights()[g] * self.inverse_design[g] * size);
        }
        ClippingBound::new(worst, norm)
    }
}

/// **A mean mechanism on sparse curves**: the records' pseudo-curves ([`SparseFrame`]) released by
/// the dense mean mechanism `M`, then clamped to the public range (post-processing). Exactly as
/// private as `M` (module docs); n = the number of records (subjects), public.
///
/// ```
/// use fdp_core::Session;
/// use fdp_data::{SparseCurves, example_curves};
/// use fdp_estimators::CurveReleaseExt;
/// use fdp_estimators::sparse::{SparseFrame, SparseMean};
/// use fdp_mercer::{BasisOptions, MercerBasis, Stationary};
/// use fdp_noise::Epsilon;
/// use rand::SeedableRng;
/// let dense = example_curves(400, 7)?;
/// let sparse = SparseCurves::subsample(&dense, 5, &mut rand::rngs::StdRng::seed_from_u64(1))?;
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, dense.grid().clone(), BasisOptions::default())?;
/// let frame = SparseFrame::new(basis.grid(), (-4.0, 4.0))?; // the values' public range
/// let mean = SparseMean::tuned(&basis, sparse.n(), Epsilon::new(1.0)?, frame)?;
/// let mut session = Session::pure(Epsilon::new(1.0)?)?;
/// let release = session.release(&mean, &sparse)?;
/// assert!(release.curve().iter().all(|v| (-4.0..=4.0).contains(v)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SparseMean<M> {
    frame: SparseFrame,
    inner: M,
}

impl SparseMean<TunedMean> {
    /// **The default**: the privately tuned ICLP-RKHS mean ([`TunedMean::iclp_rkhs`]) of the
    /// pseudo-curves, centred at the frame's centre, with the frame's proved coefficient-l1 ceiling
    /// searched down to `ceiling / 1000` ([`RANGE_SEARCH_FLOOR_RATIO`]).
    pub fn tuned(basis: &MercerBasis, n: usize, epsilon: Epsilon, frame: SparseFrame) -> Result<Self> {
        let ceiling = frame.ceiling(ClipNorm::CoefficientL1, basis)?;
        let inner = TunedMean::iclp_rkhs(basis, n, epsilon, ceiling)?
            .centred_at(frame.centre().to_vec())?
            .with_bound_search(BoundSearch::down_to(RANGE_SEARCH_FLOOR_RATIO)?)?;
        Ok(Self { frame, inner })
    }
}

impl<M> SparseMean<M> {
    /// The pseudo-curves of `frame` released by `inner`, a dense mean mechanism on the frame's grid,
    /// centred at the frame's centre (its clipping bound is the caller's: [`SparseFrame::ceiling`]
    /// is one that holds for every record).
    pub fn new(frame: SparseFrame, inner: M) -> Self {
        Self { frame, inner }
    }

    /// The frame.
    pub fn frame(&self) -> &SparseFrame {
        &self.frame
    }

    /// The dense mechanism that releases the pseudo-curves.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: for<'a> Mechanism<CurveSet<'a>, Output = Curve>> Mechanism<SparseCurves> for SparseMean<M> {
    type Output = Curve;

    fn name(&self) -> &'static str {
        "sparse_mean"
    }

    fn n(&self) -> Option<usize> {
        self.inner.n()
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.inner.guarantee()
    }

    fn summarize(&self, data: &SparseCurves) -> fdp_core::Result<Vec<f64>> {
        self.inner.summarize(&self.frame.pseudo_curves(data)?)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> fdp_core::Result<Release<Curve>> {
        let (curve, mut metadata) = self.inner.privatize(summary, rng, charge)?.into_parts();
        let (lo, hi) = self.frame.range;
        let (curve, moved) = curve.clamped(lo, hi)?;
        metadata.mechanism = format!("sparse_mean:{}", metadata.mechanism);
        metadata.stages.push(StageRecord {
            stage: "sparse_range".into(),
            epsilon: 0.0,
            delta: 0.0,
            outcome: format!(
                "pseudo-curves of sparse records (inverse-probability weights); {moved} grid points clamped to [{lo}, {hi}]"
            ),
        });
        Ok(Release::new(curve, metadata))
    }

    fn accuracy(&self) -> fdp_core::Accuracy {
        self.inner.accuracy()
    }

    fn stages(&self) -> Vec<fdp_core::Stage> {
        self.inner.stages()
    }

    fn privacy_unit(&self) -> fdp_core::PrivacyUnit {
        self.inner.privacy_unit()
    }
}

impl<M: MeanMechanism> crate::mechanism::CurveMechanism<SparseCurves> for SparseMean<M> {
    fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>> {
        self.inner.estimate_curve(summary)
    }
}

impl<M: for<'a> MergeableMechanism<CurveSet<'a>> + for<'a> Mechanism<CurveSet<'a>, Output = Curve>>
    MergeableMechanism<SparseCurves> for SparseMean<M>
{
    /// The inner mechanism's state under a fingerprint that also covers the frame (range, centre,
    /// design): a dense state, or one built with another frame, is refused.
    fn empty_state(&self) -> SummaryState {
        let inner = self.inner.empty_state();
        SummaryState::new(self.fingerprint(inner.fingerprint()), inner.sums().len())
    }

    fn update_state(&self, state: &mut SummaryState, part: &SparseCurves) -> fdp_core::Result<()> {
        let mut inner = self.inner.empty_state();
        self.inner.update_state(&mut inner, &self.frame.pseudo_curves(part)?)?;
        let mut mine = self.empty_state();
        mine.add(inner.records(), inner.sums())?;
        state.merge(&mine)
    }

    fn state_summary(&self, state: &SummaryState) -> fdp_core::Result<Vec<f64>> {
        fdp_core::state::check_state_layout(state, &self.empty_state(), None)?;
        let mut inner = self.inner.empty_state();
        inner.add(state.records(), state.sums())?;
        self.inner.state_summary(&inner)
    }
}

impl<M> SparseMean<M> {
    /// The frame's words folded into the inner mechanism's fingerprint.
    fn fingerprint(&self, inner: u64) -> u64 {
        let f = &self.frame;
        let words = [inner, f.range.0.to_bits(), f.range.1.to_bits()].into_iter();
        fingerprint_of(words.chain(f.centre.iter().chain(&f.inverse_design).map(|v| v.to_bits())))
    }
}

/// **The binned ratio (Hájek) mean of sparse curves, privately tuned** — the default for sparse
/// data: per bin of grid points, the mean deviation of the observations from the centre, as a ratio
/// of two private sums, so it needs **no design** (the number of observations a bin receives is
/// estimated too), with a private bound on the records' deviations.
///
/// With `K'` contiguous bins of grid points, record i (its `m_i` observations snapped to the grid,
/// clamped to `[lo, hi]`, `e_ij = clamp(y_ij) − c(g_ij)`) has
///
/// ```text
/// s_ib = (1/m_i) Σ_{j : g_ij ∈ b} e_ij ,     w_ib = (1/m_i) #{j : g_ij ∈ b}
/// ```
///
/// (zero vectors for a record with no observation); `‖s_i‖₁ <= R = max_g max(hi − c_g, c_g − lo)`
/// (the public ceiling) and `‖w_i‖₁ = 1`.
///
/// **Stage 1, the bound** (share `ε_b` of ε, [`BudgetSplit`](crate::BudgetSplit)'s rule, possibly
/// 0): the tuned means' private geometric mean ([`BoundSearch`], searched from R down to R/1000) of
/// the records' `‖s_i‖₁` (a record's mean absolute deviation from the centre), sensitivity
/// `ln(1000)/n`, times [`sparse_bound_factor`], giving τ on a public log-grid of 64 points.
///
/// **Stage 2, the release** (the rest, `ε_s + ε_w`, 7:3, [`SPARSE_WEIGHT_SHARE`]): `s_i` clipped in l1 at `τ (1 − 2⁻³²)`,
/// `w_i` at `1 − 2⁻³²` (the slack covers every rounding of the per-record side), summed exactly in
/// fixed point; `S = (1/n) Σ_i s̃_i` and `W = (1/n) Σ_i w̃_i` released with Laplace noise of scales
/// `b_s = 2τ/(n ε_s)` and `b_w = 2/(n ε_w)` per bin (plus the rounding charges of
/// [`fdp_noise::Sensitivity::of_mean`]).
///
/// **Privacy.** Replacing one record (all of one subject's observations, any number, times and
/// values) moves the clamped log statistic by at most `ln(1000)/n`, `S` by at most `2τ/n` and `W`
/// by at most `2/n` in l1 for **every** τ of the grid, so by sequential composition the pipeline is
/// `ε_b + ε_s + ε_w = ε`-DP. Everything after the noise is post-processing: the bin estimates
/// `c̄_b + S̃_b / max(Ŵ_b, f_b)` (`Ŵ_b` the bin's quadrature share of its coarse bin's noisy weight,
/// or the stated design's mass; the public floor `f_b` two noise sds of that share: a bin whose
/// weight is lost in the noise is shrunk towards the centre), the SURE-chosen smoother, linear
/// interpolation between the bins' weighted centres, the projection on the basis (the
/// representation), and the clamp to `[lo, hi]`.
///
/// **Bins.** `K' = clamp(round(4 (n ε)^{1/3}), 1, G)` fine bins (the smoothing comes after the
/// noise; [`with_bins`](Self::with_bins) for another public choice) and `max(1, round(K'/4))`
/// coarse bins for the weights.
#[derive(Debug, Clone)]
pub struct SparseBinnedMean {
    frame: SparseFrame,
    basis: MercerBasis,
    /// The basis as the release metadata records it, described once here (before any charge).
    basis_description: Descriptor,
    n: usize,
    epsilon: Epsilon,
    bins: usize,
    bin_of: Vec<usize>,
    search: BoundSearch,
    /// The public bound grid, R / 1000 ..= R.
    taus: Vec<f64>,
    /// ε of the bound stage (0: released at the ceiling R), of the sums and of the weights.
    eps_bound: f64,
    eps_sums: f64,
    eps_weights: f64,
    /// The coarse bin of each bin (the bins' weights are released on `bins / 4` coarse bins).
    coarse_of: Vec<usize>,
    weight_bins: usize,
    /// The noise on the coarse weights; `None` when the design is stated (the weights are known).
    weights_noise: Option<LaplaceVector>,
    /// The bound and the release, composed: what the ledger charges and what the release runs.
    stages: Sequential<BoundThenRelease<BinsAtEachBound>>,
}

/// The releases the bound stage chooses among: at each τ of the grid, the bins' sums (l1
/// sensitivity `2τ/n`) and, without a stated design, the coarse bins' weights (`2/n`), the stage's
/// budget split between them (a share [`SPARSE_WEIGHT_SHARE`] for the weights).
#[derive(Debug, Clone)]
struct BinsAtEachBound {
    taus: Vec<f64>,
    n: usize,
    bins: usize,
    weight_bins: usize,
    /// The weights' share of the budget (0: the design is stated, no weights are released).
    weight_share: f64,
}

impl Family for BinsAtEachBound {
    /// The index of τ in the bound grid.
    type Choice = usize;
    type Member = BinsAt;

    fn choices(&self) -> Vec<usize> {
        (0..self.taus.len()).collect()
    }

    /// `ε_s + ε_w` = the budget exactly: `ε_s = ε (1 - share)` and `ε_w = ε - ε_s` (exact:
    /// `ε_s ∈ [ε/2, ε]`, Sterbenz), so `ε_s + ε_w` rounds to ε.
    fn member(&self, g: usize, budget: PrivacyGuarantee) -> Result<Option<BinsAt>> {
        let (n, k) = (self.n, self.bins);
        let rest = budget.epsilon();
        let eps_sums = rest * (1.0 - self.weight_share);
        let eps_weights = rest - eps_sums;
        let sensitivity = Sensitivity::of_mean(2.0 * self.taus[g] / n as f64, n, MEAN_ROUNDINGS)?;
        let sums = LaplaceVector::new(k, sensitivity, Epsilon::new(eps_sums)?)?;
        let weights = if self.weight_share > 0.0 {
            let sensitivity = Sensitivity::of_mean(2.0 / n as f64, n, MEAN_ROUNDINGS)?;
            Some(LaplaceVector::new(self.weight_bins, sensitivity, Epsilon::new(eps_weights)?)?)
        } else {
            None
        };
        let at = 1 + self.taus.len() * k;
        Ok(Some(BinsAt {
            guarantee: PrivacyGuarantee::pure(Epsilon::new(eps_sums + eps_weights)?),
            sums,
            weights,
            sums_at: 1 + g * k..1 + (g + 1) * k,
            weights_at: at..at + self.weight_bins,
        }))
    }
}

/// The release at one τ: the bins' sums and the weights, by sequential composition `(ε_s + ε_w)`-DP.
struct BinsAt {
    guarantee: PrivacyGuarantee,
    sums: LaplaceVector,
    weights: Option<LaplaceVector>,
    sums_at: std::ops::Range<usize>,
    weights_at: std::ops::Range<usize>,
}

impl StageLaw for BinsAt {
    fn guarantee(&self) -> PrivacyGuarantee {
        self.guarantee
    }

    /// The sums' and the weights' lattice losses, added, over `ε_s + ε_w`.
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        let (k, sums_at) = (self.sums_at.len(), self.sums_at.clone());
        let weights = match &self.weights {
            Some(noise) => laplace_loss(
                &vec![noise.noise(); self.weights_at.len()],
                part(a, self.weights_at.clone())?,
                part(b, self.weights_at.clone())?,
            )?,
            None => 0.0,
        };
        let sums = laplace_loss(&vec![self.sums.noise(); k], part(a, sums_at.clone())?, part(b, sums_at)?)?;
        Ok((sums + weights) / self.guarantee.epsilon())
    }
}

impl StageMechanism for BinsAt {
    /// The noisy bins' sums, and the noisy coarse weights unless the design is stated.
    type Output = (Vec<f64>, Option<Vec<f64>>);

    fn release(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<(Vec<f64>, Option<Vec<f64>>)> {
        let sums = self.sums.release(part(summary, self.sums_at.clone())?, rng)?;
        let weights = match &self.weights {
            Some(noise) => Some(noise.release(part(summary, self.weights_at.clone())?, rng)?),
            None => None,
        };
        Ok((sums, weights))
    }
}

/// **The bound factor of the sparse default**: `c = 1 + 0.2 log₂(n ε / 100)`, clamped to `[1, 3]`
/// (τ = c × the private geometric mean of the records' mean absolute deviations). Steeper than the
/// dense means' rule (`1 + 0.1 log₂(n ε / 100)` in `[1, 2]`, [`BoundSearch::factor`]): a sparse
/// record's mean absolute deviation varies far more between records than a dense record's norm (a
/// handful of random times), so the same quantile needs a larger multiple of the geometric mean.
/// Chosen on DTI (cca), Adelaide Mondays and scenario S-2 at m = 5, ε = 1 (16 releases each) among
/// slopes {0.1, 0.2, 0.3, 0.5} and caps {2, 3, 4, 6}: 0.2/3 was within 1.1x of the best slope on
/// each and 1.4-1.6x better than the dense rule on DTI and S-2 (`docs/DESIGN.md` section 18).
pub fn sparse_bound_factor(n: usize, epsilon: f64) -> f64 {
    (1.0 + 0.2 * (n as f64 * epsilon / 100.0).log2()).clamp(1.0, 3.0)
}

/// The share of the release's ε spent on the bins' weights `W` (the rest on the sums `S`): the
/// weights' noise enters the ratio relatively (`b_w / W_b`), the sums' absolutely.
pub const SPARSE_WEIGHT_SHARE: f64 = 0.3;

impl SparseBinnedMean {
    /// The privately tuned binned ratio mean of `n` sparse records in `frame` (its design is not
    /// used), represented on `basis` (whose grid is the frame's), at ε, with the default bins.
    pub fn new(basis: &MercerBasis, n: usize, epsilon: Epsilon, frame: SparseFrame) -> Result<Self> {
        let bins = ((4.0 * ((n as f64) * epsilon.get()).cbrt()).round() as usize).clamp(1, frame.grid.len());
        Self::with_bins(basis, n, epsilon, frame, bins)
    }

    /// As [`new`](Self::new) with `bins` (1 ..= grid points), a public choice.
    pub fn with_bins(basis: &MercerBasis, n: usize, epsilon: Epsilon, frame: SparseFrame, bins: usize) -> Result<Self> {
        if basis.grid() != &frame.grid {
            return Err(EstimatorError::GridMismatch);
        }
        let k = frame.grid.len();
        if !(1..=k).contains(&bins) {
            return Err(EstimatorError::BadParameter {
                name: "sparse bins",
                value: bins.into(),
                reason: "need 1 <= bins <= the number of grid points",
            });
        }
        let (lo, hi) = frame.range;
        let radius = frame.centre.iter().map(|c| (hi - c).max(c - lo)).fold(0.0f64, f64::max);
        let n = MeanSetup::new(n, epsilon, ClippingBound::new(radius, ClipNorm::Sup)?)?.n();
        let search = BoundSearch::new(RANGE_SEARCH_FLOOR_RATIO, sparse_bound_factor(n, epsilon.get()))?;
        let share = crate::BudgetSplit::default().bound_share(n, epsilon.get(), 0.0, RANGE_SEARCH_FLOOR_RATIO.ln());
        let eps_bound = epsilon.get() * share;
        let rest = crate::BudgetSplit::rest_of(epsilon.get(), eps_bound);
        let weight_share = if frame.design_stated { 0.0 } else { SPARSE_WEIGHT_SHARE };
        // ε_s + ε_w = rest exactly (the Session checks the stages against the guarantee).
        let eps_sums = rest * (1.0 - weight_share);
        let eps_weights = rest - eps_sums;
        let weight_bins = (bins as f64 / 4.0).round().max(1.0) as usize;
        let weights_noise = if frame.design_stated {
            None
        } else {
            let sensitivity = Sensitivity::of_mean(2.0 / n as f64, n, MEAN_ROUNDINGS)?;
            Some(LaplaceVector::new(weight_bins, sensitivity, Epsilon::new(eps_weights)?)?)
        };
        let taus = search.grid(radius);
        let bound = if eps_bound > 0.0 { Some(search.stage(radius, n, eps_bound)?) } else { None };
        let family = BinsAtEachBound { taus: taus.clone(), n, bins, weight_bins, weight_share };
        let release = Adaptive::new(PrivacyGuarantee::pure(Epsilon::new(rest)?), family)?;
        let stages = Sequential::new(PrivacyGuarantee::pure(epsilon), BoundThenRelease { bound, release })?;
        let mechanism = Self {
            bin_of: (0..k).map(|g| g * bins / k).collect(),
            taus,
            frame,
            basis: basis.clone(),
            basis_description: fdp_functional::describe::basis(basis)?,
            n,
            epsilon,
            bins,
            search,
            eps_bound,
            eps_sums,
            eps_weights,
            coarse_of: (0..bins).map(|b| b * weight_bins / bins).collect(),
            weight_bins,
            weights_noise,
            stages,
        };
        // Everything privatize builds was built above (a Session never charges for a release that
        // then fails): the bound stage's noise and, at every τ of the grid, the sums' and the
        // weights' noise, each checked to spend the release stage's budget.
        Ok(mechanism)
    }

    /// The number of bins.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// The ε of the bound stage (0 when n ε is too small for it to pay), of the bins' sums and of
    /// their weights.
    pub fn epsilons(&self) -> (f64, f64, f64) {
        (self.eps_bound, self.eps_sums, self.eps_weights)
    }

    /// **The charged stages and their total**, read off the composition: `bound` (free at a zero
    /// share: the public ceiling), then `release` — itself the noisy bin sums (`ε_sums`) and,
    /// without a stated design, the noisy counts (`ε_weights`), released together with
    /// `ε − ε_bound`; checked to add up to the guarantee when the mechanism is built. `stages()` is
    /// this.
    pub fn plan(&self) -> &StagePlan {
        self.stages.plan()
    }

    /// **For audits: the exact privacy loss of each stage** between the summaries `a` and `b` of two
    /// neighbouring datasets, divided by the stage's budget (the release's maximised over every τ the
    /// bound stage could choose), from the lattice indices the releases are centred at
    /// ([`fdp_noise::exact_loss`]). By sequential composition the pipeline is ε-DP on the pair if
    /// every ratio is at most 1.
    pub fn stage_losses(&self, a: &[f64], b: &[f64]) -> Result<Vec<(&'static str, f64)>> {
        for s in [a, b] {
            if s.len() != self.width() {
                return Err(EstimatorError::Shape { what: "summary length", expected: self.width(), got: s.len() });
            }
        }
        self.stages.exact_losses(a, b)
    }

    /// The bins' sums' noise at bound τ: l1 sensitivity `2τ/n`.
    fn sums_noise(&self, tau: f64) -> Result<LaplaceVector> {
        let sensitivity = Sensitivity::of_mean(2.0 * tau / self.n as f64, self.n, MEAN_ROUNDINGS)?;
        Ok(LaplaceVector::new(self.bins, sensitivity, Epsilon::new(self.eps_sums)?)?)
    }

    /// The public ceiling R.
    fn ceiling(&self) -> f64 {
        self.taus[self.taus.len() - 1]
    }

    /// Fixed-point exponents of the log statistic, the sums at each τ and the weights.
    fn exponents(&self) -> (i32, Vec<i32>, i32) {
        let sums = self.taus.iter().map(|t| fixed_point_exponent(*t)).collect();
        (self.search.log_exponent(self.ceiling()), sums, fixed_point_exponent(1.0))
    }

    /// The state's layout: the log sum, then the bins' sums at each τ of the grid, then the weights.
    fn width(&self) -> usize {
        1 + self.taus.len() * self.bins + self.weight_bins
    }

    /// The exact sums over `data` (layout: [`width`](Self::width)).
    fn sums(&self, data: &SparseCurves) -> Result<Vec<i128>> {
        let (lo, hi) = self.frame.range;
        let (log_lo, log_hi) = self.search.log_range(self.ceiling());
        let (e_log, e_sums, e_w) = self.exponents();
        let slack = 1.0 - CLIP_SLACK;
        let (k, g_count) = (self.bins, self.taus.len());
        let mut acc = vec![0i128; self.width()];
        let (mut s, mut w) = (vec![0.0; k], vec![0.0; self.weight_bins]);
        for i in 0..data.n() {
            let (times, ys) = data.record(i);
            s.iter_mut().chain(w.iter_mut()).for_each(|v| *v = 0.0);
            let m = times.len() as f64;
            for (t, y) in times.iter().zip(ys) {
                if let Some(g) = self.frame.grid.nearest(&[*t]) {
                    s[self.bin_of[g]] += (y.clamp(lo, hi) - self.frame.centre[g]) / m;
                    w[self.coarse_of[self.bin_of[g]]] += 1.0 / m;
                }
            }
            let size: f64 = s.iter().map(|x| x.abs()).sum();
            // ln 0 = −∞ (an empty record, or one at the centre) counts as the floor.
            acc[0] += to_fixed(size.ln().clamp(log_lo, log_hi), e_log);
            for (g, (tau, e)) in self.taus.iter().zip(&e_sums).enumerate() {
                let bound = tau * slack;
                let scale = if size > bound { bound / size } else { 1.0 };
                let at = 1 + g * k;
                acc[at..at + k].iter_mut().zip(&s).for_each(|(a, v)| *a += to_fixed(v * scale, *e));
            }
            let total: f64 = w.iter().sum();
            let scale = if total > slack { slack / total } else { 1.0 };
            let at = 1 + g_count * k;
            acc[at..].iter_mut().zip(&w).for_each(|(a, v)| *a += to_fixed(v * scale, e_w));
        }
        Ok(acc)
    }

    /// The summary from exact sums: the mean clamped log, the bins' mean sums at each τ, the mean
    /// weights.
    fn summary_of(&self, sums: &[i128]) -> Vec<f64> {
        let (e_log, e_sums, e_w) = self.exponents();
        let (n, k, g_count) = (self.n as f64, self.bins, self.taus.len());
        let exponent = |i: usize| match i {
            0 => e_log,
            i if i <= g_count * k => e_sums[(i - 1) / k],
            _ => e_w,
        };
        sums.iter().enumerate().map(|(i, s)| from_fixed(*s, exponent(i)) / n).collect()
    }

    fn fingerprint(&self) -> u64 {
        let mut words = vec![0x5350_4152_5345u64, self.bins as u64, self.n as u64, self.epsilon.get().to_bits()];
        words.extend([self.frame.range.0.to_bits(), self.frame.range.1.to_bits(), self.weight_bins as u64]);
        words.extend(self.frame.centre.iter().map(|c| c.to_bits()));
        words.extend(self.frame.grid.points().iter().map(|t| t.to_bits()));
        fingerprint_of(words)
    }

    /// The curve (before the clamp), its pointwise noise sd and the chosen bandwidth (in bins) from
    /// the noisy sums and weights: **post-processing** of the release.
    ///
    /// Per bin, the raw ratio `y_b = S̃_b / max(W̃_b, f)` (floor `f = 2√2 b_w`, two noise sds of a
    /// weight) has noise variance `v_b ≈ 2 b_s² / max(W̃_b, f)²` (the weights treated as fixed).
    /// The release smooths it with the inverse-variance-weighted Gaussian kernel smoother
    /// `ŷ_b = Σ_c K_h(b, c) y_c / v_c / Σ_c K_h(b, c) / v_c` (bandwidth h in bins; h = 0 is no
    /// smoothing), h chosen from a public grid by SURE against the noise-free ratios:
    /// `Σ_b M_b ((ŷ − y)_b² + 2 v_b L_bb − v_b)` (`M_b` the bins' quadrature mass, `L` the
    /// smoother's matrix). Then `c̄_b + ŷ_b`, interpolated between the bins' weighted centres.
    ///
    /// The sums and their noise are read in units of `2^⌊log₂ R⌋` (R the public ceiling), a power of
    /// two, so every step scales exactly and the result is the same bits as in the data's units
    /// wherever those do not overflow; under a range near `f64::MAX` the squares of the noise scale
    /// would overflow there and the smoother's weights turn into NaN.
    fn estimate(&self, sums: &[f64], coarse: Option<&[f64]>, sums_scale: f64) -> (Vec<f64>, Vec<f64>, f64) {
        let unit = 2f64.powi(self.ceiling().log2().floor().clamp(-1000.0, 1000.0) as i32);
        let sums_scale = sums_scale / unit;
        let grid = &self.frame.grid;
        let k = self.bins;
        let (mut mass, mut centre, mut base, mut design) = (vec![0.0; k], vec![0.0; k], vec![0.0; k], vec![0.0; k]);
        for (g, b) in self.bin_of.iter().enumerate() {
            let w = grid.weights()[g];
            mass[*b] += w;
            centre[*b] += w * grid.points()[g];
            base[*b] += w * self.frame.centre[g];
            design[*b] += 1.0 / self.frame.inverse_design[g];
        }
        let mut coarse_mass = vec![0.0; self.weight_bins];
        (0..k).for_each(|b| coarse_mass[self.coarse_of[b]] += mass[b]);
        let weight_scale = self.weights_noise.as_ref().map_or(0.0, |noise| noise.scale());
        let (mut y, mut v) = (vec![0.0; k], vec![0.0; k]);
        for b in 0..k {
            centre[b] /= mass[b];
            base[b] /= mass[b];
            // The bin's weight: the stated design's, else its share (by quadrature mass) of its
            // coarse bin's noisy weight, floored at two noise sds of that share.
            let (weight, weight_var) = match coarse {
                None => (design[b], 0.0),
                Some(w) => {
                    let share = mass[b] / coarse_mass[self.coarse_of[b]];
                    let floor = 2.0 * std::f64::consts::SQRT_2 * weight_scale * share;
                    ((w[self.coarse_of[b]] * share).max(floor), 2.0 * (weight_scale * share).powi(2))
                }
            };
            y[b] = sums[b] / unit / weight;
            // The delta method: the sums' noise, and the weight's noise times the ratio.
            v[b] = (2.0 * sums_scale * sums_scale + y[b] * y[b] * weight_var) / (weight * weight);
        }
        // The smoother's matrix at bandwidth h (rows sum to 1).
        let smoother = |h: f64| -> Vec<Vec<f64>> {
            (0..k)
                .map(|b| {
                    let mut row: Vec<f64> = (0..k)
                        .map(|c| {
                            let kernel = if h == 0.0 {
                                f64::from(u8::from(b == c))
                            } else {
                                (-0.5 * ((b as f64 - c as f64) / h).powi(2)).exp()
                            };
                            kernel / v[c]
                        })
                        .collect();
                    let total: f64 = row.iter().sum();
                    row.iter_mut().for_each(|x| *x /= total);
                    row
                })
                .collect()
        };
        let apply = |l: &[Vec<f64>], x: &[f64]| -> Vec<f64> {
            l.iter().map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum()).collect()
        };
        let sure = |l: &[Vec<f64>]| -> f64 {
            let fit = apply(l, &y);
            (0..k).map(|b| mass[b] * ((fit[b] - y[b]).powi(2) + 2.0 * v[b] * l[b][b] - v[b])).sum()
        };
        let (mut best_h, mut best_risk) = (0.0, f64::INFINITY);
        for h in SMOOTHING_BANDWIDTHS {
            let risk = sure(&smoother(h));
            if risk < best_risk {
                (best_h, best_risk) = (h, risk);
            }
        }
        let l = smoother(best_h);
        let fit = apply(&l, &y);
        let value: Vec<f64> = (0..k).map(|b| base[b] + unit * fit[b]).collect();
        let sd: Vec<f64> =
            l.iter().map(|row| unit * row.iter().zip(&v).map(|(a, v)| a * a * v).sum::<f64>().sqrt()).collect();
        let at = |x: &[f64], t: f64| interpolate(&centre, x, t);
        let points = grid.points();
        (points.iter().map(|t| at(&value, *t)).collect(), points.iter().map(|t| at(&sd, *t)).collect(), best_h)
    }
}

/// The public grid of bandwidths (in bins) the binned sparse mean's smoother chooses from by SURE.
const SMOOTHING_BANDWIDTHS: [f64; 12] = [0.0, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0];

impl Mechanism<SparseCurves> for SparseBinnedMean {
    type Output = Curve;

    fn name(&self) -> &'static str {
        "sparse_binned_mean"
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    /// The composition's guarantee: what its stages add up to (checked when it was built).
    fn guarantee(&self) -> PrivacyGuarantee {
        self.stages.guarantee()
    }

    /// The bound (if bought) and the release: the composition's.
    fn stages(&self) -> Vec<fdp_core::Stage> {
        self.stages.stages()
    }

    fn summarize(&self, data: &SparseCurves) -> fdp_core::Result<Vec<f64>> {
        if data.n() != self.n {
            return Err(EstimatorError::Shape { what: "number of sparse records", expected: self.n, got: data.n() });
        }
        self.frame.check_domain(data)?;
        Ok(self.summary_of(&self.sums(data)?))
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> fdp_core::Result<Release<Curve>> {
        if summary.len() != self.width() {
            return Err(EstimatorError::Shape { what: "summary length", expected: self.width(), got: summary.len() });
        }
        let (k, g_count) = (self.bins, self.taus.len());
        let parts = self.stages.parts();
        let mut stages = Vec::new();
        let g = if let Some(bound) = &parts.bound {
            let log_mean = bound.release(summary, rng, charge)?[0];
            let g = self.search.snap(&self.taus, log_mean, self.search.factor(self.n, self.epsilon.get()));
            stages.push(StageRecord {
                stage: "bound".into(),
                epsilon: bound.guarantee().epsilon(),
                delta: 0.0,
                outcome: format!("tau = {:.6e} (the records' mean absolute deviation, l1 over the bins)", self.taus[g]),
            });
            g
        } else {
            g_count - 1
        };
        let tau = self.taus[g];
        let member = parts.release.member(g)?;
        let sums_noise = member.sums;
        let (sums, weights) = member.release(summary, rng, charge)?;
        stages.push(StageRecord {
            stage: "release".into(),
            epsilon: member.guarantee().epsilon(),
            delta: 0.0,
            outcome: match &member.weights {
                Some(noise) => format!(
                    "{k} noisy bin sums of the deviations clipped at tau (Laplace scale {:.6e}) and {} noisy coarse bin weights (scale {:.6e})",
                    sums_noise.scale(),
                    self.weight_bins,
                    noise.scale()
                ),
                None => format!(
                    "{k} noisy bin sums of the deviations clipped at tau (Laplace scale {:.6e}); the bins' weights from the stated design",
                    sums_noise.scale()
                ),
            },
        });
        let (values, sd, bandwidth) = self.estimate(&sums, weights.as_deref(), sums_noise.scale());
        let (lo, hi) = self.frame.range;
        let deviation: Vec<f64> = values.iter().zip(&self.frame.centre).map(|(v, c)| v - c).collect();
        let representation =
            Representation::Basis { basis: self.basis.clone(), coefficients: self.basis.project(&deviation)? };
        let curve = Curve::new(self.frame.grid.clone(), Some(self.frame.centre.clone()), representation)?;
        // The band is post-processing. Under a public range so wide that it overflows it is left
        // out: an error here would come after the charge, and depend on the records through τ̂.
        let curve = if sd.iter().all(|v| v.is_finite() && *v >= 0.0) { curve.with_noise_sd(sd)? } else { curve };
        let (curve, moved) = curve.clamped(lo, hi)?;
        stages.push(StageRecord {
            stage: "tuning".into(),
            epsilon: 0.0,
            delta: 0.0,
            outcome: format!(
                "ratio per bin, smoothed with bandwidth {bandwidth} bins (SURE), linear interpolation, projection on the basis, {moved} grid points clamped to [{lo}, {hi}]: post-processing"
            ),
        });
        let metadata = ReleaseMetadata {
            // The bins are the coefficients clipped in l1.
            clipping: Some(ClippingBound::new(tau, ClipNorm::CoefficientL1)?),
            // The numbers released: the bins' sums, and the coarse weights unless the design is stated.
            components: k + self.weights_noise.as_ref().map_or(0, |_| self.weight_bins),
            basis: Some(self.basis_description.clone()),
            calibration: Some(sums_noise.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            tuning: fdp_core::Tuning::Private,
            centred: true,
            stages,
            ..ReleaseMetadata::new(
                self.name(),
                self.guarantee(),
                2.0 * tau / self.n as f64,
                SensitivityNorm::L1,
                self.n,
            )
        };
        Ok(Release::new(curve, metadata))
    }

    /// An upper bound: the noise of the bins' sums at the ceiling over the bins' weights under the
    /// uniform design (`W_b` = the bin's share of the domain), interpolated; the weights' noise
    /// neglected. The released τ is usually far below the ceiling.
    fn accuracy(&self) -> fdp_core::Accuracy {
        let grid = &self.frame.grid;
        let total: f64 = grid.weights().iter().sum();
        let mut mass = vec![0.0; self.bins];
        self.bin_of.iter().zip(grid.weights()).for_each(|(b, w)| mass[*b] += w / total);
        let scale = self.sums_noise(self.ceiling()).map_or(f64::INFINITY, |noise| noise.scale());
        let v = 2.0 * scale * scale;
        fdp_core::Accuracy::at_most(self.bin_of.iter().zip(grid.weights()).map(|(b, w)| w * v / mass[*b].powi(2)).sum())
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<fdp_core::Result<Vec<(&'static str, f64)>>> {
        Some(self.stage_losses(a, b))
    }
}

impl MergeableMechanism<SparseCurves> for SparseBinnedMean {
    fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint(), self.width())
    }

    fn update_state(&self, state: &mut SummaryState, part: &SparseCurves) -> fdp_core::Result<()> {
        self.frame.check_domain(part)?;
        state.add(part.n() as u64, &self.sums(part)?)
    }

    fn state_summary(&self, state: &SummaryState) -> fdp_core::Result<Vec<f64>> {
        fdp_core::state::check_state_layout(state, &self.empty_state(), Some(self.n))?;
        Ok(self.summary_of(state.sums()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use fdp_core::Session;
    use fdp_functional::CurveReleaseExt;
    use fdp_mercer::{BasisOptions, Stationary};

    /// The tests' basis: Matérn 3/2 (ρ = 0.1) on 40 midpoints of [0, 1] (also the sparse covariance's).
    pub(crate) fn basis() -> MercerBasis {
        MercerBasis::build(
            Stationary::matern32(0.1).unwrap(),
            Grid::midpoint(0.0, 1.0, 40).unwrap(),
            BasisOptions::default(),
        )
        .unwrap()
    }

    /// n ordinary sparse records: 2-6 points of a smooth curve plus a record-level shift.
    pub(crate) fn ordinary(n: usize) -> Vec<(Vec<f64>, Vec<f64>)> {
        (0..n)
            .map(|i| {
                let m = 2 + i % 5;
                let t: Vec<f64> = (0..m).map(|j| ((i * 7 + j * 13) % 40) as f64 / 40.0 + 0.01).collect();
                let y = t.iter().map(|t| 0.5 + 0.2 * (6.0 * t).sin() + 0.01 * (i % 9) as f64).collect();
                (t, y)
            })
            .collect()
    }

    /// The records an adversary would try (huge values, NaN/∞, one point, all points at one time, a
    /// very large m, outside the domain, empty).
    pub(crate) fn adversarial() -> Vec<(Vec<f64>, Vec<f64>)> {
        let many: Vec<f64> = (0..5000).map(|j| j as f64 / 5000.0).collect();
        vec![
            (vec![0.5], vec![1.0]),
            (vec![0.5], vec![0.0]),
            (vec![0.01], vec![f64::MAX]),
            (vec![0.99], vec![-f64::MAX]),
            (vec![0.3; 50], vec![1e300; 50]),
            (vec![0.3, 0.3], vec![f64::NAN, f64::INFINITY]),
            (vec![f64::NAN, 2.0, -1.0], vec![1.0, 1.0, 1.0]),
            (many.clone(), vec![1.0; 5000]),
            (many, (0..5000).map(|j| if j % 2 == 0 { 1.0 } else { 0.0 }).collect()),
            (vec![], vec![]),
            (vec![0.0, 1.0], vec![1.0, 0.0]),
        ]
    }

    fn frame(b: &MercerBasis) -> SparseFrame {
        SparseFrame::new(b.grid(), (0.0, 1.0)).unwrap()
    }

    /// **Exact loss** of the binned ratio mean over adversarial neighbours: the bound stage's lattice
    /// loss plus, at **every** τ of the public grid, the sums' and weights' lattice losses, each
    /// stage within its ε and the total within ε.
    #[test]
    fn exact_loss_of_adversarial_neighbours_is_within_epsilon() {
        let b = basis();
        let stated = frame(&b).with_design(&[1.0 / 40.0; 40]).unwrap();
        for (n, eps, f) in [(5usize, 0.5, frame(&b)), (40, 1.0, frame(&b)), (400, 2.0, frame(&b)), (40, 1.0, stated)] {
            let m = SparseBinnedMean::new(&b, n, Epsilon::new(eps).unwrap(), f).unwrap();
            let base = ordinary(n - 1);
            let records = adversarial().into_iter().chain(ordinary(3)).collect::<Vec<_>>();
            let summaries: Vec<Vec<f64>> = records
                .iter()
                .map(|r| {
                    let mut data = base.clone();
                    data.push(r.clone());
                    m.summarize(&SparseCurves::new((0.0, 1.0), &data).unwrap()).unwrap()
                })
                .collect();
            let mut worst = 0.0f64;
            for a in &summaries {
                for c in &summaries {
                    let losses = m.stage_losses(a, c).unwrap();
                    let (bound, release) = (losses[0].1, losses[1].1);
                    assert!(bound <= 1.0 + 1e-12 && release <= 1.0 + 1e-12, "n = {n}: {losses:?}");
                    let total = bound * m.eps_bound + release * (m.eps_sums + m.eps_weights);
                    assert!(total <= eps * (1.0 + 1e-12), "n = {n}: loss {total} > ε = {eps}");
                    worst = worst.max(total / eps);
                }
            }
            // The adversarial pairs reach most of the budget (the check has power).
            assert!(worst > 0.5, "n = {n}: worst loss / ε only {worst}");
        }
    }

    /// Bad records change nothing but their own contribution: no error, no NaN, the release in the
    /// range, and the ledger charges exactly ε (the stages sum to the guarantee).
    #[test]
    fn bad_records_release_finite_curves_in_range_and_charge_epsilon() {
        let b = basis();
        let mut records = ordinary(200);
        records.extend(adversarial());
        let data = SparseCurves::new((0.0, 1.0), &records).unwrap();
        let eps = Epsilon::new(1.0).unwrap();
        let binned = SparseBinnedMean::new(&b, data.n(), eps, frame(&b)).unwrap();
        let pseudo = SparseMean::tuned(&b, data.n(), eps, frame(&b)).unwrap();
        let total: f64 = binned.stages().iter().map(|s| s.guarantee.epsilon()).sum();
        assert!((total - 1.0).abs() < 1e-12);
        let mut session = Session::pure(Epsilon::new(2.0).unwrap()).unwrap();
        for release in [session.release(&binned, &data).unwrap(), session.release(&pseudo, &data).unwrap()] {
            assert!(release.curve().iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
            assert!(release.output().noise_sd().is_none_or(|sd| sd.iter().all(|v| v.is_finite())));
        }
        assert!((session.spent().0 - 2.0).abs() < 1e-12);
        assert!(session.release(&binned, &data).is_err(), "the budget is spent");
    }

    /// A public range so wide that the noise's pointwise sd overflows still releases, whatever the
    /// records and the seed: the release is clamped to the range and the band, which cannot be
    /// stated, is left out. Before, the band's NaN was an error after the charge, for some seeds
    /// and records and not others (an independent fuzz of the doors found it).
    #[test]
    fn a_range_too_wide_for_a_finite_band_still_releases_after_the_charge() {
        let b = basis();
        let t = vec![0.1, 0.5, 0.9];
        for half in [5e153, 9e153, 1e200, 1e300] {
            let f = SparseFrame::new(b.grid(), (-half, half)).unwrap();
            for y in [0.0, f64::NAN, 1e300] {
                let data = SparseCurves::new((0.0, 1.0), &vec![(t.clone(), vec![y; 3]); 5]).unwrap();
                let m = SparseBinnedMean::new(&b, 5, Epsilon::new(1.0).unwrap(), f.clone()).unwrap();
                for seed in 0..8 {
                    let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(seed);
                    let release = session.release(&m, &data).unwrap_or_else(|e| panic!("half {half:e}, y {y}: {e}"));
                    assert!(
                        release.curve().iter().all(|v| v.is_finite() && v.abs() <= half),
                        "half {half:e}, y {y}, seed {seed}: {:?}",
                        release.curve()
                    );
                    assert!(release.output().noise_sd().is_none_or(|sd| sd.iter().all(|v| v.is_finite())));
                }
            }
        }
    }

    /// The release recovers the mean of dense-enough sparse data at a large ε (the estimator is
    /// right, not only private), and a state merged from parts gives the one-pass summary bit for bit.
    #[test]
    fn accurate_at_large_epsilon_and_mergeable() {
        let b = basis();
        let records = ordinary(4000);
        let data = SparseCurves::new((0.0, 1.0), &records).unwrap();
        let m = SparseBinnedMean::with_bins(&b, data.n(), Epsilon::new(1e6).unwrap(), frame(&b), 20).unwrap();
        let release = m.release(&data, &mut NoiseRng::seeded(3), Charge::unaccounted()).unwrap();
        let truth: Vec<f64> = b.grid().points().iter().map(|t| 0.54 + 0.2 * (6.0 * t).sin()).collect();
        let err = b.grid().sq_distance(release.curve(), &truth).unwrap();
        assert!(err < 2e-3, "squared error {err}");
        let one_pass = m.summarize(&data).unwrap();
        let mut state = m.empty_state();
        for part in [(0..1000).collect::<Vec<_>>(), (1000..1300).collect(), (1300..4000).collect()].iter().rev() {
            let mut s = m.empty_state();
            m.update_state(&mut s, &data.subset(part)).unwrap();
            state.merge(&s).unwrap();
        }
        assert_eq!(m.state_summary(&state).unwrap(), one_pass);
        // The metadata counts the numbers released: the bins' sums and the coarse weights.
        assert_eq!(release.metadata().components, m.bins + m.weight_bins);
        let pseudo = SparseMean::tuned(&b, data.n(), Epsilon::new(1.0).unwrap(), frame(&b)).unwrap();
        let mut state = pseudo.empty_state();
        pseudo.update_state(&mut state, &data).unwrap();
        assert_eq!(pseudo.state_summary(&state).unwrap(), pseudo.summarize(&data).unwrap());
        // A state of the dense inner mechanism, or of another frame, is refused.
        assert!(pseudo.state_summary(&pseudo.inner().empty_state()).is_err());
        let other = SparseMean::tuned(
            &b,
            data.n(),
            Epsilon::new(1.0).unwrap(),
            frame(&b).with_design(&(1..=40).map(|g| g as f64 / 820.0).collect::<Vec<_>>()).unwrap(), // another design
        )
        .unwrap();
        assert!(other.state_summary(&state).is_err());
    }

    /// Parameters are refused before anything is charged.
    #[test]
    fn bad_parameters_are_refused() {
        let b = basis();
        let eps = Epsilon::new(1.0).unwrap();
        assert!(SparseFrame::new(b.grid(), (1.0, 0.0)).is_err());
        assert!(SparseFrame::new(b.grid(), (0.0, f64::INFINITY)).is_err());
        assert!(frame(&b).centred_at(vec![2.0; 40]).is_err());
        assert!(frame(&b).centred_at(vec![0.5; 3]).is_err());
        assert!(frame(&b).with_design(&[0.0; 40]).is_err());
        assert!(frame(&b).with_design(&[0.5; 40]).is_err());
        assert!(frame(&b).with_design(&[1.0 / 40.0; 40]).is_ok());
        assert!(SparseBinnedMean::with_bins(&b, 10, eps, frame(&b), 0).is_err());
        assert!(SparseBinnedMean::with_bins(&b, 10, eps, frame(&b), 41).is_err());
        assert!(SparseBinnedMean::new(&b, 0, eps, frame(&b)).is_err());
        assert!(frame(&b).ceiling(ClipNorm::Sup, &b).is_err());
        let other = MercerBasis::build(
            Stationary::matern32(0.1).unwrap(),
            Grid::midpoint(0.0, 1.0, 20).unwrap(),
            BasisOptions::default(),
        )
        .unwrap();
        assert!(SparseBinnedMean::new(&other, 10, eps, frame(&b)).is_err());
        // The sparse curves' domain must lie inside the grid's.
        let wide = SparseCurves::new((0.0, 2.0), &[(vec![1.5], vec![0.5])]).unwrap();
        assert!(frame(&b).pseudo_curves(&wide).is_err());
        // ... and for the binned mean (times beyond the grid would all snap to its end).
        let binned = SparseBinnedMean::new(&b, 1, eps, frame(&b)).unwrap();
        assert!(binned.summarize(&wide).is_err());
        assert!(binned.update_state(&mut binned.empty_state(), &wide).is_err());
    }

    /// The proved ceiling holds for every pseudo-curve, including the adversarial ones.
    #[test]
    fn pseudo_curves_lie_within_the_ceiling() {
        let b = basis();
        let f = frame(&b);
        let mut records = ordinary(50);
        records.extend(adversarial());
        let pseudo = f.pseudo_curves(&SparseCurves::new((0.0, 1.0), &records).unwrap()).unwrap();
        for norm in [ClipNorm::CoefficientL1, ClipNorm::L2] {
            let ceiling = f.ceiling(norm, &b).unwrap().value();
            for i in 0..pseudo.n() {
                let d: Vec<f64> = pseudo.row(i).iter().zip(f.centre()).map(|(z, c)| z - c).collect();
                let x = b.project(&d).unwrap();
                assert!(norm.norm(&x) <= ceiling * (1.0 + 1e-9), "{norm:?}: {} > {ceiling}", norm.norm(&x));
            }
        }
    }
}
