//! The estimators share the release path's error: [`fdp_core::Error`], named here as before.

pub use fdp_core::error::positive;
pub use fdp_core::{Error as EstimatorError, Result};
