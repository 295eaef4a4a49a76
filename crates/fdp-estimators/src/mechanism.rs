//! What the curve mechanisms add to [`fdp_core::Mechanism`]: the noise-free estimate of a summary
//! ([`CurveMechanism`]), the delegation to a [`fdp_functional::BasisOutput`], and the leading-block helper.

use fdp_core::Mechanism;
use fdp_mercer::MercerBasis;

use crate::error::{EstimatorError, Result};
use fdp_functional::Curve;

/// A mechanism whose release is a [`Curve`]: it can also say what its summary is as a curve before
/// any noise (for utility studies and cross-validation).
pub trait CurveMechanism<D: ?Sized>: Mechanism<D, Output = Curve> {
    /// The non-private estimate on the grid for a summary.
    fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>>;
    /// `E||released - estimate||²_{L2}` (the accuracy preview's mean).
    fn expected_noise_sq(&self) -> f64 {
        self.accuracy().expected_sq_error
    }
}

/// The methods of a [`Mechanism`] impl that a `BasisOutput` in the field `output` answers:
/// the guarantee, the noisy release and the accuracy preview.
macro_rules! delegate_to_basis_output {
    () => {
        type Output = fdp_functional::Curve;

        fn guarantee(&self) -> fdp_noise::PrivacyGuarantee {
            self.output.metadata().guarantee
        }

        fn privatize(
            &self,
            summary: &[f64],
            rng: &mut fdp_noise::NoiseRng,
            charge: fdp_core::Charge,
        ) -> fdp_core::Result<fdp_core::Release<fdp_functional::Curve>> {
            self.output.privatize(summary, rng, charge)
        }

        fn accuracy(&self) -> fdp_core::Accuracy {
            self.output.accuracy()
        }

        fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<fdp_core::Result<Vec<(&'static str, f64)>>> {
            Some(self.output.exact_losses(a, b))
        }
    };
}
pub(crate) use delegate_to_basis_output;

/// [`CurveMechanism`] for a mechanism whose `output` field is a `BasisOutput`.
macro_rules! basis_curve_mechanism {
    ($t:ty, $d:ty) => {
        impl<N: fdp_noise::ComponentNoise> crate::mechanism::CurveMechanism<$d> for $t {
            fn estimate_curve(&self, summary: &[f64]) -> crate::error::Result<Vec<f64>> {
                self.output.estimate_curve(summary)
            }
        }
    };
}
pub(crate) use basis_curve_mechanism;

/// **The leading block last truncated from one basis** ([`leading_block`]), shared by the
/// mechanisms built one after the other on it: a tuned pipeline builds a candidate at every
/// (parameter, bound) of its grids, parameter-major, so consecutive candidates ask for the same
/// block and truncating the basis for each dominated its construction. Only the last block is kept:
/// keeping every block a pipeline ever asked for held `Σ_j 2 K j` numbers for the mechanism's life
/// (503 MB for IID Laplace at K = J = 400, n = 10⁶; the independent review). A block is the same
/// copy of the basis's leading eigenpairs however often it is asked for, so releases are unchanged.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeadingBlocks(std::sync::Arc<std::sync::Mutex<Option<MercerBasis>>>);

impl LeadingBlocks {
    /// `leading_block(basis, components)`, from the cache when it was the last block truncated.
    /// The cache belongs to one basis: never ask it for another's blocks.
    pub(crate) fn get(&self, basis: &MercerBasis, components: usize) -> Result<MercerBasis> {
        // A panic elsewhere while the lock was held leaves the slot as it was: still valid.
        let mut last = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(block) = last.as_ref().filter(|b| b.len() == components) {
            return Ok(block.clone());
        }
        let block = leading_block(basis, components)?;
        *last = Some(block.clone());
        Ok(block)
    }
}

/// The leading `components` eigenpairs of `basis`, for mechanisms that release a truncated block;
/// `1 <= components <= J` or a parameter error.
pub(crate) fn leading_block(basis: &MercerBasis, components: usize) -> Result<MercerBasis> {
    if components == 0 || components > basis.len() {
        return Err(EstimatorError::BadParameter {
            name: "components",
            value: components.into(),
            reason: "must be between 1 and the number of kept basis components",
        });
    }
    Ok(basis.truncated(components)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdp_mercer::{BasisOptions, Grid, Stationary};

    /// A cached block is the basis's leading block, bit for bit, however often it is asked for,
    /// and a block outside `1..=J` is refused as by [`leading_block`].
    #[test]
    fn a_cached_leading_block_is_the_leading_block() {
        let basis = MercerBasis::build(
            Stationary::matern32(0.1).unwrap(),
            Grid::midpoint(0.0, 1.0, 30).unwrap(),
            BasisOptions::default(),
        )
        .unwrap();
        let blocks = LeadingBlocks::default();
        for j in [3, 1, 3, basis.len()] {
            let (cached, fresh) = (blocks.get(&basis, j).unwrap(), leading_block(&basis, j).unwrap());
            assert_eq!(cached.eigenvalues(), fresh.eigenvalues());
            assert!(cached.eigenfunctions() == fresh.eigenfunctions(), "block {j}");
        }
        assert!(blocks.get(&basis, 0).is_err() && blocks.get(&basis, basis.len() + 1).is_err());
    }
}
