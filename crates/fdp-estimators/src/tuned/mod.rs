//! **Private tuning end to end** (docs/DESIGN.md section 12): the clipping bound and the
//! regularisation of a mean mechanism chosen under differential privacy, with their cost charged,
//! in one mechanism with one total (ε, δ).
//!
//! [`TunedMean`] runs three stages on the records, each charged to the [`Session`](fdp_core::Session)
//! ledger and recorded in the release's [`stages`](fdp_core::ReleaseMetadata::stages):
//!
//! 1. **bound** (a share of ε set from n and ε: 16% at n ε = 100, 9% at 300, 3% at 3000; see
//!    [`BudgetSplit`]): a private clipping bound `τ̂` in the norm the mechanism clips in (see
//!    [`BoundSearch`]); the public bound stays the hard ceiling;
//! 2. **pilot** (default 15%, only where the tuning parameter changes the noise: ICLP-l1's
//!    threshold, IID Laplace's M, Bernstein's degree): a small private release of the leading mean
//!    coefficients, smoothed by SURE, from which the risk of every candidate is estimated;
//! 3. **release** (the rest): the mechanism at `τ̂` and the chosen parameter.
//!
//! For ICLP-RKHS and the Gaussian process the noise is calibrated so that it does **not** depend
//! on ψ, so ψ is chosen *after* the release, from the release alone — by marginal likelihood,
//! tested against the public centre with Stein's unbiased risk estimate (docs/DESIGN.md section
//! 16.5): post-processing, which costs nothing (see [`TunedMean::iclp_rkhs`]).
//!
//! Where it buys a private bound, ICLP-RKHS clips in, and releases, only the leading
//! `J* = max(4, round(0.7 (n ε)^0.6 max(1, n ε/150)^0.6))` components of the basis (a public rule,
//! [`TunedMean::truncation`]; docs/DESIGN.md section 16.8): the records' trailing coefficients no
//! longer inflate the bound, and so the noise on the leading ones. Above n ε ≈ 196 the kept
//! components after the leading `J_a = max(4, round(0.8 (n ε)^0.6))` count with weight 1/2 in the
//! clip norm (the soft tail, [`TunedMean::soft_tail`], section 16.9); with a public range the
//! search runs below the kept block's own ceiling (section 16.10).
//!
//! ## The stages, file by file
//!
//! A `TunedMean` is a [`Sequential`] composition of stage mechanisms (see
//! [`fdp_core::stages`]): its `stages()`, guarantee and exact losses are read off the stages, and
//! its release runs them in order with the post-processing between them.
//!
//! - `bound.rs`: the split of ε ([`BudgetSplit`]) and the bound stage ([`BoundSearch`]: Laplace
//!   noise on the mean clamped log-norm, snapped up to a public grid);
//! - `pilot.rs`: the pilot stage — at each bound of the grid, Laplace noise on the leading mean
//!   coefficients (an adaptive stage: its member is chosen by the bound stage's output);
//! - `release.rs`: the release stage — at each bound, the matched noise (ICLP-RKHS, GP) or each
//!   buildable candidate mechanism (ICLP-l1, IID Laplace, Bernstein), or the binned family: one
//!   adaptive stage at one budget; and the post-processing of the matched release;
//! - `binned.rs`: the pointwise-clipped binned family and its choice from the bound stage (issue 23);
//! - `selection.rs`: post-processing without budget — SURE, the marginal likelihood tested against
//!   the public centre, the error estimates, the pilot's risk of each candidate;
//! - `setup.rs`: the public quantities, the summary's layout (the data pass) and the composition;
//! - `mechanism.rs`: [`TunedMean`] as a [`Mechanism`]: the stages in order, the records of a release.

mod binned;
mod bound;
mod mechanism;
mod pilot;
mod release;
mod selection;
mod setup;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use fdp_core::error::public_range;
use fdp_core::{ClipNorm, ClippingBound, Mechanism, Sequential, StagePlan};
use fdp_data::CurveSet;
use fdp_mercer::MercerBasis;
use fdp_noise::{Delta, Epsilon};
use serde::{Deserialize, Serialize};

pub use binned::FamilyChoice;
pub(crate) use bound::BoundThenRelease;
pub use bound::{BoundSearch, BudgetSplit};

use crate::error::{EstimatorError, Result};
use crate::mean::MeanSetup;
use crate::mechanism::LeadingBlocks;
use selection::argmin;
use setup::{TunedSetup, TunedStages};

/// The mean mechanisms a [`TunedMean`] can tune, with what is tuned.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum TunedKind {
    /// ICLP-RKHS (coefficient-l1 bound); ψ from the release (post-processing).
    IclpRkhs,
    /// The Gaussian process (L2 bound, (ε, δ)); ψ from the release (post-processing).
    GaussianProcess(Delta),
    /// ICLP-l1 (L2 bound); the threshold level ψ from a pilot.
    IclpL1,
    /// IID Laplace (L2 bound); the number of components M from a pilot.
    IidLaplace,
    /// Bernstein (sup bound); the lattice degree from a pilot.
    Bernstein,
}

impl TunedKind {
    fn name(self) -> &'static str {
        match self {
            Self::IclpRkhs => "tuned_iclp_rkhs",
            Self::GaussianProcess(_) => "tuned_gaussian_process",
            Self::IclpL1 => "tuned_iclp_l1",
            Self::IidLaplace => "tuned_iid_laplace",
            Self::Bernstein => "tuned_bernstein",
        }
    }

    fn norm(self) -> ClipNorm {
        match self {
            Self::IclpRkhs => ClipNorm::CoefficientL1,
            Self::GaussianProcess(_) | Self::IclpL1 | Self::IidLaplace => ClipNorm::L2,
            Self::Bernstein => ClipNorm::Sup,
        }
    }

    /// ψ is chosen after the release (no pilot).
    fn tunes_after_release(self) -> bool {
        matches!(self, Self::IclpRkhs | Self::GaussianProcess(_))
    }
}

/// What the pipeline (or the oracle) chose.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TunedChoice {
    /// The clipping bound.
    pub tau: f64,
    /// ψ (ICLP-RKHS, GP, ICLP-l1), M (IID Laplace) or the degree (Bernstein).
    pub parameter: f64,
    /// For [`TunedMean::oracle`]: the exact `E||μ̃ - target||²` of that choice.
    pub expected_sq_error: f64,
}

/// **A mean curve with its clipping bound and regularisation chosen privately**: bound → (pilot) →
/// release as one mechanism with one total (ε, δ) (see the [module docs](self)).
///
/// ```
/// use fdp_core::{ClippingBound, Session};
/// use fdp_estimators::TunedMean;
/// use fdp_mercer::{BasisOptions, MercerBasis, Stationary};
/// use fdp_noise::Epsilon;
/// let curves = fdp_data::example_curves(300, 7)?;
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, curves.grid().clone(), BasisOptions::default())?;
/// let mean = TunedMean::iclp_rkhs(&basis, 300, Epsilon::new(1.0)?, ClippingBound::coefficient_l1(10.0)?)?;
/// let mut session = Session::pure(Epsilon::new(1.0)?)?;
/// let release = session.release(&mean, &curves)?;
/// assert_eq!(session.ledger().len(), 2);                    // the bound, then the release
/// assert_eq!(release.metadata().stages.len(), 4);            // ... ψ from the release and its own error (free)
/// assert!(release.metadata().clipping.unwrap().value() <= 10.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TunedMean {
    /// The public quantities every stage reads.
    setup: Arc<TunedSetup>,
    /// The stages, composed: what the ledger charges and what the release runs.
    stages: Sequential<TunedStages>,
}

impl TunedMean {
    /// **ICLP-RKHS, privately tuned.** Records are clipped in the coefficient l1 norm at the private
    /// τ̂; the mean coefficients get iid Laplace noise of scale `b = (2τ̂/n)/ε_release`, and the
    /// release is `μ̃_k = s_k (X̄_k + b L_k)`, `s_k = λ_k^η/(λ_k^η + ψ)`, with ψ chosen from the release.
    ///
    /// This is the ICLP of the RKHS-smoothed mean with the noise covariance matched to the
    /// sensitivity: the component scales are `b s_k` (an ICLP whose operator has eigenvalues `s_k²`
    /// in the kernel's eigenbasis) instead of Theorem 11's `√λ_k Δ/ε`. A replaced record moves the
    /// smoothed mean by `d_k = s_k (X_k - X'_k)/n`, so `Σ_k |d_k| / (b s_k) <= 2τ̂/(n b) = ε`:
    /// ε-DP for **every** ψ at once. Theorem 11's scales are `√λ_k (2τ/n) max_j s_j/√λ_j / ε >= b s_k`
    /// for every k, so this release is less noisy on every component, and since the noise no
    /// longer depends on ψ, ψ is post-processing: chosen on the public path (`{0} ∪ {λ_j^η}`, then
    /// towards the centre) by the marginal likelihood of `y = X̄ + bL`, and tested against the centre
    /// with SURE, `Σ_k (1 - s_k)²(y_k² - v) + s_k² v` (`v = Var(bL)`), an unbiased estimate of the
    /// risk of `s ∘ y` for any fixed ψ, at no privacy cost (docs/DESIGN.md section 16.5).
    ///
    /// Above n ε ≈ 196 the components after the leading `J_a` count with weight 1/2 in the clip
    /// norm ([`soft_tail`](Self::soft_tail)): the noise is `b L_k` on `w_k X̄_k`, so coefficient k
    /// gets `b/w_k`, and the selection weighs each coefficient by its own variance `v/w_k²`.
    pub fn iclp_rkhs(basis: &MercerBasis, n: usize, epsilon: Epsilon, ceiling: ClippingBound) -> Result<Self> {
        Self::new(TunedKind::IclpRkhs, basis, n, epsilon, ceiling)
    }

    /// **Gaussian process, privately tuned ((ε, δ)-DP).** As [`iclp_rkhs`](Self::iclp_rkhs) with
    /// records clipped in L2 and isotropic Gaussian noise on the mean coefficients calibrated by the
    /// analytic Gaussian mechanism to the l2 sensitivity `2τ̂/n` (the Gaussian process whose
    /// covariance has eigenvalues `s_k²`); ψ from the release as there. δ is spent by the release.
    pub fn gaussian_process(
        basis: &MercerBasis,
        n: usize,
        epsilon: Epsilon,
        delta: Delta,
        ceiling: ClippingBound,
    ) -> Result<Self> {
        Self::new(TunedKind::GaussianProcess(delta), basis, n, epsilon, ceiling)
    }

    /// **ICLP-l1, privately tuned**: the threshold level ψ (η = 2(1 + 1/ν)) chosen from a pilot
    /// over 13 candidates `ψ_plug-in · 10^{j/2}`, j = -6..6.
    pub fn iclp_l1(basis: &MercerBasis, n: usize, epsilon: Epsilon, ceiling: ClippingBound) -> Result<Self> {
        Self::new(TunedKind::IclpL1, basis, n, epsilon, ceiling)
    }

    /// **IID Laplace, privately tuned**: M chosen from a pilot over `1..=min(J, 4⌊n^{1/3}⌋)`.
    pub fn iid_laplace(basis: &MercerBasis, n: usize, epsilon: Epsilon, ceiling: ClippingBound) -> Result<Self> {
        Self::new(TunedKind::IidLaplace, basis, n, epsilon, ceiling)
    }

    /// **Bernstein, privately tuned**: the degree chosen from a pilot (released in `basis`) over
    /// {2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40}.
    pub fn bernstein(basis: &MercerBasis, n: usize, epsilon: Epsilon, ceiling: ClippingBound) -> Result<Self> {
        Self::new(TunedKind::Bernstein, basis, n, epsilon, ceiling)
    }

    /// Any kind.
    pub fn new(
        kind: TunedKind,
        basis: &MercerBasis,
        n: usize,
        epsilon: Epsilon,
        ceiling: ClippingBound,
    ) -> Result<Self> {
        ceiling.require(kind.norm(), kind.name())?;
        // Validates n and n·τ at the ceiling (every τ̂ is at most the ceiling).
        MeanSetup::new(n, epsilon, ceiling)?;
        if matches!(kind, TunedKind::Bernstein) {
            fdp_functional::numerics::check_bernstein_domain(basis.grid())?;
        }
        let nu = crate::tuning::decay_nu(basis)?;
        let eta = if matches!(kind, TunedKind::IclpL1) { 2.0 * (1.0 + 1.0 / nu) } else { 1.0 + 1.0 / (2.0 * nu) };
        let setup = TunedSetup {
            kind,
            basis: basis.clone(),
            full_basis: basis.clone(),
            basis_description: fdp_functional::describe::basis(basis)?,
            n,
            epsilon,
            ceiling,
            given: (ceiling, BoundSearch::default()),
            reference: None,
            split: BudgetSplit::default(),
            search: BoundSearch::default(),
            nu,
            eta,
            range: None,
            family: FamilyChoice::default(),
            blocks: LeadingBlocks::default(),
            weights: None,
        };
        Self::build(setup)
    }

    /// **A public range** `[lo, hi]` of the curves' values (from what is measured, never from the
    /// records): every release is clamped to it pointwise ([`Curve::clamped`](fdp_functional::Curve::clamped), post-processing:
    /// with quadrature weights the L2 projection onto a convex set holding the sample mean of
    /// in-range records, so it cannot increase the error). Recorded as the `range` stage.
    ///
    /// **The family choice.** With a range, ICLP-RKHS (unless [`FamilyChoice::Matched`]) may
    /// release a **pointwise-clipped binned Laplace mean** instead: each record clamped to
    /// `[lo, hi]` pointwise and averaged (quadrature weights) over `K' = max(2, round((n
    /// ε_release)^{1/3} / 2))` contiguous bins of grid points (half the usual `(n ε)^{1/3}`: the
    /// interpolation removes much of the coarse bins' bias; on the cells of
    /// `examples/studies/robust_accuracy` half as many bins had 0.6-0.85x the error), the mean over records
    /// released as its K' averaging Haar coefficients (the level, then each run's contrast
    /// `(mean_L - mean_R)/2`) plus Laplace noise of scale `(2R/(n ε_release)) max_σ ‖Hσ‖₁` each
    /// (`R = (hi - lo)/2`; one record moves each bin mean by at most `2R/n`, and the l1 norm of
    /// the coefficients' move is convex, so largest at a vertex of that box: ε_release-DP; two bins
    /// cost what one bin mean does), shrunk towards the reference by SURE (a factor for the level,
    /// one for the contrasts) and
    /// interpolated linearly between the bins' centres (both post-processing). It is chosen when
    /// `n ε_release < 166`, a private bound is bought (share > 0) and the bound stage's released
    /// mean clamped log coefficient-l1 norm `L̂` satisfies `L̂ - ln(hi - lo) > -0.25` (rough
    /// records: their coefficient-l1 norm is about the range's width; `-0.8` when the matched
    /// family keeps only the leading components, [`truncation`](Self::truncation); both lowered by
    /// `0.3 (1/φ - 1)` below n ε = 75, where the bound's share is cut by φ, docs/DESIGN.md section
    /// 16.16). With a range the bound's share is cut at small n ε: `φ = min(1, 0.6 (n ε / 30)^0.56)`
    /// times the split model's share (0.6 at n ε = 30; section 16.16). The choice is a function of
    /// the bound stage's output and public quantities: **post-processing**. Both families' releases
    /// are ε_release-DP for every bound the first stage can choose, so by sequential composition
    /// the pipeline is ε-DP with the same stages (bound, release).
    ///
    /// **The block's own frame** (docs/DESIGN.md section 16.10). With a range, ICLP-RKHS searches
    /// its private bound below the ceiling of the components it keeps, `F_b = R min(Σ_k w_k Σ_i
    /// |w_i φ_k(t_i)|, (Σ_k w_k² Σ_i w_i)^{1/2})` (R the largest distance from the reference to an
    /// end of the range; [`ceiling`](Self::ceiling)), when that is below the ceiling given — also
    /// a bound given by hand: every in-range record is within `F_b` — with the floor of the given
    /// search kept, so the bound stage's search is narrower and the budget split gives the release
    /// more of ε. Public values, fixed here.
    pub fn within(self, lo: f64, hi: f64) -> Result<Self> {
        let range = Some(public_range(lo, hi)?);
        self.rebuilt(|setup| setup.range = range)
    }

    /// Whether ICLP-RKHS may switch to the pointwise-clipped binned family (see
    /// [`within`](Self::within)); [`FamilyChoice::Matched`] keeps the matched ICLP-RKHS always.
    pub fn with_family(self, family: FamilyChoice) -> Result<Self> {
        self.rebuilt(|setup| setup.family = family)
    }

    /// The family choice (see [`with_family`](Self::with_family)).
    pub fn family(&self) -> FamilyChoice {
        self.setup.family
    }

    /// The number of bins `K'` of the pointwise-clipped binned family when it is a candidate
    /// (ICLP-RKHS with [`FamilyChoice::Private`], a public range, a 1-D grid, a private bound bought
    /// and `n ε_release < 166`), else `None`. A function of public quantities only.
    pub fn binned_candidate(&self) -> Option<usize> {
        self.setup.binned_candidate()
    }

    /// **The small-n ε truncation** (docs/DESIGN.md section 16.8): the number of leading basis
    /// components `J* = max(4, round(0.7 (n ε)^{0.6} max(1, n ε / 150)^{0.6}))` the matched
    /// ICLP-RKHS clips in and releases when a private bound is bought, or `None` when it keeps the
    /// whole basis (every other kind, J* at least the basis' size, or the public ceiling alone).
    /// Public: from n, ε and the split.
    pub fn truncation(&self) -> Option<usize> {
        self.setup.truncation()
    }

    /// **The soft tail** (docs/DESIGN.md section 16.9): `Some(J_a)` when the matched ICLP-RKHS
    /// clips in the weighted norm `Σ_{k ≤ J_a} |X_k| + ½ Σ_{k > J_a} |X_k|` over the components it
    /// keeps, `J_a = max(4, round(0.8 (n ε)^{0.6}))` (the trailing components then carry twice the
    /// noise sd, and the shrinkage weighs them accordingly); `None` when every kept component counts
    /// fully (n ε below about 196, no private bound bought, or another kind). Public: from n, ε and
    /// the split.
    pub fn soft_tail(&self) -> Option<usize> {
        self.setup.soft_tail()
    }

    /// The ceiling the private bound is searched below: the one given, or with a public range the
    /// kept components' own ceiling when lower ([`within`](Self::within)). Public.
    pub fn ceiling(&self) -> ClippingBound {
        self.setup.ceiling
    }

    /// Centre records at a public reference curve before clipping (added back to the release).
    pub fn centred_at(self, reference: Vec<f64>) -> Result<Self> {
        let setup = &self.setup;
        MeanSetup::new(setup.n, setup.epsilon, setup.ceiling)?.centred_at(reference.clone())?;
        if reference.len() != setup.basis.n_points() {
            return Err(EstimatorError::Shape {
                what: "reference curve length",
                expected: setup.basis.n_points(),
                got: reference.len(),
            });
        }
        self.rebuilt(|setup| setup.reference = Some(reference))
    }

    /// Another budget split (validated like the rest: a pipeline that builds releases).
    pub fn with_split(self, split: BudgetSplit) -> Result<Self> {
        self.rebuilt(|setup| setup.split = split)
    }

    /// Another bound search (validated like the rest: a pipeline that builds releases).
    pub fn with_bound_search(self, search: BoundSearch) -> Result<Self> {
        self.rebuilt(|setup| setup.given.1 = search)
    }

    /// The mechanism with `edit` applied to its public quantities, built again.
    fn rebuilt(self, edit: impl FnOnce(&mut TunedSetup)) -> Result<Self> {
        let mut setup = Arc::unwrap_or_clone(self.setup);
        edit(&mut setup);
        Self::build(setup)
    }

    /// **The stages composed, and everything `privatize` builds, built once here**, so that a
    /// pipeline that builds releases and a [`Session`](fdp_core::Session) never charges for a
    /// release that then fails. Every object depends on public quantities only (n, ε, the split,
    /// the ceiling's grid, the basis, the reference): the bound stage's noise; at **every** point τ
    /// of the public bound grid (any of them can be chosen) the pilot's noise and every member of
    /// the release stage — the matched noise with its clipping bound and each ψ of the SURE grid,
    /// each buildable candidate (at least one per τ: the pilot chooses among them), the binned
    /// family — each checked to spend exactly its stage's budget ([`fdp_core::Adaptive`]); and the
    /// stages' budgets checked to add up to the guarantee ([`Sequential`]). What remains in
    /// `privatize` are shape checks of the summary, which a summary from
    /// [`summarize`](Mechanism::summarize) or a checked state always passes.
    fn build(mut setup: TunedSetup) -> Result<Self> {
        (setup.ceiling, setup.search) = setup.given;
        let keep = setup.truncation().unwrap_or(setup.full_basis.len());
        if keep != setup.basis.len() {
            setup.basis = crate::mechanism::leading_block(&setup.full_basis, keep)?;
            setup.blocks = LeadingBlocks::default();
        }
        setup.weights = setup.soft_tail_weights();
        if let Some((ceiling, search)) = setup.block_frame()? {
            (setup.ceiling, setup.search) = (ceiling, search);
        }
        setup.check()?;
        let setup = Arc::new(setup);
        let stages = TunedStages::compose(&setup)?;
        Ok(Self { setup, stages })
    }

    /// What is tuned, and how.
    pub fn kind(&self) -> TunedKind {
        self.setup.kind
    }

    /// `(ε_bound, ε_pilot, ε_release)`, adding up to ε (0 for a stage that spends nothing or does
    /// not exist): the budgets of the composed stages ([`plan`](Self::plan)), which the Session
    /// charges and the release's noise is calibrated to.
    pub fn epsilons(&self) -> (f64, f64, f64) {
        let plan = self.stages.plan();
        (plan.epsilon("bound"), plan.epsilon("pilot"), plan.epsilon("release"))
    }

    /// **The charged stages and their total** (`bound`, `pilot`, `release`; a stage with no share
    /// is free and not charged), read off the composed stage mechanisms: `stages()` is this, and
    /// `privatize` runs exactly these stages.
    pub fn plan(&self) -> &StagePlan {
        self.stages.plan()
    }
    /// **The oracle (not private; for benchmarks only).** The bound statistic computed exactly (the
    /// geometric mean of the norms times the factor, on the same grid) and the candidate with the
    /// smallest exact `E||μ̃ - target||²` at the **full** ε, knowing `target` (e.g. the sample mean).
    /// It reads the data without noise: never release anything chosen by it.
    pub fn oracle(&self, curves: &CurveSet, target: &[f64]) -> Result<TunedChoice> {
        let summary = self.summarize(curves)?;
        let setup = &self.setup;
        let grid = setup.search.grid(setup.ceiling.value());
        let g = setup.search.snap(&grid, summary[0], setup.search.factor(setup.n, setup.epsilon.get()));
        let mean = &summary[1 + g * setup.width()..1 + (g + 1) * setup.width()];
        let centred: Vec<f64> = match &setup.reference {
            Some(r) => target.iter().zip(r).map(|(t, r)| t - r).collect(),
            None => target.to_vec(),
        };
        let epsilon = setup.epsilon.get();
        let risks = setup.candidate_risks(grid[g], epsilon, mean, &centred)?;
        let (parameter, expected_sq_error) = argmin(&risks);
        Ok(TunedChoice { tau: grid[g], parameter, expected_sq_error })
    }

    /// **For audits: the exact privacy loss of each stage** between the summaries `a` and `b` of two
    /// neighbouring datasets, divided by that stage's budget and maximised over every bound (and
    /// parameter) the earlier stages could have chosen, computed from the lattice indices the
    /// releases are centred at ([`fdp_noise::exact_loss`]): the composition's
    /// [`exact_losses`](Sequential::exact_losses), `bound` (0 when free), `pilot` (pilot-tuned
    /// kinds), `release`. For the Gaussian-process release the ratio is the analytic-Gaussian one
    /// (at most 1 iff (ε, δ)-DP on the pair). By sequential composition the pipeline is DP on the
    /// pair at its total (ε, δ) if every ratio is at most 1.
    pub fn stage_losses(&self, a: &[f64], b: &[f64]) -> Result<Vec<(&'static str, f64)>> {
        self.setup.summary_layout(a)?;
        self.setup.summary_layout(b)?;
        self.stages.exact_losses(a, b)
    }

    /// **For analyses: a bound `L` on the log-likelihood ratio of the releases** from the summaries
    /// `a` and `b` of any two data sets of the same public n (not only neighbours): every outcome of
    /// the stages has `|ln P(o | a) − ln P(o | b)| ≤ L`, so every statistic `g ≥ 0` of a release
    /// (any post-processing) has `E_a g ≤ e^L E_b g` (docs/DESIGN.md section 16.17). By the chain
    /// rule of the stages' densities, `L = Σ_s ε_s loss_s`, each stage's exact loss on the lattice
    /// ([`stage_losses`](Self::stage_losses)) times its budget. With a private bound every member of
    /// the release stage can run (the bound's noise reaches every grid point), so its loss is the
    /// worst member's, and L is an upper bound. At the public ceiling only the ceiling's member runs
    /// and, for ICLP-RKHS, L is that member's exact loss: the supremum itself. Pure ε-DP kinds only;
    /// the Gaussian process is refused (its ratio is the analytic-Gaussian one, not a log-likelihood
    /// ratio).
    pub fn log_likelihood_ratio_bound(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        if self.setup.delta().is_some() {
            return Err(EstimatorError::BadParameter {
                name: "log-likelihood ratio bound",
                value: self.kind().name().into(),
                reason: "defined for pure ε-DP stages; the Gaussian process's loss is not a log-likelihood ratio",
            });
        }
        let (_, grid) = self.setup.summary_layout(a)?;
        self.setup.summary_layout(b)?;
        if self.stages.parts().bound.is_none() && self.setup.kind.tunes_after_release() {
            let member = self.stages.parts().release.member(release::ReleaseChoice::Matched(grid.len() - 1))?;
            let ratio = fdp_core::stages::StageLaw::loss_ratio(&member, a, b)?;
            return Ok(ratio * self.plan().epsilon("release"));
        }
        Ok(self.stage_losses(a, b)?.iter().map(|(stage, loss)| loss * self.plan().epsilon(stage)).sum())
    }
}
