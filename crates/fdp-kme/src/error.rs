use thiserror::Error;

/// Errors of the KME layer: parameters and shapes, never record contents.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum KmeError {
    /// Sizes that do not fit together.
    #[error("shape mismatch: {what} is {got}, expected {expected}")]
    Shape { what: &'static str, expected: usize, got: usize },
    /// A parameter out of range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    BadParameter { name: &'static str, value: f64, reason: &'static str },
    /// From the noise layer.
    #[error(transparent)]
    Noise(#[from] fdp_noise::NoiseError),
    /// From the kernel layer.
    #[error(transparent)]
    Mercer(#[from] fdp_mercer::MercerError),
    /// Writing a release.
    #[error("writing: {0}")]
    Write(String),
}

/// Result alias of this crate.
pub type Result<T, E = KmeError> = std::result::Result<T, E>;
