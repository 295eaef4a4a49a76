//! **The private covariance operator and functional PCA** of curves on a common grid (issue 25,
//! dense curves; docs/design-notes/fpca.md).
//!
//! Each record `y_i` is centred at the public reference `r` (or not centred), projected onto the J
//! leading components of a public Mercer basis, `x_i = Φᵀ W (y_i − r) ∈ R^J` (the L²
//! coefficients: `‖x_i‖₂` is the L² norm of the projected curve), and **clipped in l2** at the
//! public bound τ. The summary is the joint vector
//!
//! `f(D) = [ τ m ; U(S) ]`, `m = (1/n) Σ_i x̃_i`, `S = (1/n) Σ_i x̃_i x̃_iᵀ`,
//!
//! with `U(S)` the J(J+1)/2 entries `a <= b` of the upper triangle (off-diagonal entries multiplied
//! by √2 for the Gaussian variant, so that `‖U(S)‖₂ = ‖S‖_F`). The mean block is weighted by the
//! public τ so that both blocks are in the units of τ². The released covariance is the
//! post-processing `C = S̃ − m̃ m̃ᵀ` of the noisy blocks, and the FPCA ([`Covariance::fpca`]) is a
//! further post-processing: eigenpairs of `C`, negative eigenvalues set to 0 (the projection onto
//! the positive semidefinite cone in the Frobenius norm), eigenfunctions `φ v_k` on the grid.
//!
//! **Sensitivity (replace-one, n public).** With `‖x‖₂, ‖x'‖₂ <= τ` for the replaced and the
//! replacing record, `f(D) − f(D') = [τ (x − x') ; U(x xᵀ) − U(x' x'ᵀ)] / n`:
//!
//! - **l1 (Laplace, pure ε):** `τ ‖x − x'‖₁ <= τ √J ‖x − x'‖₂ <= 2 √J τ²`, and
//!   `‖U(x xᵀ)‖₁ = Σ_{a<=b} |x_a x_b| = (‖x‖₁² + ‖x‖₂²)/2 <= (J + 1) τ²/2`, so by the triangle
//!   inequality `Δ₁ <= (2√J + J + 1) τ²/n = (√J + 1)² τ²/n`.
//! - **l2 (Gaussian, (ε, δ); Analyze-Gauss of Dwork, Talwar, Thakurta & Zhang 2014 with the
//!   mean block):** with `a = ‖x‖², b = ‖x'‖², p = xᵀx'`, `‖x − x'‖² = a + b − 2p` and
//!   `‖x xᵀ − x' x'ᵀ‖_F² = a² + b² − 2p²`, so `n² Δ₂² = τ²(a + b) + a² + b² − 2τ² p − 2p²
//!   <= 2τ⁴ + 2τ⁴ + τ⁴/2` (the last term is the maximum of `−2τ²p − 2p²`, at `p = −τ²/2`):
//!   `Δ₂ = 3τ²/(√2 n)`, **attained** by two records of norm τ at 120°.
//!
//! **Rounding.** Records are clipped at `τ (1 − 2⁻³²)`: the computed clipped vector
//! (`(x_a/‖x‖)·τ_c`, each entry within 2 roundings, the scaled norm within `(J + 2) u`), its
//! products (one rounding each, or an absolute `2⁻¹⁰⁷⁵` where they underflow) and the truncation
//! to fixed point (toward zero, at most `2⁻⁶²` of the bound per entry) stay inside the exact
//! bounds above for J <= [`PrivateCovariance::MAX_COMPONENTS`] (the relative slack `2⁻³²` is
//! above `(J + 6) u + J 2⁻⁶¹`). From the exact integer sums each coordinate takes at most 4
//! roundings (the conversion, `/n`, the product by τ or by √2, and √2's own rounding), charged with
//! [`fdp_noise::Sensitivity::with_rounding`] on the summary's largest norm.
//!
//! A record whose projection is not finite contributes 0 (the centre of the ball, so the bounds
//! hold); it still counts in n. The sums are exact fixed-point integers, so partial states merge
//! bit for bit ([`fdp_core::MergeableMechanism`]).

use fdp_core::Charge;
use serde::Serialize;

use fdp_core::state::{
    check_state_layout, fingerprint_of, fixed_point_exponent, fixed_scale, from_fixed, to_fixed_scaled,
};
use fdp_core::{
    Accuracy, ClipNorm, ClippingBound, Coefficients, Descriptor, Mechanism, MergeableMechanism, Output, Release,
    ReleaseMetadata, SensitivityNorm, SummaryState,
};
use fdp_data::CurveSet;
use fdp_mercer::{BasisSummary, Grid, MercerBasis};
use fdp_noise::vector::{GaussianVector, LaplaceVector};
use fdp_noise::{Delta, NoiseRng, PrivacyGuarantee, Sensitivity};

use crate::error::{EstimatorError, Result};
use crate::mean::MeanSetup;
use crate::mechanism::leading_block;
use crate::sums::{CLIP_SLACK, ClippedSums, clipped_sums, record_sums};

/// Floating-point operations from the exact integer sums to a summary coordinate: the conversion
/// of the sum, the division by n, the product by τ (mean block) or √2 (off-diagonal entries of the
/// Gaussian variant), and one more for `SQRT_2` being √2 rounded (a relative error below u).
/// Products by `2^-e` are exact.
const COVARIANCE_ROUNDINGS: u32 = 4;

/// The noise of a covariance release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CovarianceNoise {
    /// Laplace on every coordinate (pure ε), calibrated to the l1 sensitivity.
    Laplace(LaplaceVector),
    /// Gaussian on every coordinate ((ε, δ)), calibrated to the l2 sensitivity.
    Gaussian(GaussianVector),
}

/// **How a released covariance chooses the components its FPCA uses** ([`Covariance::fpca`]);
/// post-processing either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Truncation {
    /// All J released components.
    #[default]
    Fixed,
    /// The leading `j >= k` components with the smallest unbiased estimate of the operator's
    /// squared Hilbert-Schmidt error ([`Covariance::risk_truncation`]): J is then the largest
    /// truncation considered, and the noisy trailing components are dropped when their signal does
    /// not pay for their noise.
    Risk,
}

impl std::str::FromStr for Truncation {
    type Err = EstimatorError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fixed" => Ok(Self::Fixed),
            "risk" => Ok(Self::Risk),
            _ => Err(EstimatorError::BadParameter {
                name: "truncation",
                value: fdp_core::ParamValue::Text(s.to_string()),
                reason: "must be \"risk\" (the leading components chosen by their estimated risk) or \"fixed\" (all J)",
            }),
        }
    }
}

/// **A private covariance operator of curves in a Mercer basis** (module docs for the formula,
/// the sensitivity and the proof): the J × J covariance of the clipped, centred coefficients,
/// released with Laplace (pure ε) or Gaussian ((ε, δ)) noise, with FPCA by post-processing.
///
/// ```
/// use fdp_data::{Scenario, simulate};
/// use fdp_estimators::{ClippingBound, MeanSetup, Mechanism, PrivateCovariance};
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
/// use fdp_noise::Epsilon;
///
/// let basis = MercerBasis::build(Stationary::matern32(0.2)?, Grid::midpoint(0.0, 1.0, 50)?, BasisOptions::default())?;
/// let curves = simulate(Scenario::S2, &basis, 500, 1)?.curves;
/// let setup = MeanSetup::new(500, Epsilon::new(1.0)?, ClippingBound::l2(3.0)?)?; // τ fixed in advance
/// let mechanism = PrivateCovariance::laplace(&basis, setup, 4)?;
/// let release = fdp_core::Session::pure(Epsilon::new(1.0)?)?.release(&mechanism, &curves)?;
/// let fpca = release.output().fpca(2)?;
/// assert_eq!(fpca.eigenfunctions().len(), 2);
/// assert!(fpca.eigenvalues()[0] >= fpca.eigenvalues()[1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PrivateCovariance {
    name: &'static str,
    setup: MeanSetup,
    basis: MercerBasis,
    /// The basis as the release metadata records it, described once here (before any charge).
    basis_description: Descriptor,
    noise: CovarianceNoise,
    sensitivity: f64,
    truncation: Truncation,
}

impl PrivateCovariance {
    /// The largest number of components J: the summary has `J + J(J+1)/2` numbers and every record
    /// adds `J(J+1)/2` products (J = 512: 131 841 sums of 16 bytes per state).
    pub const MAX_COMPONENTS: usize = 512;

    /// **Laplace (pure ε).** Noise of scale `(Δ₁ + rounding + lattice)/ε` on every coordinate,
    /// `Δ₁ = (√J + 1)² τ²/n` (module docs). The bound must be in L2.
    pub fn laplace(basis: &MercerBasis, setup: MeanSetup, components: usize) -> Result<Self> {
        let (basis, tau, j) = Self::validated(basis, &setup, components, "private_covariance_laplace")?;
        let sensitivity = ((j as f64).sqrt() + 1.0).powi(2) * tau * tau / setup.n() as f64;
        // Summary magnitude on absolute values: τ‖m‖₁ + ‖U(S)‖₁ <= √J τ² + (J+1)τ²/2 = Δ₁ n / 2.
        let charged = Sensitivity::of_mean(sensitivity, setup.n(), COVARIANCE_ROUNDINGS)?;
        let noise = LaplaceVector::new(summary_len(j), charged, setup.epsilon())?;
        Ok(Self {
            name: "private_covariance_laplace",
            setup,
            basis_description: fdp_functional::describe::basis(&basis)?,
            basis,
            noise: CovarianceNoise::Laplace(noise),
            sensitivity,
            truncation: Truncation::Fixed,
        })
    }

    /// **Gaussian ((ε, δ)).** Noise of standard deviation `s(ε, δ) (Δ₂ + rounding + lattice)` on every
    /// coordinate (the analytic multiplier), `Δ₂ = 3τ²/(√2 n)` (module docs). The bound must be in L2.
    pub fn gaussian(basis: &MercerBasis, setup: MeanSetup, components: usize, delta: Delta) -> Result<Self> {
        let (basis, tau, j) = Self::validated(basis, &setup, components, "private_covariance_gaussian")?;
        let sensitivity = 3.0 * tau * tau / (std::f64::consts::SQRT_2 * setup.n() as f64);
        // Summary magnitude: ‖[τ m; U(S)]‖₂ <= (τ² ‖m‖² + ‖S‖_F²)^{1/2} <= √2 τ².
        let magnitude = std::f64::consts::SQRT_2 * tau * tau;
        let charged = Sensitivity::new(sensitivity)?.with_rounding(magnitude, COVARIANCE_ROUNDINGS)?;
        let noise = GaussianVector::new(summary_len(j), charged, setup.epsilon(), delta)?;
        Ok(Self {
            name: "private_covariance_gaussian",
            setup,
            basis_description: fdp_functional::describe::basis(&basis)?,
            basis,
            noise: CovarianceNoise::Gaussian(noise),
            sensitivity,
            truncation: Truncation::Fixed,
        })
    }

    /// Every check before a mechanism exists (so before any charge): the bound's norm, the
    /// reference's length, `1 <= J <= min(MAX_COMPONENTS, kept components)`, and τ² a usable
    /// fixed-point bound with `n · (√J + 1)² τ²` finite.
    fn validated(
        basis: &MercerBasis,
        setup: &MeanSetup,
        components: usize,
        name: &'static str,
    ) -> Result<(MercerBasis, f64, usize)> {
        setup.bound().require(ClipNorm::L2, name)?;
        setup.check_reference(basis.grid())?;
        fdp_core::caps::at_most(
            "components",
            components,
            Self::MAX_COMPONENTS,
            "at most 512: the summary holds J + J(J+1)/2 numbers and every record adds J(J+1)/2 products",
        )?;
        let released = leading_block(basis, components)?;
        let tau = setup.tau();
        let square = tau * tau;
        let worst = ((components as f64).sqrt() + 1.0).powi(2) * square * setup.n() as f64;
        if !(square >= fdp_core::params::MIN_CLIPPING_BOUND && worst.is_finite()) {
            return Err(EstimatorError::BadParameter {
                name: "tau",
                value: tau.into(),
                reason: "the covariance sums need tau^2 >= 2^-960 (fixed point) and n (sqrt(J) + 1)^2 tau^2 finite",
            });
        }
        Ok((released, tau, components))
    }

    /// The sensitivity the noise is calibrated to, before the rounding and lattice charges (l1 for
    /// Laplace, l2 for Gaussian).
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// The noise.
    pub fn noise(&self) -> CovarianceNoise {
        self.noise
    }

    /// The number of components J.
    pub fn components(&self) -> usize {
        self.basis.len()
    }

    /// The same mechanism whose releases choose their FPCA's components by `truncation`
    /// (post-processing: the noise, the guarantee and the state are unchanged).
    pub fn with_truncation(mut self, truncation: Truncation) -> Self {
        self.truncation = truncation;
        self
    }

    /// The released basis (the J leading components).
    pub fn basis(&self) -> &MercerBasis {
        &self.basis
    }

    fn gaussian_scaling(&self) -> bool {
        matches!(self.noise, CovarianceNoise::Gaussian(_))
    }

    fn tau(&self) -> f64 {
        self.setup.tau()
    }

    /// Fixed-point exponents of the mean block (`|x_a| <= τ`) and of the products (`<= τ²`).
    pub(crate) fn exponents(&self) -> (i32, i32) {
        let tau = self.tau();
        (fixed_point_exponent(tau), fixed_point_exponent(tau * tau))
    }

    /// One record's integer contribution: its clipped coefficients and their products `a <= b`.
    pub(crate) fn add_record(&self, acc: &mut [i128], row: &[f64], scales: (f64, f64)) {
        let j = row.len();
        let size = ClipNorm::L2.norm(row);
        if !(size.is_finite() && row.iter().all(|v| v.is_finite())) {
            return;
        }
        let bound = self.tau() * (1.0 - CLIP_SLACK);
        let clipped: Vec<f64> =
            if size > bound { row.iter().map(|v| (v / size) * bound).collect() } else { row.to_vec() };
        for (a, v) in acc[..j].iter_mut().zip(&clipped) {
            *a += to_fixed_scaled(*v, scales.0);
        }
        let mut k = j;
        for a in 0..j {
            for b in a..j {
                acc[k] += to_fixed_scaled(clipped[a] * clipped[b], scales.1);
                k += 1;
            }
        }
    }

    fn sums(&self, curves: &CurveSet) -> Result<Vec<i128>> {
        let j = self.basis.len();
        let (e_mean, e_product) = self.exponents();
        let scales = (fixed_scale(e_mean), fixed_scale(e_product));
        record_sums(Some(&self.basis), curves, self.setup.reference(), j, summary_len(j), |acc, row, _raw| {
            self.add_record(acc, row, scales)
        })
    }

    /// The summary `[τ m ; U(S)]` from the exact sums (at most 4 roundings per coordinate).
    pub(crate) fn summary_from(&self, sums: &[i128]) -> Vec<f64> {
        let j = self.basis.len();
        let n = self.setup.n() as f64;
        let (e_mean, e_product) = self.exponents();
        let mut out = Vec::with_capacity(sums.len());
        out.extend(sums[..j].iter().map(|s| from_fixed(*s, e_mean) / n * self.tau()));
        let mut k = j;
        for a in 0..j {
            for b in a..j {
                let v = from_fixed(sums[k], e_product) / n;
                out.push(if a != b && self.gaussian_scaling() { v * std::f64::consts::SQRT_2 } else { v });
                k += 1;
            }
        }
        out
    }

    /// The covariance `C = S − m mᵀ` (row-major J × J) and the mean coefficients `m` of a (noisy or
    /// exact) summary: the post-processing of every release.
    pub fn covariance_of(&self, summary: &[f64]) -> Result<(Vec<f64>, Vec<f64>)> {
        let j = self.basis.len();
        if summary.len() != summary_len(j) {
            return Err(EstimatorError::Shape { what: "summary length", expected: summary_len(j), got: summary.len() });
        }
        let mean: Vec<f64> = summary[..j].iter().map(|v| v / self.tau()).collect();
        let mut matrix = vec![0.0; j * j];
        let mut k = j;
        for a in 0..j {
            for b in a..j {
                let s =
                    if a != b && self.gaussian_scaling() { summary[k] / std::f64::consts::SQRT_2 } else { summary[k] };
                let c = s - mean[a] * mean[b];
                matrix[a * j + b] = c;
                matrix[b * j + a] = c;
                k += 1;
            }
        }
        Ok((matrix, mean))
    }

    /// The noise variances of a release's coordinates in the covariance's units (module docs):
    /// the summary's coordinates carry variance `v` (Laplace `2b²`, Gaussian `σ²`); the mean
    /// coefficients are the mean block divided by τ, the off-diagonal second moments of the
    /// Gaussian variant the coordinate divided by √2.
    fn entry_noise(&self) -> EntryNoise {
        let (v, off) = match self.noise {
            CovarianceNoise::Laplace(l) => (2.0 * l.scale().powi(2), 1.0),
            CovarianceNoise::Gaussian(g) => (g.sigma().powi(2), 0.5),
        };
        EntryNoise { mean: v / self.tau().powi(2), diagonal: v, off_diagonal: v * off }
    }

    fn fingerprint(&self) -> u64 {
        let mut words: Vec<u64> = self.name.bytes().map(u64::from).collect();
        words.extend([self.basis.len() as u64, self.tau().to_bits()]);
        let grid = self.basis.grid();
        words.extend(grid.points().iter().chain(grid.weights()).map(|v| v.to_bits()));
        words.extend(self.setup.reference().unwrap_or(&[]).iter().map(|v| v.to_bits()));
        words.extend(self.basis.eigenvalues().iter().map(|v| v.to_bits()));
        let phi = self.basis.weighted_eigenfunctions();
        words.extend((0..phi.nrows()).flat_map(|i| (0..phi.ncols()).map(move |c| phi[(i, c)].to_bits())));
        fingerprint_of(words)
    }
}

/// `J + J(J+1)/2`.
pub(crate) fn summary_len(j: usize) -> usize {
    j + j * (j + 1) / 2
}

impl Mechanism<CurveSet<'_>> for PrivateCovariance {
    type Output = Covariance;

    fn name(&self) -> &'static str {
        self.name
    }

    fn n(&self) -> Option<usize> {
        Some(self.setup.n())
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        match self.noise {
            CovarianceNoise::Laplace(l) => l.guarantee(),
            CovarianceNoise::Gaussian(g) => g.guarantee(),
        }
    }

    fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>> {
        self.setup.check_curves(curves, self.basis.grid())?;
        Ok(self.summary_from(&self.sums(curves)?))
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Covariance>> {
        let (noisy, calibration, norm) = match self.noise {
            CovarianceNoise::Laplace(l) => (l.release(summary, rng)?, l.calibration(), SensitivityNorm::L1),
            CovarianceNoise::Gaussian(g) => (g.release(summary, rng)?, g.calibration(), SensitivityNorm::L2),
        };
        let (matrix, mean) = self.covariance_of(&noisy)?;
        let metadata = ReleaseMetadata {
            clipping: Some(self.setup.bound()),
            components: noisy.len(),
            basis: Some(self.basis_description.clone()),
            calibration: Some(calibration),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            tuning: self.setup.tuning(),
            centred: self.setup.reference().is_some(),
            ..ReleaseMetadata::new(self.name, self.guarantee(), self.sensitivity, norm, self.setup.n())
        };
        let phi = self.basis.eigenfunctions();
        let eigenfunctions = (0..phi.nrows()).flat_map(|i| (0..phi.ncols()).map(move |c| phi[(i, c)])).collect();
        let output = Covariance {
            noise: self.entry_noise(),
            truncation: self.truncation,
            grid: self.basis.grid().clone(),
            basis: self.basis.summary(),
            eigenfunctions,
            components: self.basis.len(),
            reference: self.setup.reference().map(<[f64]>::to_vec),
            mean,
            matrix,
        };
        Ok(Release::new(output, metadata))
    }

    /// `E‖noise of S‖²_HS` (the Hilbert-Schmidt norm of the operator, the Frobenius norm of the
    /// J × J matrix in the orthonormal basis): Laplace `2b²J²`; Gaussian `σ² J(J+1)/2` (σ² on the
    /// diagonal, σ²/2 off it). The mean block's noise enters `C = S − m mᵀ` through `m mᵀ` and is
    /// not included.
    fn accuracy(&self) -> Accuracy {
        let j = self.basis.len() as f64;
        match self.noise {
            CovarianceNoise::Laplace(l) => Accuracy::expected(2.0 * l.scale().powi(2) * j * j),
            CovarianceNoise::Gaussian(g) => Accuracy::expected(g.sigma().powi(2) * j * (j + 1.0) / 2.0),
        }
    }
}

/// Partial states hold the exact sums of the clipped coefficients and of their products.
impl MergeableMechanism<CurveSet<'_>> for PrivateCovariance {
    fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint(), summary_len(self.basis.len()))
    }

    fn update_state(&self, state: &mut SummaryState, curves: &CurveSet) -> Result<()> {
        if curves.grid() != self.basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        let sums = self.sums(curves)?;
        state.add(curves.n() as u64, &sums)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        check_state_layout(state, &self.empty_state(), Some(self.setup.n()))?;
        Ok(self.summary_from(state.sums()))
    }
}

/// **A released covariance operator** in a Mercer basis: the symmetric J × J matrix
/// `C = S̃ − m̃ m̃ᵀ` of the basis coefficients (noisy), the noisy mean coefficients `m̃` about the
/// public reference, the grid and the eigenfunctions `φ_k(t_i)` of the basis on it. The operator
/// on the grid is `Σ_{a,b} C_ab φ_a(s) φ_b(t)`. Everything here is post-processing of the noisy
/// vector and costs no privacy.
#[derive(Debug, Clone, Serialize)]
pub struct Covariance {
    /// The noise law of the released coordinates (public: it follows from the calibration).
    #[serde(skip)]
    noise: EntryNoise,
    /// How [`Covariance::fpca`] chooses its components.
    truncation: Truncation,
    grid: Grid,
    basis: BasisSummary,
    /// `φ_k(t_i)`, K × J row-major.
    eigenfunctions: Vec<f64>,
    components: usize,
    reference: Option<Vec<f64>>,
    mean: Vec<f64>,
    matrix: Vec<f64>,
}

impl Output for Covariance {
    /// The mean coefficients, then the upper triangle of the covariance matrix.
    fn values(&self) -> Vec<f64> {
        let j = self.components;
        let mut out = self.mean.clone();
        for a in 0..j {
            out.extend_from_slice(&self.matrix[a * j + a..(a + 1) * j]);
        }
        out
    }

    fn describe(&self) -> String {
        format!("{0} x {0} covariance operator on {1} grid points", self.components, self.grid.len())
    }
}

/// The variances of the independent noise on a covariance release's coordinates: each mean
/// coefficient `m̃_a`, each diagonal second moment `S̃_aa` and each off-diagonal `S̃_ab`, `a < b`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct EntryNoise {
    mean: f64,
    diagonal: f64,
    off_diagonal: f64,
}

impl EntryNoise {
    /// The variance of the noise on `C̃_ab = S̃_ab − m̃_a m̃_b` to first order in the mean's noise,
    /// with the plug-in `m_a² ≈ max(m̃_a² − v_m, 0)`:
    /// `v_S + (m_a² + m_b²) v_m + (1 + [a = b]) v_m²`.
    fn of_entry(&self, a: usize, b: usize, mean: &[f64]) -> f64 {
        let m2 = |x: f64| (x * x - self.mean).max(0.0);
        let (second, diagonal) = if a == b { (self.diagonal, 2.0) } else { (self.off_diagonal, 1.0) };
        second + (m2(mean[a]) + m2(mean[b])) * self.mean + diagonal * self.mean * self.mean
    }
}

/// **Functional principal components by post-processing**: the top k eigenvalues of the
/// released covariance projected onto the positive semidefinite cone (negative eigenvalues set
/// to 0), their eigenfunctions on the grid (orthonormal in the grid's L²), and the fraction of the
/// (projected) total variance each explains.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fpca {
    components: usize,
    eigenvalues: Vec<f64>,
    eigenfunctions: Vec<Vec<f64>>,
    explained: Vec<f64>,
    coefficients: Vec<Vec<f64>>,
}

impl Fpca {
    /// The number of the release's components the decomposition used (J, or the risk's choice).
    pub fn components(&self) -> usize {
        self.components
    }

    /// `λ_1 >= … >= λ_k >= 0`.
    pub fn eigenvalues(&self) -> &[f64] {
        &self.eigenvalues
    }

    /// The k eigenfunctions on the grid, `ψ_k(t_i) = Σ_a φ_a(t_i) v_{ak}`.
    pub fn eigenfunctions(&self) -> &[Vec<f64>] {
        &self.eigenfunctions
    }

    /// `λ_k / Σ_l λ_l⁺` over all the used components' eigenvalues of the projection onto the PSD cone (0 when it is 0).
    pub fn explained_variance(&self) -> &[f64] {
        &self.explained
    }

    /// The eigenvectors `v_k` in the basis (unit l2 norm), of length [`components`](Self::components).
    pub fn coefficients(&self) -> &[Vec<f64>] {
        &self.coefficients
    }
}

impl Covariance {
    /// The number of components J.
    pub fn components(&self) -> usize {
        self.components
    }

    /// The covariance matrix in the basis, row-major J × J (symmetric).
    pub fn matrix(&self) -> &[f64] {
        &self.matrix
    }

    /// The released mean coefficients (about the reference).
    pub fn mean_coefficients(&self) -> &[f64] {
        &self.mean
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The basis the operator lives in.
    pub fn basis(&self) -> &BasisSummary {
        &self.basis
    }

    /// The released mean curve on the grid: the reference plus `Σ_a m_a φ_a`.
    pub fn mean_curve(&self) -> Vec<f64> {
        let j = self.components;
        (0..self.grid.len())
            .map(|i| {
                let r = self.reference.as_ref().map_or(0.0, |r| r[i]);
                r + (0..j).map(|a| self.eigenfunctions[i * j + a] * self.mean[a]).sum::<f64>()
            })
            .collect()
    }

    /// **The operator truncated to its `j` leading components** (1 <= j <= J): the leading `j × j`
    /// block of the matrix, the first `j` mean coefficients and eigenfunctions. Post-processing.
    pub fn truncated(&self, j: usize) -> Result<Covariance> {
        let big = self.components;
        if j == 0 || j > big {
            return Err(EstimatorError::BadParameter {
                name: "components",
                value: j.into(),
                reason: "a truncation keeps between 1 and J components",
            });
        }
        let eigenfunctions = self.eigenfunctions.chunks(big).flat_map(|row| row[..j].iter().copied()).collect();
        let matrix = (0..j).flat_map(|a| self.matrix[a * big..a * big + j].iter().copied()).collect();
        Ok(Covariance {
            noise: self.noise,
            truncation: Truncation::Fixed,
            grid: self.grid.clone(),
            basis: self.basis.clone(),
            eigenfunctions,
            components: j,
            reference: self.reference.clone(),
            mean: self.mean[..j].to_vec(),
            matrix,
        })
    }

    /// **An unbiased estimate of each truncation's squared Hilbert-Schmidt error**, up to a constant
    /// common to all: entry `j − 1` estimates `E‖C̃_j − C‖²_HS − E‖C − C_J‖²_HS` for the operator
    /// `C̃_j` truncated to `j` components, against the clipped data's covariance `C` in the J
    /// released components. The error of `C̃_j` is the noise of the entries it keeps plus the
    /// entries it drops, `Σ_{a,b<j} V_ab + Σ_{(a,b)∉[j]²} C_ab²`, and `C̃_ab² − V_ab` estimates
    /// `C_ab²` without bias (Stein's unbiased risk estimate for a keep-or-kill rule; `V_ab` the
    /// noise variance of the entry, exact for the second moments, to first order for the mean's
    /// part). Post-processing of the release and its public noise law: no privacy cost.
    pub fn truncation_risks(&self) -> Vec<f64> {
        let big = self.components;
        let mut kept = 0.0;
        let mut dropped: f64 = (0..big)
            .flat_map(|a| (0..big).map(move |b| (a, b)))
            .map(|(a, b)| self.matrix[a * big + b].powi(2) - self.noise.of_entry(a, b, &self.mean))
            .sum();
        (0..big)
            .map(|j| {
                // The L-shaped band that truncation j + 1 keeps and truncation j drops.
                for (a, b) in (0..=j).map(|a| (a, j)).chain((0..j).map(|b| (j, b))) {
                    let v = self.noise.of_entry(a, b, &self.mean);
                    kept += v;
                    dropped -= self.matrix[a * big + b].powi(2) - v;
                }
                kept + dropped
            })
            .collect()
    }

    /// **The truncation chosen by its estimated risk** ([`truncation_risks`](Self::truncation_risks)):
    /// the `j` in `at_least ..= J` with the smallest estimate (the smallest such `j` on ties), e.g.
    /// `at_least = k` before an FPCA of `k` components. Post-processing: no privacy cost.
    pub fn risk_truncation(&self, at_least: usize) -> Result<usize> {
        if at_least == 0 || at_least > self.components {
            return Err(EstimatorError::BadParameter {
                name: "at_least",
                value: at_least.into(),
                reason: "the smallest truncation must be between 1 and J",
            });
        }
        let risks = self.truncation_risks();
        let best = (at_least..=self.components)
            .fold(at_least, |best, j| if risks[j - 1] < risks[best - 1] { j } else { best });
        Ok(best)
    }

    /// How [`fpca`](Self::fpca) chooses its components.
    pub fn truncation(&self) -> Truncation {
        self.truncation
    }

    /// The same operator whose [`fpca`](Self::fpca) chooses its components by `truncation`.
    pub(crate) fn with_truncation(mut self, truncation: Truncation) -> Self {
        self.truncation = truncation;
        self
    }

    /// **FPCA**: the top `k` (1 <= k <= J) components (see [`Fpca`]) of the operator in all J
    /// components ([`Truncation::Fixed`]) or truncated to the `j >= k` leading ones its risk
    /// estimate chooses ([`Truncation::Risk`]). A matrix the eigensolver cannot decompose (only a
    /// non-finite one, which a release never holds) is an error.
    pub fn fpca(&self, k: usize) -> Result<Fpca> {
        if k == 0 || k > self.components {
            return Err(EstimatorError::BadParameter {
                name: "k",
                value: k.into(),
                reason: "the number of principal components must be between 1 and J",
            });
        }
        let j = match self.truncation {
            Truncation::Risk => self.risk_truncation(k)?,
            Truncation::Fixed => self.components,
        };
        if j < self.components { self.truncated(j)?.principal_components(k) } else { self.principal_components(k) }
    }

    /// The top `k <= J` eigenpairs of the matrix (checked by [`fpca`](Self::fpca)).
    fn principal_components(&self, k: usize) -> Result<Fpca> {
        let j = self.components;
        let c = faer::Mat::from_fn(j, j, |a, b| self.matrix[a * j + b]);
        let (values, vectors) = fdp_mercer::linalg::symmetric_eigen(c.as_ref())?;
        let total: f64 = values.iter().map(|v| v.max(0.0)).sum();
        let eigenvalues: Vec<f64> = values[..k].iter().map(|v| v.max(0.0)).collect();
        let explained = eigenvalues.iter().map(|v| if total > 0.0 { v / total } else { 0.0 }).collect();
        let coefficients: Vec<Vec<f64>> = (0..k).map(|c| (0..j).map(|a| vectors[(a, c)]).collect()).collect();
        let eigenfunctions = coefficients
            .iter()
            .map(|v| {
                (0..self.grid.len())
                    .map(|i| (0..j).map(|a| self.eigenfunctions[i * j + a] * v[a]).sum::<f64>())
                    .collect()
            })
            .collect();
        Ok(Fpca { components: j, eigenvalues, eigenfunctions, explained, coefficients })
    }
}

/// **A private clipping bound for [`PrivateCovariance`]**, released on its own (a first release
/// through the same [`Session`](fdp_core::Session); the covariance built with the bound is the
/// second, sequential composition charges both): a private geometric mean of the records' norms
/// times a public factor, as the means' bound stage ([`crate::BoundSearch`]).
///
/// `τ̂ = clamp(c · exp(mean_i clamp(ln ‖x_i‖, ln f, ln F) + L), f, F)` with `x_i` the centred
/// projected record (J components, as the covariance will clip it), the public ceiling F (the
/// setup's L2 bound, e.g. from [`crate::frame::ceiling_from_range`]), the floor `f = F / r`, a
/// public factor c and Laplace noise L. **Sensitivity:** replacing one record moves the mean of the
/// clamped logs by at most `ln(F/f)/n = ln(r)/n`; the mean is computed from exact fixed-point sums
/// with 2 roundings (the conversion, `/n`), charged on `B = max(|ln f|, |ln F|)`
/// ([`fdp_noise::Sensitivity::with_rounding`]); a record with a non-finite norm counts as `ln f`.
/// The rest (exp, the factor, the clamp) is post-processing.
#[derive(Debug, Clone)]
pub struct CovarianceBound {
    setup: MeanSetup,
    basis: MercerBasis,
    /// The basis as the release metadata records it, described once here (before any charge).
    basis_description: Descriptor,
    floor_ratio: f64,
    factor: f64,
    noise: LaplaceVector,
}

impl CovarianceBound {
    /// The bound stage at the setup's ε for the J leading components of `basis`, searching from the
    /// setup's L2 bound (the ceiling) down to ceiling / `floor_ratio` (`> 1`), with the factor
    /// `factor > 0`. Everything is checked here, before any charge.
    pub fn new(
        basis: &MercerBasis,
        setup: MeanSetup,
        components: usize,
        floor_ratio: f64,
        factor: f64,
    ) -> Result<Self> {
        let (basis, ceiling, _) = PrivateCovariance::validated(basis, &setup, components, "covariance_bound")?;
        if !(floor_ratio > 1.0 && floor_ratio.is_finite() && factor > 0.0 && factor.is_finite()) {
            return Err(EstimatorError::BadParameter {
                name: "covariance bound search",
                value: floor_ratio.into(),
                reason: "need a finite floor ratio > 1 and a finite factor > 0",
            });
        }
        let floor = ceiling / floor_ratio;
        if floor < fdp_core::params::MIN_CLIPPING_BOUND.sqrt() {
            return Err(EstimatorError::BadParameter {
                name: "floor_ratio",
                value: floor_ratio.into(),
                reason: "the floor ceiling / floor_ratio must be a usable covariance bound (tau^2 >= 2^-960)",
            });
        }
        let (lo, hi) = (ceiling.ln() - floor_ratio.ln(), ceiling.ln());
        let sensitivity = floor_ratio.ln() / setup.n() as f64;
        let charged = Sensitivity::new(sensitivity)?.with_rounding(lo.abs().max(hi.abs()), 2)?;
        let noise = LaplaceVector::new(1, charged, setup.epsilon())?;
        let basis_description = fdp_functional::describe::basis(&basis)?;
        Ok(Self { setup, basis, basis_description, floor_ratio, factor, noise })
    }

    /// The layout of the exact sums: the clamped log-norm (the clipped sums at the ceiling ride
    /// along unused).
    fn layout(&self) -> Result<ClippedSums> {
        let ceiling = self.setup.tau();
        ClippedSums::new(ClipNorm::L2, &[ceiling], self.basis.len(), Some(self.log_range()))
    }

    fn log_range(&self) -> (f64, f64) {
        let ceiling = self.setup.tau();
        (ceiling.ln() - self.floor_ratio.ln(), ceiling.ln())
    }

    /// The released bound as an L2 [`ClippingBound`] for [`PrivateCovariance`] (post-processing).
    pub fn bound_of(&self, release: &Release<Coefficients>) -> Result<ClippingBound> {
        match release.output().0.as_slice() {
            [tau] => ClippingBound::l2(*tau),
            other => Err(EstimatorError::Shape { what: "covariance bound release", expected: 1, got: other.len() }),
        }
    }

    /// The Laplace noise on the mean clamped log-norm.
    pub fn noise(&self) -> &LaplaceVector {
        &self.noise
    }
}

impl Mechanism<CurveSet<'_>> for CovarianceBound {
    type Output = Coefficients;

    fn name(&self) -> &'static str {
        "covariance_bound"
    }

    fn n(&self) -> Option<usize> {
        Some(self.setup.n())
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.noise.guarantee()
    }

    fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>> {
        self.setup.check_curves(curves, self.basis.grid())?;
        let layout = self.layout()?;
        let sums = clipped_sums(&layout, Some(&self.basis), curves, self.setup.reference())?;
        Ok(vec![layout.means(&sums, self.setup.n()).1])
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Coefficients>> {
        let noisy = self.noise.release(summary, rng)?;
        let ceiling = self.setup.tau();
        let tau = (self.factor * noisy[0].exp()).clamp(ceiling / self.floor_ratio, ceiling);
        let metadata = ReleaseMetadata {
            clipping: Some(self.setup.bound()),
            components: 1,
            basis: Some(self.basis_description.clone()),
            calibration: Some(self.noise.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp_noise::timing::current(),
            centred: self.setup.reference().is_some(),
            ..ReleaseMetadata::new(
                "covariance_bound",
                self.guarantee(),
                self.floor_ratio.ln() / self.setup.n() as f64,
                SensitivityNorm::L1,
                self.setup.n(),
            )
        };
        Ok(Release::new(Coefficients(vec![tau]), metadata))
    }

    /// The variance of the noisy log-mean (the bound's own error is multiplicative).
    fn accuracy(&self) -> Accuracy {
        Accuracy::expected(2.0 * self.noise.scale().powi(2))
    }
}

#[cfg(test)]
mod tests {
    use fdp_core::{ClippingBound, Session};
    use fdp_data::{Scenario, simulate};
    use fdp_mercer::{BasisOptions, Stationary};
    use fdp_noise::Epsilon;

    use super::*;

    const N: usize = 60;

    fn basis() -> MercerBasis {
        MercerBasis::build(
            Stationary::matern32(0.2).unwrap(),
            Grid::midpoint(0.0, 1.0, 40).unwrap(),
            BasisOptions::default(),
        )
        .unwrap()
    }

    fn setup(n: usize, epsilon: f64, tau: f64) -> MeanSetup {
        MeanSetup::new(n, Epsilon::new(epsilon).unwrap(), ClippingBound::l2(tau).unwrap()).unwrap()
    }

    /// `base` with record 0 replaced by the curve with coefficients `x` on the leading block.
    fn with_record(base: &CurveSet, record: &[f64]) -> CurveSet<'static> {
        let k = base.grid().len();
        let mut values = base.values().to_vec();
        values[..k].copy_from_slice(record);
        CurveSet::from_flat(base.grid().clone(), values, None).unwrap().0
    }

    fn synth(basis: &MercerBasis, x: &[f64]) -> Vec<f64> {
        basis.truncated(x.len()).unwrap().synthesize(x).unwrap()
    }

    /// Adversarial records for J components with τ = 1: one component only, all equal, alternating
    /// signs, two records at 120°, far outside the ball, huge finite values, NaN and ±∞.
    fn adversarial(basis: &MercerBasis, j: usize) -> Vec<Vec<f64>> {
        let k = basis.n_points();
        let flat = vec![1.0 / (j as f64).sqrt(); j];
        let alternating: Vec<f64> = flat.iter().enumerate().map(|(i, v)| if i % 2 == 0 { *v } else { -v }).collect();
        let mut e0 = vec![0.0; j];
        e0[0] = 1.0;
        // With e0, a record at 120° (J >= 2), where the l2 constant is attained.
        let mut at120 = vec![0.0; j];
        at120[0] = -0.5;
        if j >= 2 {
            at120[1] = 3f64.sqrt() / 2.0;
        }
        let mut recs: Vec<Vec<f64>> = vec![
            vec![0.0; k],
            synth(basis, &e0),
            synth(basis, &e0.iter().map(|v| -v).collect::<Vec<_>>()),
            synth(basis, &flat),
            synth(basis, &flat.iter().map(|v| -v).collect::<Vec<_>>()),
            synth(basis, &alternating),
            synth(basis, &at120),
            synth(basis, &flat.iter().map(|v| v * 1e6).collect::<Vec<_>>()),
            vec![f64::MAX; k],
            vec![-f64::MAX; k],
            (0..k).map(|i| if i % 2 == 0 { f64::MAX } else { -f64::MAX }).collect(),
            vec![f64::NAN; k],
            vec![f64::INFINITY; k],
            vec![5e-324; k],
        ];
        let mut half_nan = vec![1e300; k];
        half_nan[..k / 2].fill(f64::NAN);
        recs.push(half_nan);
        recs
    }

    #[test]
    fn the_worst_pairs_stay_within_the_stated_sensitivities() {
        let basis = basis();
        let base = simulate(Scenario::S2, &basis, N, 3).unwrap().curves;
        for j in [1, 2, 3, 6] {
            let laplace = PrivateCovariance::laplace(&basis, setup(N, 1.0, 1.0), j).unwrap();
            let gaussian =
                PrivateCovariance::gaussian(&basis, setup(N, 1.0, 1.0), j, Delta::new(1e-6).unwrap()).unwrap();
            let records = adversarial(&basis, j);
            let sl: Vec<Vec<f64>> =
                records.iter().map(|r| laplace.summarize(&with_record(&base, r)).unwrap()).collect();
            let sg: Vec<Vec<f64>> =
                records.iter().map(|r| gaussian.summarize(&with_record(&base, r)).unwrap()).collect();
            let (mut worst1, mut worst2) = (0.0f64, 0.0f64);
            for a in 0..records.len() {
                assert!(sl[a].iter().chain(&sg[a]).all(|v| v.is_finite()), "J = {j}, record {a}");
                for b in a + 1..records.len() {
                    let l1: f64 = sl[a].iter().zip(&sl[b]).map(|(x, y)| (x - y).abs()).sum();
                    let l2 = sg[a].iter().zip(&sg[b]).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
                    worst1 = worst1.max(l1);
                    worst2 = worst2.max(l2);
                }
            }
            assert!(worst1 <= laplace.sensitivity(), "J = {j}: l1 {worst1} > {}", laplace.sensitivity());
            assert!(worst2 <= gaussian.sensitivity(), "J = {j}: l2 {worst2} > {}", gaussian.sensitivity());
            // The Gaussian constant is attained (records at 120°, J >= 2); the l1 one is within 2x.
            if j >= 2 {
                assert!(worst2 > gaussian.sensitivity() * (1.0 - 1e-6), "J = {j}: {worst2}");
            }
            assert!(worst1 > laplace.sensitivity() / 3.0, "J = {j}: {worst1}");
        }
    }

    #[test]
    fn random_pairs_never_exceed_the_closed_forms() {
        // x, x' drawn on and inside the τ-ball (τ = 2) directly through the record contribution.
        let basis = basis();
        let j = 5;
        let m = PrivateCovariance::laplace(&basis, setup(1, 1.0, 2.0), j).unwrap();
        let g = PrivateCovariance::gaussian(&basis, setup(1, 1.0, 2.0), j, Delta::new(1e-6).unwrap()).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (e_mean, e_product) = m.exponents();
        let scales = (fixed_scale(e_mean), fixed_scale(e_product));
        let contribution = |mech: &PrivateCovariance, x: &[f64]| {
            let mut acc = vec![0i128; summary_len(j)];
            mech.add_record(&mut acc, x, scales);
            mech.summary_from(&acc)
        };
        for _ in 0..2000 {
            let x: Vec<f64> = (0..j).map(|_| 3.0 * (uniform() - 0.5)).collect();
            let y: Vec<f64> = (0..j).map(|_| 3.0 * (uniform() - 0.5)).collect();
            let (a, b) = (contribution(&m, &x), contribution(&m, &y));
            assert!(a.iter().zip(&b).map(|(u, v)| (u - v).abs()).sum::<f64>() <= m.sensitivity());
            let (a, b) = (contribution(&g, &x), contribution(&g, &y));
            assert!(a.iter().zip(&b).map(|(u, v)| (u - v).powi(2)).sum::<f64>().sqrt() <= g.sensitivity());
        }
    }

    #[test]
    fn bad_parameters_are_refused_before_any_charge() {
        let basis = basis();
        let wrong = MeanSetup::new(N, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(1.0).unwrap()).unwrap();
        assert!(matches!(PrivateCovariance::laplace(&basis, wrong, 3), Err(EstimatorError::WrongNorm { .. })));
        assert!(PrivateCovariance::laplace(&basis, setup(N, 1.0, 1.0), 0).is_err());
        assert!(PrivateCovariance::laplace(&basis, setup(N, 1.0, 1.0), basis.len() + 1).is_err());
        assert!(PrivateCovariance::laplace(&basis, setup(N, 1.0, 1.0), 513).is_err());
        assert!(PrivateCovariance::laplace(&basis, setup(N, 1.0, 1e-200), 3).is_err());
        assert!(PrivateCovariance::gaussian(&basis, setup(N, 1.0, 1e160), 3, Delta::new(1e-6).unwrap()).is_err());
        let short = setup(N, 1.0, 1.0).centred_at(vec![0.0; 3]).unwrap();
        assert!(PrivateCovariance::laplace(&basis, short, 3).is_err());
        let curves = simulate(Scenario::S2, &basis, N, 1).unwrap().curves;
        let m = PrivateCovariance::laplace(&basis, setup(N, 1.0, 1.0), 3).unwrap();
        let covariance = m.release(&curves, &mut NoiseRng::seeded(1), Charge::unaccounted()).unwrap();
        assert!(covariance.output().fpca(0).is_err() && covariance.output().fpca(4).is_err());
        // A session charges exactly the guarantee, in one stage.
        let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(2);
        session.release(&m, &curves).unwrap();
        assert_eq!(session.ledger().len(), 1);
    }

    #[test]
    fn bad_records_never_produce_nan() {
        let basis = basis();
        let k = basis.n_points();
        let mut values = vec![f64::NAN; N * k];
        values[k..2 * k].fill(f64::MAX);
        values[2 * k..3 * k].fill(f64::INFINITY);
        values[3 * k..4 * k].fill(-1e300);
        let curves = CurveSet::from_flat(basis.grid().clone(), values, None).unwrap().0;
        for m in [
            PrivateCovariance::laplace(&basis, setup(N, 1.0, 1.0), 4).unwrap(),
            PrivateCovariance::gaussian(&basis, setup(N, 1.0, 1.0), 4, Delta::new(1e-6).unwrap()).unwrap(),
        ] {
            let release = m.release(&curves, &mut NoiseRng::seeded(3), Charge::unaccounted()).unwrap();
            let fpca = release.output().fpca(4).unwrap();
            assert!(release.output().values().iter().all(|v| v.is_finite()));
            assert!(fpca.eigenvalues().iter().chain(fpca.explained_variance()).all(|v| v.is_finite() && *v >= 0.0));
            assert!(fpca.eigenfunctions().iter().flatten().all(|v| v.is_finite()));
            assert!(release.output().mean_curve().iter().all(|v| v.is_finite()));
        }
    }

    #[test]
    fn merged_states_release_the_same_bits_in_any_order() {
        let basis = basis();
        let n = 700;
        let curves = simulate(Scenario::S2, &basis, n, 9).unwrap().curves;
        let k = basis.n_points();
        let reference = vec![0.1; k];
        let m = PrivateCovariance::laplace(&basis, setup(n, 1.0, 2.0).centred_at(reference).unwrap(), 5).unwrap();
        let one_pass = m.release(&curves, &mut NoiseRng::seeded(4), Charge::unaccounted()).unwrap();
        let cuts = [0, 13, 300, 301, 556, n];
        let parts: Vec<CurveSet> = cuts
            .windows(2)
            .map(|w| {
                CurveSet::from_flat(basis.grid().clone(), curves.values()[w[0] * k..w[1] * k].to_vec(), None).unwrap().0
            })
            .collect();
        for order in [[0, 1, 2, 3, 4], [4, 2, 0, 3, 1], [3, 4, 1, 2, 0]] {
            let states: Vec<SummaryState> = order
                .iter()
                .map(|i| {
                    let mut s = m.empty_state();
                    m.update_state(&mut s, &parts[*i]).unwrap();
                    s
                })
                .collect();
            let mut merged = m.empty_state();
            for s in &states {
                merged.merge(s).unwrap();
            }
            let summary = m.state_summary(&merged).unwrap();
            let release = m.privatize(&summary, &mut NoiseRng::seeded(4), Charge::unaccounted()).unwrap();
            let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(release.output().values()), bits(one_pass.output().values()), "order {order:?}");
        }
        // A state of another mechanism (another τ) is refused.
        let other = PrivateCovariance::laplace(&basis, setup(n, 1.0, 3.0), 5).unwrap();
        let mut s = other.empty_state();
        other.update_state(&mut s, &curves).unwrap();
        assert!(m.state_summary(&s).is_err());
    }

    #[test]
    fn a_private_bound_then_the_covariance_spend_their_two_budgets_in_one_session() {
        let basis = basis();
        let n = 500;
        let curves = simulate(Scenario::S2, &basis, n, 6).unwrap().curves;
        let j = 4;
        let ceiling = 200.0;
        let bound = CovarianceBound::new(&basis, setup(n, 0.1, ceiling), j, 1000.0, 1.5).unwrap();
        let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(7);
        let released = session.release(&bound, &curves).unwrap();
        let tau = bound.bound_of(&released).unwrap();
        // Near 1.5x the geometric mean of the norms, far below the ceiling.
        let block = basis.truncated(j).unwrap();
        let log_mean =
            (0..n).map(|i| ClipNorm::L2.norm(&block.project(curves.row(i)).unwrap()).ln()).sum::<f64>() / n as f64;
        let target = 1.5 * log_mean.exp();
        assert!(tau.value() > target / 1.5 && tau.value() < target * 1.5, "{} vs {target}", tau.value());
        let covariance =
            PrivateCovariance::laplace(&basis, MeanSetup::new(n, Epsilon::new(0.9).unwrap(), tau).unwrap(), j).unwrap();
        session.release(&covariance, &curves).unwrap();
        assert_eq!(session.ledger().len(), 2);
        assert!(session.remaining().0 < 1e-12);
        // Exact loss of the bound stage over adversarial records (ln(1000)/n per record, clamped).
        let records = adversarial(&basis, j);
        let summaries: Vec<f64> =
            records.iter().map(|r| bound.summarize(&with_record(&curves, r)).unwrap()[0]).collect();
        for a in &summaries {
            for b in &summaries {
                let loss = fdp_noise::exact_loss::laplace_loss(&[bound.noise().noise()], &[*a], &[*b]).unwrap();
                assert!(loss <= 0.1 * (1.0 + 1e-12), "{loss}");
            }
        }
        // Bad parameters are refused at construction.
        assert!(CovarianceBound::new(&basis, setup(n, 0.1, ceiling), j, 1.0, 1.5).is_err());
        assert!(CovarianceBound::new(&basis, setup(n, 0.1, ceiling), j, 10.0, 0.0).is_err());
        assert!(CovarianceBound::new(&basis, setup(n, 0.1, 1e-140), j, 1e10, 1.0).is_err());
    }

    /// The spectral norm of `P − Q` for the projectors on the spans of orthonormal `u` and `v`
    /// (coefficient vectors in the orthonormal basis).
    fn projector_distance(u: &[Vec<f64>], v: &[Vec<f64>]) -> f64 {
        let j = u[0].len();
        let d = faer::Mat::from_fn(j, j, |a, b| {
            u.iter().map(|x| x[a] * x[b]).sum::<f64>() - v.iter().map(|x| x[a] * x[b]).sum::<f64>()
        });
        let values = fdp_mercer::linalg::symmetric_eigenvalues(d.as_ref()).unwrap();
        values.iter().map(|v| v.abs()).fold(0.0, f64::max)
    }

    #[test]
    fn a_noise_free_release_recovers_the_nonprivate_subspace() {
        let basis = basis();
        let n = 400;
        let curves = simulate(Scenario::S2, &basis, n, 2).unwrap().curves;
        let j = 6;
        let block = basis.truncated(j).unwrap();
        // Non-private: the sample covariance of the projected coefficients (no record clipped at τ = 50).
        let x: Vec<Vec<f64>> = (0..n).map(|i| block.project(curves.row(i)).unwrap()).collect();
        let mean: Vec<f64> = (0..j).map(|a| x.iter().map(|r| r[a]).sum::<f64>() / n as f64).collect();
        let c = faer::Mat::from_fn(j, j, |a, b| {
            x.iter().map(|r| (r[a] - mean[a]) * (r[b] - mean[b])).sum::<f64>() / n as f64
        });
        let (values, vectors) = fdp_mercer::linalg::symmetric_eigen(c.as_ref()).unwrap();
        assert!(x.iter().all(|r| r.iter().map(|v| v * v).sum::<f64>() < 50.0 * 50.0), "no record clipped");
        for eps in [fdp_noise::Epsilon::MAX, 1.0] {
            let m = PrivateCovariance::laplace(&basis, setup(n, eps, 50.0), j).unwrap();
            let fpca =
                m.release(&curves, &mut NoiseRng::seeded(8), Charge::unaccounted()).unwrap().output().fpca(3).unwrap();
            let truth: Vec<Vec<f64>> = (0..3).map(|c| (0..j).map(|a| vectors[(a, c)]).collect()).collect();
            let dist = projector_distance(fpca.coefficients(), &truth);
            if eps > 1.0 {
                assert!(dist < 1e-4, "{dist}"); // the noise at ε = 2^30 leaves about 2e-5
                for (got, want) in fpca.eigenvalues().iter().zip(&values) {
                    assert!((got - want).abs() <= 1e-4 * want, "{got} vs {want}");
                }
                // The eigenfunctions on the grid are orthonormal in L2.
                let grid = basis.grid();
                let f = fpca.eigenfunctions();
                assert!((grid.inner(&f[0], &f[0]).unwrap() - 1.0).abs() < 1e-9);
                assert!(grid.inner(&f[0], &f[1]).unwrap().abs() < 1e-9);
                assert!(fpca.explained_variance().iter().sum::<f64>() <= 1.0 + 1e-12);
            } else {
                // τ = 50 at ε = 1 and n = 400: the noise swamps the operator (τ must fit the data).
                assert!(dist > 0.1, "{dist}");
            }
        }
    }

    /// The truncation risk is Stein's unbiased estimate: over many releases of one summary its mean
    /// matches the mean realised squared error `Σ_{a,b<j}(C̃ − C)² + Σ_{out} C²` of every truncation
    /// j (Laplace and Gaussian; records centred near their mean, as the front doors centre them).
    #[test]
    fn the_truncation_risk_is_unbiased_for_every_truncation() {
        let basis = basis();
        let (n, j) = (300, 5);
        let curves = simulate(Scenario::S2, &basis, n, 3).unwrap().curves;
        let reference = curves.mean_curve();
        let setup = setup(n, 2.0, 4.0).centred_at(reference).unwrap();
        let variants = [
            PrivateCovariance::laplace(&basis, setup.clone(), j).unwrap(),
            PrivateCovariance::gaussian(&basis, setup, j, Delta::new(1e-6).unwrap()).unwrap(),
        ];
        for mechanism in variants {
            let summary = mechanism.summarize(&curves).unwrap();
            let (exact, _) = mechanism.covariance_of(&summary).unwrap();
            let mut rng = NoiseRng::seeded(77);
            let releases = 2000;
            let (mut estimated, mut realised) = (vec![0.0; j], vec![0.0; j]);
            for _ in 0..releases {
                let release = mechanism.privatize(&summary, &mut rng, Charge::unaccounted()).unwrap();
                let c = release.output();
                for (t, r) in c.truncation_risks().iter().enumerate() {
                    estimated[t] += r / releases as f64;
                    let keep = t + 1;
                    let err: f64 = (0..j)
                        .flat_map(|a| (0..j).map(move |b| (a, b)))
                        .map(|(a, b)| {
                            let truth = exact[a * j + b];
                            if a < keep && b < keep { (c.matrix()[a * j + b] - truth).powi(2) } else { truth * truth }
                        })
                        .sum();
                    realised[t] += err / releases as f64;
                }
            }
            // The estimates' spread: the difference of consecutive truncations is what the rule
            // compares, so both the levels and the differences must agree.
            for t in 0..j {
                let tolerance = 0.05 * realised[t].max(realised[j - 1]);
                assert!(
                    (estimated[t] - realised[t]).abs() <= tolerance,
                    "{}: j = {} {estimated:?} vs {realised:?}",
                    mechanism.name(),
                    t + 1
                );
            }
        }
    }

    /// The rule keeps every component when the noise is negligible and only the leading ones when
    /// it swamps the rest; `fpca` follows the mechanism's rule; the truncation is the leading block.
    #[test]
    fn the_risk_truncation_keeps_what_pays_for_its_noise() {
        let basis = basis();
        let (n, j) = (400, 8);
        let curves = simulate(Scenario::S2, &basis, n, 5).unwrap().curves;
        let reference = curves.mean_curve();
        let chosen = |eps: f64, seed: u64| {
            let setup = setup(n, eps, 4.0).centred_at(reference.clone()).unwrap();
            let mechanism = PrivateCovariance::laplace(&basis, setup, j).unwrap().with_truncation(Truncation::Risk);
            let release = mechanism.release(&curves, &mut NoiseRng::seeded(seed), Charge::unaccounted()).unwrap();
            let c = release.output().clone();
            (c.risk_truncation(1).unwrap(), c)
        };
        // ε = 2³⁰ (the largest): the released operator is the clipped data's; every entry pays for itself.
        assert_eq!(chosen(fdp_noise::Epsilon::MAX, 1).0, j);
        // ε = 0.5 at τ = 4: the noise (scale ~ (√8 + 1)² 16/(400 · 0.5) ≈ 1.2 per entry) swamps
        // everything past S-2's leading components.
        for seed in 0..5 {
            let (picked, c) = chosen(0.5, seed);
            assert!(picked <= 3, "seed {seed}: {picked}");
            let fpca = c.fpca(2).unwrap();
            assert_eq!(fpca.components(), c.risk_truncation(2).unwrap());
            assert_eq!(fpca.coefficients()[0].len(), fpca.components());
            // The truncation is the leading block, and truncating to J is the identity.
            let t = c.truncated(2).unwrap();
            assert_eq!(t.matrix(), &[c.matrix()[0], c.matrix()[1], c.matrix()[j], c.matrix()[j + 1]]);
            assert_eq!(t.mean_coefficients(), &c.mean_coefficients()[..2]);
            assert_eq!(t.truncation(), Truncation::Fixed);
            assert_eq!(c.truncated(j).unwrap().values(), c.values());
        }
        // A fixed rule uses all J.
        let setup = setup(n, 0.5, 4.0).centred_at(reference).unwrap();
        let fixed = PrivateCovariance::laplace(&basis, setup, j).unwrap();
        let release = fixed.release(&curves, &mut NoiseRng::seeded(1), Charge::unaccounted()).unwrap();
        assert_eq!(release.output().fpca(2).unwrap().components(), j);
        // Bad truncations are refused.
        let c = release.output();
        assert!(c.truncated(0).is_err() && c.truncated(j + 1).is_err());
        assert!(c.risk_truncation(0).is_err() && c.risk_truncation(j + 1).is_err());
        let refused = "sure".parse::<Truncation>().unwrap_err().to_string();
        assert!(refused.contains("truncation") && refused.contains("sure"), "{refused}");
        assert_eq!("risk".parse::<Truncation>().unwrap(), Truncation::Risk);
    }
}
