//! The KME layer shares the release path's error: [`fdp_core::Error`], named here as before.

pub use fdp_core::{Error as KmeError, Result};
