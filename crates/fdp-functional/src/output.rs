//! [`BasisOutput`], the release half of every mechanism that adds noise to Mercer-basis
//! coefficients, and [`pointwise_noise_sd`], the band it states.

use fdp_core::Charge;
use fdp_core::{Accuracy, Release, ReleaseMetadata, Result};
use fdp_mercer::{Grid, MercerBasis};
use fdp_noise::{ComponentNoise, NoiseRng};

use crate::curve::{Curve, Representation};
use crate::sampler::BasisSampler;

/// The pointwise standard deviation on `basis`' grid of independent noise with standard deviations
/// `std_devs` on its coefficients: `sd(t_i) = (Σ_k std_k² φ_k(t_i)²)^{1/2}`, computed scaled by the
/// largest `std_k` (no overflow for huge scales). `None` when it is not finite (an infinite scale):
/// a release then states no band rather than fail after its charge.
pub fn pointwise_noise_sd(basis: &MercerBasis, std_devs: &[f64]) -> Option<Vec<f64>> {
    let phi = basis.eigenfunctions();
    let scale = std_devs.iter().fold(0.0f64, |m, s| m.max(s.abs()));
    if !scale.is_finite() {
        return None;
    }
    let sd: Vec<f64> = (0..phi.nrows())
        .map(|i| {
            let sum: f64 = std_devs.iter().enumerate().map(|(k, s)| (s / scale * phi[(i, k)]).powi(2)).sum();
            if scale > 0.0 { scale * sum.sqrt() } else { 0.0 }
        })
        .collect();
    sd.iter().all(|v| v.is_finite()).then_some(sd)
}

/// Noise on basis coefficients and everything a curve release needs around it: the sampler of the
/// released block, an optional public reference curve added back, and the metadata. Use it to build
/// any mechanism whose summary is a vector of coefficients in a Mercer basis.
#[derive(Debug, Clone)]
pub struct BasisOutput<N> {
    sampler: BasisSampler<N>,
    grid: Grid,
    reference: Option<Vec<f64>>,
    /// The pointwise sd of the noise on the grid ([`pointwise_noise_sd`]): fixed by the sampler, so
    /// computed at the first release, not at construction (pipelines build many candidates they
    /// never release) nor at every release.
    noise_sd: std::sync::OnceLock<Option<Vec<f64>>>,
    /// Everything but the RNG provenance, which each release fills in.
    metadata: ReleaseMetadata,
}

impl<N: ComponentNoise> BasisOutput<N> {
    /// Wraps a calibrated sampler; the basis summary, calibration and component count are recorded
    /// in `metadata` (an error only if the basis cannot be described, which a built basis always can).
    pub fn new(sampler: BasisSampler<N>, reference: Option<Vec<f64>>, mut metadata: ReleaseMetadata) -> Result<Self> {
        metadata.basis = Some(crate::describe::basis(sampler.basis())?);
        metadata.calibration = Some(sampler.calibration());
        metadata.components = sampler.basis().len();
        let grid = sampler.basis().grid().clone();
        Ok(Self { sampler, grid, reference, noise_sd: std::sync::OnceLock::new(), metadata })
    }

    /// The sampler of the released block.
    pub fn sampler(&self) -> &BasisSampler<N> {
        &self.sampler
    }

    /// The exact privacy loss of releasing the coefficient summaries `a` rather than `b`, as a ratio
    /// to the budget ([`ComponentNoise::loss_ratio`]): the one stage, `release`.
    pub fn exact_losses(&self, a: &[f64], b: &[f64]) -> Result<Vec<(&'static str, f64)>> {
        let ratio = N::loss_ratio(self.sampler.components(), self.sampler.calibration(), a, b)?;
        Ok(vec![("release", ratio)])
    }

    /// The metadata every release of this mechanism carries (RNG provenance aside).
    pub fn metadata(&self) -> &ReleaseMetadata {
        &self.metadata
    }

    /// The private release of a summary given by its coefficients on the released block.
    pub fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Curve>> {
        let coefficients = self.sampler.privatize(summary, rng)?;
        let representation = Representation::Basis { basis: self.sampler.basis().clone(), coefficients };
        let metadata = ReleaseMetadata { rng: rng.provenance(), ..self.metadata.clone() };
        let mut curve = Curve::new(self.grid.clone(), self.reference.clone(), representation)?;
        let noise_sd = self.noise_sd.get_or_init(|| pointwise_noise_sd(self.sampler.basis(), &self.sampler.std_devs()));
        if let Some(sd) = noise_sd {
            curve = curve.with_noise_sd(sd.clone())?;
        }
        Ok(Release::new(curve, metadata))
    }

    /// The noise-free curve of a summary.
    pub fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>> {
        let mut curve = self.sampler.basis().synthesize(summary)?;
        if let Some(r) = &self.reference {
            curve.iter_mut().zip(r).for_each(|(c, r)| *c += r);
        }
        Ok(curve)
    }

    /// The accuracy preview: independent components in an orthonormal basis.
    pub fn accuracy(&self) -> Accuracy {
        let variances: Vec<f64> = self.sampler.std_devs().iter().map(|s| s * s).collect();
        Accuracy::independent(&variances, N::KURTOSIS)
    }
}
