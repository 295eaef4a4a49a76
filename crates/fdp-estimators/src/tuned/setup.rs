//! The public quantities of a tuned mean ([`TunedSetup`]), the summary they lay out (the data
//! pass), and the stages they compose ([`TunedStages`]).

use std::sync::Arc;

use fdp_core::state::check_state_layout;
use fdp_core::{Adaptive, ClippingBound, Descriptor, OnSlice, Sequential, StageLaw, Stages, SummaryState};
use fdp_data::CurveSet;
use fdp_mercer::MercerBasis;
use fdp_noise::{Delta, Epsilon, PrivacyGuarantee, vector::LaplaceVector};

use super::pilot::PilotFamily;
use super::release::ReleaseFamily;
use super::{BoundSearch, BudgetSplit, FamilyChoice, TunedKind};
use crate::error::{EstimatorError, Result};
use crate::mechanism::LeadingBlocks;
use crate::sums::{ClippedSums, clipped_sums, mean_fingerprint};

/// The small-n ε truncation's rule (see [`TunedSetup::truncation`]): `J* = max(4, round(0.7
/// (n ε)^0.6 max(1, n ε / 150)^0.6))`. Set on the cells of `examples/studies/robust_accuracy` only:
/// the best fixed J per cell grows from 4 at n ε = 25-30 to 8-16 at 100-120 and 16-48 above 300;
/// above n ε = 150 the rule keeps many more (33 at 300, 46 at 400, all of a 100-component basis
/// from about 765), because S-4, smooth but with much of its mean in the middle components, then
/// needs 32-48 (1.43x its error at J = 24, n ε = 300).
const TRUNCATION_SCALE: f64 = 0.7;
const TRUNCATION_POWER: f64 = 0.6;
const TRUNCATION_MIN: usize = 4;
const TRUNCATION_KNEE: f64 = 150.0;

/// **The soft tail** (docs/DESIGN.md section 16.9; [`TunedSetup::soft_tail`]): after the leading
/// `J_a = max(4, round(0.8 (n ε)^0.6))` components, the rest of the matched block counts with weight
/// [`TAIL_WEIGHT`] in the clip norm. Where the truncation keeps more than `J_a` components (above
/// its knee, from n ε ≈ 196 with the rounding, or the whole basis from n ε ≈ 765), the records'
/// rough trailing coefficients then cost the bound half as much, and the signal there is still
/// released (with twice the noise sd). Set on the cells of `examples/studies/robust_accuracy` only: weights 1/2 and 1/4, scales
/// 0.75 / 0.8 / 0.85 measured; 1/4 loses the own error estimate (SURE's variance on the noisier
/// tail: on DTI 1.25-1.53x → 3.7-4.7x at the scale 0.7); 0.75 puts `J_a` = 23 below S-4's
/// 25-component mean at n ε = 300 (1.66x its error); extending the weighted tail below the knee
/// costs the n ε ≤ 150 cells up to 1.23x.
const TAIL_START_SCALE: f64 = 0.8;

/// The weight of the soft tail's components in the clip norm (a power of two: the weighted
/// coefficients are exact; section 16.9).
pub(super) const TAIL_WEIGHT: f64 = 0.5;

/// Everything a tuned mean's stages read: public quantities only, fixed when it is built.
#[derive(Debug, Clone)]
pub(super) struct TunedSetup {
    pub(super) kind: TunedKind,
    /// The basis the matched family clips in and releases on: the given basis, or its leading
    /// block when the small-n ε truncation applies ([`TunedSetup::truncation`]).
    pub(super) basis: MercerBasis,
    /// The basis as given (the binned family's releases are stored on it).
    pub(super) full_basis: MercerBasis,
    /// `full_basis` as the release metadata records it (every release is stored on it), described
    /// once here (before any charge).
    pub(super) basis_description: Descriptor,
    pub(super) n: usize,
    pub(super) epsilon: Epsilon,
    /// The ceiling the matched family searches below: the given one, or the block's own ceiling
    /// from the public range ([`TunedSetup::block_frame`]).
    pub(super) ceiling: ClippingBound,
    /// The ceiling and the bound search as given (every rebuild starts from them).
    pub(super) given: (ClippingBound, BoundSearch),
    pub(super) reference: Option<Vec<f64>>,
    pub(super) split: BudgetSplit,
    /// The bound search below `ceiling` (the given one, or its floor kept under the block's
    /// ceiling: [`TunedSetup::block_frame`]).
    pub(super) search: BoundSearch,
    /// The fitted decay ν of the spectrum (public).
    pub(super) nu: f64,
    /// η of the RKHS shrinkage (the plug-in `1 + 1/(2ν)`) or of the l1 thresholds (`2(1 + 1/ν)`).
    pub(super) eta: f64,
    /// The public range `[lo, hi]` releases are clamped to (post-processing).
    pub(super) range: Option<(f64, f64)>,
    /// Whether ICLP-RKHS may switch to the pointwise-clipped binned family.
    pub(super) family: FamilyChoice,
    /// The basis's leading blocks, truncated once for the candidates at every bound.
    pub(super) blocks: LeadingBlocks,
    /// The weight of each matched component in the clip norm when the soft tail applies (section
    /// 16.9), set once when the mechanism is built.
    pub(super) weights: Option<Vec<f64>>,
}

/// **The stages of a tuned mean**, each a mechanism owning its guarantee: the bound (`None`: a
/// share of 0, the public ceiling is used), the pilot (pilot-tuned kinds only) and the release,
/// the last two adaptive (their member is chosen by the earlier stages' outputs).
#[derive(Debug, Clone)]
pub(super) struct TunedStages {
    pub(super) bound: Option<OnSlice<LaplaceVector>>,
    pub(super) pilot: Option<Adaptive<PilotFamily>>,
    pub(super) release: Adaptive<ReleaseFamily>,
}

impl Stages for TunedStages {
    fn each(&self) -> Vec<(&'static str, Option<&dyn StageLaw>)> {
        let mut each = vec![("bound", self.bound.as_ref().map(|b| b as &dyn StageLaw))];
        if let Some(pilot) = &self.pilot {
            each.push(("pilot", Some(pilot as &dyn StageLaw)));
        }
        each.push(("release", Some(&self.release as &dyn StageLaw)));
        each
    }
}

impl TunedStages {
    /// The pilot stage (a pilot-tuned kind has one).
    pub(super) fn pilot(&self) -> Result<&Adaptive<PilotFamily>> {
        self.pilot.as_ref().ok_or(EstimatorError::BadParameter {
            name: "stage",
            value: "pilot".into(),
            reason: "this mechanism has no pilot stage",
        })
    }

    /// **The composition**: the bound stage at the split's bound share (if any), the pilot at its
    /// share (pilot-tuned kinds), the release at the rest (and δ for the GP), each built at its
    /// budget with every member checked to spend it, composed sequentially into the mechanism's
    /// guarantee (refused unless they add up to it).
    pub(super) fn compose(setup: &Arc<TunedSetup>) -> Result<Sequential<Self>> {
        let (eps_bound, eps_pilot, eps_release) = setup.split_budget();
        let ceiling = setup.ceiling.value();
        let bound = if eps_bound > 0.0 { Some(setup.search.stage(ceiling, setup.n, eps_bound)?) } else { None };
        let pilot = if setup.kind.tunes_after_release() {
            None
        } else {
            let budget = PrivacyGuarantee::pure(Epsilon::new(eps_pilot)?);
            Some(Adaptive::new(budget, PilotFamily::new(setup))?)
        };
        let epsilon = Epsilon::new(eps_release)?;
        let budget = match setup.delta() {
            None => PrivacyGuarantee::pure(epsilon),
            Some(delta) => PrivacyGuarantee::approximate(epsilon, delta),
        };
        let release = Adaptive::new(budget, ReleaseFamily::new(setup)?)?;
        Sequential::new(setup.guarantee(), Self { bound, pilot, release })
    }
}

impl TunedSetup {
    /// The guarantee the pipeline claims: ε, and δ for the GP.
    pub(super) fn guarantee(&self) -> PrivacyGuarantee {
        match self.delta() {
            None => PrivacyGuarantee::pure(self.epsilon),
            Some(delta) => PrivacyGuarantee::approximate(self.epsilon, delta),
        }
    }

    /// The checks of the public quantities that come before the stages are built: the summary's
    /// layout; a pilot share for the pilot-tuned kinds; at every point τ of the bound grid, a
    /// clipping bound and (pilot-tuned kinds) at least one candidate the pilot can choose.
    pub(super) fn check(&self) -> Result<()> {
        self.layout()?;
        let (_, eps_pilot, eps_release) = self.split_budget();
        if !self.kind.tunes_after_release() && Epsilon::new(eps_pilot).is_err() {
            return Err(EstimatorError::BadParameter {
                name: "budget split",
                value: self.split.pilot.into(),
                reason: "this mechanism chooses its parameter from a pilot release: the pilot needs a share > 0",
            });
        }
        for tau in self.search.grid(self.ceiling.value()) {
            ClippingBound::new(tau, self.kind.norm())?;
            if !self.kind.tunes_after_release()
                && !self.candidates(tau).into_iter().any(|p| self.candidate(tau, eps_release, p).is_ok())
            {
                return Err(EstimatorError::BadParameter {
                    name: "tuning candidates",
                    value: tau.into(),
                    reason: "no candidate mechanism can be built at this point of the bound grid (at this ε \
                             every ICLP-l1 threshold removes every component, or the noise scale leaves the \
                             floating-point range): raise ε or change the ceiling",
                });
            }
        }
        Ok(())
    }

    /// The public split of ε: the bound's share from n, ε and the search range, the pilot's share,
    /// and the rest for the release, rounded so that the three never add up to more than ε.
    pub(super) fn split_budget(&self) -> (f64, f64, f64) {
        let eps = self.epsilon.get();
        let bound = eps * self.bound_share_with(&self.search);
        let pilot = eps * self.pilot_share();
        // The three shares must not add up to more than ε after rounding.
        let mut release = eps - bound - pilot;
        while bound + pilot + release > eps {
            release -= eps * f64::EPSILON;
        }
        (bound, pilot, release)
    }

    /// The bound's share of ε with the search as given (what the truncation and the soft tail are
    /// decided on, before [`block_frame`](Self::block_frame) narrows the search: no circularity).
    pub(super) fn given_bound_share(&self) -> f64 {
        self.bound_share_with(&self.given.1)
    }

    /// The bound's share of ε with `search` (its log-range `ln(F/f)`, section 12), times the default's
    /// [`small_n_epsilon_factor`](Self::small_n_epsilon_factor) on the public grid of hundredths
    /// (at least 0.01; a share of 0 stays 0).
    fn bound_share_with(&self, search: &BoundSearch) -> f64 {
        let share = self.split.bound_share(self.n, self.epsilon.get(), self.pilot_share(), search.floor_ratio.ln());
        let factor = self.small_n_epsilon_factor();
        if share > 0.0 && factor < 1.0 { ((share * factor * 100.0).round() / 100.0).max(0.01) } else { share }
    }

    /// **The default's smaller bound share at small n ε** (docs/DESIGN.md section 16.16):
    /// `min(1, 0.6 (n ε / 30)^0.56)` — 0.6 at n ε = 30, 1 from n ε = 75 — for the privately tuned
    /// ICLP-RKHS with a public range and the split's share left to the model; 1 otherwise (other
    /// kinds, a fixed split, no range: where it was not measured, e.g. the sparse means' default).
    /// The split's model (section 12) prices a misplaced bound as if the release's error were all
    /// noise; where the noise dominates, the selection shrinks towards the centre and caps the
    /// error near the centre's, so a noisier bound costs less than the model says and the release's
    /// share is worth more. Set on the cells of `examples/studies/robust_accuracy` (section 16.11;
    /// the tuning cells it changes are at n ε = 25 and 30, the validation cells at 23, 35 and 54);
    /// public (n, ε, the kind, the split, whether a range is stated).
    pub(super) fn small_n_epsilon_factor(&self) -> f64 {
        if self.kind != TunedKind::IclpRkhs || self.split.bound().is_some() || self.range.is_none() {
            return 1.0;
        }
        (0.6 * (self.n as f64 * self.epsilon.get() / 30.0).powf(0.56)).min(1.0)
    }

    /// The pilot's share of ε: the split's for the pilot-tuned kinds, 0 for those tuned after the
    /// release.
    fn pilot_share(&self) -> f64 {
        if self.kind.tunes_after_release() { 0.0 } else { self.split.pilot }
    }

    /// **The block's own frame** (docs/DESIGN.md section 16.10): with a public range `[lo, hi]`, the
    /// matched ICLP-RKHS clips only its block (the leading `J*` components, the soft tail's at
    /// weight `w_k`), and every in-range record's deviation `d` from the reference (`|d(t_i)| <= R`,
    /// `R = max_i max(hi - r_i, r_i - lo)`) has `Σ_k w_k |d_k| <= F_b = R min(Σ_k w_k Σ_i |w_i
    /// φ_k(t_i)|, (Σ_k w_k² Σ_i w_i)^{1/2})` (the triangle inequality, or Cauchy–Schwarz and Bessel,
    /// as for [`crate::frame::ceiling_from_range`] over the whole basis).
    /// When `F_b` is below the given ceiling F, the search runs below `F_b` instead, its floor kept
    /// where it was (`F / ρ`: the ratio becomes `max(min(10, ρ), ρ F_b / F)`), so the bound
    /// stage's log-range, and with it its noise, shrinks by up to `ln(F / F_b)` and never grows.
    /// `None` otherwise (no range, another kind, `F_b >= F`, or a narrower search whose budget
    /// split would buy a bound where the given one does not, or the reverse: the truncation was
    /// decided on the given one). Public: the range, the reference, the grid's weights and the
    /// block.
    pub(super) fn block_frame(&self) -> Result<Option<(ClippingBound, BoundSearch)>> {
        let (Some(radius), TunedKind::IclpRkhs) = (self.range_radius(), self.kind) else { return Ok(None) };
        let (ceiling, search) = self.given;
        let block = radius * crate::frame::coefficient_l1_factors(&self.basis, self.component_weights()).0;
        if !(block.is_finite() && block > 0.0 && block < ceiling.value()) {
            return Ok(None);
        }
        // Never wider than the given search: a given ratio below 10 stays.
        let ratio = (search.floor_ratio * block / ceiling.value())
            .max(crate::frame::NARROWEST_FLOOR_RATIO.min(search.floor_ratio));
        let frame = (ClippingBound::new(block, self.kind.norm())?, search.with_floor_ratio(ratio));
        // The truncation and the soft tail were decided on a bought bound (the given search's
        // share); the narrower search must not change that (its share's threshold moves with the
        // search's width): otherwise the given frame stays.
        Ok(((self.bound_share_with(&frame.1) > 0.0) == (self.given_bound_share() > 0.0)).then_some(frame))
    }

    /// The largest distance `R = max_i max(|hi - r_i|, |r_i - lo|)` from the reference `r` (0
    /// without one) to an end of the public range, if there is one: every in-range record's
    /// deviation from the reference is at most R at every grid point.
    pub(super) fn range_radius(&self) -> Option<f64> {
        let (lo, hi) = self.range?;
        Some(match &self.reference {
            Some(r) => r.iter().map(|r| (hi - r).abs().max((r - lo).abs())).fold(0.0, f64::max),
            None => lo.abs().max(hi.abs()),
        })
    }

    /// The public range's squared diameter `(hi - lo)² Σ w_i` (∞ without a range): no release
    /// clamped to the range is further than that from a mean in it.
    pub(super) fn diameter(&self) -> f64 {
        self.range.map_or(f64::INFINITY, |(lo, hi)| (hi - lo).powi(2) * self.basis.grid().weights().iter().sum::<f64>())
    }

    pub(super) fn delta(&self) -> Option<Delta> {
        match self.kind {
            TunedKind::GaussianProcess(delta) => Some(delta),
            _ => None,
        }
    }

    /// **The small-n ε truncation** (issue 23, docs/DESIGN.md section 16.8): the number of leading
    /// components `J* = max(4, round(0.7 (n ε)^{0.6} max(1, n ε / 150)^{0.6}))` the matched
    /// ICLP-RKHS keeps when a private bound is bought (bound share > 0), if fewer than the basis
    /// has; else `None`. Clipping in the coefficient-l1 norm of all J components makes the bound
    /// (and so the noise on every coefficient) pay for the records' trailing, mostly noise,
    /// coefficients, which the shrinkage then discards anyway; at small n ε a shorter basis lowers
    /// the bound several times over. A function of n, ε, the kind and the split only: public, no
    /// budget.
    pub(super) fn truncation(&self) -> Option<usize> {
        let eps_bound = self.given_bound_share();
        let n_eps = self.n as f64 * self.epsilon.get();
        let len = self.full_basis.len();
        let keep =
            TRUNCATION_SCALE * n_eps.powf(TRUNCATION_POWER) * (n_eps / TRUNCATION_KNEE).max(1.0).powf(TRUNCATION_POWER);
        // At or above the basis' size (also +∞ at an enormous n ε) the whole basis is kept.
        let keep = (keep.min(len as f64).round() as usize).max(TRUNCATION_MIN);
        (matches!(self.kind, TunedKind::IclpRkhs) && eps_bound > 0.0 && keep < len).then_some(keep)
    }

    /// **The soft tail** (docs/DESIGN.md section 16.9): `J_a = max(4, round(0.8 (n ε)^{0.6}))`,
    /// the number of leading components that count fully in the clip norm, when the matched
    /// ICLP-RKHS buys a private bound and keeps more than `J_a` components; the rest of its block
    /// counts with weight [`TAIL_WEIGHT`] (and gets `1/TAIL_WEIGHT` times the noise sd). `None`
    /// otherwise. Public: from n, ε, the kind, the split and the basis' size.
    pub(super) fn soft_tail(&self) -> Option<usize> {
        let eps_bound = self.given_bound_share();
        let n_eps = self.n as f64 * self.epsilon.get();
        let kept = self.truncation().unwrap_or(self.full_basis.len());
        let start =
            ((TAIL_START_SCALE * n_eps.powf(TRUNCATION_POWER)).min(kept as f64).round() as usize).max(TRUNCATION_MIN);
        (matches!(self.kind, TunedKind::IclpRkhs) && eps_bound > 0.0 && start < kept).then_some(start)
    }

    /// The weight of each matched component in the clip norm (1 before the soft tail,
    /// [`TAIL_WEIGHT`] in it), or `None` without a soft tail.
    pub(super) fn component_weights(&self) -> Option<&[f64]> {
        self.weights.as_deref()
    }

    /// [`component_weights`](Self::component_weights) from the rule, for `build` to store once.
    pub(super) fn soft_tail_weights(&self) -> Option<Vec<f64>> {
        let start = self.soft_tail()?;
        Some((0..self.basis.len()).map(|k| if k < start { 1.0 } else { TAIL_WEIGHT }).collect())
    }

    /// The released (weighted) coefficients `z_k = w_k y_k` back on the basis: `y_k = z_k / w_k`
    /// (exact: powers of two), and the noise variance of each, `v / w_k²`.
    pub(super) fn unweighted(&self, z: &[f64], v: f64) -> (Vec<f64>, Vec<f64>) {
        let y = match self.component_weights() {
            Some(w) => z.iter().zip(w).map(|(z, w)| z / w).collect(),
            None => z.to_vec(),
        };
        (y, self.noise_variances(v))
    }

    /// The noise variance of each matched coefficient on the basis, `v / w_k²` (v without a soft
    /// tail).
    pub(super) fn noise_variances(&self, v: f64) -> Vec<f64> {
        match self.component_weights() {
            Some(w) => w.iter().map(|w| v / (w * w)).collect(),
            None => vec![v; self.basis.len()],
        }
    }

    /// The eigenvalues the shrinkage reads: `λ_k w_k^{2/η}`, so that `s_k = λ_k^η / (λ_k^η + ψ /
    /// w_k²)` — the posterior mean under the prior `m_k ~ N(0, v λ_k^η / ψ)` with noise variance
    /// `v / w_k²` (the marginal likelihood's model, section 16.5, with the soft tail's noise).
    pub(super) fn shrinkage_eigenvalues(&self) -> Vec<f64> {
        let l = self.basis.eigenvalues();
        match self.component_weights() {
            Some(w) => l.iter().zip(w).map(|(l, w)| l * w.powf(2.0 / self.eta)).collect(),
            None => l.to_vec(),
        }
    }

    /// Whether the matched family runs on the leading block only (`basis` shorter than
    /// `full_basis`: [`truncation`](Self::truncation) applied when the mechanism was built).
    pub(super) fn is_truncated(&self) -> bool {
        self.basis.len() < self.full_basis.len()
    }

    /// Width of one clipped mean in the summary: J coefficients, or K grid values (Bernstein).
    pub(super) fn width(&self) -> usize {
        if matches!(self.kind, TunedKind::Bernstein) { self.basis.n_points() } else { self.basis.len() }
    }

    /// The width of one clipped mean and the bound grid, if `summary` has the pipeline's layout.
    pub(super) fn summary_layout(&self, summary: &[f64]) -> Result<(usize, Vec<f64>)> {
        let (width, grid) = (self.width(), self.search.grid(self.ceiling.value()));
        let bins = self.binned_candidate().unwrap_or(0);
        if summary.len() != 1 + grid.len() * width + bins {
            return Err(EstimatorError::Shape {
                what: "summary length",
                expected: 1 + grid.len() * width + bins,
                got: summary.len(),
            });
        }
        Ok((width, grid))
    }

    /// The sums behind the summary: the clipped records at every point of the public bound grid
    /// (coefficients on the basis, or grid values in the sup norm for Bernstein) and the log-norm.
    pub(super) fn layout(&self) -> Result<(ClippedSums, Option<&MercerBasis>)> {
        let ceiling = self.ceiling.value();
        let grid = self.search.grid(ceiling);
        let range = Some(self.search.log_range(ceiling));
        let (basis, width) = match self.kind {
            TunedKind::Bernstein => (None, self.basis.n_points()),
            _ => (Some(&self.basis), self.basis.len()),
        };
        let sums = ClippedSums::new(self.kind.norm(), &grid, width, range)?;
        let sums = match self.component_weights() {
            Some(weights) => sums.with_scales(weights.to_vec())?,
            None => sums,
        };
        let sums = match self.pointwise()? {
            Some(bins) => sums.with_pointwise(bins),
            None => sums,
        };
        Ok((sums, basis))
    }

    pub(super) fn summary_from(&self, layout: &ClippedSums, sums: &[i128]) -> Vec<f64> {
        let (means, log_mean) = layout.means(sums, self.n);
        std::iter::once(log_mean)
            .chain(means.into_iter().flatten())
            .chain(layout.pointwise_coefficients(sums, self.n))
            .collect()
    }

    pub(super) fn fingerprint(&self) -> Result<u64> {
        let (layout, basis) = self.layout()?;
        Ok(mean_fingerprint(self.kind.name(), &layout, basis, self.basis.grid(), self.reference.as_deref()))
    }

    /// The empty partial state (see [`fdp_core::state`]).
    pub(super) fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint().unwrap_or(0), self.layout().map_or(0, |l| l.0.len()))
    }

    /// Adds a part of the data to a partial state: the exact sums of every stage's statistics.
    pub(super) fn update_state(&self, state: &mut SummaryState, curves: &CurveSet) -> Result<()> {
        if curves.grid() != self.basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        let (layout, basis) = self.layout()?;
        state.add(curves.n() as u64, &clipped_sums(&layout, basis, curves, self.reference.as_deref())?)
    }

    /// The summary of a complete state.
    pub(super) fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        check_state_layout(state, &self.empty_state(), Some(self.n))?;
        let (layout, _) = self.layout()?;
        Ok(self.summary_from(&layout, state.sums()))
    }

    /// Everything the stages may need, deterministic in the data: `[mean_i clamp(ln ||X_i||)]`
    /// followed by the clipped mean at every point of the public bound grid (J coefficients each, or
    /// K grid values for Bernstein). The noise then picks one of them.
    pub(super) fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>> {
        if curves.n() != self.n {
            return Err(EstimatorError::Shape { what: "number of curves", expected: self.n, got: curves.n() });
        }
        if curves.grid() != self.basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        let (layout, basis) = self.layout()?;
        let sums = clipped_sums(&layout, basis, curves, self.reference.as_deref())?;
        Ok(self.summary_from(&layout, &sums))
    }
}
