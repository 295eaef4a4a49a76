//! Regularised empirical risk minimisation in the RKHS of `C^η` (Theorem 16; Hall et al. 2013):
//! kernel ridge regression and regularised logistic regression, solved exactly in the eigenbasis and
//! released through the ICLP (pure ε-DP) or the Gaussian process ((ε, δ)-DP).
//!
//! `f = argmin (1/n) Σ_i L(y_i, f(x_i)) + ψ ||f||²_{C^η}` over `f = Σ_{k<=J} β_k φ_k`, where
//! `||f||²_{C^η} = Σ_k β_k² / λ_k^η`. Inputs x are snapped to grid points (a per-record map).

use faer::Mat;

use fdp_mercer::linalg::{damped_newton, softplus, solve_spd};
use fdp_mercer::{Grid, MercerBasis};
use fdp_noise::{ComponentNoise, Delta, Epsilon, LatticeGaussian, LatticeLaplace, PrivacyGuarantee, Sensitivity};

use crate::density::snap_to_grid;
use crate::error::{EstimatorError, Result, positive};
use fdp_core::{ClippingBound, Mechanism, Regularisation, ReleaseMetadata, SensitivityNorm, Tuning};

use crate::mechanism::{basis_curve_mechanism, delegate_to_basis_output};
use fdp_functional::{BasisOutput, BasisSampler, GaussianProcessSampler, IclpSampler};

/// The loss, with what makes it M-admissible (Lipschitz in f(x) on the relevant range).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Loss {
    /// `(y - f(x))²` with responses clipped to `|y| <= bound`. Since `ψ ||f̂||² <= (1/n) Σ y_i² <= B²`,
    /// `|f̂(x)| <= κ B / sqrt(ψ)` with `κ² = sup_x C^η(x,x)`, so the loss is M-admissible with
    /// `M = 2B (1 + κ/sqrt(ψ))`.
    Squared { bound: f64 },
    /// `log(1 + exp(-y f(x)))` with labels `y ∈ {-1, +1}` (anything > 0 is +1, anything else -1):
    /// 1-admissible.
    Logistic,
}

/// Labelled points: inputs as grid indices, with responses or labels (non-finite → 0, the public
/// default; labels use its sign).
#[derive(Debug, Clone, PartialEq)]
pub struct Labelled {
    grid: Grid,
    index: Vec<usize>,
    y: Vec<f64>,
}

impl Labelled {
    /// Snaps inputs (flat, `grid.dim()` numbers each) with [`snap_to_grid`] and pairs them with `y`.
    pub fn snap(grid: &Grid, x: &[f64], y: Vec<f64>) -> Result<Self> {
        Self::new(grid, snap_to_grid(grid, x)?, y)
    }

    /// Inputs given as grid indices (each `< K`), one response per input.
    pub fn new(grid: &Grid, index: Vec<usize>, y: Vec<f64>) -> Result<Self> {
        if y.len() != index.len() {
            return Err(EstimatorError::Shape { what: "responses", expected: index.len(), got: y.len() });
        }
        if let Some(bad) = index.iter().find(|&&i| i >= grid.len()) {
            return Err(EstimatorError::Shape { what: "grid index", expected: grid.len(), got: *bad });
        }
        let y = y.into_iter().map(|v| if v.is_finite() { v } else { 0.0 }).collect();
        Ok(Self { grid: grid.clone(), index, y })
    }

    /// n.
    pub fn n(&self) -> usize {
        self.index.len()
    }

    /// The grid index of each input.
    pub fn indices(&self) -> &[usize] {
        &self.index
    }

    /// The responses (after the non-finite repair).
    pub fn responses(&self) -> &[f64] {
        &self.y
    }
}

/// The public choices of a regularised ERM: the loss, n, the kernel power η and the penalty ψ.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErmSetup {
    loss: Loss,
    n: usize,
    eta: f64,
    psi: f64,
}

impl ErmSetup {
    /// `n >= 1`, `(η, ψ)` with `ψ > 0` (the strong convexity the sensitivity rests on), and for the
    /// squared loss a response bound that a clipping bound could be (finite, at least 2^-960: the
    /// responses are summed in fixed point at its scale, which below that is not representable).
    pub fn new(loss: Loss, n: usize, regularisation: Regularisation) -> Result<Self> {
        fdp_core::caps::records(n)?;
        let (eta, psi) = (regularisation.eta(), positive("psi", regularisation.psi())?);
        if let Loss::Squared { bound } = loss {
            positive("response bound", bound)?;
            fdp_core::ClippingBound::sup(bound)?;
        }
        Ok(Self { loss, n, eta, psi })
    }

    /// The stability bound `||f_D - f_D'||_{C^η} <= M κ / (ψ n)` on `basis`; an error naming η when
    /// `λ_k^{±η}` leaves the range of f64 on this basis (the penalty `λ_J^{-η}` overflows, or
    /// `κ² = sup_x C^η(x, x)` underflows to 0), where the bound would be meaningless.
    fn rkhs_sensitivity(&self, basis: &MercerBasis) -> Result<f64> {
        let k = basis.power_diagonal(self.eta).into_iter().fold(0.0, f64::max).sqrt();
        let smallest = basis.eigenvalues()[basis.len() - 1];
        if !(k > 0.0 && smallest.powf(-self.eta).is_finite()) {
            return Err(EstimatorError::BadParameter {
                name: "eta",
                value: self.eta.into(),
                reason: "lambda_k^eta leaves the floating-point range on this basis; lower eta or keep fewer components",
            });
        }
        let m = match self.loss {
            Loss::Squared { bound } => 2.0 * bound * (1.0 + k / self.psi.sqrt()),
            Loss::Logistic => 1.0,
        };
        Ok(m * k / (self.psi * self.n as f64))
    }

    /// **Every solve succeeds, for every dataset** (checked when the mechanism is built). The ridge
    /// system and every Newton Hessian are `A = Gram_w / n + c ψ diag(p)`, `p_r = λ_r^{-η}`, with
    /// weights `0 <= w_g <= count_g` (`c = 1`, squared loss) or `w_g <= count_g / 4` (`c = 2`,
    /// logistic), so `A_rr <= peak_r + c ψ p_r`, `peak_r = max_g φ_r(g)²` (the counts sum to n).
    /// With `D = diag(A)`, `H = D^{-1/2} A D^{-1/2} >= diag(c ψ p_r / A_rr)` (the Gram part is PSD),
    /// so `λ_min(H) >= h = min_r ψ p_r / (peak_r + ψ p_r)`. Cholesky succeeds on a matrix whose
    /// scaled form has `λ_min(H) > J γ_{J+1} / (1 - J γ_{J+1})` (Demmel 1989; Higham, *Accuracy and
    /// Stability*, Thm 10.7), and forming A in f64 moves H by at most `J γ_{K+2}` in the 2-norm; the
    /// check asks for twice their sum. It fails only for a ψ (or η) that leaves the penalty below the
    /// rounding of the Gram matrix (e.g. ψ = 1e-30 with η = 0.5 on 30 components), where the solve
    /// used to fail after the charge on data with few distinct inputs.
    fn check_solvable(&self, basis: &MercerBasis) -> Result<()> {
        const U: f64 = f64::EPSILON / 2.0;
        let (k, j) = (basis.n_points() as f64, basis.len() as f64);
        let gamma = |m: f64| m * U / (1.0 - m * U);
        let need = 2.0 * (j * gamma(j + 1.0) / (1.0 - j * gamma(j + 1.0)) + j * gamma(k + 2.0));
        let phi = basis.eigenfunctions();
        let h = basis
            .eigenvalues()
            .iter()
            .enumerate()
            .map(|(r, l)| {
                let peak = (0..basis.n_points()).map(|g| phi[(g, r)] * phi[(g, r)]).fold(0.0, f64::max);
                let penalty = self.psi * l.powf(-self.eta);
                penalty / (peak + penalty)
            })
            .fold(f64::INFINITY, f64::min);
        if h > need {
            Ok(())
        } else {
            Err(EstimatorError::BadParameter {
                name: "psi",
                value: self.psi.into(),
                reason: "so small (for this eta and basis) that the penalty falls below the rounding of the \
                         Gram matrix: the regularised system could fail to factor in f64 on some data; raise psi",
            })
        }
    }

    fn metadata(
        &self,
        name: &str,
        guarantee: PrivacyGuarantee,
        sensitivity: f64,
        norm: SensitivityNorm,
    ) -> ReleaseMetadata {
        // Responses of the squared loss are clipped to |y| <= bound (a sup-norm bound on one number).
        let clipping = match self.loss {
            Loss::Squared { bound } => ClippingBound::sup(bound).ok(),
            Loss::Logistic => None,
        };
        ReleaseMetadata {
            clipping,
            regularisation: Regularisation::new(self.eta, self.psi).ok(),
            tuning: Tuning::Fixed,
            ..ReleaseMetadata::new(name, guarantee, sensitivity, norm, self.n)
        }
    }
}

/// Kernel ridge or logistic regression with a private release of its coefficients.
///
/// **Sensitivity (Theorem 16; Bousquet & Elisseeff).** The objective is 2ψ-strongly convex in the
/// RKHS of `C^η` and the loss is M-admissible, so replacing one record moves the minimiser by
/// `||f_D - f_D'||_{C^η} <= M κ / (ψ n)`, `κ² = sup_x C^η(x,x)` (on the grid, over the kept components).
///
/// ```
/// use fdp_estimators::{CurveReleaseExt, ErmSetup, KernelErm, Labelled, Loss, Mechanism, misclassification};
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
///
/// let grid = Grid::midpoint(0.0, 1.0, 50)?;
/// let basis = MercerBasis::build(Stationary::matern32(0.2)?, grid.clone(), BasisOptions::default().max_components(20))?;
/// let x: Vec<f64> = (0..400).map(|i| (i as f64 * 0.37) % 1.0).collect();
/// let y: Vec<f64> = x.iter().map(|t| if *t > 0.5 { 1.0 } else { -1.0 }).collect();
/// let data = Labelled::snap(&grid, &x, y)?;
/// let setup = ErmSetup::new(Loss::Logistic, 400, fdp_core::Regularisation::new(1.25, 0.03)?)?;
/// let model = KernelErm::iclp(&basis, setup, fdp_noise::Epsilon::new(1.0)?)?;
/// let release = fdp_core::Session::pure(fdp_noise::Epsilon::new(1.0)?)?.release(&model, &data)?;
/// assert!(misclassification(release.curve(), &data) < 0.5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct KernelErm<N> {
    setup: ErmSetup,
    /// `1 / λ_k^η`, the penalty weights.
    penalty: Vec<f64>,
    output: BasisOutput<N>,
    sensitivity_rkhs: f64,
    /// The name in the ledger and in the release's metadata (the same).
    name: &'static str,
}

impl KernelErm<LatticeLaplace> {
    /// Released by the ICLP: `||h||_{1,C} = Σ_k |h_k|/sqrt(λ_k) <= ||h||_{C^η} (Σ_k λ_k^{η-1})^{1/2}`
    /// (Cauchy-Schwarz), so `Δ_{1,C} = M κ sqrt(tr C^{η-1}) / (ψ n)`.
    pub fn iclp(basis: &MercerBasis, setup: ErmSetup, epsilon: Epsilon) -> Result<Self> {
        let eps = epsilon;
        let rkhs = setup.rkhs_sensitivity(basis)?;
        setup.check_solvable(basis)?;
        let sensitivity = rkhs * basis.trace_power(setup.eta - 1.0).sqrt();
        let sampler = IclpSampler::calibrated(basis, Sensitivity::new(sensitivity)?, eps)?;
        let name = match setup.loss {
            Loss::Squared { .. } => "iclp_kernel_ridge",
            Loss::Logistic => "iclp_kernel_logistic",
        };
        let meta = setup.metadata(name, PrivacyGuarantee::pure(eps), sensitivity, SensitivityNorm::L1C);
        Self::assemble(basis, setup, sampler, meta, rkhs, name)
    }
}

impl KernelErm<LatticeGaussian> {
    /// Released by the Gaussian process: `||h||_C² = Σ_k h_k² / λ_k <= ||h||²_{C^η} max_k λ_k^{η-1}`,
    /// so `Δ₂ = M κ (max_k λ_k^{η-1})^{1/2} / (ψ n)`, calibrated by the analytic Gaussian mechanism.
    pub fn gaussian_process(basis: &MercerBasis, setup: ErmSetup, epsilon: Epsilon, delta: Delta) -> Result<Self> {
        let eps = epsilon;
        let rkhs = setup.rkhs_sensitivity(basis)?;
        setup.check_solvable(basis)?;
        let worst = basis.eigenvalues().iter().map(|l| l.powf(setup.eta - 1.0)).fold(0.0, f64::max);
        let sensitivity = rkhs * worst.sqrt();
        let sampler = GaussianProcessSampler::calibrated(basis, Sensitivity::new(sensitivity)?, eps, delta)?;
        let guarantee = PrivacyGuarantee::approximate(eps, delta);
        let name = match setup.loss {
            Loss::Squared { .. } => "gaussian_process_kernel_ridge",
            Loss::Logistic => "gaussian_process_kernel_logistic",
        };
        let meta = setup.metadata(name, guarantee, sensitivity, SensitivityNorm::CameronMartin);
        Self::assemble(basis, setup, sampler, meta, rkhs, name)
    }
}

impl<N: ComponentNoise> KernelErm<N> {
    fn assemble(
        basis: &MercerBasis,
        setup: ErmSetup,
        sampler: BasisSampler<N>,
        meta: ReleaseMetadata,
        rkhs: f64,
        name: &'static str,
    ) -> Result<Self> {
        let penalty = basis.eigenvalues().iter().map(|l| l.powf(-setup.eta)).collect();
        Ok(Self { setup, penalty, output: BasisOutput::new(sampler, None, meta)?, sensitivity_rkhs: rkhs, name })
    }

    /// The stability bound `||f_D - f_D'||_{C^η} <= M κ / (ψ n)`.
    pub fn rkhs_sensitivity(&self) -> f64 {
        self.sensitivity_rkhs
    }

    /// The sampler of the released coefficients.
    pub fn sampler(&self) -> &BasisSampler<N> {
        self.output.sampler()
    }

    /// The loss.
    pub fn loss(&self) -> Loss {
        self.setup.loss
    }

    /// Solves the symmetric positive definite system `a x = rhs` (Cholesky, bit-identical on any
    /// thread count).
    fn solve(&self, a: &Mat<f64>, rhs: &[f64]) -> Result<Vec<f64>> {
        solve_spd(a.as_ref(), rhs).ok_or(EstimatorError::BadParameter {
            name: "psi",
            value: self.setup.psi.into(),
            reason: "the regularised system is not positive definite",
        })
    }
}

/// Per grid point: number of records, sum of responses (squared loss) or label counts (logistic).
struct Aggregates {
    count: Vec<f64>,
    sum_y: Vec<f64>,
    positives: Vec<f64>,
}

/// The responses are summed exactly, in fixed point (`trunc(y 2^e)` with `e` from the bound B, as
/// every other summary): a floating-point sum depended on the records' order and could move by more
/// than one clamped response when one record changed (an independent audit's pair at n ≈ 4e6 moved
/// the release 1.00024x the exact difference). Each truncated response is still in `[-B, B]`, so
/// the stability bound holds for the data the minimiser sees; the sum is a function of the multiset.
fn aggregate(data: &Labelled, loss: Loss, k: usize) -> Aggregates {
    let mut a = Aggregates { count: vec![0.0; k], sum_y: vec![0.0; k], positives: vec![0.0; k] };
    let exponent = match loss {
        Loss::Squared { bound } => fdp_core::state::fixed_point_exponent(bound),
        Loss::Logistic => 0,
    };
    let mut sum_fixed = vec![0i128; k];
    for (&g, &y) in data.index.iter().zip(&data.y) {
        a.count[g] += 1.0;
        match loss {
            Loss::Squared { bound } => sum_fixed[g] += fdp_core::state::to_fixed(y.clamp(-bound, bound), exponent),
            Loss::Logistic => a.positives[g] += f64::from(y > 0.0),
        }
    }
    if let Loss::Squared { .. } = loss {
        a.sum_y = sum_fixed.iter().map(|s| fdp_core::state::from_fixed(*s, exponent)).collect();
    }
    a
}

basis_curve_mechanism!(KernelErm<N>, Labelled);

impl<N: ComponentNoise> Mechanism<Labelled> for KernelErm<N> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn n(&self) -> Option<usize> {
        Some(self.setup.n)
    }

    /// The exact minimiser's coefficients: one J x J solve for the squared loss, Newton's method
    /// (to a gradient norm below 1e-12) for the logistic loss.
    fn summarize(&self, data: &Labelled) -> Result<Vec<f64>> {
        let basis = self.output.sampler().basis();
        if data.n() != self.setup.n {
            return Err(EstimatorError::Shape { what: "number of records", expected: self.setup.n, got: data.n() });
        }
        if &data.grid != basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        let (k, j) = (basis.n_points(), basis.len());
        let phi = basis.eigenfunctions();
        let agg = aggregate(data, self.setup.loss, k);
        let n = self.setup.n as f64;
        // Weighted Gram Σ_g w_g φ(g) φ(g)^T / n plus the penalty 2ψ diag(λ^{-η}) (the factor 2 of the
        // squared loss's gradient is divided out).
        let gram = |w: &[f64], penalty_scale: f64| {
            Mat::from_fn(j, j, |r, c| {
                let s: f64 = (0..k).filter(|&g| w[g] != 0.0).map(|g| w[g] * phi[(g, r)] * phi[(g, c)]).sum::<f64>() / n;
                s + if r == c { penalty_scale * self.setup.psi * self.penalty[r] } else { 0.0 }
            })
        };
        match self.setup.loss {
            Loss::Squared { .. } => {
                let a = gram(&agg.count, 1.0);
                let b: Vec<f64> = (0..j).map(|r| (0..k).map(|g| agg.sum_y[g] * phi[(g, r)]).sum::<f64>() / n).collect();
                self.solve(&a, &b)
            }
            Loss::Logistic => {
                let sigmoid = |z: f64| 1.0 / (1.0 + (-z).exp());
                let objective = |beta: &[f64]| -> f64 {
                    let data: f64 = (0..k)
                        .filter(|&g| agg.count[g] > 0.0)
                        .map(|g| {
                            let f: f64 = (0..j).map(|r| phi[(g, r)] * beta[r]).sum();
                            agg.positives[g] * softplus(-f) + (agg.count[g] - agg.positives[g]) * softplus(f)
                        })
                        .sum::<f64>()
                        / n;
                    data + self.setup.psi * beta.iter().zip(&self.penalty).map(|(b, p)| p * b * b).sum::<f64>()
                };
                let derivatives = |beta: &[f64]| {
                    let f: Vec<f64> = (0..k).map(|g| (0..j).map(|r| phi[(g, r)] * beta[r]).sum()).collect();
                    // d/df of Σ_i log(1 + e^{-y f}) at a grid point: -(positives - count σ(f)).
                    let resid: Vec<f64> = (0..k).map(|g| agg.count[g] * sigmoid(f[g]) - agg.positives[g]).collect();
                    let grad: Vec<f64> = (0..j)
                        .map(|r| {
                            (0..k).map(|g| resid[g] * phi[(g, r)]).sum::<f64>() / n
                                + 2.0 * self.setup.psi * self.penalty[r] * beta[r]
                        })
                        .collect();
                    let w: Vec<f64> = (0..k).map(|g| agg.count[g] * sigmoid(f[g]) * (1.0 - sigmoid(f[g]))).collect();
                    (grad, gram(&w, 2.0))
                };
                damped_newton(vec![0.0; j], 100, (1e-12, 0.0), objective, derivatives).ok_or(
                    EstimatorError::BadParameter {
                        name: "psi",
                        value: self.setup.psi.into(),
                        reason: "the regularised system is not positive definite",
                    },
                )
            }
        }
    }

    delegate_to_basis_output!();
}

/// Mean squared error `(1/m) Σ (y - f(x))²` of a fitted curve (values on the grid) on test data.
pub fn squared_risk(curve: &[f64], data: &Labelled) -> f64 {
    let m = data.y.len().max(1) as f64;
    data.index.iter().zip(&data.y).map(|(&g, y)| (y - curve[g]).powi(2)).sum::<f64>() / m
}

/// Misclassification rate of `sign f(x)` on test labels (`y > 0` is the positive class).
pub fn misclassification(curve: &[f64], data: &Labelled) -> f64 {
    let m = data.y.len().max(1) as f64;
    data.index.iter().zip(&data.y).filter(|(g, y)| (curve[**g] > 0.0) != (**y > 0.0)).count() as f64 / m
}
