//! What every private summary shares: the [`Mechanism`] trait, and [`BasisOutput`], the release
//! half of every mechanism that adds noise to basis coefficients.

use fdp_mercer::{Grid, MercerBasis};
use fdp_noise::{BasisSampler, ComponentNoise, NoiseRng, PrivacyGuarantee};

use crate::error::{EstimatorError, Result};
use crate::release::{Release, ReleaseMetadata, Representation};

/// A private mechanism on inputs of type `D` (curves, points, labelled points).
///
/// `summarize` is the deterministic part (clip, average, regularise, fit); `privatize` adds the
/// noise. Splitting them lets audits and Monte Carlo studies compute a summary once and draw many
/// releases from it.
pub trait Mechanism<D: ?Sized>: Send + Sync {
    /// Short name (`iclp_rkhs`, `iclp_kde`, ...).
    fn name(&self) -> &'static str;
    /// The public n the mechanism was built for.
    fn n(&self) -> usize;
    /// The privacy guarantee of one release.
    fn guarantee(&self) -> PrivacyGuarantee;
    /// The summary before noise (released coefficients or lattice values).
    fn summarize(&self, data: &D) -> Result<Vec<f64>>;
    /// One private release of a summary.
    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng) -> Result<Release>;
    /// The non-private estimate on the grid for a summary.
    fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>>;
    /// `E||released - estimate||²_{L2}`, the expected squared norm of the noise curve (closed form).
    fn expected_noise_sq(&self) -> f64;
    /// `summarize` then `privatize`.
    fn release(&self, data: &D, rng: &mut NoiseRng) -> Result<Release> {
        let summary = self.summarize(data)?;
        self.privatize(&summary, rng)
    }
}

/// Noise on basis coefficients and everything a release needs around it: the sampler of the released
/// block, the grid, an optional public reference curve added back, and the metadata.
#[derive(Debug, Clone)]
pub struct BasisOutput<N> {
    sampler: BasisSampler<N>,
    grid: Grid,
    reference: Option<Vec<f64>>,
    /// Everything but the RNG provenance, which each release fills in.
    metadata: ReleaseMetadata,
}

impl<N: ComponentNoise> BasisOutput<N> {
    pub(crate) fn new(sampler: BasisSampler<N>, reference: Option<Vec<f64>>, mut metadata: ReleaseMetadata) -> Self {
        metadata.basis = Some(sampler.basis().summary());
        metadata.calibration = Some(sampler.calibration());
        metadata.components = sampler.basis().len();
        let grid = sampler.basis().grid().clone();
        Self { sampler, grid, reference, metadata }
    }

    /// The sampler of the released block.
    pub fn sampler(&self) -> &BasisSampler<N> {
        &self.sampler
    }

    /// The metadata every release of this mechanism carries (RNG provenance aside).
    pub fn metadata(&self) -> &ReleaseMetadata {
        &self.metadata
    }

    pub(crate) fn privatize(&self, summary: &[f64], rng: &mut NoiseRng) -> Result<Release> {
        let coefficients = self.sampler.privatize(summary, rng)?;
        let representation = Representation::Basis { basis: self.sampler.basis().clone(), coefficients };
        let metadata = ReleaseMetadata { rng: rng.provenance(), ..self.metadata.clone() };
        Release::new(self.grid.clone(), self.reference.clone(), representation, metadata)
    }

    pub(crate) fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>> {
        let mut curve = self.sampler.basis().synthesize(summary)?;
        if let Some(r) = &self.reference {
            curve.iter_mut().zip(r).for_each(|(c, r)| *c += r);
        }
        Ok(curve)
    }

    pub(crate) fn expected_noise_sq(&self) -> f64 {
        self.sampler.std_devs().iter().map(|s| s * s).sum()
    }
}

/// The methods of a [`Mechanism`] impl that a [`BasisOutput`] in the field `output` answers:
/// the guarantee, the noisy release, the noise-free estimate and the closed-form noise level.
macro_rules! delegate_to_basis_output {
    () => {
        fn guarantee(&self) -> fdp_noise::PrivacyGuarantee {
            self.output.metadata().guarantee
        }

        fn privatize(
            &self,
            summary: &[f64],
            rng: &mut fdp_noise::NoiseRng,
        ) -> crate::error::Result<crate::release::Release> {
            self.output.privatize(summary, rng)
        }

        fn estimate_curve(&self, summary: &[f64]) -> crate::error::Result<Vec<f64>> {
            self.output.estimate_curve(summary)
        }

        fn expected_noise_sq(&self) -> f64 {
            self.output.expected_noise_sq()
        }
    };
}
pub(crate) use delegate_to_basis_output;

/// The leading `components` eigenpairs of `basis`, for mechanisms that release a truncated block;
/// `1 <= components <= J` or a parameter error.
pub(crate) fn leading_block(basis: &MercerBasis, components: usize) -> Result<MercerBasis> {
    if components == 0 || components > basis.len() {
        return Err(EstimatorError::BadParameter {
            name: "components",
            value: components as f64,
            reason: "must be between 1 and the number of kept basis components",
        });
    }
    Ok(basis.truncated(components)?)
}
