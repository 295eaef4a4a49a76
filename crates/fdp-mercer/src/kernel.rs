//! Covariance kernels: the built-in Matérn family, the Gaussian and Brownian kernels, and the
//! [`Kernel`] trait through which users plug in their own.

use std::fmt::Debug;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{MercerError, Result};
use crate::grid::Grid;

/// A symmetric positive semi-definite covariance kernel `C(s, t)` on `R^d`.
///
/// Implement it for your own kernel; `eval` must be symmetric and positive semi-definite on the
/// grids you use (fdp truncates the tiny negative eigenvalues that round-off produces, but a kernel
/// that is not PSD gives a basis of the positive part only).
///
/// ```
/// use fdp_mercer::{Kernel, KernelSpec};
/// #[derive(Debug)]
/// struct Linear;
/// impl Kernel for Linear {
///     fn eval(&self, s: &[f64], t: &[f64]) -> f64 { 1.0 + s.iter().zip(t).map(|(a, b)| a * b).sum::<f64>() }
///     fn spec(&self) -> KernelSpec { KernelSpec::new("linear") }
/// }
/// assert_eq!(Linear.eval(&[2.0], &[3.0]), 7.0);
/// ```
pub trait Kernel: Send + Sync + Debug {
    /// `C(s, t)` for two points of the same dimension.
    fn eval(&self, s: &[f64], t: &[f64]) -> f64;

    /// A serialisable description: a short name and the parameters.
    fn spec(&self) -> KernelSpec;

    /// Rejects grids outside the kernel's domain (e.g. the Brownian kernel lives on `[0, ∞)^d`).
    fn check_domain(&self, grid: &Grid) -> Result<()> {
        let _ = grid;
        Ok(())
    }

    /// For a stationary kernel on the line, `C(s, t) = g(|s - t|)`: `g(r)`. On a uniform 1-D grid
    /// the kernel matrix is then Toeplitz: it is filled from K values of g and applied to vectors by
    /// the FFT. `None` (the default) for other kernels.
    fn radial(&self, r: f64) -> Option<f64> {
        let _ = r;
        None
    }

    /// For a stationary kernel on the line, its spectral density
    /// `S(ω) = ∫ g(|r|) e^{-iωr} dr` (so `g(0) = (2π)^{-1} ∫ S`). The operator of such a kernel on an
    /// interval of length L has eigenvalues `λ_k ≈ S(π(k - 1/2)/L)` for large k (Widom 1964), which is
    /// how [`MercerBasis::decay`](crate::MercerBasis::decay) reads its decay without a fine basis.
    /// `None` (the default) for other kernels.
    fn spectral_density(&self, omega: f64) -> Option<f64> {
        let _ = omega;
        None
    }

    /// For a kernel on `R^dim` that is a product of one-dimensional kernels,
    /// `C(s, t) = Π_a C_a(s_a, t_a)`: the factors, one per axis. A tensor grid with product weights
    /// then gets the Kronecker basis ([`Structure::Kronecker`](crate::Structure::Kronecker)). `None`
    /// (the default) for kernels that are not products.
    fn factors(&self, dim: usize) -> Option<Vec<Arc<dyn Kernel>>> {
        let _ = dim;
        None
    }
}

/// **A product kernel** `C(s, t) = Π_a C_a(s_a, t_a)` of one-dimensional kernels, one per axis: a
/// covariance (a product of covariances is one) whose basis on a tensor grid is the Kronecker
/// product of the factors' bases. Separable 2-D kernels: this product (e.g. the exponential kernel
/// with the l1 distance, `e^{-|s_x - t_x|/ρ} e^{-|s_y - t_y|/ρ}`), the Gaussian kernel (Euclidean
/// distance, detected by itself), and the Brownian sheet. The Matérn and exponential kernels with the
/// Euclidean distance are not separable.
///
/// ```
/// use fdp_mercer::{Kernel, Product, Stationary};
/// let l1_exponential = Product::new(vec![Stationary::exponential(0.2)?.into(), Stationary::exponential(0.2)?.into()])?;
/// let (s, t) = ([0.1, 0.5], [0.3, 0.2]);
/// assert!((l1_exponential.eval(&s, &t) - (-(0.2 + 0.3) / 0.2f64).exp()).abs() < 1e-15);
/// # Ok::<(), fdp_mercer::MercerError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Product {
    factors: Vec<Arc<dyn Kernel>>,
}

impl Product {
    /// The product of `factors`, the a-th acting on coordinate a (at least one).
    pub fn new(factors: Vec<Arc<dyn Kernel>>) -> Result<Self> {
        if factors.is_empty() {
            return Err(MercerError::Unsupported("a product kernel needs at least one factor"));
        }
        Ok(Self { factors })
    }
}

impl Kernel for Product {
    fn eval(&self, s: &[f64], t: &[f64]) -> f64 {
        self.factors.iter().enumerate().map(|(a, k)| k.eval(&s[a..a + 1], &t[a..a + 1])).product()
    }

    fn spec(&self) -> KernelSpec {
        let parts: Vec<KernelSpec> = self.factors.iter().map(|k| k.spec()).collect();
        let name = format!("product({})", parts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(","));
        let mut spec = KernelSpec::new(name);
        for (a, part) in parts.into_iter().enumerate() {
            for (param, value) in part.params {
                spec = spec.param(format!("{a}.{param}"), value);
            }
        }
        spec
    }

    fn check_domain(&self, grid: &Grid) -> Result<()> {
        if grid.dim() != self.factors.len() {
            return Err(MercerError::Unsupported("a product kernel needs one factor per grid dimension"));
        }
        Ok(())
    }

    fn factors(&self, dim: usize) -> Option<Vec<Arc<dyn Kernel>>> {
        (dim == self.factors.len()).then(|| self.factors.clone())
    }
}

impl From<Stationary> for Arc<dyn Kernel> {
    fn from(kernel: Stationary) -> Self {
        Arc::new(kernel)
    }
}

/// Name and parameters of a kernel, recorded in every basis and release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSpec {
    /// Short lower_snake_case name, e.g. `matern32`.
    pub name: String,
    /// Named parameters, e.g. `[("rho", 0.1), ("variance", 1.0)]`.
    pub params: Vec<(String, f64)>,
}

impl KernelSpec {
    /// A spec with no parameters.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), params: Vec::new() }
    }

    /// Adds a named parameter.
    pub fn param(mut self, name: impl Into<String>, value: f64) -> Self {
        self.params.push((name.into(), value));
        self
    }
}

/// Shapes of the built-in stationary kernels, as functions of `u = r / ρ` (r the Euclidean distance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StationaryShape {
    /// Matérn ν = 1/2: `exp(-u)`. Eigenvalues decay like `k^-2` in 1-D.
    Exponential,
    /// Matérn ν = 3/2: `(1 + √3 u) exp(-√3 u)`. Decay `k^-4` in 1-D.
    Matern32,
    /// Matérn ν = 5/2: `(1 + √5 u + 5u²/3) exp(-√5 u)`. Decay `k^-6` in 1-D.
    Matern52,
    /// Squared exponential: `exp(-u² / 2)`. Super-polynomial decay.
    Gaussian,
}

impl StationaryShape {
    fn name(self) -> &'static str {
        match self {
            Self::Exponential => "exponential",
            Self::Matern32 => "matern32",
            Self::Matern52 => "matern52",
            Self::Gaussian => "gaussian",
        }
    }

    /// The Matérn smoothness ν, if the shape has one (`None` for the Gaussian, ν = ∞).
    pub fn smoothness(self) -> Option<f64> {
        match self {
            Self::Exponential => Some(0.5),
            Self::Matern32 => Some(1.5),
            Self::Matern52 => Some(2.5),
            Self::Gaussian => None,
        }
    }
}

/// A stationary kernel `C(s, t) = σ² g(|s - t| / ρ)` on `R^d` (Euclidean distance), with the
/// ICLP paper's Matérn parametrisation (the closed forms for half-integer ν).
///
/// ```
/// use fdp_mercer::{Kernel, Stationary};
/// let k = Stationary::matern32(0.1)?;
/// let u = 0.05_f64 / 0.1;
/// let expected = (1.0 + 3f64.sqrt() * u) * (-3f64.sqrt() * u).exp();
/// assert!((k.eval(&[0.2], &[0.25]) - expected).abs() < 1e-15);
/// # Ok::<(), fdp_mercer::MercerError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stationary {
    shape: StationaryShape,
    rho: f64,
    variance: f64,
}

/// Reads `SHAPE:RHO` (`exponential`, `matern32`, `matern52` or `gaussian`, then the length-scale),
/// the form the command line and the Python package take.
///
/// ```
/// use fdp_mercer::Stationary;
/// assert_eq!("matern32:0.1".parse::<Stationary>()?, Stationary::matern32(0.1)?);
/// assert!("matern32:-1".parse::<Stationary>().is_err());
/// assert!("cauchy:1".parse::<Stationary>().is_err());
/// # Ok::<(), fdp_mercer::MercerError>(())
/// ```
impl std::str::FromStr for Stationary {
    type Err = MercerError;

    fn from_str(spec: &str) -> Result<Self> {
        let bad = |reason| MercerError::BadKernelSpec { spec: spec.into(), reason };
        let (shape, rho) = spec.split_once(':').ok_or_else(|| bad("expected SHAPE:RHO, e.g. matern32:0.1"))?;
        let rho: f64 = rho.trim().parse().map_err(|_| bad("the length-scale RHO is not a number"))?;
        let shape = match shape.trim().to_ascii_lowercase().as_str() {
            "exponential" | "matern12" => StationaryShape::Exponential,
            "matern32" => StationaryShape::Matern32,
            "matern52" => StationaryShape::Matern52,
            "gaussian" => StationaryShape::Gaussian,
            _ => return Err(bad("SHAPE must be exponential, matern32, matern52 or gaussian")),
        };
        Self::new(shape, rho)
    }
}

/// `SHAPE:RHO`, what [`str::parse`] reads back (the variance is not part of the text).
impl std::fmt::Display for Stationary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.shape.name(), self.rho)
    }
}

fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 { Ok(value) } else { Err(MercerError::BadKernelParameter { name, value }) }
}

impl Stationary {
    /// A kernel of the given shape with length-scale `rho > 0` and variance 1.
    pub fn new(shape: StationaryShape, rho: f64) -> Result<Self> {
        Ok(Self { shape, rho: positive("rho", rho)?, variance: 1.0 })
    }

    /// Exponential (Matérn 1/2) kernel `exp(-r/ρ)`.
    pub fn exponential(rho: f64) -> Result<Self> {
        Self::new(StationaryShape::Exponential, rho)
    }

    /// Matérn 3/2 kernel `(1 + √3 r/ρ) exp(-√3 r/ρ)`.
    pub fn matern32(rho: f64) -> Result<Self> {
        Self::new(StationaryShape::Matern32, rho)
    }

    /// Matérn 5/2 kernel `(1 + √5 r/ρ + 5r²/(3ρ²)) exp(-√5 r/ρ)`.
    pub fn matern52(rho: f64) -> Result<Self> {
        Self::new(StationaryShape::Matern52, rho)
    }

    /// Gaussian kernel `exp(-r²/(2ρ²))`.
    ///
    /// The ICLP authors' code writes `exp(-r²/ρ')`; that is `gaussian(sqrt(ρ'/2))`.
    pub fn gaussian(rho: f64) -> Result<Self> {
        Self::new(StationaryShape::Gaussian, rho)
    }

    /// The same kernel scaled to variance `σ² = variance > 0`.
    pub fn with_variance(self, variance: f64) -> Result<Self> {
        Ok(Self { variance: positive("variance", variance)?, ..self })
    }

    /// The shape.
    pub fn shape(&self) -> StationaryShape {
        self.shape
    }

    /// The length-scale ρ.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The variance σ² = C(t, t).
    pub fn variance(&self) -> f64 {
        self.variance
    }

    /// The kernel as a function of the distance `r >= 0`.
    ///
    /// Total on `[0, ∞]` for every ρ: beyond `u = r/ρ = 1000` every shape is below the smallest
    /// subnormal (`e^{-1000}` and less), so it is 0 there — at an infinite distance, and where the
    /// closed form's polynomial factor overflows first (Matérn 5/2's `a²` from `u ≈ 6e153`, 3/2's
    /// `1 + a` at `u = ∞`), which gave `∞ · 0 = NaN`.
    #[inline]
    pub fn at_distance(&self, r: f64) -> f64 {
        let u = r / self.rho;
        if u > 1000.0 {
            return 0.0;
        }
        let g = match self.shape {
            StationaryShape::Exponential => (-u).exp(),
            StationaryShape::Matern32 => {
                let a = 3f64.sqrt() * u;
                (1.0 + a) * (-a).exp()
            }
            StationaryShape::Matern52 => {
                let a = 5f64.sqrt() * u;
                (1.0 + a + a * a / 3.0) * (-a).exp()
            }
            StationaryShape::Gaussian => (-0.5 * u * u).exp(),
        };
        self.variance * g
    }
}

impl Kernel for Stationary {
    #[inline]
    fn eval(&self, s: &[f64], t: &[f64]) -> f64 {
        if s.len() == 1 {
            return self.at_distance((s[0] - t[0]).abs());
        }
        // An overflowing difference makes r² = ∞, where every shape is 0 (see `at_distance`).
        let r2: f64 = s.iter().zip(t).map(|(a, b)| (a - b) * (a - b)).sum();
        if self.shape == StationaryShape::Gaussian {
            // The Gaussian needs r² only: skip the square root in this hot loop of kernel sums.
            // `r²/ρ/ρ`, not `r²/ρ²`: ρ² under- or overflows for ρ below 1.5e-162 or above 1.3e154
            // (0/0 at r = 0, ∞/∞ at an overflowing distance: NaN), the quotients do not.
            return self.variance * (-0.5 * (r2 / self.rho / self.rho)).exp();
        }
        self.at_distance(r2.sqrt())
    }

    fn spec(&self) -> KernelSpec {
        KernelSpec::new(self.shape.name()).param("rho", self.rho).param("variance", self.variance)
    }

    fn radial(&self, r: f64) -> Option<f64> {
        Some(self.at_distance(r))
    }

    /// The Fourier transforms of the closed forms (each integrates to `2π σ²`): with `ℓ = √(2ν)/ρ`,
    /// `2ρ/(1 + ρ²ω²)` (exponential), `4ℓ³/(ℓ² + ω²)²` (Matérn 3/2), `(16/3) ℓ⁵/(ℓ² + ω²)³`
    /// (Matérn 5/2), and `√(2π) ρ e^{-ρ²ω²/2}` (Gaussian), times σ².
    fn spectral_density(&self, omega: f64) -> Option<f64> {
        let (rho, w2) = (self.rho, omega * omega);
        let s = match self.shape {
            StationaryShape::Exponential => 2.0 * rho / (1.0 + rho * rho * w2),
            StationaryShape::Matern32 => {
                let l2 = 3.0 / (rho * rho);
                4.0 * l2 * l2.sqrt() / ((l2 + w2) * (l2 + w2))
            }
            StationaryShape::Matern52 => {
                let l2 = 5.0 / (rho * rho);
                16.0 / 3.0 * l2 * l2 * l2.sqrt() / ((l2 + w2) * (l2 + w2) * (l2 + w2))
            }
            StationaryShape::Gaussian => (2.0 * std::f64::consts::PI).sqrt() * rho * (-0.5 * rho * rho * w2).exp(),
        };
        Some(self.variance * s)
    }

    /// The Gaussian kernel is separable: `σ² e^{-|s - t|²/(2ρ²)} = σ² Π_a e^{-(s_a - t_a)²/(2ρ²)}`.
    fn factors(&self, dim: usize) -> Option<Vec<Arc<dyn Kernel>>> {
        if self.shape != StationaryShape::Gaussian || dim < 2 {
            return None;
        }
        let unit = Stationary { variance: 1.0, ..*self };
        Some((0..dim).map(|a| -> Arc<dyn Kernel> { Arc::new(if a == 0 { *self } else { unit }) }).collect())
    }
}

/// The Brownian-motion kernel `C(s, t) = σ² min(s, t)` on `[0, ∞)` (on `[0, ∞)^d` the Brownian
/// sheet `σ² Π_j min(s_j, t_j)`).
///
/// On `[0, T]` its eigenpairs are known in closed form:
/// `λ_j = σ² T² / ((j - 1/2)² π²)`, `φ_j(t) = sqrt(2/T) sin((j - 1/2) π t / T)`
/// (see [`MercerBasis::brownian`](crate::MercerBasis::brownian)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Brownian {
    variance: f64,
}

impl Brownian {
    /// Standard Brownian motion (σ² = 1).
    pub fn new() -> Self {
        Self { variance: 1.0 }
    }

    /// Brownian motion with `C(s, t) = variance * min(s, t)`.
    pub fn with_variance(variance: f64) -> Result<Self> {
        Ok(Self { variance: positive("variance", variance)? })
    }

    /// σ².
    pub fn variance(&self) -> f64 {
        self.variance
    }
}

impl Default for Brownian {
    fn default() -> Self {
        Self::new()
    }
}

impl Kernel for Brownian {
    #[inline]
    fn eval(&self, s: &[f64], t: &[f64]) -> f64 {
        self.variance * s.iter().zip(t).map(|(a, b)| a.min(*b)).product::<f64>()
    }

    fn spec(&self) -> KernelSpec {
        KernelSpec::new("brownian").param("variance", self.variance)
    }

    /// The Brownian sheet is the product of one-dimensional Brownian kernels.
    fn factors(&self, dim: usize) -> Option<Vec<Arc<dyn Kernel>>> {
        (dim >= 2).then(|| {
            (0..dim)
                .map(|a| -> Arc<dyn Kernel> { Arc::new(Self { variance: if a == 0 { self.variance } else { 1.0 } }) })
                .collect()
        })
    }

    fn check_domain(&self, grid: &Grid) -> Result<()> {
        if grid.domain().iter().all(|(lo, _)| *lo >= 0.0) {
            Ok(())
        } else {
            Err(MercerError::Unsupported("the Brownian kernel is defined on [0, ∞)^d only"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_errors() {
        for rho in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(Stationary::matern32(rho), Err(MercerError::BadKernelParameter { name: "rho", .. })));
        }
        let k = Stationary::gaussian(1.0).unwrap();
        assert!(k.with_variance(0.0).is_err());
        assert!(Brownian::with_variance(-2.0).is_err());
    }

    #[test]
    fn shapes_match_closed_forms() {
        let r = 0.3;
        let rho = 0.7;
        let u = r / rho;
        let cases = [
            (Stationary::exponential(rho).unwrap(), (-u).exp()),
            (Stationary::matern32(rho).unwrap(), (1.0 + 3f64.sqrt() * u) * (-(3f64.sqrt()) * u).exp()),
            (
                Stationary::matern52(rho).unwrap(),
                (1.0 + 5f64.sqrt() * u + 5.0 * u * u / 3.0) * (-(5f64.sqrt()) * u).exp(),
            ),
            (Stationary::gaussian(rho).unwrap(), (-u * u / 2.0).exp()),
        ];
        for (k, want) in cases {
            assert!((k.at_distance(r) - want).abs() < 1e-15, "{:?}", k.shape());
            assert!((k.with_variance(2.0).unwrap().eval(&[0.0, 0.0], &[0.0, r]) - 2.0 * want).abs() < 1e-15);
            assert_eq!(k.at_distance(0.0), 1.0);
        }
        assert_eq!(Brownian::new().eval(&[0.3, 0.5], &[0.4, 0.2]), 0.3 * 0.2);
        // Total on finite inputs: far-apart points whose distance overflows give the limit 0.
        for shape in [
            StationaryShape::Exponential,
            StationaryShape::Matern32,
            StationaryShape::Matern52,
            StationaryShape::Gaussian,
        ] {
            let k = Stationary::new(shape, 0.1).unwrap();
            assert_eq!(k.eval(&[1e154, 1e154], &[-1e154, -1e154]), 0.0, "{shape:?}");
            assert_eq!(k.eval(&[f64::MAX], &[-f64::MAX]), 0.0, "{shape:?}");
            assert_eq!(k.at_distance(f64::INFINITY), 0.0);
            // ... and for every length-scale: a ρ whose square under- or overflows, distances whose
            // ratio to ρ overflows the polynomial factor (an audit found NaN at ρ = 1e-170 in 2-D,
            // Matérn 5/2 from ρ ≈ 6e153).
            for rho in [f64::MIN_POSITIVE, 1e-300, 1e-170, 1e-160, 1e154, 1e300, f64::MAX] {
                let k = Stationary::new(shape, rho).unwrap();
                for (s, t) in [([0.0, 0.0], [0.0, 0.0]), ([0.0, 0.0], [1.0, 1.0]), ([1e154, 0.0], [-1e154, 0.0])] {
                    let v = k.eval(&s, &t);
                    assert!((0.0..=1.0).contains(&v), "{shape:?} rho {rho:e}: {v}");
                    assert!((0.0..=1.0).contains(&k.eval(&s[..1], &t[..1])), "{shape:?} rho {rho:e}");
                }
                assert_eq!(k.eval(&[0.5, 0.5], &[0.5, 0.5]), 1.0, "{shape:?} rho {rho:e}");
                for r in [1e-300, 1.0, 1e154, 1e300, f64::MAX] {
                    assert!((0.0..=1.0).contains(&k.at_distance(r)), "{shape:?} rho {rho:e} r {r:e}");
                }
            }
        }
        let bad = Grid::midpoint(-1.0, 1.0, 4).unwrap();
        assert!(Brownian::new().check_domain(&bad).is_err());
    }

    #[test]
    fn spectral_densities_are_the_fourier_transforms_of_the_shapes() {
        // S(ω) = 2 ∫_0^∞ g(r) cos(ωr) dr, by the midpoint rule on [0, 40ρ] (g < 1e-14 beyond).
        for shape in [
            StationaryShape::Exponential,
            StationaryShape::Matern32,
            StationaryShape::Matern52,
            StationaryShape::Gaussian,
        ] {
            let k = Stationary::new(shape, 0.3).unwrap().with_variance(1.7).unwrap();
            for omega in [0.0, 1.0, 7.5, 40.0] {
                let (cells, end) = (400_000, 40.0 * 0.3);
                let h = end / cells as f64;
                let integral: f64 = (0..cells)
                    .map(|i| {
                        let r = (i as f64 + 0.5) * h;
                        k.at_distance(r) * (omega * r).cos()
                    })
                    .sum::<f64>()
                    * 2.0
                    * h;
                let s = k.spectral_density(omega).unwrap();
                assert!(
                    (s - integral).abs() <= 1e-6 * k.spectral_density(0.0).unwrap(),
                    "{shape:?} {omega}: {s} {integral}"
                );
            }
        }
        assert_eq!(Brownian::new().spectral_density(1.0), None);
    }
}
