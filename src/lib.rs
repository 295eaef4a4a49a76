//! # fdp: differentially private functional data
//!
//! The facade of the fdp workspace: it re-exports the crates, in the order the data flows
//! (kernel -> basis -> summary -> noise -> release -> report).
//!
//! - [`mercer`]: kernels, grids and Mercer eigenbases;
//! - [`data`]: curve sets, CSV and dataset loaders, the paper's simulation scenarios;
//! - [`noise`]: privacy parameters, secure samplers, the ICLP and Gaussian-process mechanisms' noise;
//! - [`release`]: the one release path — the `Mechanism` trait, `Release` and its metadata, typed
//!   parameters, and the `Session` that keeps the privacy budget;
//! - [`estimators`]: private mean curves, densities, ERM and tuning;
//! - [`kme`]: private kernel mean embeddings and synthetic weighted datasets;
//! - [`audit`]: the black-box empirical privacy auditor;
//! - [`report`]: figures (SVG) and report folders;
//! - [`front`]: mechanisms chosen by name (`iclp_rkhs`, `matern32:0.1`, `l2:0.5`), what the `fdp`
//!   command line (`crates/fdp-cli`) and the Python package (`crates/fdp-python`) build on.

pub use fdp_audit as audit;
pub use fdp_core as release;
pub use fdp_data as data;
pub use fdp_estimators as estimators;
pub use fdp_kme as kme;
pub use fdp_mercer as mercer;
pub use fdp_noise as noise;
pub use fdp_report as report;

pub mod front;

/// Exactly the names of the README's happy path: a session with its budget, a kernel, a bound in its
/// norm, and a mean-curve mechanism (`Delta` for the (ε, δ) variants).
pub mod prelude {
    pub use fdp_core::{ClippingBound, Session};
    pub use fdp_estimators::MeanCurve;
    pub use fdp_mercer::Stationary;
    pub use fdp_noise::{Delta, Epsilon};
}

/// The README's code blocks, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
