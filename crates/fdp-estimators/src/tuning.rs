//! Choosing ψ, η and M: the privacy-safe plug-in rule (Theorem 13) and private cross-validation.

use serde::{Deserialize, Serialize};

use fdp_data::CurveSet;
use fdp_mercer::MercerBasis;

use fdp_core::Regularisation;

use crate::error::{EstimatorError, Result};
use crate::mean::{MeanMechanism, MeanSetup};

/// Plug-in tuning from public quantities only: n, ε, the clipping bound and the kernel's eigenvalues.
///
/// With `λ_k ≈ c k^{-2ν}` fitted on the basis (never on data):
/// - ICLP-RKHS (Theorem 13): `η = 1 + 1/(2ν)`, `ψ = (τ / (n ε))^η`, the authors' `(nε/τ)^{-η}`.
///   An earlier DESIGN draft wrote `(τ²/(nε²))^η`; with the design bound τ ≈ 8.7 of scenario S-1 that
///   ψ is 25x larger at n = 1000 and the estimator is bias-dominated (MSE 0.32 against 0.026, and
///   against 0.028 for IID Laplace), so fdp follows the authors. Both are orders, not constants;
/// - ICLP-l1: `η = 2 (1 + 1/ν)`, `ψ = τ / (n ε)` (the authors use `τ/n`; the 1/ε follows the noise
///   level, so that fewer components survive when the budget is small);
/// - IID Laplace: `M = ⌊n^{1/3}⌋` components (the authors' rule), at most J.
///
/// τ is the setup's bound in whatever norm it carries (each rule is an order in τ). Each rule is
/// also its own function ([`PlugIn::rkhs_for`], [`PlugIn::l1_for`], [`PlugIn::iid_components_for`]),
/// so that a mechanism computes only its own: a bound so large that the RKHS rule's ψ overflows
/// (`(τ/(n ε))^η` past 1.8e308, from τ/(n ε) ≈ 1e185 at η = 5/3) is refused, naming the bound, by the
/// mechanisms that use that ψ, and no longer stops IID Laplace or Bernstein, which have none (they
/// were refused with "psi = inf").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlugIn {
    /// The fitted decay ν of `λ_k ≈ c k^{-2ν}`.
    pub nu: f64,
    /// `(η, ψ)` for ICLP-RKHS and the Gaussian process.
    pub rkhs: Regularisation,
    /// `(η, ψ)` for ICLP-l1.
    pub l1: Regularisation,
    /// M for IID Laplace.
    pub iid_components: usize,
}

impl PlugIn {
    /// The plug-in values for the n, ε and bound of `setup` (every method's: refused where any rule
    /// overflows; a mechanism that needs one rule calls its function).
    pub fn new(basis: &MercerBasis, setup: &MeanSetup) -> Result<Self> {
        Ok(Self {
            nu: decay_nu(basis)?,
            rkhs: Self::rkhs_for(basis, setup, None)?,
            l1: Self::l1_for(basis, setup, None)?,
            iid_components: Self::iid_components_for(basis, setup.n()),
        })
    }

    /// ICLP-RKHS and the Gaussian process: `η = 1 + 1/(2ν)` and `ψ = (τ/(n ε))^η`, or `psi` as given.
    pub fn rkhs_for(basis: &MercerBasis, setup: &MeanSetup, psi: Option<f64>) -> Result<Regularisation> {
        let eta = 1.0 + 1.0 / (2.0 * decay_nu(basis)?);
        Regularisation::new(eta, psi.map_or_else(|| rule_psi(setup, eta), Ok)?)
    }

    /// ICLP-l1: `η = 2 (1 + 1/ν)` and `ψ = τ/(n ε)`, or `psi` as given.
    pub fn l1_for(basis: &MercerBasis, setup: &MeanSetup, psi: Option<f64>) -> Result<Regularisation> {
        let eta = 2.0 * (1.0 + 1.0 / decay_nu(basis)?);
        Regularisation::new(eta, psi.map_or_else(|| rule_psi(setup, 1.0), Ok)?)
    }

    /// IID Laplace: `M = ⌊n^{1/3}⌋` components, at least 1 and at most the basis' (the plug-in
    /// rule of the mean and of the KDE).
    pub fn iid_components_for(basis: &MercerBasis, n: usize) -> usize {
        ((n as f64).cbrt().floor() as usize).clamp(1, basis.len())
    }
}

/// `(τ/(n ε))^power`, refused (naming the bound) where it overflows.
fn rule_psi(setup: &MeanSetup, power: f64) -> Result<f64> {
    let tau = setup.bound().value();
    let psi = (tau / (setup.n() as f64 * setup.epsilon().get())).powf(power);
    if psi.is_finite() {
        return Ok(psi);
    }
    Err(EstimatorError::BadParameter {
        name: "bound",
        value: tau.into(),
        reason: "is so large that the plug-in rule's psi (a power of tau / (n epsilon)) overflows: give psi, \
                 or a bound on the scale of the records",
    })
}

/// The decay ν of `λ_k ≈ c k^{-2ν}` fitted on the basis (public), or an error if the spectrum does
/// not decay (plug-in and private tuning both set η from it).
pub(crate) fn decay_nu(basis: &MercerBasis) -> Result<f64> {
    let nu = basis.decay().nu();
    if nu.is_finite() && nu > 0.0 {
        Ok(nu)
    } else {
        Err(EstimatorError::BadParameter {
            name: "eigenvalue decay",
            value: nu.into(),
            reason: "the basis spectrum does not decay; tuning needs λ_k ≈ c k^{-2ν}",
        })
    }
}

/// The outcome of private cross-validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcvChoice {
    /// The chosen candidate.
    pub chosen: f64,
    /// `(candidate, mean validation error)` for every candidate.
    pub errors: Vec<(f64, f64)>,
}

/// **Private cross-validation (Mirshani et al. 2019).** k-fold: for each candidate (a ψ or an M)
/// and fold, build the mechanism for the training size, summarise the training curves, and score
/// `mean_{test} ||μ̂_train - X||² + E||μ̃ - μ̂||²` — the expected validation error of the *private*
/// estimate, the noise term in closed form. Folds are `i mod k`.
///
/// **Not private by itself:** the choice depends on the data. Charge it its own budget (e.g. a
/// private selection mechanism) or use [`PlugIn`]; releases made with it record `tuning = "pcv"`.
pub fn private_cross_validation<F>(curves: &CurveSet, folds: usize, candidates: &[f64], build: F) -> Result<PcvChoice>
where
    F: Fn(f64, usize) -> Result<Box<dyn MeanMechanism>>,
{
    if folds < 2 || folds > curves.n() || candidates.is_empty() {
        return Err(EstimatorError::BadParameter {
            name: "folds",
            value: folds.into(),
            reason: "need 2 <= folds <= n and at least one candidate",
        });
    }
    let grid = curves.grid();
    let mut errors = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        let mut total = 0.0;
        for fold in 0..folds {
            let (test, train): (Vec<usize>, Vec<usize>) = (0..curves.n()).partition(|i| i % folds == fold);
            let (train, test) = (curves.subset(&train), curves.subset(&test));
            let mechanism = build(candidate, train.n())?;
            let estimate = mechanism.estimate_curve(&mechanism.summarize(&train)?)?;
            let fit: f64 = (0..test.n())
                .map(|i| {
                    let diff: Vec<f64> = test.row(i).iter().zip(&estimate).map(|(x, m)| x - m).collect();
                    grid.inner(&diff, &diff).unwrap_or(f64::INFINITY)
                })
                .sum::<f64>()
                / test.n() as f64;
            total += fit + mechanism.expected_noise_sq();
        }
        errors.push((candidate, total / folds as f64));
    }
    let chosen = errors.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|e| e.0).unwrap_or(candidates[0]);
    Ok(PcvChoice { chosen, errors })
}
