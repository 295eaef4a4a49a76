//! **The pilot stage** (ICLP-l1, IID Laplace, Bernstein): Laplace noise on the leading mean
//! coefficients at the chosen bound, from which the candidates' risks are estimated — an adaptive
//! stage whose member is the pilot at the bound the bound stage chose.

use std::ops::Range;
use std::sync::Arc;

use fdp_core::stages::part;
use fdp_core::{
    Charge, Family, Output as _, OwnError, Release, ReleaseMetadata, StageLaw, StageMechanism, StageRecord, VectorNoise,
};
use fdp_functional::Curve;
use fdp_noise::{Epsilon, NoiseRng, PrivacyGuarantee, Sensitivity, vector::LaplaceVector};

use super::TunedKind;
use super::release::ReleaseChoice;
use super::selection::{argmin, psi_grid, sure_shrinkage};
use super::setup::{TunedSetup, TunedStages};
use crate::error::Result;
use crate::sums::MEAN_ROUNDINGS;

/// The pilots the stage may run: one at each point τ of the public bound grid.
#[derive(Debug, Clone)]
pub(super) struct PilotFamily {
    setup: Arc<TunedSetup>,
    taus: Vec<f64>,
}

impl PilotFamily {
    pub(super) fn new(setup: &Arc<TunedSetup>) -> Self {
        Self { setup: Arc::clone(setup), taus: setup.search.grid(setup.ceiling.value()) }
    }
}

impl Family for PilotFamily {
    /// The index of τ in the bound grid.
    type Choice = usize;
    type Member = Pilot;

    fn choices(&self) -> Vec<usize> {
        (0..self.taus.len()).collect()
    }

    fn member(&self, g: usize, budget: PrivacyGuarantee) -> Result<Option<Pilot>> {
        let width = self.setup.width();
        let noise = self.setup.pilot_noise(self.taus[g], budget.epsilon())?;
        Ok(Some(Pilot { setup: Arc::clone(&self.setup), noise, at: 1 + g * width..1 + (g + 1) * width }))
    }
}

/// **The pilot at one bound**: the leading coefficients of the clipped mean at τ (a public
/// transformation of its block of the summary: [`TunedSetup::pilot_summary`]) plus
/// [`TunedSetup::pilot_noise`].
pub(super) struct Pilot {
    setup: Arc<TunedSetup>,
    noise: LaplaceVector,
    at: Range<usize>,
}

impl Pilot {
    /// What the noise is added to, from the pipeline's summary.
    fn input(&self, summary: &[f64]) -> Result<Vec<f64>> {
        self.setup.pilot_summary(part(summary, self.at.clone())?, self.noise.dim())
    }
}

impl StageLaw for Pilot {
    fn guarantee(&self) -> PrivacyGuarantee {
        self.noise.guarantee()
    }

    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> fdp_core::Result<f64> {
        VectorNoise::loss_ratio(&self.noise, &self.input(a)?, &self.input(b)?)
    }
}

impl StageMechanism for Pilot {
    type Output = Vec<f64>;

    fn release(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> fdp_core::Result<Vec<f64>> {
        Ok(self.noise.release(&self.input(summary)?, rng)?)
    }
}

impl TunedSetup {
    /// The pilot at bound τ and budget ε: Laplace noise on the first J_p = max(4, 2⌊n^{1/3}⌋) mean
    /// coefficients. A record clipped to L2 norm l2 (τ, or τ (Σ w_i)^{1/2} for a sup bound: a record
    /// with |x(t)| <= τ on the grid has ||x||_{L2} <= τ (Σ w_i)^{1/2}) moves them by at most 2 l2/n
    /// in l2, so by 2 l2 sqrt(J_p)/n in l1.
    pub(super) fn pilot_noise(&self, tau: f64, epsilon: f64) -> Result<LaplaceVector> {
        let components = self.basis.len().min((2.0 * (self.n as f64).cbrt().floor()).max(4.0) as usize);
        let l2 = match self.kind {
            TunedKind::Bernstein => tau * self.basis.grid().weights().iter().sum::<f64>().sqrt(),
            _ => tau,
        };
        // Rounding: the clipped mean's, plus a K-term projection for Bernstein.
        let roundings = MEAN_ROUNDINGS + self.basis.n_points() as u32;
        let sensitivity =
            Sensitivity::of_mean(2.0 * l2 * (components as f64).sqrt() / self.n as f64, self.n, roundings)?;
        Ok(LaplaceVector::new(components, sensitivity, Epsilon::new(epsilon)?)?)
    }

    /// The first `components` mean coefficients of a clipped mean (projected first for Bernstein,
    /// whose clipped mean is a grid curve): what the pilot adds noise to.
    pub(super) fn pilot_summary(&self, mean: &[f64], components: usize) -> Result<Vec<f64>> {
        let mut coefficients =
            if matches!(self.kind, TunedKind::Bernstein) { self.basis.project(mean)? } else { mean.to_vec() };
        coefficients.truncate(components);
        Ok(coefficients)
    }

    /// Stages 2-3 of ICLP-l1 / IID Laplace / Bernstein: the pilot at the chosen bound (grid point
    /// `g`), smoothed by SURE; the candidate with the smallest estimated risk (post-processing);
    /// its release.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pilot_then_release(
        &self,
        composed: &TunedStages,
        g: usize,
        tau: f64,
        summary: &[f64],
        rng: &mut NoiseRng,
        charge: Charge,
        stages: &mut Vec<StageRecord>,
    ) -> Result<Release<Curve>> {
        let (pilot_stage, release_stage) = (composed.pilot()?, &composed.release);
        let (eps_pilot, eps_release) = (pilot_stage.guarantee().epsilon(), release_stage.guarantee().epsilon());
        let pilot_member = pilot_stage.member(g)?;
        let pilot_noise = pilot_member.noise;
        let components = pilot_noise.dim();
        let pilot = pilot_member.release(summary, rng, charge)?;
        let v = 2.0 * pilot_noise.scale().powi(2);
        // The pilot smoothed by SURE stands in for the clipped mean and for the target. Measured
        // against an unbiased estimate of each candidate's squared bias (`||B p||² - v Σ ||B φ_k||²`)
        // and a positive-part Wiener plug-in, it chose best on the paper's data and S-1, S-2: the
        // unbiased estimate is right on average but its spread at a 15% pilot is larger than the
        // differences between candidates.
        let lambdas = &self.basis.eigenvalues()[..components];
        let rkhs_eta = 1.0 + 1.0 / (2.0 * self.nu);
        let (_, shrink) = sure_shrinkage(&pilot, &vec![v; components], lambdas, rkhs_eta, &psi_grid(lambdas, rkhs_eta));
        let mut smoothed = vec![0.0; self.basis.len()];
        smoothed.iter_mut().zip(shrink.iter().zip(&pilot)).for_each(|(m, (s, p))| *m = s * p);
        let estimate = self.basis.synthesize(&smoothed)?;
        let plug_in = if matches!(self.kind, TunedKind::Bernstein) { estimate.clone() } else { smoothed };
        let risks = self.candidate_risks(tau, eps_release, &plug_in, &estimate)?;
        let (parameter, risk) = argmin(&risks);
        stages.push(StageRecord {
            stage: "pilot".into(),
            epsilon: eps_pilot,
            delta: 0.0,
            outcome: format!("{components} leading coefficients; chose {} = {parameter}", self.parameter_name()),
        });
        let release =
            release_stage.release(ReleaseChoice::Candidate(g, parameter), summary, rng, charge)?.into_curve()?;
        stages.push(StageRecord {
            stage: "release".into(),
            epsilon: eps_release,
            delta: 0.0,
            outcome: release.output().describe(),
        });
        stages.push(StageRecord {
            stage: "accuracy".into(),
            epsilon: 0.0,
            delta: 0.0,
            outcome: format!("estimated squared error = {risk:.6e} (the pilot's risk estimate: post-processing)"),
        });
        let (curve, metadata) = release.into_parts();
        Ok(Release::new(curve, ReleaseMetadata { own_error: Some(OwnError::estimate_only(risk)), ..metadata }))
    }
}
