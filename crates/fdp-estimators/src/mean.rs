//! Private mean curves (Lin & Reimherr 2023, Section 4; docs/DESIGN.md sections 3-4).
//!
//! Every mechanism runs the same pipeline: centre each record at an optional public reference curve,
//! project it onto the kept basis components, **clip it per record** in the norm its sensitivity uses
//! (τ fixed before the data are seen), average, regularise, add calibrated secure noise, and
//! synthesise. n is public (replace-one neighbours) and is fixed when the mechanism is built.

use fdp_core::Charge;
use fdp_data::CurveSet;
use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
use fdp_noise::{
    ComponentNoise, Delta, Epsilon, LatticeGaussian, LatticeLaplace, NoiseRng, PrivacyGuarantee, Sensitivity,
    vector::LaplaceVector,
};

use fdp_core::state::check_state_layout;
use fdp_core::{
    Accuracy, ClipNorm, ClippingBound, Mechanism, MergeableMechanism, Regularisation, Release, ReleaseMetadata,
    SensitivityNorm, SummaryState, Tuning,
};
use fdp_functional::numerics::{
    bernstein_laplace_noise_sd, bernstein_squared_weights, bernstein_value, check_bernstein_domain, interpolate,
};

use crate::error::{EstimatorError, Result};
use crate::mechanism::{CurveMechanism, LeadingBlocks, basis_curve_mechanism, delegate_to_basis_output};
use crate::sums::{ClippedSums, MEAN_ROUNDINGS, clipped_sums, mean_fingerprint};
use fdp_functional::{BasisOutput, BasisSampler, Curve, GaussianProcessSampler, IclpSampler, Representation};

/// What every mean mechanism needs: the public n, ε, the clipping bound τ **with its norm**, and
/// optionally a public reference curve to centre at. Each mechanism checks that the bound is in the
/// norm it clips in (ICLP-RKHS: coefficient l1; ICLP-l1, IID Laplace, GP: L2; Bernstein: sup).
#[derive(Debug, Clone, PartialEq)]
pub struct MeanSetup {
    n: usize,
    epsilon: Epsilon,
    bound: ClippingBound,
    reference: Option<Vec<f64>>,
    tuning: Tuning,
}

impl MeanSetup {
    /// `n >= 1` records (public), the budget ε of the release, and the clipping bound, fixed before the
    /// data are seen.
    pub fn new(n: usize, epsilon: Epsilon, bound: ClippingBound) -> Result<Self> {
        fdp_core::caps::records(n)?;
        check_sum_bound(n, bound.value())?;
        Ok(Self { n, epsilon, bound, reference: None, tuning: Tuning::PlugIn })
    }

    /// The same setup with another clipping bound (for a mechanism that clips in another norm).
    pub fn with_bound(mut self, bound: ClippingBound) -> Result<Self> {
        check_sum_bound(self.n, bound.value())?;
        self.bound = bound;
        Ok(self)
    }

    /// Centre records at a public reference curve (on the grid) before clipping; it is added back to
    /// the release. Must not be computed from the private data.
    pub fn centred_at(mut self, reference: Vec<f64>) -> Result<Self> {
        if let Some(bad) = reference.iter().find(|v| !v.is_finite()) {
            return Err(EstimatorError::BadParameter {
                name: "reference",
                value: (*bad).into(),
                reason: "must be finite",
            });
        }
        self.reference = Some(reference);
        Ok(self)
    }

    /// Records how the tuning parameters were chosen (plug-in, fixed, or cross-validated on the data).
    pub fn tuned_by(mut self, how: Tuning) -> Self {
        self.tuning = how;
        self
    }

    /// n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// ε.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The clipping bound with its norm.
    pub fn bound(&self) -> ClippingBound {
        self.bound
    }

    /// The public reference curve records are centred at, if any.
    pub fn reference(&self) -> Option<&[f64]> {
        self.reference.as_deref()
    }

    /// How the tuning parameters were chosen.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// τ in the bound's norm.
    pub(crate) fn tau(&self) -> f64 {
        self.bound.value()
    }

    pub(crate) fn check_reference(&self, grid: &Grid) -> Result<()> {
        match &self.reference {
            Some(r) if r.len() != grid.len() => {
                Err(EstimatorError::Shape { what: "reference curve length", expected: grid.len(), got: r.len() })
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn check_curves(&self, curves: &CurveSet, grid: &Grid) -> Result<()> {
        if curves.n() != self.n {
            return Err(EstimatorError::Shape { what: "number of curves", expected: self.n, got: curves.n() });
        }
        if curves.grid() != grid {
            return Err(EstimatorError::GridMismatch);
        }
        Ok(())
    }
}

/// A private mean-curve mechanism: a [`CurveMechanism`] on curve sets.
pub trait MeanMechanism: for<'a> CurveMechanism<CurveSet<'a>> {}

impl<T: for<'a> CurveMechanism<CurveSet<'a>> + ?Sized> MeanMechanism for T {}

/// How a basis mechanism turns the clipped mean coefficients into the released ones.
#[derive(Debug, Clone, PartialEq)]
enum Shaping {
    /// `c_k ↦ s_k c_k` (RKHS shrinkage `λ^η/(λ^η + ψ)`; 1 for the plain mean).
    Shrink(Vec<f64>),
    /// `c_k ↦ sign(c_k) (|c_k| - θ_k)_+` (l1 penalty).
    SoftThreshold(Vec<f64>),
}

/// A mean mechanism that releases basis coefficients with independent noise per component:
/// ICLP-RKHS, ICLP-l1 and IID Laplace (Laplace noise) or the Gaussian process (Gaussian noise).
///
/// ```
/// use fdp_data::{Scenario, simulate};
/// use fdp_estimators::{BasisMean, ClippingBound, CurveReleaseExt, MeanSetup, Mechanism, PlugIn};
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
/// use fdp_noise::Epsilon;
///
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, Grid::midpoint(0.0, 1.0, 50)?, BasisOptions::default())?;
/// let curves = simulate(Scenario::S1, &basis, 200, 1)?.curves;
/// let tau = ClippingBound::coefficient_l1(10.0)?; // fixed before looking at the data
/// let setup = MeanSetup::new(200, Epsilon::new(1.0)?, tau)?;
/// let tuning = PlugIn::new(&basis, &setup)?;
/// let mechanism = BasisMean::iclp_rkhs(&basis, setup, tuning.rkhs)?;
/// let release = fdp_core::Session::pure(Epsilon::new(1.0)?)?.release(&mechanism, &curves)?;
/// assert_eq!(release.metadata().guarantee.epsilon(), 1.0);
/// assert_eq!(release.curve().len(), 50);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct BasisMean<N> {
    name: &'static str,
    setup: MeanSetup,
    /// The basis records are projected onto (all kept components).
    basis: MercerBasis,
    /// Noise on the leading block that is released.
    output: BasisOutput<N>,
    clip: ClipNorm,
    shaping: Shaping,
    sensitivity: f64,
}

/// The Laplace-noise basis means (ICLP-RKHS, ICLP-l1, IID Laplace).
pub type LaplaceMean = BasisMean<LatticeLaplace>;
/// The Gaussian-process mean.
pub type GaussianMean = BasisMean<LatticeGaussian>;

/// The shrinkage factors `s_k = λ_k^η / (λ_k^η + ψ)` and the worst sensitivity factor
/// `max_k s_k / sqrt(λ_k)` over the released components.
///
/// Computed as `s_k = 1 / (1 + exp(ln ψ - η ln λ_k))`, which cannot underflow: the direct
/// `λ^{η-1/2} / (λ^η + ψ)` is subnormal for large η (ψ = 0, η = 142.9, λ_30 of an exponential
/// kernel) and came out *below* its true value, so the noise was calibrated to less than the actual
/// sensitivity (a loss of 1.0045 ε). The worst factor is taken from the very `s_k` the summary is
/// multiplied by, so calibration and summary agree to the last bit. Errors (in the user's terms)
/// when η and ψ shrink every component to 0.
fn rkhs_factors(basis: &MercerBasis, eta: f64, psi: f64) -> Result<(f64, Vec<f64>)> {
    let l = basis.eigenvalues();
    let shrink = rkhs_shrinkage(l, eta, psi);
    let worst = shrink.iter().zip(l).map(|(s, l)| s / l.sqrt()).fold(0.0, f64::max);
    if !(worst > 0.0 && worst.is_finite()) {
        return Err(EstimatorError::BadParameter {
            name: "eta",
            value: eta.into(),
            reason: "with this psi, lambda_k^eta / (lambda_k^eta + psi) is 0 for every component: \
                     nothing would be released; lower eta or psi",
        });
    }
    Ok((worst, shrink))
}

/// `s_k = λ_k^η / (λ_k^η + ψ)` in the underflow-safe form `1 / (1 + exp(ln ψ - η ln λ_k))`
/// (1 for ψ = 0).
pub(crate) fn rkhs_shrinkage(eigenvalues: &[f64], eta: f64, psi: f64) -> Vec<f64> {
    eigenvalues.iter().map(|l| 1.0 / (1.0 + (psi.ln() - eta * l.ln()).exp())).collect()
}

/// The n·τ bound of a sum of n clipped records must be a finite number.
fn check_sum_bound(n: usize, tau: f64) -> Result<()> {
    if (n as f64 * tau).is_finite() {
        Ok(())
    } else {
        Err(EstimatorError::BadParameter {
            name: "tau",
            value: tau.into(),
            reason: "n * tau overflows; use a realistic bound",
        })
    }
}

impl BasisMean<LatticeLaplace> {
    /// **ICLP-RKHS (Theorem 11).** `μ_k = λ_k^η / (λ_k^η + ψ) · X̄_k` with records clipped to
    /// `Σ_k |X_k| <= τ`. A replaced record moves `μ` by `d_k = λ_k^η/(λ_k^η+ψ) (X_k - X'_k)/n`, so
    /// `||d||_{1,C} = Σ_k λ_k^{η-1/2}/(λ_k^η+ψ) |X_k - X'_k|/n <= (2τ/n) max_k λ_k^{η-1/2}/(λ_k^η+ψ) = Δ`,
    /// and the ICLP calibrated to Δ is pure ε-DP. Theory asks for η > 1; any η > 0, ψ >= 0 gives a
    /// valid (if noisier) mechanism because Δ is computed exactly over the kept components.
    pub fn iclp_rkhs(basis: &MercerBasis, setup: MeanSetup, regularisation: Regularisation) -> Result<Self> {
        setup.bound.require(ClipNorm::CoefficientL1, "iclp_rkhs")?;
        let (eta, psi) = (regularisation.eta(), regularisation.psi());
        setup.check_reference(basis.grid())?;
        let (worst, shrink) = rkhs_factors(basis, eta, psi)?;
        let sensitivity = 2.0 * setup.tau() / setup.n as f64 * worst;
        let sampler =
            IclpSampler::calibrated(basis, Sensitivity::of_mean(sensitivity, setup.n, MEAN_ROUNDINGS)?, setup.epsilon)?;
        let parts = Parts {
            name: "iclp_rkhs",
            guarantee: PrivacyGuarantee::pure(setup.epsilon),
            clip: ClipNorm::CoefficientL1,
            sensitivity,
            sensitivity_norm: SensitivityNorm::L1C,
            psi: Some(psi),
            eta: Some(eta),
        };
        Self::assemble(basis, setup, sampler, Shaping::Shrink(shrink), parts)
    }

    /// **ICLP-l1 (Theorem 9, with a corrected active set).** `μ_k = sign(X̄_k)(|X̄_k| - θ_k)_+`,
    /// `θ_k = ψ / (2 λ_k^{η/2})`, records clipped to `||X||_{L2} <= τ` (so `|X_k| <= τ`).
    /// Components with `θ_k >= τ` are 0 for every dataset and are not released; the rest form a
    /// leading block A (θ_k grows with k). Soft thresholding is 1-Lipschitz, so
    /// `||d||_{1,C} <= Σ_{k∈A} |X_k - X'_k| / (n sqrt(λ_k)) <= (2τ/n) (Σ_{k∈A} 1/λ_k)^{1/2} = Δ`
    /// by Cauchy-Schwarz and `||X - X'||_2 <= 2τ`.
    pub fn iclp_l1(basis: &MercerBasis, setup: MeanSetup, regularisation: Regularisation) -> Result<Self> {
        Self::iclp_l1_on(basis, setup, regularisation, &LeadingBlocks::default())
    }

    /// [`iclp_l1`](Self::iclp_l1) with its active block from `blocks` (shared by many candidates
    /// on one basis).
    pub(crate) fn iclp_l1_on(
        basis: &MercerBasis,
        setup: MeanSetup,
        regularisation: Regularisation,
        blocks: &LeadingBlocks,
    ) -> Result<Self> {
        setup.bound.require(ClipNorm::L2, "iclp_l1")?;
        let (eta, psi) = (regularisation.eta(), regularisation.psi());
        setup.check_reference(basis.grid())?;
        // θ_k = ψ / (2 λ_k^{η/2}) in log form: no 0/0 when λ^{η/2} underflows (ψ = 0 gives θ = 0).
        let thresholds: Vec<f64> = basis
            .eigenvalues()
            .iter()
            .map(|l| (psi.ln() - std::f64::consts::LN_2 - 0.5 * eta * l.ln()).exp())
            .collect();
        let active = thresholds.iter().take_while(|t| **t < setup.tau()).count();
        if active == 0 {
            return Err(EstimatorError::BadParameter {
                name: "psi",
                value: psi.into(),
                reason: "so large that every component is thresholded to zero",
            });
        }
        let released = blocks.get(basis, active)?;
        let inv_sum: f64 = released.eigenvalues().iter().map(|l| 1.0 / l).sum();
        let sensitivity = 2.0 * setup.tau() / setup.n as f64 * inv_sum.sqrt();
        let sampler = IclpSampler::calibrated(
            &released,
            Sensitivity::of_mean(sensitivity, setup.n, MEAN_ROUNDINGS)?,
            setup.epsilon,
        )?;
        let parts = Parts {
            name: "iclp_l1",
            guarantee: PrivacyGuarantee::pure(setup.epsilon),
            clip: ClipNorm::L2,
            sensitivity,
            sensitivity_norm: SensitivityNorm::L1C,
            psi: Some(psi),
            eta: Some(eta),
        };
        let shaping = Shaping::SoftThreshold(thresholds[..active].to_vec());
        Self::assemble(basis, setup, sampler, shaping, parts)
    }

    /// **IID Laplace baseline.** The first M coefficients of the mean with records clipped to
    /// `||X||_{L2} <= τ`, each with Laplace noise of one scale: the l1 sensitivity of M coefficients
    /// is `Δ₁ <= sqrt(M) ||X - X'||_2 / n <= 2τ sqrt(M)/n` (the authors' code uses `2τM/n`, sqrt(M)
    /// times noisier than needed).
    pub fn iid_laplace(basis: &MercerBasis, setup: MeanSetup, components: usize) -> Result<Self> {
        Self::iid_laplace_on(basis, setup, components, &LeadingBlocks::default())
    }

    /// [`iid_laplace`](Self::iid_laplace) with its block from `blocks` (shared by many candidates
    /// on one basis).
    pub(crate) fn iid_laplace_on(
        basis: &MercerBasis,
        setup: MeanSetup,
        components: usize,
        blocks: &LeadingBlocks,
    ) -> Result<Self> {
        setup.bound.require(ClipNorm::L2, "iid_laplace")?;
        setup.check_reference(basis.grid())?;
        let released = blocks.get(basis, components)?;
        let sensitivity = 2.0 * setup.tau() * (components as f64).sqrt() / setup.n as f64;
        let sampler =
            IclpSampler::iid(&released, Sensitivity::of_mean(sensitivity, setup.n, MEAN_ROUNDINGS)?, setup.epsilon)?;
        let parts = Parts {
            name: "iid_laplace",
            guarantee: PrivacyGuarantee::pure(setup.epsilon),
            clip: ClipNorm::L2,
            sensitivity,
            sensitivity_norm: SensitivityNorm::L1,
            psi: None,
            eta: None,
        };
        Self::assemble(basis, setup, sampler, Shaping::Shrink(vec![1.0; components]), parts)
    }
}

impl BasisMean<LatticeGaussian> {
    /// **Gaussian process ((ε, δ)-DP; Hall et al. 2013, Mirshani et al. 2019).** The RKHS-smoothed
    /// mean `μ_k = λ_k^η/(λ_k^η + ψ) X̄_k` with records clipped to `||X||_{L2} <= τ`:
    /// `||d||_C² = Σ_k (λ_k^{η-1/2}/(λ_k^η+ψ))² (X_k - X'_k)²/n² <= ((2τ/n) max_k λ_k^{η-1/2}/(λ_k^η+ψ))²`,
    /// released with GP noise calibrated by the analytic Gaussian mechanism.
    pub fn gaussian_process(
        basis: &MercerBasis,
        setup: MeanSetup,
        regularisation: Regularisation,
        delta: Delta,
    ) -> Result<Self> {
        setup.bound.require(ClipNorm::L2, "gaussian_process")?;
        let (eta, psi) = (regularisation.eta(), regularisation.psi());
        setup.check_reference(basis.grid())?;
        let (worst, shrink) = rkhs_factors(basis, eta, psi)?;
        let sensitivity = 2.0 * setup.tau() / setup.n as f64 * worst;
        let sampler = GaussianProcessSampler::calibrated(
            basis,
            Sensitivity::of_mean(sensitivity, setup.n, MEAN_ROUNDINGS)?,
            setup.epsilon,
            delta,
        )?;
        let parts = Parts {
            name: "gaussian_process",
            guarantee: PrivacyGuarantee::approximate(setup.epsilon, delta),
            clip: ClipNorm::L2,
            sensitivity,
            sensitivity_norm: SensitivityNorm::CameronMartin,
            psi: Some(psi),
            eta: Some(eta),
        };
        Self::assemble(basis, setup, sampler, Shaping::Shrink(shrink), parts)
    }
}

/// The descriptive parts of a basis mean, gathered by its constructors.
struct Parts {
    name: &'static str,
    guarantee: PrivacyGuarantee,
    clip: ClipNorm,
    sensitivity: f64,
    sensitivity_norm: SensitivityNorm,
    psi: Option<f64>,
    eta: Option<f64>,
}

impl<N: ComponentNoise> BasisMean<N> {
    fn assemble(
        basis: &MercerBasis,
        setup: MeanSetup,
        sampler: BasisSampler<N>,
        shaping: Shaping,
        parts: Parts,
    ) -> Result<Self> {
        let regularisation = parts.eta.zip(parts.psi).and_then(|(eta, psi)| Regularisation::new(eta, psi).ok());
        let metadata = ReleaseMetadata {
            clipping: Some(setup.bound),
            regularisation,
            tuning: setup.tuning,
            centred: setup.reference.is_some(),
            ..ReleaseMetadata::new(parts.name, parts.guarantee, parts.sensitivity, parts.sensitivity_norm, setup.n)
        };
        let output = BasisOutput::new(sampler, setup.reference.clone(), metadata)?;
        Ok(Self {
            name: parts.name,
            setup,
            basis: basis.clone(),
            output,
            clip: parts.clip,
            shaping,
            sensitivity: parts.sensitivity,
        })
    }

    /// The sensitivity the noise is calibrated to (before the rounding charge).
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// The sampler of the released block.
    pub fn sampler(&self) -> &BasisSampler<N> {
        self.output.sampler()
    }

    /// The released basis (the leading block of the projection basis).
    pub fn released_basis(&self) -> &MercerBasis {
        self.output.sampler().basis()
    }

    /// The summary of a mean of clipped coefficients (all J): shrunk, thresholded or truncated to
    /// the released block.
    pub(crate) fn shape(&self, mean: &[f64]) -> Vec<f64> {
        match &self.shaping {
            Shaping::Shrink(s) => s.iter().zip(mean).map(|(s, c)| s * c).collect(),
            Shaping::SoftThreshold(t) => t.iter().zip(mean).map(|(t, c)| c.signum() * (c.abs() - t).max(0.0)).collect(),
        }
    }
}

basis_curve_mechanism!(BasisMean<N>, CurveSet<'_>);

impl<N: ComponentNoise> Mechanism<CurveSet<'_>> for BasisMean<N> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn n(&self) -> Option<usize> {
        Some(self.setup.n)
    }

    fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>> {
        self.setup.check_curves(curves, self.basis.grid())?;
        let layout = self.layout()?;
        let sums = clipped_sums(&layout, Some(&self.basis), curves, self.setup.reference.as_deref())?;
        Ok(self.shape(&layout.means(&sums, self.setup.n).0[0]))
    }

    delegate_to_basis_output!();
}

impl<N: ComponentNoise> BasisMean<N> {
    /// The sums behind the summary: the J coefficients clipped at τ.
    fn layout(&self) -> Result<ClippedSums> {
        ClippedSums::new(self.clip, &[self.setup.tau()], self.basis.len(), None)
    }

    fn fingerprint(&self) -> Result<u64> {
        let reference = self.setup.reference.as_deref();
        Ok(mean_fingerprint(self.name, &self.layout()?, Some(&self.basis), self.basis.grid(), reference))
    }
}

/// Partial states hold the exact sums of the clipped coefficients; see [`fdp_core::state`].
impl<N: ComponentNoise> MergeableMechanism<CurveSet<'_>> for BasisMean<N> {
    fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint().unwrap_or(0), self.layout().map_or(0, |l| l.len()))
    }

    fn update_state(&self, state: &mut SummaryState, curves: &CurveSet) -> Result<()> {
        if curves.grid() != self.basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        let sums = clipped_sums(&self.layout()?, Some(&self.basis), curves, self.setup.reference.as_deref())?;
        state.add(curves.n() as u64, &sums)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        check_state_layout(state, &self.empty_state(), Some(self.setup.n))?;
        Ok(self.shape(&self.layout()?.means(state.sums(), self.setup.n).0[0]))
    }
}

/// **Bernstein mechanism (Aldà & Rubinstein 2017; R diffpriv).** Records clipped to
/// `max_i |X(t_i)| <= τ`; the mean curve is evaluated (by linear interpolation, a convex combination)
/// at the k + 1 lattice points `a + j(b - a)/k`; each value moves by at most `S = 2τ/n` when a record
/// is replaced, so Laplace noise of scale `(k + 1) S / ε` on every lattice value is ε-DP (plus the
/// lattice rounding charge); the release is the Bernstein polynomial through the noisy values.
#[derive(Debug, Clone)]
pub struct BernsteinMean {
    setup: MeanSetup,
    grid: Grid,
    lattice: usize,
    noise: LaplaceVector,
    sensitivity: f64,
}

/// Why the Bernstein degree is capped (see [`fdp_core::caps`]).
pub(crate) const BERNSTEIN_REASON: &str = "at most 65535 (65536 lattice values), and lattice values x grid \
                                           points at most 2^27: every release draws one secure Laplace \
                                           sample per lattice value and evaluates each Bernstein weight at \
                                           each grid point (memory and time)";

impl BernsteinMean {
    /// The largest degree k: `k + 1 = 65536` lattice values, each a secure sample per release.
    pub const MAX_LATTICE: usize = 65_535;

    /// A Bernstein mechanism of degree `lattice = k >= 1` on a 1-D grid, with
    /// `k <= `[`MAX_LATTICE`](Self::MAX_LATTICE) and `(k + 1) · K <= 2^27`
    /// ([`fdp_core::caps::MAX_F64_VALUES`]).
    pub fn new(grid: &Grid, setup: MeanSetup, lattice: usize) -> Result<Self> {
        setup.bound.require(ClipNorm::Sup, "bernstein")?;
        setup.check_reference(grid)?;
        if lattice == 0 || grid.dim() != 1 {
            return Err(EstimatorError::BadParameter {
                name: "lattice",
                value: lattice.into(),
                reason: "needs k >= 1 on a 1-D grid",
            });
        }
        // Each release draws k + 1 secure samples and evaluates the k + 1 Bernstein weights at every
        // grid point (degree 2^40 asked for 8.8 TB and aborted).
        fdp_core::caps::at_most("lattice", lattice, Self::MAX_LATTICE, BERNSTEIN_REASON)?;
        fdp_core::caps::f64_values("lattice", &[lattice + 1, grid.len()], BERNSTEIN_REASON)?;
        check_bernstein_domain(grid)?;
        let points = lattice + 1;
        let sensitivity = 2.0 * setup.tau() / setup.n as f64;
        let noise = LaplaceVector::new(
            points,
            Sensitivity::of_mean(points as f64 * sensitivity, setup.n, MEAN_ROUNDINGS)?,
            setup.epsilon,
        )?;
        Ok(Self { setup, grid: grid.clone(), lattice, noise, sensitivity })
    }

    /// The Laplace noise on the k + 1 lattice values.
    pub fn noise(&self) -> &LaplaceVector {
        &self.noise
    }

    /// The summary of a (clipped, centred) mean curve: its values at the k + 1 lattice points.
    pub(crate) fn lattice_values(&self, mean: &[f64]) -> Vec<f64> {
        self.lattice_points().iter().map(|t| interpolate(self.grid.points(), mean, *t)).collect()
    }

    fn lattice_points(&self) -> Vec<f64> {
        let (a, b) = self.grid.domain()[0];
        (0..=self.lattice).map(|j| a + (b - a) * j as f64 / self.lattice as f64).collect()
    }

    fn bernstein_curve(&self, values: &[f64]) -> Vec<f64> {
        let domain = self.grid.domain();
        let mut curve: Vec<f64> =
            (0..self.grid.len()).map(|i| bernstein_value(values, self.lattice, domain, self.grid.point(i))).collect();
        if let Some(r) = &self.setup.reference {
            curve.iter_mut().zip(r).for_each(|(c, r)| *c += r);
        }
        curve
    }
}

impl Mechanism<CurveSet<'_>> for BernsteinMean {
    type Output = Curve;

    fn name(&self) -> &'static str {
        "bernstein"
    }

    fn n(&self) -> Option<usize> {
        Some(self.setup.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::pure(self.setup.epsilon)
    }

    fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>> {
        self.setup.check_curves(curves, &self.grid)?;
        let layout = self.layout()?;
        let sums = clipped_sums(&layout, None, curves, self.setup.reference.as_deref())?;
        Ok(self.lattice_values(&layout.means(&sums, self.setup.n).0[0]))
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Curve>> {
        if summary.len() != self.lattice + 1 {
            return Err(EstimatorError::Shape {
                what: "summary length",
                expected: self.lattice + 1,
                got: summary.len(),
            });
        }
        let values = self.noise.release(summary, rng)?;
        let metadata = ReleaseMetadata {
            clipping: Some(self.setup.bound),
            components: self.lattice + 1,
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            calibration: Some(self.noise.calibration()),
            tuning: self.setup.tuning,
            centred: self.setup.reference.is_some(),
            ..ReleaseMetadata::new(
                "bernstein",
                self.guarantee(),
                (self.lattice + 1) as f64 * self.sensitivity,
                SensitivityNorm::L1Lattice,
                self.setup.n,
            )
        };
        let domain = self.grid.domain().to_vec();
        // Each lattice value carries Laplace noise of scale b: sd √2 b (public).
        let sd = bernstein_laplace_noise_sd(&self.grid, self.lattice, &domain, self.noise.scale());
        let representation = Representation::Bernstein { values, degree: self.lattice, domain };
        let mut curve = Curve::new(self.grid.clone(), self.setup.reference.clone(), representation)?;
        if let Some(sd) = sd {
            curve = curve.with_noise_sd(sd)?;
        }
        Ok(Release::new(curve, metadata))
    }

    /// The Bernstein basis is not orthogonal: only the mean of the squared error is known.
    fn accuracy(&self) -> Accuracy {
        // E||Σ_j e_j B_j||² = 2 b² Σ_i w_i Σ_j B_j(t_i)² for independent Laplace e_j of scale b.
        let squares = bernstein_squared_weights(&self.grid, self.lattice, self.grid.domain());
        let total: f64 = self.grid.weights().iter().zip(&squares).map(|(w, sq)| w * sq).sum();
        Accuracy::expected(2.0 * self.noise.scale().powi(2) * total)
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<fdp_core::Result<Vec<(&'static str, f64)>>> {
        let epsilon = self.guarantee().epsilon();
        Some(self.noise.loss(a, b).map(|loss| vec![("release", loss / epsilon)]).map_err(Into::into))
    }
}

impl BernsteinMean {
    /// The sums behind the summary: the K grid values clipped at τ in the sup norm.
    fn layout(&self) -> Result<ClippedSums> {
        ClippedSums::new(ClipNorm::Sup, &[self.setup.tau()], self.grid.len(), None)
    }

    fn fingerprint(&self) -> Result<u64> {
        let words = mean_fingerprint("bernstein", &self.layout()?, None, &self.grid, self.setup.reference.as_deref());
        Ok(fdp_core::state::fingerprint_of([words, self.lattice as u64]))
    }
}

/// Partial states hold the exact sums of the clipped grid values; see [`fdp_core::state`].
impl MergeableMechanism<CurveSet<'_>> for BernsteinMean {
    fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint().unwrap_or(0), self.layout().map_or(0, |l| l.len()))
    }

    fn update_state(&self, state: &mut SummaryState, curves: &CurveSet) -> Result<()> {
        if curves.grid() != &self.grid {
            return Err(EstimatorError::GridMismatch);
        }
        let sums = clipped_sums(&self.layout()?, None, curves, self.setup.reference.as_deref())?;
        state.add(curves.n() as u64, &sums)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        check_state_layout(state, &self.empty_state(), Some(self.setup.n))?;
        Ok(self.lattice_values(&self.layout()?.means(state.sums(), self.setup.n).0[0]))
    }
}

impl CurveMechanism<CurveSet<'_>> for BernsteinMean {
    fn estimate_curve(&self, summary: &[f64]) -> Result<Vec<f64>> {
        Ok(self.bernstein_curve(summary))
    }
}

/// The mean mechanisms by name, for [`MeanCurve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MeanKind {
    /// ICLP-RKHS (bound in the coefficient l1 norm).
    IclpRkhs,
    /// ICLP-l1 (bound in L2).
    IclpL1,
    /// IID Laplace on the leading ⌊n^{1/3}⌋ components (bound in L2).
    IidLaplace,
}

/// **A private mean curve from a kernel and a bound**: the short way to the mechanisms above. It
/// builds the Mercer basis of the kernel on the curves' grid (public) and takes n from the curve set
/// (public under replace-one). [`build`](Self::build) returns the **privately tuned** pipeline
/// ([`TunedMean`](crate::TunedMean)): the bound given is the public ceiling, a private bound below
/// it and the regularisation are chosen from the data with their cost inside the same ε.
/// [`build_plug_in`](Self::build_plug_in) returns the mechanism with the public bound and the
/// plug-in rule instead (nothing is learned from the data; for ICLP-RKHS on the ICLP paper's data it
/// is 7-100x less accurate at ε from 1/4 to 4, see `examples/studies/private_tuning`).
///
/// ```
/// use fdp_core::{ClippingBound, Session};
/// use fdp_estimators::{CurveReleaseExt, MeanCurve};
/// use fdp_mercer::Stationary;
/// use fdp_noise::Epsilon;
/// let curves = fdp_data::example_curves(300, 7)?;
/// let mut session = Session::pure(Epsilon::new(1.0)?)?;
/// let mean = MeanCurve::iclp_rkhs(Stationary::matern32(0.1)?, ClippingBound::coefficient_l1(10.0)?)
///     .build(&curves, Epsilon::new(1.0)?)?;
/// let release = session.release(&mean, &curves)?;
/// assert_eq!(release.curve().len(), 100);
/// assert_eq!(session.ledger().len(), 2); // the private bound, then the release
/// # Ok::<(), fdp_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanCurve {
    kind: MeanKind,
    kernel: Stationary,
    bound: ClippingBound,
}

impl MeanCurve {
    /// ICLP-RKHS with `kernel`, records clipped at most at `bound` (coefficient l1).
    pub fn iclp_rkhs(kernel: Stationary, bound: ClippingBound) -> Self {
        Self { kind: MeanKind::IclpRkhs, kernel, bound }
    }

    /// Any of the basis mean mechanisms with `kernel`, records clipped at most at `bound`.
    pub fn new(kind: MeanKind, kernel: Stationary, bound: ClippingBound) -> Self {
        Self { kind, kernel, bound }
    }

    /// The privately tuned mechanism for `curves`' grid and n at a total ε (the curves are not read).
    pub fn build(&self, curves: &CurveSet, epsilon: Epsilon) -> Result<crate::TunedMean> {
        let basis = MercerBasis::build(self.kernel, curves.grid().clone(), BasisOptions::default())?;
        let kind = match self.kind {
            MeanKind::IclpRkhs => crate::TunedKind::IclpRkhs,
            MeanKind::IclpL1 => crate::TunedKind::IclpL1,
            MeanKind::IidLaplace => crate::TunedKind::IidLaplace,
        };
        crate::TunedMean::new(kind, &basis, curves.n(), epsilon, self.bound)
    }

    /// The mechanism with the public bound and plug-in tuning (public quantities only).
    pub fn build_plug_in(&self, curves: &CurveSet, epsilon: Epsilon) -> Result<LaplaceMean> {
        let basis = MercerBasis::build(self.kernel, curves.grid().clone(), BasisOptions::default())?;
        let setup = MeanSetup::new(curves.n(), epsilon, self.bound)?;
        use crate::tuning::PlugIn;
        match self.kind {
            MeanKind::IclpRkhs => {
                let regularisation = PlugIn::rkhs_for(&basis, &setup, None)?;
                BasisMean::iclp_rkhs(&basis, setup, regularisation)
            }
            MeanKind::IclpL1 => {
                let regularisation = PlugIn::l1_for(&basis, &setup, None)?;
                BasisMean::iclp_l1(&basis, setup, regularisation)
            }
            MeanKind::IidLaplace => {
                BasisMean::iid_laplace(&basis, setup, PlugIn::iid_components_for(&basis, curves.n()))
            }
        }
    }
}
