//! [`TunedMean`] as a [`Mechanism`]: the composed stages run in order, with the post-processing
//! between them; the data pass and the charge are the setup's and the composition's.

use fdp_core::{
    Accuracy, Charge, Mechanism, MergeableMechanism, Release, ReleaseMetadata, Stage, StageLaw, StageMechanism,
    StageRecord, SummaryState, Tuning,
};
use fdp_data::CurveSet;
use fdp_functional::Curve;
use fdp_noise::{NoiseRng, PrivacyGuarantee};

use super::TunedMean;
use super::release::ReleaseChoice;
use super::setup::{TunedSetup, TunedStages};
use crate::error::Result;

/// Partial states hold the exact sums of every stage's statistics; see [`fdp_core::state`].
impl MergeableMechanism<CurveSet<'_>> for TunedMean {
    fn empty_state(&self) -> SummaryState {
        self.setup.empty_state()
    }

    fn update_state(&self, state: &mut SummaryState, curves: &CurveSet) -> Result<()> {
        self.setup.update_state(state, curves)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        self.setup.state_summary(state)
    }
}

impl Mechanism<CurveSet<'_>> for TunedMean {
    type Output = Curve;

    fn name(&self) -> &'static str {
        self.setup.kind.name()
    }

    fn n(&self) -> Option<usize> {
        Some(self.setup.n)
    }

    /// The composition's guarantee: what its stages add up to (checked when it was built).
    fn guarantee(&self) -> PrivacyGuarantee {
        self.stages.guarantee()
    }

    /// The bound, the pilot (if any) and the release, each charged on its own: the composition's.
    fn stages(&self) -> Vec<Stage> {
        self.stages.stages()
    }

    /// Everything the stages may need, deterministic in the data: `[mean_i clamp(ln ||X_i||)]`
    /// followed by the clipped mean at every point of the public bound grid (J coefficients each, or
    /// K grid values for Bernstein). The noise then picks one of them.
    fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>> {
        self.setup.summarize(curves)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Release<Curve>> {
        self.setup.privatize(self.stages.parts(), summary, rng, charge)
    }

    /// **An upper bound, labelled as one** ([`Accuracy::upper_bound`]): the release stage's noise
    /// at the public ceiling (the most it can be: a private bound below the ceiling and every
    /// shrinkage only lower it), and with a public range ([`TunedMean::within`]) at most the
    /// range's squared diameter `(hi - lo)² Σ w_i`, which no clamped release can exceed against a
    /// mean in the range. When the binned family can be chosen, the larger of that noise and the
    /// binned family's before shrinkage, `2 b² Σ_j G_jj` (b the scale on each Haar coefficient, G
    /// the Gram matrix of the Haar synthesis in the bins' weights; its binning bias is not included; the
    /// diameter caps both). When the matched family keeps only the leading `J*` components
    /// ([`TunedMean::truncation`]), it adds `F²` (F the ceiling as given, over the whole basis):
    /// for records within it the energy of their mean's dropped components is at most
    /// `(Σ_{k>J*} |m_k|)² ≤ F²`; with a range, at most `R² Σ w_i` if smaller (Bessel, R the largest
    /// distance from the reference to an end of the range). It is not an estimate: the realised
    /// error is typically 2-300x lower
    /// (`docs/design-notes/robust-after.txt`); each release carries its own estimate in its
    /// `accuracy` stage.
    fn accuracy(&self) -> Accuracy {
        self.setup.accuracy()
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<fdp_core::Result<Vec<(&'static str, f64)>>> {
        Some(self.stage_losses(a, b))
    }
}

impl TunedSetup {
    /// The stages of `composed` in order, with the post-processing between them: the bound (or
    /// the public ceiling), the family choice, the release (the matched noise then ψ, or the pilot
    /// then the chosen candidate, or the binned family), the clamp to the range.
    pub(super) fn privatize(
        &self,
        composed: &TunedStages,
        summary: &[f64],
        rng: &mut NoiseRng,
        charge: Charge,
    ) -> Result<Release<Curve>> {
        let (_, grid) = self.summary_layout(summary)?;
        let eps_bound = composed.bound.as_ref().map_or(0.0, |bound| bound.guarantee().epsilon());
        // Stage 1: the private bound (or, when n ε is too small for it to pay, the public ceiling).
        // The bound stage's release and the scale of its Laplace noise (`None` at the ceiling).
        let (g, bound_release) = match &composed.bound {
            Some(bound) => {
                let log_mean = bound.release(summary, rng, charge)?[0];
                let g = self.search.snap(&grid, log_mean, self.search.factor(self.n, self.epsilon.get()));
                (g, Some((log_mean, bound.noise().scale())))
            }
            None => (grid.len() - 1, None),
        };
        let released_log = bound_release.map(|(log_mean, _)| log_mean);
        let tau = grid[g];
        let mut stages = vec![StageRecord {
            stage: "bound".into(),
            epsilon: eps_bound,
            delta: 0.0,
            outcome: if eps_bound > 0.0 {
                format!("tau = {tau:.6e} ({:?}; ceiling {:.6e})", self.kind.norm(), self.ceiling.value())
            } else {
                format!("tau = {tau:.6e} ({:?}): the public ceiling, nothing spent (n eps too small)", self.kind.norm())
            },
        }];
        // The family: post-processing of the bound stage's release (see `within`).
        let binned = self.choose_family(released_log, &mut stages)?;
        let release = if let Some(bins) = &binned {
            let member = composed.release.member(ReleaseChoice::Binned)?;
            self.binned_release(&member, bins, summary, rng, charge, &mut stages)?
        } else if self.kind.tunes_after_release() {
            let member = composed.release.member(ReleaseChoice::Matched(g))?;
            self.release_then_tune(&member, tau, bound_release, summary, rng, charge, &mut stages)?
        } else {
            self.pilot_then_release(composed, g, tau, summary, rng, charge, &mut stages)?
        };
        let (mut curve, metadata) = release.into_parts();
        if let Some((lo, hi)) = self.range {
            let (clamped, moved) = curve.clamped(lo, hi)?;
            curve = clamped;
            stages.push(StageRecord {
                stage: "range".into(),
                epsilon: 0.0,
                delta: 0.0,
                outcome: format!(
                    "clamped to the public range [{lo:.6e}, {hi:.6e}]: {moved} grid points moved (post-processing)"
                ),
            });
        }
        let metadata = ReleaseMetadata {
            mechanism: self.kind.name().into(),
            guarantee: self.guarantee(),
            tuning: Tuning::Private,
            stages,
            ..metadata
        };
        Ok(Release::new(curve, metadata))
    }

    /// The preview: see [`Mechanism::accuracy`] for [`TunedMean`].
    pub(super) fn accuracy(&self) -> Accuracy {
        let (_, _, eps_release) = self.split_budget();
        let ceiling = self.ceiling.value();
        let noise = if self.kind.tunes_after_release() {
            self.matched_noise(ceiling, eps_release)
                .map_or(f64::INFINITY, |noise| self.noise_variances(noise.variance()).iter().sum::<f64>())
        } else {
            self.candidates(ceiling)
                .into_iter()
                .filter_map(|p| self.candidate(ceiling, eps_release, p).ok())
                .map(|c| c.accuracy().expected_sq_error)
                .fold(0.0, f64::max)
        };
        // The binned family's noise before shrinkage, `2 b² Σ_j G_jj` (its Haar coefficients' noise
        // rebuilt on the bins), when it can be chosen.
        let total: f64 = self.basis.grid().weights().iter().sum();
        let binned = match self.pointwise() {
            Ok(Some(bins)) => self
                .binned_noise(&bins, eps_release)
                .map_or(f64::INFINITY, |l| TunedSetup::binned_noise_energy(&bins, 2.0 * l.scale() * l.scale())),
            _ => 0.0,
        };
        // The small-n ε truncation drops the components beyond J*: for records within the given
        // ceiling F over the whole basis (the assumption of this bound) their mean's energy there is
        // at most `(Σ_{k>J*} |m_k|)² ≤ F²`, and for a mean in a public range at most its squared
        // L²(w) distance from the reference, `R² Σ w_i` (Bessel). Not the block's own ceiling,
        // which bounds only the kept components.
        let given = self.given.0.value();
        let dropped = match (self.is_truncated(), self.range_radius()) {
            (false, _) => 0.0,
            (true, Some(radius)) => (given * given).min(radius * radius * total),
            (true, None) => given * given,
        };
        Accuracy::at_most((noise + dropped).max(binned).min(self.diameter()))
    }
}
