//! Parameters validated once into types: the clipping bound that carries its norm, the
//! regularisation `(η, ψ)`, how tuning was done, and the norm a sensitivity is measured in.
//!
//! Per-record clipping happens in the norm a sensitivity is computed in, with a bound τ fixed before
//! the data are seen. Clipping scales a record down onto the ball `{||x|| <= τ}` (and leaves it alone
//! inside), so one record moves a summary by at most what a τ-bounded record can.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, non_negative, positive};

/// The norm a record is clipped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ClipNorm {
    /// `Σ_k |x_k|` over the kept basis coefficients (ICLP-RKHS).
    CoefficientL1,
    /// `(Σ_k x_k²)^{1/2}` over the kept coefficients, the L2 norm of the projected curve
    /// (ICLP-l1, IID Laplace, Gaussian process).
    L2,
    /// `max_i |x(t_i)|` on the grid (Bernstein).
    Sup,
}

impl ClipNorm {
    /// The prefix a bound in this norm is written with (`NORM:VALUE`): `l1`, `l2` or `sup`.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::CoefficientL1 => "l1",
            Self::L2 => "l2",
            Self::Sup => "sup",
        }
    }

    /// The norm of `x`.
    pub fn norm(self, x: &[f64]) -> f64 {
        match self {
            Self::CoefficientL1 => x.iter().map(|v| v.abs()).sum(),
            Self::L2 => l2_norm(x),
            // `f64::max` ignores NaN; a NaN entry must make the norm NaN (and the record unusable).
            Self::Sup => {
                x.iter().fold(0.0, |m: f64, v| if v.is_nan() || m.is_nan() { f64::NAN } else { m.max(v.abs()) })
            }
        }
    }

    /// Scales `x` in place so that its norm is at most `tau` (`tau > 0`).
    ///
    /// A record whose norm is not finite (its projection overflowed) becomes 0, the centre of the
    /// ball: any point of the ball keeps the sensitivity bound, and no record can turn the summary
    /// into NaN.
    pub fn clip(self, x: &mut [f64], tau: f64) {
        let norm = self.norm(x);
        if !norm.is_finite() {
            x.fill(0.0);
        } else if norm > tau {
            let s = tau / norm;
            x.iter_mut().for_each(|v| *v *= s);
        }
    }
}

/// `(Σ_k x_k²)^{1/2}` without underflow or overflow.
///
/// The plain sum of squares is used when it is finite and at least `2^-900`: then every square that
/// underflowed lost less than `2^-1074`, a relative error below `k · 2^-174`, far under the
/// `k · 2^-53` of the summation itself, and the result is bit-identical to the plain formula.
/// Otherwise (squares of entries below ~`1e-154` that underflow to 0, so a record of entries
/// ~`1e-163` would have norm 0 and never be clipped; or squares that overflow) the entries are
/// first divided by `m = max_k |x_k|`, as LAPACK's `dnrm2` and `hypot` do:
/// `m · (Σ_k (x_k/m)²)^{1/2}`, each `(x_k/m)² <= 1` and the largest is exactly 1, so nothing that
/// matters underflows and nothing overflows. A NaN entry gives NaN.
pub fn l2_norm(x: &[f64]) -> f64 {
    l2_norm_from_squares(x, x.iter().map(|v| v * v).sum::<f64>())
}

/// [`l2_norm`] given `plain`, the sum of the squares `x_k · x_k` added in order from `-0.0` (as
/// `Iterator::sum` does): a caller that computes the sums of several vectors side by side (one
/// lane each, the same operations in the same order) gets the same bits as [`l2_norm`].
pub fn l2_norm_from_squares(x: &[f64], plain: f64) -> f64 {
    if plain.is_finite() && plain >= 2f64.powi(-900) {
        return plain.sqrt();
    }
    let mut m = 0.0f64;
    for v in x {
        if v.is_nan() {
            return f64::NAN;
        }
        m = m.max(v.abs());
    }
    if m == 0.0 || m.is_infinite() {
        return m;
    }
    m * x.iter().map(|v| (v / m) * (v / m)).sum::<f64>().sqrt()
}

/// The smallest clipping bound fdp accepts, `2^-960` (about `1.0e-289`): the fixed-point scale
/// `2^e` of a bound τ ([`fixed_point_exponent`](crate::state::fixed_point_exponent),
/// `e = 62 - ceil(log2 τ)`) must be a finite f64 (`e <= 1023`) and its inverse a normal one
/// (`e <= 1022`); below this the scale overflows and every contribution would silently become 0.
pub const MIN_CLIPPING_BOUND: f64 = f64::from_bits((1023 - 960) << 52);

/// A clipping bound τ **with its norm**: the mechanism that receives it checks the norm, so a bound
/// measured in one norm cannot be used by a mechanism that clips in another.
///
/// ```
/// use fdp_core::{ClipNorm, ClippingBound};
/// let tau = ClippingBound::coefficient_l1(10.0)?;
/// assert_eq!((tau.value(), tau.norm()), (10.0, ClipNorm::CoefficientL1));
/// assert!(ClippingBound::l2(-1.0).is_err());
/// # Ok::<(), fdp_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "UncheckedBound")]
pub struct ClippingBound {
    value: f64,
    norm: ClipNorm,
}

/// A bound as read from JSON, checked by [`ClippingBound::new`] before it becomes one.
#[derive(Deserialize)]
struct UncheckedBound {
    value: f64,
    norm: ClipNorm,
}

impl TryFrom<UncheckedBound> for ClippingBound {
    type Error = Error;

    fn try_from(raw: UncheckedBound) -> Result<Self> {
        Self::new(raw.value, raw.norm)
    }
}

impl ClippingBound {
    /// A bound `τ > 0` (finite, at least [`MIN_CLIPPING_BOUND`]) in `norm`, fixed before the data
    /// are seen.
    pub fn new(value: f64, norm: ClipNorm) -> Result<Self> {
        let value = positive("clipping bound", value)?;
        if value < MIN_CLIPPING_BOUND {
            return Err(Error::BadParameter {
                name: "clipping bound",
                value: value.into(),
                reason: "below 2^-960 (about 1.0e-289), the smallest bound whose fixed-point scale is representable",
            });
        }
        Ok(Self { value, norm })
    }

    /// `Σ_k |x_k| <= τ` over the basis coefficients (ICLP-RKHS).
    pub fn coefficient_l1(value: f64) -> Result<Self> {
        Self::new(value, ClipNorm::CoefficientL1)
    }

    /// `||x||_{L2} <= τ` for the projected curve (ICLP-l1, IID Laplace, Gaussian process).
    pub fn l2(value: f64) -> Result<Self> {
        Self::new(value, ClipNorm::L2)
    }

    /// `max_t |x(t)| <= τ` on the grid (Bernstein).
    pub fn sup(value: f64) -> Result<Self> {
        Self::new(value, ClipNorm::Sup)
    }

    /// τ.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The norm τ is measured in.
    pub fn norm(&self) -> ClipNorm {
        self.norm
    }

    /// This bound if it is in `norm`, else an error naming the mechanism and both norms.
    pub fn require(self, norm: ClipNorm, mechanism: &'static str) -> Result<Self> {
        if self.norm == norm { Ok(self) } else { Err(Error::WrongNorm { mechanism, expected: norm, got: self.norm }) }
    }
}

/// Reads `NORM:VALUE` with NORM `l1` (the coefficient l1 norm), `l2` or `sup`, the form the command
/// line and the Python package take.
///
/// ```
/// use fdp_core::ClippingBound;
/// assert_eq!("l2:0.5".parse::<ClippingBound>()?, ClippingBound::l2(0.5)?);
/// assert_eq!("l1:10".parse::<ClippingBound>()?, ClippingBound::coefficient_l1(10.0)?);
/// assert!("l2:0".parse::<ClippingBound>().is_err() && "linf:1".parse::<ClippingBound>().is_err());
/// # Ok::<(), fdp_core::Error>(())
/// ```
impl std::str::FromStr for ClippingBound {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self> {
        let bad = |reason| Error::BadSpec { what: "the clipping bound", spec: spec.into(), reason };
        let (norm, value) = spec.split_once(':').ok_or_else(|| bad("expected NORM:VALUE, e.g. l2:0.5"))?;
        let value: f64 = value.trim().parse().map_err(|_| bad("VALUE is not a number"))?;
        let norm = match norm.trim().to_ascii_lowercase().as_str() {
            "l1" | "coefficient_l1" => ClipNorm::CoefficientL1,
            "l2" => ClipNorm::L2,
            "sup" => ClipNorm::Sup,
            _ => return Err(bad("NORM must be l1 (coefficient l1), l2 or sup")),
        };
        Self::new(value, norm)
    }
}

/// `NORM:VALUE`, what [`str::parse`] reads back.
impl std::fmt::Display for ClippingBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.norm.prefix(), self.value)
    }
}

/// The regularisation of an RKHS-type estimator: the operator power η > 0 and the penalty ψ >= 0.
/// Named fields, so the two cannot be swapped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Regularisation {
    eta: f64,
    psi: f64,
}

impl Regularisation {
    /// `η > 0`, `ψ >= 0`, both finite.
    pub fn new(eta: f64, psi: f64) -> Result<Self> {
        Ok(Self { eta: positive("eta", eta)?, psi: non_negative("psi", psi)? })
    }

    /// η.
    pub fn eta(&self) -> f64 {
        self.eta
    }

    /// ψ.
    pub fn psi(&self) -> f64 {
        self.psi
    }
}

/// How a mechanism's tuning parameters were chosen; recorded in every release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Tuning {
    /// From public quantities only (n, ε, the bound, the kernel): private.
    PlugIn,
    /// Chosen by the user without looking at the data: private.
    Fixed,
    /// Private cross-validation on the data: **not private** unless charged its own budget.
    CrossValidated,
    /// Chosen from the data by differentially private stages whose cost is charged with the release
    /// (a private bound, a private pilot) and by post-processing of private outputs; see
    /// [`ReleaseMetadata::stages`](crate::ReleaseMetadata::stages).
    Private,
}

/// The norm a sensitivity is measured in; recorded in every release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SensitivityNorm {
    /// `Σ_k |h_k| / sqrt(λ_k)`, the ICLP norm.
    L1C,
    /// `(Σ_k h_k² / λ_k)^{1/2}`, the Cameron-Martin (RKHS) norm of the Gaussian process.
    CameronMartin,
    /// The l1 norm of a coefficient vector.
    L1,
    /// The l2 norm of a vector.
    L2,
    /// The l1 norm of the Bernstein lattice values.
    L1Lattice,
    /// The largest change of any candidate's score (an exponential mechanism's utility).
    Score,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_read_from_json_is_checked_like_one_made_in_code() {
        let good: ClippingBound = serde_json::from_str(r#"{"value":2.0,"norm":"L2"}"#).unwrap();
        assert_eq!(good, ClippingBound::l2(2.0).unwrap());
        assert_eq!(serde_json::from_str::<ClippingBound>(&serde_json::to_string(&good).unwrap()).unwrap(), good);
        for bad in [r#"{"value":1e-300,"norm":"L2"}"#, r#"{"value":-1.0,"norm":"Sup"}"#, r#"{"value":0.0,"norm":"L2"}"#]
        {
            assert!(serde_json::from_str::<ClippingBound>(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn clipping_lands_on_the_ball() {
        for norm in [ClipNorm::CoefficientL1, ClipNorm::L2, ClipNorm::Sup] {
            let mut x = vec![3.0, -4.0, 1.0];
            norm.clip(&mut x, 2.0);
            assert!((norm.norm(&x) - 2.0).abs() < 1e-12, "{norm:?}");
            let mut small = vec![0.1, 0.0, -0.1];
            norm.clip(&mut small, 2.0);
            assert_eq!(small, vec![0.1, 0.0, -0.1]);
            let mut overflowed = vec![f64::INFINITY, f64::NAN, 1.0];
            norm.clip(&mut overflowed, 2.0);
            assert_eq!(overflowed, vec![0.0; 3]);
        }
    }

    #[test]
    fn l2_norm_neither_underflows_nor_overflows_and_tiny_bounds_are_refused() {
        // Squares of 1e-163 underflow to 0: the plain norm was 0 and such a record was never clipped.
        let tiny = vec![1e-163, -2e-163, 2e-163];
        assert!((l2_norm(&tiny) / 3e-163 - 1.0).abs() < 1e-15);
        let mut x = tiny.clone();
        ClipNorm::L2.clip(&mut x, 1e-170);
        assert!(ClipNorm::L2.norm(&x) <= 1e-170 * (1.0 + 1e-15));
        let huge = vec![3e200, 4e200];
        assert!((l2_norm(&huge) / 5e200 - 1.0).abs() < 1e-15);
        assert!(l2_norm(&[1.0, f64::NAN]).is_nan() && l2_norm(&[]) == 0.0);
        // Ordinary vectors: bit-identical to the plain formula.
        let v = [0.3, -1.7, 2.25];
        assert_eq!(l2_norm(&v), v.iter().map(|a| a * a).sum::<f64>().sqrt());
        assert_eq!(MIN_CLIPPING_BOUND, 2f64.powi(-960));
        assert!(ClippingBound::l2(1e-170).is_ok() && ClippingBound::l2(MIN_CLIPPING_BOUND).is_ok());
        let err = ClippingBound::l2(2.6e-290).unwrap_err().to_string();
        assert!(err.contains("clipping bound") && err.contains("1.0e-289"), "{err}");
        assert!("l2:1e-300".parse::<ClippingBound>().is_err());
        let e = crate::state::fixed_point_exponent(MIN_CLIPPING_BOUND);
        assert!(crate::state::fixed_scale(e).is_finite() && crate::state::fixed_scale(-e).is_normal());
    }
}
