//! **The release stage**: the candidates a release may run — the matched noise of ICLP-RKHS and
//! the GP at each bound, a fixed mechanism of a pilot-tuned kind at each (bound, parameter), the
//! binned family — as one adaptive stage at one budget, and the release's post-processing.

use std::ops::Range;
use std::sync::Arc;

use fdp_core::stages::part;
use fdp_core::{
    Accuracy, Charge, ClippingBound, Family, Mechanism, Regularisation, Release, ReleaseMetadata, SensitivityNorm,
    StageLaw, StageMechanism, StageRecord, Tuning, VectorNoise,
};
use fdp_data::CurveSet;
use fdp_functional::{Curve, Representation};
use fdp_noise::exact_loss::laplace_loss;
use fdp_noise::vector::{GaussianVector, LaplaceVector};
use fdp_noise::{Epsilon, NoiseRng, PrivacyGuarantee, Sensitivity};

use super::TunedKind;
use super::selection::{SureChoice, clipping_bias, clipping_factors, dropped_energy, guarded_sure, rkhs_path};
use super::setup::{TAIL_WEIGHT, TunedSetup};
use crate::error::{EstimatorError, Result};
use crate::mean::{BasisMean, BernsteinMean, LaplaceMean, MeanSetup};
use crate::mechanism::CurveMechanism as _;
use crate::sums::{MEAN_ROUNDINGS, PointwiseBins};

/// A fixed mechanism a pilot can choose.
pub(super) enum Candidate {
    Basis(Box<LaplaceMean>),
    Bernstein(Box<BernsteinMean>),
}

impl Candidate {
    /// The summary from the clipped mean (J coefficients, or the grid curve for Bernstein).
    pub(super) fn summary(&self, mean: &[f64]) -> Vec<f64> {
        match self {
            Self::Basis(m) => m.shape(mean),
            Self::Bernstein(m) => m.lattice_values(mean),
        }
    }

    pub(super) fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>> {
        match self {
            Self::Basis(m) => m.estimate_curve(summary),
            Self::Bernstein(m) => m.estimate_curve(summary),
        }
    }

    pub(super) fn accuracy(&self) -> Accuracy {
        match self {
            Self::Basis(m) => m.accuracy(),
            Self::Bernstein(m) => m.accuracy(),
        }
    }

    pub(super) fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Release<Curve>> {
        match self {
            Self::Basis(m) => m.privatize(summary, rng, charge),
            Self::Bernstein(m) => m.privatize(summary, rng, charge),
        }
    }
}

/// The noise of the after-release kinds.
pub(super) enum MatchedNoise {
    Laplace(LaplaceVector),
    Gaussian(GaussianVector),
}

impl MatchedNoise {
    pub(super) fn variance(&self) -> f64 {
        match self {
            Self::Laplace(l) => 2.0 * l.scale() * l.scale(),
            Self::Gaussian(g) => g.sigma() * g.sigma(),
        }
    }

    fn law(&self) -> &dyn VectorNoise {
        match self {
            Self::Laplace(l) => l,
            Self::Gaussian(g) => g,
        }
    }
}

/// Which mechanism the release stage runs: a function of the bound stage's output (the grid point
/// `g` of τ̂, and the family choice) and of the pilot's (the parameter) — post-processing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum ReleaseChoice {
    /// The matched noise at τ = grid[g] (ICLP-RKHS, GP).
    Matched(usize),
    /// The candidate mechanism at τ = grid[g] and a parameter (ICLP-l1's ψ, IID Laplace's M,
    /// Bernstein's degree).
    Candidate(usize, f64),
    /// The pointwise-clipped binned family ([`super::binned`]).
    Binned,
}

/// **Every mechanism the release stage may run**, at the stage's budget: at each τ of the public
/// bound grid the matched noise (after-release kinds) or every buildable candidate (pilot-tuned
/// kinds), and the binned family when it is a candidate.
#[derive(Debug, Clone)]
pub(super) struct ReleaseFamily {
    setup: Arc<TunedSetup>,
    taus: Vec<f64>,
    bins: Option<PointwiseBins>,
}

impl ReleaseFamily {
    pub(super) fn new(setup: &Arc<TunedSetup>) -> Result<Self> {
        let taus = setup.search.grid(setup.ceiling.value());
        Ok(Self { setup: Arc::clone(setup), taus, bins: setup.pointwise()? })
    }
}

impl Family for ReleaseFamily {
    type Choice = ReleaseChoice;
    type Member = ReleaseMember;

    /// Parameter-major for the pilot-tuned kinds (each candidate's parameter at every τ, then the
    /// next): a candidate's released block depends on its parameter only (IID Laplace's M; ICLP-l1's
    /// active set, `#{k : ψ/(2 λ_k^{η/2}) < τ}` with `ψ ∝ τ`), so the members built one after the
    /// other share one block and [`LeadingBlocks`](crate::mechanism::LeadingBlocks) keeps only
    /// that one (the order only affects the build check and the loss audit, which visit them all).
    fn choices(&self) -> Vec<ReleaseChoice> {
        let mut choices = Vec::new();
        if self.setup.kind.tunes_after_release() {
            choices.extend((0..self.taus.len()).map(ReleaseChoice::Matched));
        } else {
            let per_tau: Vec<Vec<f64>> = self.taus.iter().map(|tau| self.setup.candidates(*tau)).collect();
            let most = per_tau.iter().map(Vec::len).max().unwrap_or(0);
            for i in 0..most {
                for (g, parameters) in per_tau.iter().enumerate() {
                    if let Some(p) = parameters.get(i) {
                        choices.push(ReleaseChoice::Candidate(g, *p));
                    }
                }
            }
        }
        if self.bins.is_some() {
            choices.push(ReleaseChoice::Binned);
        }
        choices
    }

    /// The matched noise is built with its clipping bound and every finite ψ of the SURE grid
    /// (what its post-processing records); a candidate that cannot be built at this (τ,
    /// parameter) — e.g. every component thresholded away — is not a member (the pilot chooses
    /// among the buildable ones only).
    fn member(&self, choice: ReleaseChoice, budget: PrivacyGuarantee) -> Result<Option<ReleaseMember>> {
        let (setup, epsilon) = (&self.setup, budget.epsilon());
        let width = setup.width();
        let block = |g: usize| 1 + g * width..1 + (g + 1) * width;
        Ok(Some(match choice {
            ReleaseChoice::Matched(g) => {
                let tau = self.taus[g];
                ClippingBound::new(tau, setup.kind.norm())?;
                let noise = setup.matched_noise(tau, epsilon)?;
                // ψ = ∞ (the public centre) records no regularisation: nothing to build.
                for psi in setup.candidates(tau).into_iter().filter(|p| p.is_finite()) {
                    Regularisation::new(setup.eta, psi)?;
                }
                ReleaseMember { at: block(g), law: ReleaseLaw::Matched(noise) }
            }
            ReleaseChoice::Candidate(g, parameter) => {
                let Ok(candidate) = setup.candidate(self.taus[g], epsilon, parameter) else { return Ok(None) };
                ReleaseMember { at: block(g), law: ReleaseLaw::Candidate(candidate, parameter) }
            }
            ReleaseChoice::Binned => {
                let Some(bins) = &self.bins else { return Ok(None) };
                let at = 1 + self.taus.len() * width;
                ReleaseMember { at: at..at + bins.bins(), law: ReleaseLaw::Binned(setup.binned_noise(bins, epsilon)?) }
            }
        }))
    }
}

/// One mechanism of the release stage, on its part of the summary.
pub(super) struct ReleaseMember {
    at: Range<usize>,
    law: ReleaseLaw,
}

enum ReleaseLaw {
    Matched(MatchedNoise),
    Candidate(Candidate, f64),
    Binned(LaplaceVector),
}

/// What a release-stage member releases: noisy numbers (post-processed into a curve by the
/// pipeline), or a candidate's curve.
pub(super) enum Released {
    Vector(Vec<f64>),
    Curve(Box<Release<Curve>>),
}

impl Released {
    /// The curve of a candidate's release.
    pub(super) fn into_curve(self) -> Result<Release<Curve>> {
        match self {
            Self::Curve(release) => Ok(*release),
            Self::Vector(_) => Err(not_this_member("a curve")),
        }
    }

    /// The noisy numbers of the matched noise or the binned family.
    pub(super) fn into_vector(self) -> Result<Vec<f64>> {
        match self {
            Self::Vector(y) => Ok(y),
            Self::Curve(_) => Err(not_this_member("noisy numbers")),
        }
    }
}

/// The pipeline asked a member for what another kind of member releases (never: the choice and
/// the post-processing are matched in `privatize`).
fn not_this_member(what: &'static str) -> EstimatorError {
    EstimatorError::BadParameter {
        name: "release stage member",
        value: what.into(),
        reason: "this member of the release stage does not release it",
    }
}

impl ReleaseMember {
    /// The matched noise, for its post-processing.
    pub(super) fn matched(&self) -> Result<&MatchedNoise> {
        match &self.law {
            ReleaseLaw::Matched(noise) => Ok(noise),
            _ => Err(not_this_member("the matched noise")),
        }
    }

    /// The binned family's noise, for its post-processing.
    pub(super) fn binned(&self) -> Result<&LaplaceVector> {
        match &self.law {
            ReleaseLaw::Binned(noise) => Ok(noise),
            _ => Err(not_this_member("the binned noise")),
        }
    }
}

impl StageLaw for ReleaseMember {
    fn guarantee(&self) -> PrivacyGuarantee {
        match &self.law {
            ReleaseLaw::Matched(noise) => noise.law().guarantee(),
            ReleaseLaw::Candidate(Candidate::Basis(m), _) => Mechanism::<CurveSet<'_>>::guarantee(m.as_ref()),
            ReleaseLaw::Candidate(Candidate::Bernstein(m), _) => Mechanism::<CurveSet<'_>>::guarantee(m.as_ref()),
            ReleaseLaw::Binned(noise) => VectorNoise::guarantee(noise),
        }
    }

    /// The noise's exact loss on the member's part of the two summaries (for a candidate, on its
    /// summary of the clipped mean: J shaped coefficients, or the Bernstein lattice values).
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> fdp_core::Result<f64> {
        let (x, y) = (part(a, self.at.clone())?, part(b, self.at.clone())?);
        match &self.law {
            ReleaseLaw::Matched(noise) => noise.law().loss_ratio(x, y),
            ReleaseLaw::Candidate(candidate, parameter) => {
                let noise: Vec<fdp_noise::LatticeLaplace> = match candidate {
                    Candidate::Basis(m) => m.sampler().components().to_vec(),
                    Candidate::Bernstein(m) => vec![m.noise().noise(); *parameter as usize + 1],
                };
                let (sx, sy) = (candidate.summary(x), candidate.summary(y));
                Ok(laplace_loss(&noise, &sx, &sy)? / self.guarantee().epsilon())
            }
            ReleaseLaw::Binned(noise) => VectorNoise::loss_ratio(noise, x, y),
        }
    }
}

impl StageMechanism for ReleaseMember {
    type Output = Released;

    fn release(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> fdp_core::Result<Released> {
        let x = part(summary, self.at.clone())?;
        Ok(match &self.law {
            ReleaseLaw::Matched(noise) => Released::Vector(noise.law().release(x, rng)?),
            ReleaseLaw::Candidate(candidate, _) => {
                Released::Curve(Box::new(candidate.privatize(&candidate.summary(x), rng, charge)?))
            }
            ReleaseLaw::Binned(noise) => Released::Vector(VectorNoise::release(noise, x, rng)?),
        })
    }
}

impl TunedSetup {
    /// The candidate mechanism of a pilot-tuned kind at bound τ, budget ε and parameter.
    pub(super) fn candidate(&self, tau: f64, epsilon: f64, parameter: f64) -> Result<Candidate> {
        let bound = ClippingBound::new(tau, self.kind.norm())?;
        let mut setup = MeanSetup::new(self.n, Epsilon::new(epsilon)?, bound)?.tuned_by(Tuning::Private);
        if let Some(r) = &self.reference {
            setup = setup.centred_at(r.clone())?;
        }
        Ok(match self.kind {
            TunedKind::IclpL1 => Candidate::Basis(Box::new(BasisMean::iclp_l1_on(
                &self.basis,
                setup,
                Regularisation::new(self.eta, parameter)?,
                &self.blocks,
            )?)),
            TunedKind::IidLaplace => Candidate::Basis(Box::new(BasisMean::iid_laplace_on(
                &self.basis,
                setup,
                parameter as usize,
                &self.blocks,
            )?)),
            _ => Candidate::Bernstein(Box::new(BernsteinMean::new(self.basis.grid(), setup, parameter as usize)?)),
        })
    }

    /// The public candidates of the tuning parameter (for a pilot-tuned kind, at bound τ).
    pub(super) fn candidates(&self, tau: f64) -> Vec<f64> {
        match self.kind {
            TunedKind::IclpRkhs | TunedKind::GaussianProcess(_) => rkhs_path(self.basis.eigenvalues(), self.eta),
            TunedKind::IclpL1 => {
                let plug_in = tau / (self.n as f64 * self.epsilon.get());
                (-6..=6).map(|j| plug_in * 10f64.powf(j as f64 / 2.0)).collect()
            }
            TunedKind::IidLaplace => {
                let most = self.basis.len().min(4 * (self.n as f64).cbrt().floor().max(1.0) as usize);
                (1..=most).map(|m| m as f64).collect()
            }
            TunedKind::Bernstein => [2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40].iter().map(|k| *k as f64).collect(),
        }
    }

    /// The noise of the after-release kinds at bound τ and budget ε, with its per-coefficient
    /// variance and calibration.
    pub(super) fn matched_noise(&self, tau: f64, epsilon: f64) -> Result<MatchedNoise> {
        let j = self.basis.len();
        let sensitivity = Sensitivity::of_mean(2.0 * tau / self.n as f64, self.n, MEAN_ROUNDINGS)?;
        Ok(match self.delta() {
            None => MatchedNoise::Laplace(LaplaceVector::new(j, sensitivity, Epsilon::new(epsilon)?)?),
            Some(delta) => MatchedNoise::Gaussian(GaussianVector::new(j, sensitivity, Epsilon::new(epsilon)?, delta)?),
        })
    }

    /// Stage 2 of ICLP-RKHS / GP: the matched-noise release (`member`, at τ), then ψ from it
    /// ([`TunedSetup::tune_released`]).
    /// `bound_release` is the bound stage's release and its noise scale (`None` at the public
    /// ceiling).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn release_then_tune(
        &self,
        member: &ReleaseMember,
        tau: f64,
        bound_release: Option<(f64, f64)>,
        summary: &[f64],
        rng: &mut NoiseRng,
        charge: Charge,
        stages: &mut Vec<StageRecord>,
    ) -> Result<Release<Curve>> {
        let (noise, epsilon) = (member.matched()?, member.guarantee().epsilon());
        // The soft tail's weighted coefficients back on the basis (post-processing), each with its
        // noise variance.
        let z = member.release(summary, rng, charge)?.into_vector()?;
        let (y, variances) = self.unweighted(&z, noise.variance());
        let (calibration, norm, delta) = match noise {
            MatchedNoise::Laplace(l) => (l.calibration(), SensitivityNorm::L1, 0.0),
            MatchedNoise::Gaussian(g) => (g.calibration(), SensitivityNorm::L2, g.guarantee().delta()),
        };
        let kurtosis = if matches!(noise, MatchedNoise::Laplace(_)) { 6.0 } else { 3.0 };
        let choice = self.tune_released(&y, noise.variance(), kurtosis, tau, bound_release);
        let (psi, shrink) = (choice.psi, choice.shrink.clone());
        stages.push(StageRecord {
            stage: "release".into(),
            epsilon,
            delta,
            outcome: format!(
                "{} noisy mean coefficients{}{}",
                y.len(),
                match self.is_truncated() {
                    true => format!(
                        " (the leading {} of the basis' {}: the small-n ε truncation)",
                        y.len(),
                        self.full_basis.len()
                    ),
                    false => String::new(),
                },
                self.soft_tail().map_or(String::new(), |start| format!(
                    "; components {} to {} clipped with weight {TAIL_WEIGHT} and released with {} times the noise sd (the soft tail)",
                    start + 1,
                    y.len(),
                    1.0 / TAIL_WEIGHT
                )),
            ),
        });
        stages.push(StageRecord {
            stage: "tuning".into(),
            epsilon: 0.0,
            delta: 0.0,
            outcome: format!(
                "psi = {psi:.6e} (eta = {:.4}) by marginal likelihood on the release, tested against the public centre by SURE: post-processing",
                self.eta
            ),
        });
        stages.push(choice.accuracy_record());
        // On the basis as given: the components a truncation dropped are released as 0.
        let mut coefficients = vec![0.0; self.full_basis.len()];
        coefficients.iter_mut().zip(shrink.iter().zip(&y)).for_each(|(c, (s, y))| *c = s * y);
        let sensitivity = 2.0 * tau / self.n as f64;
        let metadata = ReleaseMetadata {
            clipping: Some(ClippingBound::new(tau, self.kind.norm())?),
            // ψ = ∞ (the public centre) has no finite regularisation to record; the tuning stage says so.
            regularisation: if psi.is_finite() { Some(Regularisation::new(self.eta, psi)?) } else { None },
            components: y.len(),
            basis: Some(self.basis_description.clone()),
            calibration: Some(calibration),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            centred: self.reference.is_some(),
            own_error: Some(choice.own_error()),
            ..ReleaseMetadata::new(self.kind.name(), self.guarantee(), sensitivity, norm, self.n)
        };
        let representation = Representation::Basis { basis: self.full_basis.clone(), coefficients };
        let mut curve = Curve::new(self.basis.grid().clone(), self.reference.clone(), representation)?;
        // The noise on coefficient k is shrunk by s_k: its sd is s_k v_k^{1/2} (v_k = v / w_k²; a
        // function of the noise scale and of ψ, chosen from the release: post-processing).
        let sd: Vec<f64> = shrink.iter().zip(&variances).map(|(s, v)| s * v.sqrt()).collect();
        if let Some(band) = fdp_functional::pointwise_noise_sd(&self.basis, &sd) {
            curve = curve.with_noise_sd(band)?;
        }
        Ok(Release::new(curve, metadata))
    }

    /// **The post-processing of the matched release**: on the released coefficients `y` (on the
    /// basis: the soft tail's already divided by `w_k`), with `v` the noise variance of the
    /// unweighted coefficients and each coefficient's own `v / w_k²`, ψ by the marginal likelihood
    /// tested against the centre ([`guarded_sure`], the shrinkage reading `λ_k w_k^{2/η}`), and its
    /// own error estimate with the coherent clipping bias, the truncation's dropped tail and the
    /// range's diameter. `bound_release` is the bound stage's release `ũ` and the scale b of its
    /// Laplace noise (`None` at the public ceiling).
    pub(super) fn tune_released(
        &self,
        y: &[f64],
        v: f64,
        kurtosis: f64,
        tau: f64,
        bound_release: Option<(f64, f64)>,
    ) -> SureChoice {
        let variances = self.noise_variances(v);
        let mut choice = guarded_sure(
            y,
            &variances,
            kurtosis,
            &self.shrinkage_eigenvalues(),
            self.eta,
            &self.candidates(tau),
            bound_release.is_none(),
        );
        // SURE sees the error against the clipped records' mean. With a private bound, the bias of
        // the parts clipped off, were they coherent ([`clipping_factors`]: μ = q × the clipped
        // mean), is added to the release's estimate ([`clipping_bias`]); the centre's error `‖μ‖²`
        // is `1 / E q⁻²` times its estimate of the clipped mean's energy (unbiased over the
        // bound's noise, section 16.15). (The dropped tail below is not scaled so, though fitted
        // on clipped coefficients: measured, that raised the estimate where the bound is noisiest,
        // n ε = 25, to 2.1–2.4x on DTI and the log-periodograms; docs/DESIGN.md section 16.13.)
        // At the public ceiling nothing in range is clipped.
        // Post-processing of y, the bound stage's release and public quantities.
        let factors = bound_release.map_or((1.0, 1.0), |(log_mean, b)| clipping_factors(tau / log_mean.exp(), b));
        // The upper-side figure reads the clipping term at a bound drawn at its noise's lower 1 %
        // quantile (`δ = −b ln 50`: P(δ < −x) = e^{−x/b}/2), not averaged over δ; the centre's
        // error likewise (`1/q²` at that quantile). Post-processing, as the estimate.
        let low = bound_release
            .map_or((1.0, 1.0), |(log_mean, b)| clipping_factors(tau / log_mean.exp() * (-b * 50f64.ln()).exp(), 0.0));
        choice.risk += clipping_bias(y, &variances, &choice.shrink, factors);
        choice.upper += clipping_bias(y, &variances, &choice.shrink, low);
        choice.centre_risk /= factors.1;
        choice.centre_upper /= low.1;
        // The components the small-n ε truncation dropped (section 16.8) are not released: their
        // energy is the expected energy past `J*` under the reference prior fitted to the kept
        // coefficients ([`dropped_energy`]), added to both the release's and the centre's
        // estimates. Post-processing of y and public quantities.
        if self.is_truncated() {
            let tail = dropped_energy(y, &variances, self.full_basis.len());
            choice.risk += tail;
            choice.centre_risk += tail;
            choice.upper += tail;
            choice.centre_upper += tail;
        }
        // A release that is the centre reports the centre's estimate (the two adjustments above
        // differ in form), and the flag reads the numbers as adjusted.
        if choice.psi == f64::INFINITY {
            choice.risk = choice.centre_risk;
            choice.upper = choice.centre_upper;
        }
        choice.noise_dominated = choice.psi == f64::INFINITY || choice.centre_risk <= choice.risk;
        choice.capped(self.diameter())
    }

    pub(super) fn parameter_name(&self) -> &'static str {
        match self.kind {
            TunedKind::IidLaplace => "M",
            TunedKind::Bernstein => "degree",
            _ => "psi",
        }
    }
}
