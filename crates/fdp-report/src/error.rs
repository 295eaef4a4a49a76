use std::path::{Path, PathBuf};

use thiserror::Error;

/// Errors writing reports.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReportError {
    /// File system.
    #[error("writing {path}: {message}")]
    Io { path: PathBuf, message: String },
    /// Drawing.
    #[error("drawing {path}: {message}")]
    Draw { path: PathBuf, message: String },
    /// Inputs that cannot be drawn (empty, mismatched lengths, nothing finite).
    #[error("cannot draw: {0}")]
    BadInput(String),
}

/// Result alias of this crate.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

pub(crate) fn io_err(path: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Io { path: path.to_path_buf(), message: e.to_string() }
}

pub(crate) fn draw_err(path: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw { path: path.to_path_buf(), message: e.to_string() }
}
