use fdp_core::{ParamValue, Shown};
use thiserror::Error;

/// Everything that can go wrong while building grids, kernels and Mercer bases.
///
/// Every variant describes a bad *parameter* (public information); none carries record contents.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum MercerError {
    /// A grid needs at least `needed` points.
    #[error("a grid needs at least {needed} point(s), got {got}")]
    TooFewPoints { needed: usize, got: usize },
    /// A grid point (or an evaluation point) is NaN or infinite.
    #[error("point {index} is not finite ({value})")]
    NonFinitePoint { index: usize, value: f64 },
    /// Grid points must be strictly increasing (which also rules out duplicates).
    #[error(
        "grid points must be strictly increasing: t[{index}] = {} does not exceed the previous point {}",
        Shown(*value),
        Shown(*previous)
    )]
    NotIncreasing { index: usize, value: f64, previous: f64 },
    /// A quadrature weight is not finite and positive.
    #[error("quadrature weight {index} must be finite and > 0, got {}", Shown(*value))]
    BadWeight { index: usize, value: f64 },
    /// An interval [a, b] with non-finite ends or a >= b.
    #[error("invalid interval [{}, {}]: the ends must be finite with start < end", Shown(*start), Shown(*end))]
    BadInterval { start: f64, end: f64 },
    /// A vector or matrix has the wrong size.
    #[error("{what} has {got} entries but {expected} were expected")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    /// A kernel parameter (length-scale, variance) is not finite and positive.
    #[error("kernel parameter {name} must be finite and > 0, got {}", Shown(*value))]
    BadKernelParameter { name: &'static str, value: f64 },
    /// A truncation or solver option is out of range.
    #[error("invalid basis option {name}{}: {reason}", value.after_name())]
    BadOption { name: &'static str, value: ParamValue, reason: &'static str },
    /// The kernel produced a NaN or infinite value on the grid.
    #[error("the kernel {kernel} is not finite at grid points ({row}, {col})")]
    NonFiniteKernel { kernel: String, row: usize, col: usize },
    /// A custom kernel is not symmetric on the grid.
    #[error(
        "the kernel {kernel} is not symmetric: C(t_{row}, t_{col}) and C(t_{col}, t_{row}) differ by {difference:e}"
    )]
    AsymmetricKernel { kernel: String, row: usize, col: usize, difference: f64 },
    /// A custom kernel has a negative eigenvalue beyond round-off: it is not a covariance.
    #[error(
        "the kernel {kernel} is not positive semi-definite on the grid: eigenvalue {most_negative:e} against the largest {largest:e}"
    )]
    IndefiniteKernel { kernel: String, most_negative: f64, largest: f64 },
    /// No eigenvalue is positive enough to keep.
    #[error("no eigenvalue survives truncation (largest eigenvalue {largest})")]
    NoComponents { largest: f64 },
    /// The eigensolver did not converge.
    #[error("eigendecomposition failed: {0}")]
    Decomposition(String),
    /// A kernel written as text (`matern32:0.1`) could not be read.
    #[error("cannot read the kernel {spec:?}: {reason}")]
    BadKernelSpec { spec: String, reason: &'static str },
    /// The request does not apply to this grid or kernel.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}

/// Result alias of this crate.
/// The release path's error carries a basis-layer error with its message unchanged
/// ([`fdp_core::LayerError`], layer `basis`), so `?` works in mechanisms built on bases.
impl From<MercerError> for fdp_core::Error {
    fn from(error: MercerError) -> Self {
        fdp_core::Error::layer("basis", error)
    }
}

pub type Result<T, E = MercerError> = std::result::Result<T, E>;

/// Checks that `got == expected`, naming the argument in the error.
pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(MercerError::LengthMismatch { what, expected, got }) }
}

/// Checks that every value is finite, reporting the first one that is not.
pub(crate) fn check_finite(values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(MercerError::NonFinitePoint { index, value: values[index] }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a basis error reaches the release path's error with its message unchanged and can
    /// be read back typed; a missing option is said to be missing, not NaN.
    #[test]
    fn basis_errors_convert_into_the_release_path_error() {
        let error = MercerError::BadOption { name: "max_components", value: ParamValue::Missing, reason: "needed" };
        assert_eq!(error.to_string(), "invalid basis option max_components (not given): needed");
        let core = fdp_core::Error::from(error.clone());
        assert_eq!(core.to_string(), error.to_string());
        let fdp_core::Error::Layer(layer) = &core else { panic!("{core:?}") };
        assert_eq!((layer.layer(), layer.downcast_ref::<MercerError>()), ("basis", Some(&error)));
    }
}
