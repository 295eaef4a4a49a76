//! **The bound stage** (stage 1): the public split of ε between the stages ([`BudgetSplit`]) and the
//! private clipping bound ([`BoundSearch`]) — Laplace noise on the mean of the records' clamped
//! log-norms, snapped up to a public grid (the snap is post-processing).

use fdp_core::{Adaptive, Family, OnSlice, StageLaw, Stages};
use fdp_noise::{Epsilon, Sensitivity, vector::LaplaceVector};
use serde::{Deserialize, Serialize};

use crate::error::{EstimatorError, Result};

/// **The stages of a pipeline that buys a private bound and releases at it** (the tuned covariance,
/// the binned sparse mean): the bound stage (`None`: a share of 0, the public ceiling is used),
/// then the release — an adaptive stage over the bound grid, its member chosen by τ̂.
#[derive(Debug, Clone)]
pub(crate) struct BoundThenRelease<F> {
    pub(crate) bound: Option<OnSlice<LaplaceVector>>,
    pub(crate) release: Adaptive<F>,
}

impl<F: Family> Stages for BoundThenRelease<F> {
    fn each(&self) -> Vec<(&'static str, Option<&dyn StageLaw>)> {
        vec![("bound", self.bound.as_ref().map(|b| b as &dyn StageLaw)), ("release", Some(&self.release))]
    }
}

/// How a tuned pipeline's total ε is split: a share for the private bound, a share for the pilot
/// (used only by the mechanisms that need one), the rest for the release.
///
/// By default the bound's share is **chosen from public quantities** (n, ε, the bound search's
/// range): the release's noise variance grows by `1/(1 - f_bound - f_pilot)²` for the budget it
/// loses, and a bound off by the factor `e^L` (L Laplace with scale `s = ln(F/f)/(n ε f_bound)`, see
/// [`BoundSearch`]) costs about `e^{2|L|}` — more noise when too high, clipping bias when too
/// low — whose mean is `1/(1 - 2s)`; the default share minimises the product over
/// `f_bound ∈ [0.01, 0.5]`. That is about 9% at n ε = 300, 3% at n ε = 3000 and 16% at
/// n ε = 100. The privately tuned ICLP-RKHS with a public range then cuts it below n ε = 75 (0.6x
/// at n ε = 30; docs/DESIGN.md section 16.16). The pilot's share is 15%.
///
/// ```
/// use fdp_estimators::BudgetSplit;
/// let split = BudgetSplit::default();
/// assert_eq!((split.bound(), split.pilot()), (None, 0.15));
/// let fixed = BudgetSplit::new(0.05, 0.1)?;
/// assert_eq!(fixed.bound(), Some(0.05));
/// assert!(BudgetSplit::new(0.5, 0.5).is_err()); // nothing left for the release
/// # Ok::<(), fdp_estimators::EstimatorError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BudgetSplit {
    bound: Option<f64>,
    pub(super) pilot: f64,
}

impl Default for BudgetSplit {
    fn default() -> Self {
        Self { bound: None, pilot: 0.15 }
    }
}

impl BudgetSplit {
    /// Fixed shares: `0 < bound`, `0 <= pilot`, `bound + pilot < 1`.
    pub fn new(bound: f64, pilot: f64) -> Result<Self> {
        if !(bound > 0.0 && pilot >= 0.0 && bound + pilot < 1.0) {
            return Err(EstimatorError::BadParameter {
                name: "budget split",
                value: (bound + pilot).into(),
                reason: "need 0 < bound, 0 <= pilot and bound + pilot < 1 (the release needs a share)",
            });
        }
        Ok(Self { bound: Some(bound), pilot })
    }

    /// The bound's share if fixed (`None`: chosen from n, ε and the search range; 0 when n ε is
    /// too small for a private bound to pay for itself: the public ceiling is used).
    pub fn bound(&self) -> Option<f64> {
        self.bound
    }

    /// The pilot's share of ε.
    pub fn pilot(&self) -> f64 {
        self.pilot
    }

    /// **What is left of `total` after `spent`**, rounded so that `spent + rest <= total` in
    /// floating point (the Session adds the stages' budgets: `total - spent` can round up, e.g.
    /// 0.3 − 0.033 = 0.267 and 0.033 + 0.267 = 0.30000000000000004).
    pub(crate) fn rest_of(total: f64, spent: f64) -> f64 {
        let mut rest = total - spent;
        while spent + rest > total {
            rest = rest.next_down();
        }
        rest
    }

    /// The bound's share for n records at ε with pilot share `pilot` and log-range `ln(F/f)`.
    pub(crate) fn bound_share(&self, n: usize, epsilon: f64, pilot: f64, log_range: f64) -> f64 {
        if let Some(share) = self.bound {
            return share;
        }
        let inflation = |f: f64| {
            let s = log_range / (n as f64 * epsilon * f);
            let release = 1.0 - f - pilot;
            if s >= 0.5 || release <= 0.0 { f64::INFINITY } else { 1.0 / (release * release * (1.0 - 2.0 * s)) }
        };
        let (share, best) = (1..=50).map(|i| i as f64 / 100.0).fold((0.5, f64::INFINITY), |best, f| {
            let v = inflation(f);
            if v < best.1 { (f, v) } else { best }
        });
        // Graceful degradation: the private bound can gain at most the variance factor
        // `(F/f)²`, and `F/f` (the ceiling a geometric midpoint of the search range away from the
        // typical norm) under a public log-uniform prior on where the norms lie; when the best
        // split inflates the release's noise by more than that, spend nothing on the bound and
        // release at the public ceiling (`docs/design-notes/robust.md`).
        if best >= log_range.exp() / (1.0 - pilot).powi(2) { 0.0 } else { share }
    }
}

/// **The private clipping bound.** `τ̂ = c · exp(mean_i clamp(ln ||X_i||, ln f, ln F) + L)` with the
/// public ceiling F (the user's bound), a public floor f = F / `floor_ratio`, a public factor c and
/// Laplace noise L of scale `ln(F/f) / (n ε_bound)` (each record moves the mean of clamped logs by at
/// most `ln(F/f)/n`), clamped to `[f, F]` and rounded **up** to a public log-grid of 64 points
/// (post-processing). It is a private geometric mean of the record norms, times c.
///
/// **The factor.** The best bound rises with n ε: the release noise shrinks like τ/(n ε), so the
/// clipping bias must shrink with it (Amin et al. 2019 put the optimal bound near the
/// `1 - O(1/(n ε))` quantile). By default `c = 1 + 0.1 log₂(n ε / 100)`, clamped to `[1, 2]`:
/// 1.0 at n ε = 100, 1.2 at 400, 1.5 at 3200. Fitted on the fourteen cases of
/// `examples/studies/private_tuning` (the ICLP paper's two datasets at ε ∈ {1/4, 1, 4}, scenarios S-1 to S-4
/// at n ∈ {300, 3000}): with the exact statistic the rule's ICLP-RKHS risk is within about 1.25x of
/// the best factor in {1, 1.2, ..., 4} in all of them, while every fixed factor of that grid is at
/// least 1.45x off in some (c = 1: 85x on S-1 at n = 3000; c = 1.4: 1.47x on DTI at ε = 1/4;
/// c = 2: 2.4x on DTI at ε = 1; docs/DESIGN.md section 12).
///
/// **Why not the exponential-mechanism quantile** (Smith 2011)? Its rank error is about
/// `2 ln(G) / ε_bound` records for G candidates: with n ≈ 400 and ε_bound = 0.025 that is most of the
/// sample, so the chosen quantile is close to uniform on the grid. The geometric mean's error is
/// `ln(F/f)/(n ε_bound)` on the log scale. In a prototype on the ICLP paper's data (10% share, the
/// release and SURE as here) it gave 1.3-2.7x the oracle's error at ε ∈ {1/4, 1, 4}, against
/// 1.5-8.8x for the exponential-mechanism quantile at q ∈ {0.5, 0.75, 0.9}.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BoundSearch {
    pub(super) floor_ratio: f64,
    factor: Option<f64>,
}

impl Default for BoundSearch {
    /// Floor = ceiling / 10, the factor by the n ε rule. A ceiling more than 10x above the typical
    /// record norm leaves τ̂ at the floor: too loose (more noise), never too tight.
    fn default() -> Self {
        Self { floor_ratio: 10.0, factor: None }
    }
}

impl BoundSearch {
    /// Number of points of the public grid τ̂ is rounded up to.
    pub const GRID_POINTS: usize = 64;

    /// `floor_ratio > 1` (the floor is ceiling / floor_ratio) and a fixed `factor > 0`, both finite.
    pub fn new(floor_ratio: f64, factor: f64) -> Result<Self> {
        if !(floor_ratio > 1.0 && floor_ratio.is_finite() && factor > 0.0 && factor.is_finite()) {
            return Err(EstimatorError::BadParameter {
                name: "bound search",
                value: floor_ratio.into(),
                reason: "need a finite floor ratio > 1 and a finite factor > 0",
            });
        }
        Ok(Self { floor_ratio, factor: Some(factor) })
    }

    /// The search down to `ceiling / floor_ratio` (`floor_ratio > 1`, finite), the factor by the
    /// n ε rule: for a ceiling known to be loose, such as one derived from a public range of the
    /// values ([`crate::frame::ceiling_from_range`]). A wider search costs the bound stage
    /// `ln(floor_ratio)` in sensitivity (the budget split accounts for it).
    pub fn down_to(floor_ratio: f64) -> Result<Self> {
        Self::new(floor_ratio, 1.0).map(|s| Self { factor: None, ..s })
    }

    /// The same search (its factor kept) down to `ceiling / floor_ratio`.
    pub(crate) fn with_floor_ratio(self, floor_ratio: f64) -> Self {
        Self { floor_ratio, ..self }
    }

    /// The factor c for n records at total ε.
    pub fn factor(&self, n: usize, epsilon: f64) -> f64 {
        self.factor.unwrap_or_else(|| (1.0 + 0.1 * (n as f64 * epsilon / 100.0).log2()).clamp(1.0, 2.0))
    }

    /// The public grid from ceiling / floor_ratio to the ceiling, log-spaced.
    pub(crate) fn grid(&self, ceiling: f64) -> Vec<f64> {
        let floor = ceiling / self.floor_ratio;
        let last = (Self::GRID_POINTS - 1) as f64;
        let mut grid: Vec<f64> =
            (0..Self::GRID_POINTS).map(|i| floor * self.floor_ratio.powf(i as f64 / last)).collect();
        grid[Self::GRID_POINTS - 1] = ceiling;
        grid
    }

    /// `(ln f, ln F)`.
    pub(crate) fn log_range(&self, ceiling: f64) -> (f64, f64) {
        (ceiling.ln() - self.floor_ratio.ln(), ceiling.ln())
    }

    /// **The bound stage's noise** for `n` records at `epsilon` below `ceiling`: the summary is the
    /// exact sum of the records' log-norms clamped to `[ln f, ln F]` converted and divided by n, so
    /// one record moves it by at most `ln(F/f)/n`, with two roundings of a value at most
    /// `max(|ln f|, |ln F|)` in size. Shared by every privately tuned bound (means, the sparse mean,
    /// the covariance).
    pub(crate) fn noise(&self, ceiling: f64, n: usize, epsilon: f64) -> Result<LaplaceVector> {
        let (lo, hi) = self.log_range(ceiling);
        let sensitivity = Sensitivity::new((hi - lo) / n as f64)?.with_rounding(lo.abs().max(hi.abs()), 2)?;
        Ok(LaplaceVector::new(1, sensitivity, Epsilon::new(epsilon)?)?)
    }

    /// **The bound stage** of a tuned pipeline at `epsilon > 0`: [`noise`](Self::noise) on the
    /// summary's first number (the mean of the clamped log-norms). Its guarantee is the noise's.
    pub(crate) fn stage(&self, ceiling: f64, n: usize, epsilon: f64) -> Result<OnSlice<LaplaceVector>> {
        Ok(OnSlice::new(0..1, self.noise(ceiling, n, epsilon)?))
    }

    /// The fixed-point exponent of the clamped log-norm sums (each term in `[ln f, ln F]`).
    pub(crate) fn log_exponent(&self, ceiling: f64) -> i32 {
        let (lo, hi) = self.log_range(ceiling);
        fdp_core::state::fixed_point_exponent(lo.abs().max(hi.abs()))
    }

    /// The grid index of `factor · exp(log_mean)`, clamped and rounded up.
    pub(crate) fn snap(&self, grid: &[f64], log_mean: f64, factor: f64) -> usize {
        let target = factor * log_mean.exp();
        grid.iter().position(|t| *t >= target).unwrap_or(grid.len() - 1)
    }
}
