use thiserror::Error;

/// Errors of the noise layer. Every variant is about a public parameter, never about data.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum NoiseError {
    /// ε must lie in `(0, 2^30]` ([`crate::Epsilon::MAX`]).
    #[error("epsilon must be > 0 and at most 2^30 (about 1.07e9: beyond it a release could saturate its lattice), got {}", Shown(*.0))]
    BadEpsilon(f64),
    /// δ must lie in (0, 1).
    #[error("delta must lie in (0, 1), got {}", Shown(*.0))]
    BadDelta(f64),
    /// A sensitivity must be finite and > 0.
    #[error("sensitivity must be finite and > 0, got {}", Shown(*.0))]
    BadSensitivity(f64),
    /// Another parameter is out of range.
    #[error("invalid parameter {name} = {}: {reason}", Shown(*value))]
    BadParameter { name: &'static str, value: f64, reason: &'static str },
    /// A vector has the wrong length.
    #[error("{what} has {got} entries but {expected} were expected")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    /// A privacy budget would be overspent.
    #[error(
        "privacy budget exceeded: spending (ε = {epsilon}, δ = {delta}) leaves (ε = {remaining_epsilon}, δ = {remaining_delta})"
    )]
    BudgetExceeded { epsilon: f64, delta: f64, remaining_epsilon: f64, remaining_delta: f64 },
    /// The operating system's random source failed.
    #[error("the operating system's random source failed: {0}")]
    Entropy(String),
}

/// Result alias of this crate.
pub type Result<T, E = NoiseError> = std::result::Result<T, E>;

/// `Ok` if a vector named `what` has the `expected` length, else [`NoiseError::LengthMismatch`].
pub fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(NoiseError::LengthMismatch { what, expected, got }) }
}

/// A number as an error message shows it: as written (`0.25`, `-3`), but in scientific form far
/// from 1 (`1e300`, `2.5e-9`), where plain `{}` prints up to hundreds of digits. Every crate's
/// parameter errors write their numbers through it.
#[derive(Debug, Clone, Copy)]
pub struct Shown(pub f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v.is_finite() && v != 0.0 && !(1e-5..1e15).contains(&v.abs()) {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}
