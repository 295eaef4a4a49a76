//! # fdp: differentially private functional data
//!
//! The facade of the fdp workspace: it re-exports the crates. They form two layers: the release
//! path (noise -> release), the differential-privacy machinery, which knows no curve or kernel; and
//! the functional layer above it (mercer -> data -> functional), which the estimators, the kernel
//! mean embeddings and the reports build on.
//!
//! - [`noise`]: privacy parameters (ε, δ, budgets, the neighbour relation) and secure samplers;
//! - [`release`]: the one release path — the `Mechanism` trait, `Release` and its metadata, typed
//!   parameters, and the `Session` that keeps the privacy budget;
//! - [`mercer`]: kernels, grids and Mercer eigenbases;
//! - [`data`]: curve sets, CSV and dataset loaders, the paper's simulation scenarios;
//! - [`functional`]: released curves (`Curve`, `CurveReleaseExt`) and their representations, the ICLP
//!   and Gaussian-process noise over a basis, `BasisOutput`, the Bernstein and interpolation
//!   numerics;
//! - [`estimators`]: private mean curves, densities, ERM and tuning;
//! - [`kme`]: private kernel mean embeddings and synthetic weighted datasets;
//! - [`audit`]: the black-box empirical privacy auditor;
//! - [`report`]: figures (SVG) and report folders;
//! - [`registry`]: **every mechanism registered once** — its name, input, parameters with their
//!   defaults — built from a serialisable [`registry::Spec`] and released only through a Session;
//!   the `fdp` command line (`crates/fdp-cli`), the Python package (`crates/fdp-python`) and Spark
//!   are derived from it. How to add a mechanism: [`registry`]'s module documentation (one file, one
//!   line);
//! - [`front`]: what the registry's entries build on — the requests that read mechanism names
//!   (`iclp_rkhs`, `matern32:0.1`, `l2:0.5`) into typed parameters, the grid rule, sessions and
//!   report writers shared by the doors.

pub use fdp_audit as audit;
pub use fdp_data as data;
pub use fdp_estimators as estimators;
pub use fdp_functional as functional;
pub use fdp_kme as kme;
pub use fdp_mercer as mercer;
pub use fdp_report as report;

/// The release path (`fdp-core`), and — at the paths they had before the functional layer was split
/// off — the curve types now in [`functional`]: `fdp::release::Curve` is `fdp::functional::Curve`.
pub mod release {
    pub use fdp_core::*;
    pub use fdp_functional::{BasisOutput, Curve, CurveReleaseExt, Representation, pointwise_noise_sd};
}

/// The noise layer (`fdp-noise`), and — at the paths they had before the functional layer was split
/// off — the samplers over a Mercer basis now in [`functional`]: `fdp::noise::IclpSampler` is
/// `fdp::functional::IclpSampler`.
pub mod noise {
    pub use fdp_functional::{BasisSampler, CholeskyGpSampler, GaussianProcessSampler, IclpSampler};
    pub use fdp_noise::*;
}

pub mod front;
pub mod registry;

/// Exactly the names of the README's happy path: a session with its budget, a kernel, a bound in its
/// norm, and a mean-curve mechanism (`Delta` for the (ε, δ) variants).
pub mod prelude {
    pub use fdp_core::{ClippingBound, Session};
    pub use fdp_estimators::MeanCurve;
    /// `release.curve()`, `.grid()`, `.coefficients()`, `.evaluate(..)` of a released curve.
    pub use fdp_functional::CurveReleaseExt;
    pub use fdp_mercer::Stationary;
    pub use fdp_noise::{Delta, Epsilon};
}

/// The README's code blocks, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
