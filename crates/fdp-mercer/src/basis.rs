//! The Mercer eigenbasis of a kernel on a grid (weighted Nyström), and everything computed in it:
//! projection, synthesis, off-grid evaluation, operator powers and the norms of the ICLP calibration.

use std::sync::Arc;

use faer::{Mat, MatRef};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use fdp_core::ParamValue;

use crate::error::{MercerError, Result, check_len};
use crate::grid::{Grid, GridLayout};
use crate::kernel::{Brownian, Kernel, KernelSpec};
use crate::linalg::{matmul, symmetric_eigen, symmetric_eigenvalues, thin_q};
use crate::toeplitz::WeightedToeplitz;

/// Default relative truncation tolerance: keep `λ_k > 1e-12 λ_1`.
pub const DEFAULT_RTOL: f64 = 1e-12;

/// Which eigensolver builds the basis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Solver {
    /// Dense solver below 3000 points or without a component cap; randomized (q = 4) above.
    Auto,
    /// Full symmetric eigendecomposition of the K x K operator: O(K³) flops, exact to round-off.
    Dense,
    /// Only the leading `max_components` eigenpairs, by randomized block subspace iteration
    /// (Halko, Martinsson & Tropp 2011, Alg. 4.4 + Rayleigh-Ritz): `3 + 2q` products of the
    /// K x K operator with a K x L block, L = max(2J, J + 10). For grids of 10⁴ points and more; on
    /// a uniform 1-D grid with a stationary kernel the products are FFTs and the K x K matrix is
    /// never formed.
    Randomized {
        /// Power iterations q; each sharpens the leading subspace by a factor `(λ_{L+1}/λ_J)²`.
        power_iterations: usize,
    },
}

/// Structure of the weighted kernel matrix `A = W^{1/2} C W^{1/2}` that the eigensolver exploits.
/// Each is exact (not an approximation): the eigenpairs are those of `A`, up to round-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Structure {
    /// None: one eigenproblem of size K.
    Plain,
    /// `A_ij = A_{K-1-i, K-1-j}`: A commutes with the exchange matrix J, so its eigenvectors are
    /// symmetric (`Jv = v`) or antisymmetric (`Jv = -v`) and the problem splits exactly into two of
    /// size about K/2 (about 4x fewer flops for a full solve). Holds for a stationary kernel on any
    /// grid symmetric about its centre with symmetric weights (midpoint, trapezoid, their tensor
    /// products); detected numerically (to 1e-12 of the largest entry).
    Centrosymmetric,
    /// A separable (product) kernel `C(s, t) = C_x(s_x, t_x) C_y(s_y, t_y)` on a tensor grid with
    /// product weights: `A = A_x ⊗ A_y`, whose eigenpairs are the products of the factors'
    /// (`λ = λ^x_a λ^y_b`, `u = u^x_a ⊗ u^y_b`). A 100 x 100 grid costs two 100-point solves.
    Kronecker,
}

/// How the basis is truncated and computed. Validated by [`MercerBasis::build`].
///
/// **Truncation rule.** Eigenvalues are sorted in descending order; component `k` is kept when
/// `λ_k > rtol · λ_1` (and `λ_k > 0`), up to `max_components`. Eigenvalues below that are round-off
/// (negative ones would make `sqrt(λ)` NaN; tiny ones would give a component almost no noise and an
/// astronomically large norm weight), so they are dropped, and every summary is projected onto the kept
/// components before noise is added.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BasisOptions {
    /// Relative eigenvalue cut-off, in `[0, 1)`.
    pub rtol: f64,
    /// Keep at most this many components (required for [`Solver::Randomized`]).
    pub max_components: Option<usize>,
    /// Eigensolver.
    pub solver: Solver,
    /// Structure to exploit; `None` (the default) detects it: Kronecker for a separable kernel on
    /// a tensor grid, else centrosymmetric where the matrix is, else plain. Forcing a structure that
    /// does not hold is an error; `Some(Structure::Plain)` forces the plain solver.
    pub structure: Option<Structure>,
}

impl Default for BasisOptions {
    fn default() -> Self {
        Self { rtol: DEFAULT_RTOL, max_components: None, solver: Solver::Auto, structure: None }
    }
}

impl BasisOptions {
    /// Sets the relative cut-off.
    pub fn rtol(self, rtol: f64) -> Self {
        Self { rtol, ..self }
    }

    /// Keeps at most `j` components.
    pub fn max_components(self, j: usize) -> Self {
        Self { max_components: Some(j), ..self }
    }

    /// Chooses the eigensolver.
    pub fn solver(self, solver: Solver) -> Self {
        Self { solver, ..self }
    }

    /// Forces a structure (or [`Structure::Plain`] for none) instead of detecting it.
    pub fn structure(self, structure: Structure) -> Self {
        Self { structure: Some(structure), ..self }
    }

    /// The leading `j` eigenpairs by the randomized solver with four power iterations.
    pub fn top(j: usize) -> Self {
        Self::default().max_components(j).solver(Solver::Randomized { power_iterations: 4 })
    }

    fn validate(&self, k: usize) -> Result<Solver> {
        if !(self.rtol.is_finite() && (0.0..1.0).contains(&self.rtol)) {
            return Err(MercerError::BadOption { name: "rtol", value: self.rtol.into(), reason: "must be in [0, 1)" });
        }
        if self.max_components == Some(0) {
            return Err(MercerError::BadOption {
                name: "max_components",
                value: 0usize.into(),
                reason: "must be at least 1",
            });
        }
        match (self.solver, self.max_components) {
            (Solver::Randomized { .. }, None) => Err(MercerError::BadOption {
                name: "max_components",
                value: ParamValue::Missing,
                reason: "the randomized solver needs a component cap",
            }),
            (Solver::Auto, Some(j)) if k > 3000 && j < k / 4 => Ok(Solver::Randomized { power_iterations: 4 }),
            (Solver::Auto, _) => Ok(Solver::Dense),
            (s, _) => Ok(s),
        }
    }
}

/// Where a basis came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BasisOrigin {
    /// Weighted Nyström eigendecomposition with the given solver and exploited structure.
    Nystrom { solver: Solver, structure: Structure },
    /// The closed-form Brownian eigenpairs on a midpoint grid of `[0, length]`.
    BrownianClosedForm { length: f64 },
}

/// Serialisable description of a basis, for release metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BasisSummary {
    pub kernel: KernelSpec,
    pub grid_points: usize,
    pub grid_dim: usize,
    pub components: usize,
    pub rtol: f64,
    pub origin: BasisOrigin,
    pub largest_eigenvalue: f64,
    pub smallest_kept_eigenvalue: f64,
}

/// Least-squares fit of `ln λ_k = ln c - 2ν ln k` over components `first..=last` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecayFit {
    /// The decay exponent 2ν (see [`MercerBasis::decay`]).
    pub exponent: f64,
    /// The constant c.
    pub constant: f64,
    /// First component used (1-based).
    pub first: usize,
    /// Last component used (1-based).
    pub last: usize,
    /// The spectrum the fit was made on.
    pub source: DecaySource,
}

/// Where the eigenvalues of a [`DecayFit`] came from (see [`MercerBasis::decay`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum DecaySource {
    /// The Nyström eigenvalues of the kernel on a grid of this many points (the basis' own, or a
    /// midpoint grid of its interval).
    Nystrom {
        /// Grid points.
        points: usize,
    },
    /// Widom's asymptotics `λ_k ≈ S(π(k - 1/2)/L)` from the kernel's spectral density S.
    Spectral,
}

impl DecayFit {
    /// The ν of `λ_k ≈ c k^{-2ν}`.
    pub fn nu(&self) -> f64 {
        self.exponent / 2.0
    }
}

struct Inner {
    kernel: Arc<dyn Kernel>,
    grid: Grid,
    /// Kept eigenvalues, descending, all > 0.
    lambda: Vec<f64>,
    /// `φ_k(t_i)`, K x J.
    phi: Mat<f64>,
    /// `w_i φ_k(t_i)`, K x J: projection is one product with it.
    weighted_phi: Mat<f64>,
    rtol: f64,
    origin: BasisOrigin,
    /// The decay fit, computed on first use.
    decay: std::sync::OnceLock<DecayFit>,
}

/// Grid size on which [`MercerBasis::decay`] resolves the spectrum of a coarse 1-D basis.
const DECAY_GRID: usize = 1000;

/// The decay of a 1-D kernel on `[a, b]` as [`MercerBasis::decay`] fits it on a `DECAY_GRID`-point
/// midpoint grid, without that grid's basis, when the kernel has a spectral density S:
/// - the window `[k_max/4, k_max]` reaches the cap `DECAY_GRID/8` (a polynomial tail: every Matérn
///   kernel but the smoothest at long length-scales): the fit on Widom's `λ_k ≈ S(π(k - 1/2)/L)`,
///   `k = 1..DECAY_GRID`, microseconds;
/// - a shorter window (a super-polynomial tail: the Gaussian kernel, Matérn 5/2 at ρ ≳ L/3): the
///   leading eigenvalues on a midpoint grid of `G >= 8 k_max + 64` points, eigenvalues only, on the
///   two centrosymmetric halves; G doubles while its own cap `G/8` binds. With `G < DECAY_GRID` the
///   window is the fine grid's and its eigenvalues agree with the fine grid's to the aliasing error
///   `Σ_{m≠0} S(ω + 2πm/h)/S(ω)`, negligible for such fast-decaying densities.
///
/// `None` (use the fine grid) for kernels without a spectral density or a Toeplitz structure, or
/// when G would reach `DECAY_GRID`.
fn spectral_decay(kernel: &dyn Kernel, (a, b): (f64, f64)) -> Option<DecayFit> {
    let length = b - a;
    let widom = (1..=DECAY_GRID)
        .map(|k| kernel.spectral_density(std::f64::consts::PI * (k as f64 - 0.5) / length))
        .collect::<Option<Vec<f64>>>()?;
    if !widom.iter().all(|v| v.is_finite() && *v >= 0.0) || widom[0] <= 0.0 {
        return None;
    }
    let fit = fit_decay(&widom, DECAY_GRID, DecaySource::Spectral);
    if fit.last >= DECAY_GRID / 8 {
        return Some(fit);
    }
    let mut points = (8 * fit.last + 64).next_multiple_of(32);
    while points < DECAY_GRID {
        let grid = Grid::midpoint(a, b, points).ok()?;
        let toeplitz = WeightedToeplitz::new(kernel, &grid)?.ok()?;
        let (sym, anti) = toeplitz.centrosymmetric_halves();
        let (s, t) = rayon::join(|| symmetric_eigenvalues(sym.as_ref()), || symmetric_eigenvalues(anti.as_ref()));
        let mut values: Vec<f64> = s.ok()?.into_iter().chain(t.ok()?).collect();
        values.sort_by(|x, y| y.total_cmp(x));
        if !(values[0].is_finite() && values[0] > 0.0) {
            return None;
        }
        let fit = fit_decay(&values, points, DecaySource::Nystrom { points });
        if fit.last < points / 8 {
            return Some(fit);
        }
        points *= 2;
    }
    None
}

/// Least-squares fit of `ln λ_k` on `ln k` over the reliable tail of a descending spectrum on a grid
/// of `k_grid` points: `k ∈ [k_max/4, k_max]`, `k_max` the last `λ_k >= 1e-9 λ_1`, at most `K/8`.
fn fit_decay(l: &[f64], k_grid: usize, source: DecaySource) -> DecayFit {
    let reliable = l.iter().take_while(|&&v| v >= 1e-9 * l[0]).count();
    let last = reliable.min((k_grid / 8).max(2)).min(l.len()).max(1);
    let first = (last / 4).max(1);
    let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for k in first..=last {
        let (x, y) = ((k as f64).ln(), l[k - 1].ln());
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let m = (last - first + 1) as f64;
    let denom = m * sxx - sx * sx;
    let slope = if denom > 0.0 { (m * sxy - sx * sy) / denom } else { 0.0 };
    let intercept = (sy - slope * sx) / m;
    DecayFit { exponent: -slope, constant: intercept.exp(), first, last, source }
}

/// The Mercer eigenbasis `(λ_k, φ_k)` of a kernel `C` on a [`Grid`], truncated to the kept components.
///
/// **Construction (weighted Nyström).** With `W = diag(w)` and `C_ij = C(t_i, t_j)`,
/// `A = W^{1/2} C W^{1/2} = U diag(λ) U^T`; then `λ_k` approximates the k-th eigenvalue of the integral
/// operator `(Cf)(s) = ∫ C(s,t) f(t) dt` and `φ_k(t_i) = U_ik / sqrt(w_i)` is orthonormal in
/// `<f, g> = Σ w_i f(t_i) g(t_i)`. Off the grid, `φ_k(s) = λ_k^{-1} Σ_i w_i C(s, t_i) φ_k(t_i)`.
///
/// **Operators and norms.** `C^η` has eigenvalues `λ_k^η` and the same eigenfunctions.
/// For `h = Σ h_k φ_k`: `||h||_C² = Σ h_k²/λ_k` (Cameron-Martin / RKHS norm, the GP mechanism's
/// sensitivity norm) and `||h||_{1,C} = Σ |h_k| / sqrt(λ_k)` (the ICLP mechanism's).
///
/// The basis is computed once; cloning it is an `Arc` bump, so every estimator and sampler shares it.
///
/// ```
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
/// let grid = Grid::midpoint(0.0, 1.0, 200)?;
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid, BasisOptions::default())?;
/// let f: Vec<f64> = basis.grid().points().iter().map(|t| (3.0 * t).sin()).collect();
/// let coef = basis.project(&f)?;                   // f_k = <f, φ_k>
/// let back = basis.synthesize(&coef)?;             // Σ f_k φ_k(t_i)
/// let err = f.iter().zip(&back).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
/// assert!(err < 1e-6);
/// # Ok::<(), fdp_mercer::MercerError>(())
/// ```
#[derive(Clone)]
pub struct MercerBasis(Arc<Inner>);

impl std::fmt::Debug for MercerBasis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MercerBasis")
            .field("kernel", &self.0.kernel)
            .field("grid_points", &self.n_points())
            .field("components", &self.len())
            .field("origin", &self.0.origin)
            .finish()
    }
}

/// The kernel matrix `M_ij = C(x_i, y_j)` between two flat point lists of dimension `dim`,
/// filled column-parallel.
pub fn kernel_matrix(kernel: &dyn Kernel, xs: &[f64], ys: &[f64], dim: usize) -> Mat<f64> {
    let (m, n) = (xs.len() / dim, ys.len() / dim);
    let mut out = Mat::<f64>::zeros(m, n);
    out.par_col_iter_mut().enumerate().for_each(|(j, mut col)| {
        let y = &ys[j * dim..(j + 1) * dim];
        for i in 0..m {
            col[i] = kernel.eval(&xs[i * dim..(i + 1) * dim], y);
        }
    });
    out
}

/// The kernel matrix `C_ij = C(t_i, t_j)` of a grid. For a stationary kernel on a uniform 1-D grid
/// (midpoint or trapezoid) it is Toeplitz, `g(|i - j| h)`, and is filled from the K values of the
/// profile g instead of K² kernel evaluations; otherwise it is [`kernel_matrix`].
pub fn grid_kernel_matrix(kernel: &dyn Kernel, grid: &Grid) -> Mat<f64> {
    match WeightedToeplitz::new(kernel, grid) {
        Some(Ok(toeplitz)) => toeplitz.kernel_dense(),
        _ => kernel_matrix(kernel, grid.points(), grid.points(), grid.dim()),
    }
}

/// Deterministic pseudo-random test matrix for the randomized solver (splitmix64, entries in [-1, 1)):
/// the basis must not depend on a random seed.
fn test_matrix(rows: usize, cols: usize) -> Mat<f64> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    Mat::from_fn(rows, cols, |_, _| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    })
}

/// A symmetric operator on `R^n` applied to a block of vectors (a dense matrix, or a Toeplitz
/// product by the FFT).
type Operator<'a> = dyn Fn(MatRef<'_, f64>) -> Mat<f64> + Sync + 'a;

/// Leading eigenpairs of a PSD operator on `R^n` by randomized subspace iteration with
/// Rayleigh-Ritz.
fn eigen_randomized(apply: &Operator<'_>, n: usize, j: usize, power_iterations: usize) -> Result<(Vec<f64>, Mat<f64>)> {
    // Oversampling to 2J: the leading J Ritz values converge like (λ_{2J}/λ_J)^{2q+1}, which for
    // λ_k ~ k^{-4} is 16^{-(2q+1)} — 1e-11 relative on all 200 of K = 2000 with q = 4
    // (J + J/5 left the last ones at 1e-3).
    let block = (2 * j).max(j + 10).min(n);
    let mut y = apply(test_matrix(n, block).as_ref());
    for _ in 0..power_iterations {
        let q = thin_q(y.as_ref());
        y = apply(q.as_ref());
    }
    let q = thin_q(y.as_ref());
    let aq = apply(q.as_ref());
    let b = matmul(q.transpose(), aq.as_ref());
    // Symmetrise the small Ritz matrix against round-off before its eigendecomposition.
    let b = Mat::from_fn(block, block, |r, c| 0.5 * (b[(r, c)] + b[(c, r)]));
    let (values, v) = symmetric_eigen(b.as_ref())?;
    Ok((values, matmul(q.as_ref(), v.as_ref())))
}

/// A negative eigenvalue below `-INDEFINITE_RTOL · λ_1` rejects the kernel as not PSD.
const INDEFINITE_RTOL: f64 = 1e-8;

/// Rejects a kernel matrix that is not symmetric beyond round-off (`|a_ij - a_ji| > 1e-12 max|a|`).
fn check_symmetric(a: MatRef<'_, f64>, kernel: &dyn Kernel) -> Result<()> {
    let k = a.nrows();
    let scale = (0..k).flat_map(|j| (0..k).map(move |i| (i, j))).fold(0.0_f64, |m, (i, j)| m.max(a[(i, j)].abs()));
    for j in 0..k {
        for i in j + 1..k {
            let difference = (a[(i, j)] - a[(j, i)]).abs();
            if difference > 1e-12 * scale {
                return Err(MercerError::AsymmetricKernel { kernel: kernel.spec().name, row: i, col: j, difference });
            }
        }
    }
    Ok(())
}

/// Makes the first clearly non-zero entry of a column positive, so bases are reproducible.
fn fix_sign(col: faer::ColMut<'_, f64>) {
    let max = col.as_ref().iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let first = col.as_ref().iter().find(|v| v.abs() > 1e-3 * max).copied().unwrap_or(0.0);
    if first < 0.0 {
        col.iter_mut().for_each(|v| *v = -*v);
    }
}

/// `out_ic = scale_i in_ic`, column-parallel.
fn scale_rows(input: MatRef<'_, f64>, scale: impl Fn(usize) -> f64 + Sync) -> Mat<f64> {
    let mut out = Mat::<f64>::zeros(input.nrows(), input.ncols());
    out.par_col_iter_mut().enumerate().for_each(|(c, mut col)| {
        let source = input.col(c);
        for i in 0..col.nrows() {
            col[i] = scale(i) * source[i];
        }
    });
    out
}

/// The factor kernels of a separable kernel and the axis grids of a tensor grid.
type KroneckerParts = (Vec<Arc<dyn Kernel>>, [Grid; 2]);

/// The factor kernels and axis grids of a separable kernel on a 2-D tensor grid whose weights are
/// the products `w^x_i w^y_j` (to 1e-12 relative); `None` otherwise.
fn kronecker_parts(kernel: &dyn Kernel, grid: &Grid) -> Option<KroneckerParts> {
    let GridLayout::Tensor { nx, ny } = *grid.layout() else { return None };
    let factors = kernel.factors(2)?;
    let (p, w) = (grid.points(), grid.weights());
    let root = w[0].sqrt();
    let wx: Vec<f64> = (0..nx).map(|i| w[i * ny] / root).collect();
    let wy: Vec<f64> = (0..ny).map(|j| w[j] / root).collect();
    let product = (0..nx).all(|i| (0..ny).all(|j| (w[i * ny + j] - wx[i] * wy[j]).abs() <= 1e-12 * w[i * ny + j]));
    if !product {
        return None;
    }
    let gx = Grid::with_weights((0..nx).map(|i| p[2 * i * ny]).collect(), wx).ok()?;
    let gy = Grid::with_weights((0..ny).map(|j| p[2 * j + 1]).collect(), wy).ok()?;
    Some((factors, [gx, gy]))
}

/// Whether `A_ij = A_{K-1-i, K-1-j}` to within `1e-12 max|A|`.
fn is_centrosymmetric(a: MatRef<'_, f64>) -> bool {
    let k = a.nrows();
    if k < 4 {
        return false;
    }
    let scale = (0..k).map(|j| a.col(j).iter().fold(0.0_f64, |m, v| m.max(v.abs()))).fold(0.0, f64::max);
    (0..k).all(|j| (0..k).all(|i| (a[(i, j)] - a[(k - 1 - i, k - 1 - j)]).abs() <= 1e-12 * scale))
}

/// A weighted kernel matrix for the dense solvers: whole, or as the two halves of its centrosymmetric
/// split (which is all the solvers need of it).
enum DenseMatrix {
    Whole(Mat<f64>),
    Halves((Mat<f64>, Mat<f64>)),
}

/// The symmetric and antisymmetric halves of a centrosymmetric `a` (K = 2m or 2m + 1):
/// `Q_s^T A Q_s` and `Q_a^T A Q_a` with the orthonormal columns `(e_i ± e_{K-1-i})/√2`, i < m, and
/// `e_m` in `Q_s` when K is odd. Each entry averages the four mirrored entries, so round-off
/// asymmetry of `a` is projected away.
fn centrosymmetric_halves(a: MatRef<'_, f64>) -> (Mat<f64>, Mat<f64>) {
    let k = a.nrows();
    let m = k / 2;
    let odd = k % 2 == 1;
    let mirror = |i: usize| k - 1 - i;
    let sym = Mat::from_fn(m + odd as usize, m + odd as usize, |i, j| match (i < m, j < m) {
        (true, true) => 0.5 * (a[(i, j)] + a[(i, mirror(j))] + a[(mirror(i), j)] + a[(mirror(i), mirror(j))]),
        (true, false) => std::f64::consts::FRAC_1_SQRT_2 * (a[(i, m)] + a[(mirror(i), m)]),
        (false, true) => std::f64::consts::FRAC_1_SQRT_2 * (a[(m, j)] + a[(m, mirror(j))]),
        (false, false) => a[(m, m)],
    });
    let anti = Mat::from_fn(m, m, |i, j| {
        0.5 * (a[(i, j)] - a[(i, mirror(j))] - a[(mirror(i), j)] + a[(mirror(i), mirror(j))])
    });
    (sym, anti)
}

/// The eigenvectors of `W^{1/2} C W^{1/2}` in the order of their eigenvalues: a matrix, or those of
/// a centrosymmetric matrix's two halves with the merged order, mapped back to the grid column by
/// column where a basis is made of them (no K x K matrix in between).
enum Eigenvectors {
    Whole(Mat<f64>),
    Halves {
        k: usize,
        sym: Mat<f64>,
        anti: Mat<f64>,
        /// (symmetric, column in its half) of each eigenvalue, descending.
        order: Vec<(bool, usize)>,
    },
}

impl Eigenvectors {
    /// The eigenvector of the `c`-th eigenvalue written into `out` (K entries, zero on entry):
    /// `Q_s x` or `Q_a x` for the half eigenvector x.
    fn write_half_column(&self, c: usize, mut out: faer::ColMut<'_, f64>) {
        let Self::Halves { k, sym, anti, order } = self else { return };
        let (k, m, r) = (*k, k / 2, std::f64::consts::FRAC_1_SQRT_2);
        let (symmetric, j) = order[c];
        let (x, sign) = if symmetric { (sym.col(j), 1.0) } else { (anti.col(j), -1.0) };
        for i in 0..m {
            out[i] = r * x[i];
            out[k - 1 - i] = sign * r * x[i];
        }
        if k % 2 == 1 && symmetric {
            out[m] = x[m];
        }
    }
}

/// Eigenpairs of a centrosymmetric matrix from those of its halves: all eigenvalues merged in
/// descending order (symmetric first on ties), the half eigenvectors to be mapped back by `Q_s`,
/// `Q_a` ([`Eigenvectors::Halves`]).
fn merge_halves(k: usize, sym: (Vec<f64>, Mat<f64>), anti: (Vec<f64>, Mat<f64>)) -> (Vec<f64>, Eigenvectors) {
    let mut order: Vec<(f64, bool, usize)> = sym.0.iter().enumerate().map(|(c, v)| (*v, true, c)).collect();
    order.extend(anti.0.iter().enumerate().map(|(c, v)| (*v, false, c)));
    order.sort_by(|x, y| y.0.total_cmp(&x.0).then(y.1.cmp(&x.1)));
    let values = order.iter().map(|o| o.0).collect();
    let order = order.into_iter().map(|(_, symmetric, c)| (symmetric, c)).collect();
    (values, Eigenvectors::Halves { k, sym: sym.1, anti: anti.1, order })
}

/// The leading eigenpairs of a centrosymmetric operator on `R^k` by the randomized solver on each
/// half (`sym` on `R^{⌈k/2⌉}`, `anti` on `R^{⌊k/2⌋}`). Each half is asked for `j/2 + 10` pairs,
/// and for more until the j-th largest merged eigenvalue is at least the smallest computed in every
/// half that has more: then no uncomputed eigenvalue can be among the leading j.
fn centrosymmetric_randomized(
    k: usize,
    sym: &Operator<'_>,
    anti: &Operator<'_>,
    j: usize,
    power_iterations: usize,
) -> Result<(Vec<f64>, Eigenvectors)> {
    let sizes = [k - k / 2, k / 2];
    let mut want = sizes.map(|size| (j / 2 + 10).min(size));
    loop {
        let (s, t) = rayon::join(
            || eigen_randomized(sym, sizes[0], want[0], power_iterations),
            || eigen_randomized(anti, sizes[1], want[1], power_iterations),
        );
        let (mut s, mut t) = (s?, t?);
        for (pairs, count) in [(&mut s, want[0]), (&mut t, want[1])] {
            pairs.0.truncate(count);
            pairs.1 = pairs.1.subcols(0, count).to_owned();
        }
        let mut merged: Vec<f64> = s.0.iter().chain(&t.0).copied().collect();
        merged.sort_by(|x, y| y.total_cmp(x));
        let jth = merged[(j.min(merged.len())).max(1) - 1];
        let short = [(&s, sizes[0]), (&t, sizes[1])]
            .map(|(pairs, size)| pairs.0.len() < size && pairs.0.last().is_some_and(|smallest| *smallest > jth));
        if !short[0] && !short[1] {
            return Ok(merge_halves(k, s, t));
        }
        for h in 0..2 {
            if short[h] {
                want[h] = (2 * want[h]).min(sizes[h]);
            }
        }
    }
}

/// `Q_s X` (sign = 1) or `Q_a X` (sign = -1): half coordinates to the full grid of k points.
fn expand_half(x: MatRef<'_, f64>, k: usize, sign: f64) -> Mat<f64> {
    let (m, r) = (k / 2, std::f64::consts::FRAC_1_SQRT_2);
    Mat::from_fn(k, x.ncols(), |i, c| {
        if k % 2 == 1 && i == m {
            if sign > 0.0 { x[(m, c)] } else { 0.0 }
        } else if i < m {
            r * x[(i, c)]
        } else {
            sign * r * x[(k - 1 - i, c)]
        }
    })
}

/// `Q_sᵀ Z` (sign = 1) or `Q_aᵀ Z` (sign = -1): the full grid back to half coordinates.
fn restrict_half(z: MatRef<'_, f64>, sign: f64) -> Mat<f64> {
    let k = z.nrows();
    let (m, r) = (k / 2, std::f64::consts::FRAC_1_SQRT_2);
    let rows = if sign > 0.0 { k - m } else { m };
    Mat::from_fn(rows, z.ncols(), |i, c| if i == m { z[(m, c)] } else { r * (z[(i, c)] + sign * z[(k - 1 - i, c)]) })
}

impl MercerBasis {
    /// The most grid points of a basis built from a dense K x K matrix (every solver but the
    /// randomized one on a uniform grid, and every grid but a tensor grid of a separable kernel,
    /// whose factors count per axis): `K² · 8` bytes = 128 MiB and seconds of eigendecomposition at
    /// the cap.
    pub const MAX_DENSE_POINTS: usize = 4096;

    /// `k` if a dense basis can be built on `k` grid points (at most
    /// [`MAX_DENSE_POINTS`](Self::MAX_DENSE_POINTS)), else an error naming the parameter `name`
    /// that gave the count. A door that builds a grid from a count checks it here first, before the
    /// grid is allocated.
    pub fn dense_points(name: &'static str, k: usize) -> Result<usize> {
        if k > Self::MAX_DENSE_POINTS {
            return Err(MercerError::BadOption {
                name,
                value: k.into(),
                reason: "at most 4096 for a dense basis: the K x K kernel matrix takes K² · 8 bytes (128 MiB at \
                         the cap) and its eigendecomposition about 9 K³ operations (seconds at the cap, minutes \
                         at 20000); beyond, use a tensor grid (Kronecker) or, on a uniform grid, \
                         BasisOptions::top(j) (FFT products, no K x K matrix)",
            });
        }
        Ok(k)
    }

    /// Builds the basis of `kernel` on `grid` (weighted Nyström, docs/DESIGN.md section 2).
    ///
    /// Errors: options out of range, a grid outside the kernel's domain, a kernel that is not finite
    /// on the grid, no positive eigenvalue, more than [`MAX_DENSE_POINTS`](Self::MAX_DENSE_POINTS)
    /// points for a dense decomposition.
    pub fn build(kernel: impl Kernel + 'static, grid: Grid, options: BasisOptions) -> Result<Self> {
        Self::build_shared(Arc::new(kernel), grid, options)
    }

    /// As [`build`](Self::build), for a kernel that is already shared.
    pub fn build_shared(kernel: Arc<dyn Kernel>, grid: Grid, options: BasisOptions) -> Result<Self> {
        let solver = options.validate(grid.len())?;
        kernel.check_domain(&grid)?;
        if matches!(options.structure, None | Some(Structure::Kronecker)) {
            if let Some((factors, grids)) = kronecker_parts(kernel.as_ref(), &grid) {
                return Self::build_kronecker(kernel, grid, factors, grids, options);
            }
            if options.structure == Some(Structure::Kronecker) {
                return Err(MercerError::Unsupported(
                    "the Kronecker basis needs a separable kernel (Kernel::factors) on a tensor grid with product weights",
                ));
            }
        }
        let (k, dim) = (grid.len(), grid.dim());
        let sqrt_w: Vec<f64> = grid.weights().iter().map(|w| w.sqrt()).collect();
        let toeplitz = WeightedToeplitz::new(kernel.as_ref(), &grid).transpose()?;
        // Every path below but the FFT-based randomized one forms and decomposes a K x K matrix.
        if !(toeplitz.is_some() && matches!(solver, Solver::Randomized { .. })) {
            Self::dense_points("grid points", k)?;
        }
        let cap = options.max_components.unwrap_or(k).min(k);
        if let (Some(matrix), Solver::Randomized { power_iterations }) = (&toeplitz, solver) {
            let t = matrix.product();
            // A stationary kernel on a uniform grid: never form the K x K matrix; its products are
            // FFTs, and (symmetric weights) it is centrosymmetric unless the plain solver is forced.
            let (values, u) = if options.structure == Some(Structure::Plain) {
                let (values, u) = eigen_randomized(&|x| t.apply(x), k, cap, power_iterations)?;
                (values, Eigenvectors::Whole(u))
            } else {
                let sym = |x: MatRef<'_, f64>| restrict_half(t.apply(expand_half(x, k, 1.0).as_ref()).as_ref(), 1.0);
                let anti = |x: MatRef<'_, f64>| restrict_half(t.apply(expand_half(x, k, -1.0).as_ref()).as_ref(), -1.0);
                centrosymmetric_randomized(k, &sym, &anti, cap, power_iterations)?
            };
            let structure =
                if options.structure == Some(Structure::Plain) { Structure::Plain } else { Structure::Centrosymmetric };
            let origin = BasisOrigin::Nystrom { solver, structure };
            return Self::from_eigen(kernel, grid, (values, u), &sqrt_w, options, origin);
        }
        let (structure, matrix) = match &toeplitz {
            // A Toeplitz fill with symmetric weights is centrosymmetric by construction: its halves come
            // straight from the kernel profile, the K x K matrix is never formed.
            Some(t) if t.symmetric_weights() && options.structure != Some(Structure::Plain) => {
                (Structure::Centrosymmetric, DenseMatrix::Halves(t.centrosymmetric_halves()))
            }
            _ => {
                let a = match &toeplitz {
                    // Symmetric and finite by construction.
                    Some(t) => t.dense(),
                    None => {
                        let mut a = kernel_matrix(kernel.as_ref(), grid.points(), grid.points(), dim);
                        a.par_col_iter_mut().enumerate().for_each(|(j, mut col)| {
                            for i in 0..k {
                                col[i] *= sqrt_w[i] * sqrt_w[j];
                            }
                        });
                        if let Some((row, col)) =
                            (0..k).find_map(|j| (0..k).find(|&i| !a[(i, j)].is_finite()).map(|i| (i, j)))
                        {
                            return Err(MercerError::NonFiniteKernel { kernel: kernel.spec().name, row, col });
                        }
                        check_symmetric(a.as_ref(), kernel.as_ref())?;
                        a
                    }
                };
                match options.structure {
                    Some(Structure::Plain) => (Structure::Plain, DenseMatrix::Whole(a)),
                    _ if is_centrosymmetric(a.as_ref()) => {
                        (Structure::Centrosymmetric, DenseMatrix::Halves(centrosymmetric_halves(a.as_ref())))
                    }
                    Some(Structure::Centrosymmetric) => {
                        return Err(MercerError::Unsupported(
                            "the kernel matrix is not centrosymmetric (a stationary kernel on a grid symmetric about its centre is)",
                        ));
                    }
                    _ => (Structure::Plain, DenseMatrix::Whole(a)),
                }
            }
        };
        let (values, u) = match (solver, matrix) {
            (Solver::Randomized { power_iterations }, DenseMatrix::Halves((sym, anti))) => {
                let (sym, anti) =
                    (|x: MatRef<'_, f64>| matmul(sym.as_ref(), x), |x: MatRef<'_, f64>| matmul(anti.as_ref(), x));
                centrosymmetric_randomized(k, &sym, &anti, cap, power_iterations)?
            }
            (Solver::Randomized { power_iterations }, DenseMatrix::Whole(a)) => {
                let (values, u) = eigen_randomized(&|x| matmul(a.as_ref(), x), k, cap, power_iterations)?;
                (values, Eigenvectors::Whole(u))
            }
            (_, DenseMatrix::Halves((sym, anti))) => {
                let (s, t) = rayon::join(|| symmetric_eigen(sym.as_ref()), || symmetric_eigen(anti.as_ref()));
                merge_halves(k, s?, t?)
            }
            (_, DenseMatrix::Whole(a)) => {
                let (values, u) = symmetric_eigen(a.as_ref())?;
                (values, Eigenvectors::Whole(u))
            }
        };
        Self::from_eigen(kernel, grid, (values, u), &sqrt_w, options, BasisOrigin::Nystrom { solver, structure })
    }

    /// The basis from the eigenpairs `(values, u)` of `W^{1/2} C W^{1/2}`: the checks on the
    /// spectrum, truncation, `φ = u / √w` with fixed signs.
    fn from_eigen(
        kernel: Arc<dyn Kernel>,
        grid: Grid,
        (values, u): (Vec<f64>, Eigenvectors),
        sqrt_w: &[f64],
        options: BasisOptions,
        origin: BasisOrigin,
    ) -> Result<Self> {
        let k = grid.len();
        let largest = values.first().copied().unwrap_or(f64::NAN);
        if !(largest.is_finite() && largest > 0.0) {
            return Err(MercerError::NoComponents { largest });
        }
        // Round-off leaves negative eigenvalues of order K·2^-52·λ_1; anything far below is a kernel
        // that is not a covariance (its "basis" would silently drop a part of the operator).
        let most_negative = values.iter().copied().fold(0.0, f64::min);
        if most_negative < -INDEFINITE_RTOL * largest {
            return Err(MercerError::IndefiniteKernel { kernel: kernel.spec().name, most_negative, largest });
        }
        let cap = options.max_components.unwrap_or(k);
        let kept = values.iter().take(cap).take_while(|&&l| l > options.rtol * largest && l > 0.0).count();
        let lambda = values[..kept].to_vec();
        let (mut phi, halves) = match u {
            Eigenvectors::Whole(u) => (if kept == u.ncols() { u } else { u.subcols(0, kept).to_owned() }, None),
            halves => (Mat::<f64>::zeros(k, kept), Some(halves)),
        };
        // One pass per column (it stays in cache): u (from the halves: Q_s x or Q_a x), φ = u / √w,
        // its sign fixed, and w φ.
        let w = grid.weights();
        let mut weighted_phi = Mat::<f64>::zeros(k, kept);
        phi.par_col_iter_mut().zip(weighted_phi.par_col_iter_mut()).enumerate().for_each(|(c, (mut col, weighted))| {
            if let Some(halves) = &halves {
                halves.write_half_column(c, col.as_mut());
            }
            col.as_mut().iter_mut().zip(sqrt_w).for_each(|(v, s)| *v /= s);
            fix_sign(col.as_mut());
            weighted.iter_mut().zip(col.iter()).zip(w).for_each(|((out, v), w)| *out = w * v);
        });
        let rtol = options.rtol;
        Ok(Self(Arc::new(Inner { kernel, grid, lambda, phi, weighted_phi, rtol, origin, decay: Default::default() })))
    }

    /// The Kronecker basis of a separable kernel on a tensor grid: all positive eigenpairs of each
    /// factor on its axis grid (each checked as any basis is), their products sorted in descending
    /// order and truncated by the options' rule.
    fn build_kronecker(
        kernel: Arc<dyn Kernel>,
        grid: Grid,
        factors: Vec<Arc<dyn Kernel>>,
        grids: [Grid; 2],
        options: BasisOptions,
    ) -> Result<Self> {
        let axis = BasisOptions { rtol: 0.0, max_components: None, ..BasisOptions::default() };
        let [gx, gy] = grids;
        let (bx, by) = rayon::join(
            || Self::build_shared(factors[0].clone(), gx, axis),
            || Self::build_shared(factors[1].clone(), gy, axis),
        );
        let (bx, by) = (bx?, by?);
        let (lx, ly) = (bx.eigenvalues(), by.eigenvalues());
        let mut pairs: Vec<(f64, usize, usize)> =
            lx.iter().enumerate().flat_map(|(a, x)| ly.iter().enumerate().map(move |(b, y)| (x * y, a, b))).collect();
        pairs.sort_by(|p, q| q.0.total_cmp(&p.0).then((p.1, p.2).cmp(&(q.1, q.2))));
        let largest = pairs.first().map_or(f64::NAN, |p| p.0);
        if !(largest.is_finite() && largest > 0.0) {
            return Err(MercerError::NoComponents { largest });
        }
        let cap = options.max_components.unwrap_or(pairs.len());
        let kept: Vec<(f64, usize, usize)> =
            pairs.into_iter().take(cap).take_while(|p| p.0 > options.rtol * largest).collect();
        let ny = by.n_points();
        let (px, py) = (bx.eigenfunctions(), by.eigenfunctions());
        let phi = Mat::from_fn(grid.len(), kept.len(), |i, c| px[(i / ny, kept[c].1)] * py[(i % ny, kept[c].2)]);
        let lambda = kept.iter().map(|p| p.0).collect();
        // Each axis is a full (dense, possibly centrosymmetric) solve.
        let origin = BasisOrigin::Nystrom { solver: Solver::Dense, structure: Structure::Kronecker };
        Ok(Self::from_parts(kernel, grid, lambda, phi, options.rtol, origin))
    }

    /// The closed-form basis of the Brownian kernel `σ² min(s, t)` on a midpoint grid of `[0, T]`:
    /// `λ_j = σ² T² / ((j - 1/2)² π²)`, `φ_j(t) = sqrt(2/T) sin((j - 1/2) π t / T)`, j = 1..J.
    ///
    /// On the midpoint grid these sampled sines are exactly orthonormal (they are the columns of the
    /// DST-IV matrix), so the basis is a valid orthonormal system on the grid for any `J <= K`.
    pub fn brownian(kernel: Brownian, grid: Grid, components: usize) -> Result<Self> {
        let length = match grid.layout() {
            GridLayout::Midpoint { start, end } if *start == 0.0 => *end,
            _ => {
                return Err(MercerError::Unsupported("the closed-form Brownian basis needs a midpoint grid on [0, T]"));
            }
        };
        if components == 0 || components > grid.len() {
            return Err(MercerError::BadOption {
                name: "components",
                value: components.into(),
                reason: "must be between 1 and the number of grid points",
            });
        }
        let lambda: Vec<f64> = (1..=components).map(|j| brownian_eigenvalue(kernel.variance(), length, j)).collect();
        let phi = Mat::from_fn(grid.len(), components, |i, c| brownian_eigenfunction(length, c + 1, grid.points()[i]));
        Ok(Self::from_parts(Arc::new(kernel), grid, lambda, phi, 0.0, BasisOrigin::BrownianClosedForm { length }))
    }

    fn from_parts(
        kernel: Arc<dyn Kernel>,
        grid: Grid,
        lambda: Vec<f64>,
        phi: Mat<f64>,
        rtol: f64,
        origin: BasisOrigin,
    ) -> Self {
        let w = grid.weights();
        let weighted_phi = scale_rows(phi.as_ref(), |i| w[i]);
        Self(Arc::new(Inner { kernel, grid, lambda, phi, weighted_phi, rtol, origin, decay: Default::default() }))
    }

    /// The basis restricted to its leading `j` components (`1 <= j <= J`): same grid and kernel,
    /// eigenpairs `1..=j`. Mechanisms that release only a leading block (IID Laplace, ICLP-l1's
    /// active set) use it, so what lies beyond the block is never released.
    pub fn truncated(&self, j: usize) -> Result<Self> {
        if j == 0 || j > self.len() {
            return Err(MercerError::BadOption {
                name: "components",
                value: j.into(),
                reason: "must be between 1 and the number of kept components",
            });
        }
        if j == self.len() {
            return Ok(self.clone());
        }
        let phi = self.0.phi.subcols(0, j).to_owned();
        Ok(Self::from_parts(
            self.0.kernel.clone(),
            self.0.grid.clone(),
            self.0.lambda[..j].to_vec(),
            phi,
            self.0.rtol,
            self.0.origin,
        ))
    }

    /// Number of kept components J.
    pub fn len(&self) -> usize {
        self.0.lambda.len()
    }

    /// Always false: a basis keeps at least one component.
    pub fn is_empty(&self) -> bool {
        self.0.lambda.is_empty()
    }

    /// Number of grid points K.
    pub fn n_points(&self) -> usize {
        self.0.grid.len()
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.0.grid
    }

    /// The kernel.
    pub fn kernel(&self) -> &Arc<dyn Kernel> {
        &self.0.kernel
    }

    /// Kept eigenvalues `λ_1 >= ... >= λ_J > 0`.
    pub fn eigenvalues(&self) -> &[f64] {
        &self.0.lambda
    }

    /// `φ_k(t_i)` as a K x J matrix (column k is eigenfunction k on the grid).
    pub fn eigenfunctions(&self) -> MatRef<'_, f64> {
        self.0.phi.as_ref()
    }

    /// `w_i φ_k(t_i)` as a K x J matrix: `curves (n x K) · this = coefficients (n x J)`.
    pub fn weighted_eigenfunctions(&self) -> MatRef<'_, f64> {
        self.0.weighted_phi.as_ref()
    }

    /// How the basis was computed.
    pub fn origin(&self) -> BasisOrigin {
        self.0.origin
    }

    /// Serialisable description for release metadata.
    pub fn summary(&self) -> BasisSummary {
        BasisSummary {
            kernel: self.0.kernel.spec(),
            grid_points: self.n_points(),
            grid_dim: self.0.grid.dim(),
            components: self.len(),
            rtol: self.0.rtol,
            origin: self.0.origin,
            largest_eigenvalue: self.0.lambda[0],
            smallest_kept_eigenvalue: self.0.lambda[self.len() - 1],
        }
    }

    /// Coefficients `f_k = <f, φ_k> = Σ_i w_i f(t_i) φ_k(t_i)` of one curve on the grid.
    pub fn project(&self, f: &[f64]) -> Result<Vec<f64>> {
        check_len("curve", self.n_points(), f.len())?;
        let wphi = &self.0.weighted_phi;
        Ok((0..self.len()).map(|c| wphi.col(c).iter().zip(f).map(|(a, b)| a * b).sum()).collect())
    }

    /// Coefficients of n curves at once: `(n x K) · (w φ) = n x J`, one matrix product.
    pub fn project_rows(&self, curves: MatRef<'_, f64>) -> Result<Mat<f64>> {
        check_len("curve matrix columns", self.n_points(), curves.ncols())?;
        Ok(matmul(curves, self.weighted_eigenfunctions()))
    }

    /// The curve `Σ_k c_k φ_k(t_i)` on the grid.
    pub fn synthesize(&self, coefficients: &[f64]) -> Result<Vec<f64>> {
        check_len("coefficients", self.len(), coefficients.len())?;
        let phi = &self.0.phi;
        let mut out = vec![0.0; self.n_points()];
        for (c, &a) in coefficients.iter().enumerate() {
            for (o, p) in out.iter_mut().zip(phi.col(c).iter()) {
                *o += a * p;
            }
        }
        Ok(out)
    }

    /// n curves from their coefficients at once: `(n x J) · φ^T = n x K`.
    pub fn synthesize_rows(&self, coefficients: MatRef<'_, f64>) -> Result<Mat<f64>> {
        check_len("coefficient matrix columns", self.len(), coefficients.ncols())?;
        Ok(coefficients * self.0.phi.transpose())
    }

    /// The eigenfunctions at arbitrary points (flat, `dim` numbers each), m x J.
    ///
    /// Nyström extension `φ_k(s) = λ_k^{-1} Σ_i w_i C(s, t_i) φ_k(t_i)`, which reproduces the grid
    /// values at grid points; the closed-form Brownian basis is evaluated exactly.
    pub fn eigenfunctions_at(&self, points: &[f64]) -> Result<Mat<f64>> {
        let m = self.0.grid.count_points(points)?;
        if let BasisOrigin::BrownianClosedForm { length } = self.0.origin {
            return Ok(Mat::from_fn(m, self.len(), |i, c| brownian_eigenfunction(length, c + 1, points[i])));
        }
        let kx = kernel_matrix(self.0.kernel.as_ref(), points, self.0.grid.points(), self.0.grid.dim());
        let mut out = matmul(kx.as_ref(), self.weighted_eigenfunctions());
        for (c, l) in self.0.lambda.iter().enumerate() {
            out.col_mut(c).iter_mut().for_each(|v| *v /= l);
        }
        Ok(out)
    }

    /// The function `Σ_k c_k φ_k` at arbitrary points.
    pub fn evaluate(&self, coefficients: &[f64], points: &[f64]) -> Result<Vec<f64>> {
        check_len("coefficients", self.len(), coefficients.len())?;
        let e = self.eigenfunctions_at(points)?;
        Ok((0..e.nrows()).map(|i| (0..self.len()).map(|c| e[(i, c)] * coefficients[c]).sum()).collect())
    }

    /// `λ_k^η` for every kept component: the eigenvalues of the operator power `C^η`.
    pub fn power_eigenvalues(&self, eta: f64) -> Vec<f64> {
        self.0.lambda.iter().map(|l| l.powf(eta)).collect()
    }

    /// Applies `C^η` to a function given by its coefficients: `c_k ↦ λ_k^η c_k`.
    pub fn apply_power(&self, eta: f64, coefficients: &[f64]) -> Result<Vec<f64>> {
        check_len("coefficients", self.len(), coefficients.len())?;
        Ok(coefficients.iter().zip(&self.0.lambda).map(|(c, l)| c * l.powf(eta)).collect())
    }

    /// `tr(C^a) = Σ_k λ_k^a` over the kept components.
    pub fn trace_power(&self, a: f64) -> f64 {
        self.0.lambda.iter().map(|l| l.powf(a)).sum()
    }

    /// The diagonal of the kernel of `C^η` on the grid, `C^η(t_i, t_i) = Σ_k λ_k^η φ_k(t_i)²`.
    pub fn power_diagonal(&self, eta: f64) -> Vec<f64> {
        let le = self.power_eigenvalues(eta);
        (0..self.n_points()).map(|i| le.iter().enumerate().map(|(c, l)| l * self.0.phi[(i, c)].powi(2)).sum()).collect()
    }

    /// Cameron-Martin (RKHS) norm `||h||_C = (Σ_k h_k² / λ_k)^{1/2}`.
    pub fn cameron_martin_norm(&self, coefficients: &[f64]) -> Result<f64> {
        check_len("coefficients", self.len(), coefficients.len())?;
        Ok(coefficients.iter().zip(&self.0.lambda).map(|(h, l)| h * h / l).sum::<f64>().sqrt())
    }

    /// The ICLP norm `||h||_{1,C} = Σ_k |h_k| / sqrt(λ_k)`.
    pub fn l1_c_norm(&self, coefficients: &[f64]) -> Result<f64> {
        check_len("coefficients", self.len(), coefficients.len())?;
        Ok(coefficients.iter().zip(&self.0.lambda).map(|(h, l)| h.abs() / l.sqrt()).sum())
    }

    /// Fits `λ_k ≈ c k^{-2ν}` on the tail of the reliably computed spectrum of the kernel.
    ///
    /// Window: components `k ∈ [k_max/4, k_max]` (1-based), where `k_max` is the last component with
    /// `λ_k >= 1e-9 λ_1` and at most `K/8` (beyond that the quadrature error of the grid dominates).
    /// A 1-D basis on fewer than 1000 points resolves too few components for that, so the fit is the
    /// one of the kernel's spectrum on a 1000-point midpoint grid of the same interval, read without
    /// building that grid's basis when the kernel has a spectral density (Widom's asymptotics for a
    /// window at the cap, a coarser eigenvalue-only solve for a shorter one; see [`DecaySource`]),
    /// and from that grid's basis otherwise. Computed once and cached.
    /// The fit uses eigenvalues only, never data, so plug-in tuning built on it is privacy-safe.
    /// A 1-D Matérn kernel of smoothness α has `λ_k ~ k^{-(2α + 1)}`: exponent 2 for the exponential
    /// kernel, 4 for Matérn 3/2, 6 for Matérn 5/2 (the ICLP paper's `2ν = 2α + 1`).
    pub fn decay(&self) -> DecayFit {
        *self.0.decay.get_or_init(|| {
            let grid = &self.0.grid;
            if grid.dim() == 1 && grid.len() < DECAY_GRID {
                let domain = grid.domain()[0];
                if let Some(fit) = spectral_decay(self.0.kernel.as_ref(), domain) {
                    return fit;
                }
                let fine = Grid::midpoint(domain.0, domain.1, DECAY_GRID)
                    .and_then(|g| Self::build_shared(self.0.kernel.clone(), g, BasisOptions::default()));
                if let Ok(fine) = fine {
                    return fit_decay(&fine.0.lambda, DECAY_GRID, DecaySource::Nystrom { points: DECAY_GRID });
                }
            }
            fit_decay(&self.0.lambda, grid.len(), DecaySource::Nystrom { points: grid.len() })
        })
    }
}

/// `λ_j = σ² T² / ((j - 1/2)² π²)`.
pub fn brownian_eigenvalue(variance: f64, length: f64, j: usize) -> f64 {
    let a = (j as f64 - 0.5) * std::f64::consts::PI;
    variance * length * length / (a * a)
}

/// `φ_j(t) = sqrt(2/T) sin((j - 1/2) π t / T)`.
pub fn brownian_eigenfunction(length: f64, j: usize, t: f64) -> f64 {
    (2.0 / length).sqrt() * ((j as f64 - 0.5) * std::f64::consts::PI * t / length).sin()
}
