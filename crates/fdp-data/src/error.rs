use std::path::PathBuf;

use thiserror::Error;

/// Errors of the data layer. They concern files, shapes and parameters — never the values inside a
/// record: a record that cannot be used becomes the public default curve instead.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DataError {
    /// A dataset file is not where it was looked for.
    #[error(
        "{dataset}: {path} not found. The real datasets live in ../shared/data (see its README.md); point FDP_DATA_DIR or --data-dir at that folder"
    )]
    MissingFile { dataset: &'static str, path: PathBuf },
    /// The file could not be read or parsed as CSV.
    #[error("reading {path}: {message}")]
    Read { path: PathBuf, message: String },
    /// No column matched the value-column selection.
    #[error("{path}: no column starts with {prefix:?}")]
    NoValueColumns { path: PathBuf, prefix: String },
    /// A requested id column is absent.
    #[error("{path}: no column named {column:?}")]
    MissingColumn { path: PathBuf, column: String },
    /// A matrix or curve has the wrong size.
    #[error("{what} has {got} entries but {expected} were expected")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    /// A parameter is out of range.
    #[error("invalid parameter {name} = {}: {reason}", fdp_core::Shown(*value))]
    BadParameter { name: &'static str, value: f64, reason: &'static str },
    /// An error from the grid or basis layer.
    #[error(transparent)]
    Mercer(#[from] fdp_mercer::MercerError),
}

/// The release path's error carries a data-layer error with its message unchanged
/// ([`fdp_core::LayerError`], layer `data`), so `?` works in mechanisms that read curves.
impl From<DataError> for fdp_core::Error {
    fn from(error: DataError) -> Self {
        fdp_core::Error::layer("data", error)
    }
}

/// Result alias of this crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a data error reaches the release path's error with its message unchanged.
    #[test]
    fn data_errors_convert_into_the_release_path_error() {
        let error = DataError::LengthMismatch { what: "curve", expected: 3, got: 2 };
        let message = error.to_string();
        let core = fdp_core::Error::from(error);
        assert_eq!(core.to_string(), message);
        let fdp_core::Error::Layer(layer) = &core else { panic!("{core:?}") };
        assert_eq!(layer.layer(), "data");
        assert!(layer.downcast_ref::<DataError>().is_some());
    }
}
