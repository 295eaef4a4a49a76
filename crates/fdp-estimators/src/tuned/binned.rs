//! **The binned family** (issue 23): the pointwise-clipped binned Laplace mean that the release
//! stage of ICLP-RKHS may run instead of the matched noise, chosen from the bound stage's release
//! (post-processing), at the same budget.

use fdp_core::{
    Charge, ClipNorm, ClippingBound, Release, ReleaseMetadata, SensitivityNorm, StageLaw, StageMechanism, StageRecord,
};
use fdp_functional::{Curve, Representation};
use fdp_noise::{Epsilon, NoiseRng, Sensitivity, vector::LaplaceVector};
use serde::{Deserialize, Serialize};

use super::TunedKind;
use super::release::ReleaseMember;
use super::selection::SureChoice;
use super::setup::TunedSetup;
use crate::error::Result;
use crate::sums::{MEAN_ROUNDINGS, PointwiseBins};

/// **Which clipping geometry the privately tuned ICLP-RKHS may use** (issue 23, docs/DESIGN.md
/// section 16).
///
/// Clipping in the coefficient-l1 norm of a smooth kernel's basis suits smooth records; for rough
/// records (daily counts, log-periodograms) that norm is as large as the whole range, and a
/// **pointwise-clipped binned Laplace mean** — records clamped to the public range, averaged over
/// `K' = max(1, round((n ε_release)^{1/3} / 2))` contiguous bins, Laplace noise of scale
/// `2 R K' / (n ε_release)` per bin, `R = (hi - lo)/2` — is several times more accurate. With
/// [`FamilyChoice::Private`] (the default) and a public range ([`TunedMean::within`](super::TunedMean::within)), the family is
/// chosen from the bound stage's released statistic (post-processing; see
/// [`TunedMean::within`](super::TunedMean::within)); [`FamilyChoice::Matched`] is the matched ICLP-RKHS whatever the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum FamilyChoice {
    /// Chosen from the bound stage's release when a public range is stated and n ε is in the
    /// window where the binned family can win (`n ε_release < 166`, and a private bound is bought
    /// at all).
    #[default]
    Private,
    /// Always the matched ICLP-RKHS (the coefficient-l1 geometry).
    Matched,
}

/// The binned family is chosen when the bound stage's released mean clamped log coefficient-l1
/// norm, minus `ln(hi - lo)`, exceeds this: the records' coefficient-l1 norm is above
/// `e^{-0.25} ≈ 0.78` times the range's width. Set on the cells of `examples/studies/robust_accuracy` only
/// (exact statistic: smooth data -1.47 to -0.49; daily counts -0.03, log-periodograms -0.13): the
/// rough records sit close to it, so a lower threshold sends more of their releases to the binned
/// family (rough cells within 1.1x of the competitors: 9 at -0.2, 11 at -0.25, 13 at -0.3) and more
/// of S-4's too (S-4 at n = 30, ε = 4: 1.028x, 1.040x, 1.055x the old default's error).
const FAMILY_THRESHOLD: f64 = -0.25;

/// [`FAMILY_THRESHOLD`] when the matched family is truncated to `J*` leading components (section
/// 16.8): the bound stage's statistic is then the log-norm of the leading block, smaller for every
/// record. Exact statistics at J = 4..16 on the same cells: smooth data -2.47 to -0.95,
/// log-periodograms -1.53 to -0.98, daily counts -0.65 to -0.37.
const FAMILY_THRESHOLD_TRUNCATED: f64 = -0.8;

/// The binned family is a candidate only for `n ε_release` below this (`(n ε_release)^{1/3}` below
/// 5.5): above it the coefficient-l1 family's adaptive shrinkage wins or ties on the rough cells of
/// `examples/studies/robust_accuracy` (counts at n ε = 1200, log-periodograms from n ε = 300), and a wider
/// window sent S-4 at n ε = 300 to the binned family often enough to cost it 8.6 %.
const FAMILY_MAX_N_EPS: f64 = 166.0;

impl TunedSetup {
    /// The number of bins `K'` of the pointwise-clipped binned family when it is a candidate
    /// (ICLP-RKHS with [`FamilyChoice::Private`], a public range, a 1-D grid, a private bound bought
    /// and `n ε_release < 166`), else `None`. A function of public quantities only.
    pub(super) fn binned_candidate(&self) -> Option<usize> {
        // The split's budgets: the stages' own (they are built at them), read before they exist
        // because the summary's layout depends on this.
        let (eps_bound, _, eps_release) = self.split_budget();
        let eligible = matches!(self.kind, TunedKind::IclpRkhs)
            && self.family == FamilyChoice::Private
            && self.range.is_some()
            && self.basis.grid().dim() == 1
            && eps_bound > 0.0;
        let n_eps = self.n as f64 * eps_release;
        let bins = ((n_eps.cbrt() / 2.0).round() as usize).clamp(1, self.basis.n_points());
        (eligible && n_eps < FAMILY_MAX_N_EPS).then_some(bins)
    }

    /// The pointwise bins of the binned family, when it is a candidate.
    pub(super) fn pointwise(&self) -> Result<Option<PointwiseBins>> {
        match (self.binned_candidate(), self.range) {
            (Some(bins), Some((lo, hi))) => Ok(Some(PointwiseBins::new(self.basis.grid().weights(), lo, hi, bins)?)),
            _ => Ok(None),
        }
    }

    /// The binned family's noise at budget ε: Laplace of scale `2 R K' / (n ε)` per bin (the bin
    /// means' l1 sensitivity `2 R K'/n`, with the clipped mean's roundings).
    pub(super) fn binned_noise(&self, bins: &PointwiseBins, epsilon: f64) -> Result<LaplaceVector> {
        let sensitivity =
            Sensitivity::of_mean(2.0 * bins.half() * bins.bins() as f64 / self.n as f64, self.n, MEAN_ROUNDINGS)?;
        Ok(LaplaceVector::new(bins.bins(), sensitivity, Epsilon::new(epsilon)?)?)
    }

    /// **The family choice** (see [`TunedMean::within`](super::TunedMean::within)): the binned
    /// family's bins when the bound stage's released mean clamped log coefficient-l1 norm, minus
    /// `ln(hi - lo)`, exceeds [`FAMILY_THRESHOLD`] (recorded as the `family` step), else `None`. A
    /// function of the bound stage's release and public quantities: post-processing.
    pub(super) fn choose_family(
        &self,
        released_log: Option<f64>,
        stages: &mut Vec<StageRecord>,
    ) -> Result<Option<PointwiseBins>> {
        let mut binned = None;
        if let (Some(bins), Some(log_mean), Some((lo, hi))) = (self.pointwise()?, released_log, self.range) {
            let statistic = log_mean - (hi - lo).ln();
            let threshold = if self.is_truncated() { FAMILY_THRESHOLD_TRUNCATED } else { FAMILY_THRESHOLD };
            let rough = statistic > threshold;
            stages.push(StageRecord {
                stage: "family".into(),
                epsilon: 0.0,
                delta: 0.0,
                outcome: format!(
                    "released mean log coefficient-l1 norm - ln(hi - lo) = {statistic:.4} {} {threshold}: {} (post-processing of the bound stage)",
                    if rough { ">" } else { "<=" },
                    if rough {
                        format!("the pointwise-clipped binned Laplace mean, {} bins", bins.bins())
                    } else {
                        "the matched ICLP-RKHS".to_string()
                    }
                ),
            });
            binned = rough.then_some(bins);
        }
        Ok(binned)
    }

    /// The release stage of the binned family (see [`TunedMean::within`](super::TunedMean::within)):
    /// `member`'s Laplace noise on the mean bin vector (deviations from the range's midpoint), then,
    /// as post-processing,
    /// positive-part James-Stein shrinkage of the bin means towards the reference's bin means
    /// (`s = (1 - v Σ W_b / Σ W_b d_b²)_+`, the SURE-optimal common factor, `W_b` the bins'
    /// quadrature weights, `d_b` the noisy deviations) and linear interpolation between the bins'
    /// weighted centres; the curve is stored on the basis (its projection).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn binned_release(
        &self,
        member: &ReleaseMember,
        bins: &PointwiseBins,
        summary: &[f64],
        rng: &mut NoiseRng,
        charge: Charge,
        stages: &mut Vec<StageRecord>,
    ) -> Result<Release<Curve>> {
        let (noise, epsilon) = (member.binned()?, member.guarantee().epsilon());
        let y = member.release(summary, rng, charge)?.into_vector()?;
        let v = 2.0 * noise.scale() * noise.scale();
        let grid = self.basis.grid();
        let k = bins.bins();
        let reference = |i: usize| self.reference.as_ref().map_or(0.0, |r| r[i]);
        let (mut weight, mut centre, mut base) = (vec![0.0; k], vec![0.0; k], vec![0.0; k]);
        for (i, (b, (w, t))) in bins.bin_of().iter().zip(grid.weights().iter().zip(grid.points())).enumerate() {
            weight[*b] += w;
            centre[*b] += w * t;
            base[*b] += w * reference(i);
        }
        for b in 0..k {
            centre[b] /= weight[b];
            base[b] /= weight[b];
        }
        let d: Vec<f64> = (0..k).map(|b| y[b] + bins.mid() - base[b]).collect();
        let signal: f64 = (0..k).map(|b| weight[b] * d[b] * d[b]).sum();
        let total: f64 = weight.iter().sum();
        let sure =
            |s: f64| -> f64 { (0..k).map(|b| weight[b] * ((1.0 - s).powi(2) * (d[b] * d[b] - v) + s * s * v)).sum() };
        let s = if signal > 0.0 { (1.0 - v * total / signal).clamp(0.0, 1.0) } else { 0.0 };
        let values: Vec<f64> = (0..k).map(|b| base[b] + s * d[b]).collect();
        let curve: Vec<f64> = grid
            .points()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let j = centre.partition_point(|c| c <= t);
                let value = if j == 0 {
                    values[0]
                } else if j == k {
                    values[k - 1]
                } else {
                    let u = (t - centre[j - 1]) / (centre[j] - centre[j - 1]);
                    values[j - 1] + u * (values[j] - values[j - 1])
                };
                value - reference(i)
            })
            .collect();
        let choice = SureChoice {
            psi: f64::NAN,
            fitted_psi: f64::NAN,
            shrink: Vec::new(),
            risk: sure(s).max(0.0),
            centre_risk: sure(0.0).max(0.0),
            noise_dominated: s == 0.0,
            band: 2.0 * s * (v * total).sqrt(),
        };
        let choice = match self.range {
            Some((lo, hi)) => choice.capped((hi - lo).powi(2) * total),
            None => choice,
        };
        stages.push(StageRecord {
            stage: "release".into(),
            epsilon,
            delta: 0.0,
            outcome: format!(
                "{k} noisy bin means of the records clamped pointwise to the public range (the binned family; Laplace scale {:.6e})",
                noise.scale()
            ),
        });
        stages.push(StageRecord {
            stage: "tuning".into(),
            epsilon: 0.0,
            delta: 0.0,
            outcome: format!(
                "James-Stein shrinkage {s:.4} towards the reference (SURE), linear interpolation between the bins: post-processing"
            ),
        });
        stages.push(choice.accuracy_record());
        let coefficients = self.full_basis.project(&curve)?;
        let sensitivity = 2.0 * bins.half() * k as f64 / self.n as f64;
        let metadata = ReleaseMetadata {
            clipping: Some(ClippingBound::new(bins.half(), ClipNorm::Sup)?),
            regularisation: None,
            components: k,
            basis: Some(self.basis_description.clone()),
            calibration: Some(noise.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            centred: self.reference.is_some(),
            ..ReleaseMetadata::new(self.kind.name(), self.guarantee(), sensitivity, SensitivityNorm::L1, self.n)
        };
        let representation = Representation::Basis { basis: self.full_basis.clone(), coefficients };
        let curve = Curve::new(grid.clone(), self.reference.clone(), representation)?;
        Ok(Release::new(curve, metadata))
    }
}
