use thiserror::Error;

/// Errors of the estimators. Parameters and shapes only: record contents never cause one.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EstimatorError {
    /// A tuning or privacy parameter is out of range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    BadParameter { name: &'static str, value: f64, reason: &'static str },
    /// The data do not have the shape the mechanism was built for (n and the grid are public).
    #[error("shape mismatch: {what} is {got}, the mechanism was built for {expected}")]
    Shape { what: &'static str, expected: usize, got: usize },
    /// The curves' grid differs from the basis grid.
    #[error("the curves' grid differs from the basis grid")]
    GridMismatch,
    /// From the noise layer.
    #[error(transparent)]
    Noise(#[from] fdp_noise::NoiseError),
    /// From the basis layer.
    #[error(transparent)]
    Mercer(#[from] fdp_mercer::MercerError),
    /// From the data layer.
    #[error(transparent)]
    Data(#[from] fdp_data::DataError),
    /// Serialising a release.
    #[error("serialising: {0}")]
    Json(String),
}

/// Result alias of this crate.
pub type Result<T, E = EstimatorError> = std::result::Result<T, E>;

pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(EstimatorError::BadParameter { name, value, reason: "must be finite and > 0" })
    }
}

pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(EstimatorError::BadParameter { name, value, reason: "must be finite and >= 0" })
    }
}
