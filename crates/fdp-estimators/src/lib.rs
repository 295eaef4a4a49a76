//! # fdp-estimators: private functional summaries
//!
//! Every mechanism here implements [`fdp_core::Mechanism`] and releases through a
//! [`fdp_core::Session`]; the curve mechanisms release an [`fdp_functional::Curve`] (those in a
//! Mercer basis through [`BasisOutput`]). Records are clipped per record in the norm each
//! sensitivity uses ([`ClipNorm`], with a [`ClippingBound`] fixed before the data are seen).
//!
//! - [`mechanism`]: [`CurveMechanism`], the noise-free estimate of a curve mechanism's summary;
//! - [`mean`]: private mean curves — ICLP-RKHS, ICLP-l1, IID Laplace and the Gaussian process
//!   ([`BasisMean`]) and the Bernstein mechanism ([`BernsteinMean`]), behind [`MeanMechanism`];
//! - [`covariance`]: the private covariance operator of curves in a Mercer basis (Laplace or
//!   Gaussian, [`PrivateCovariance`]) and functional PCA by post-processing ([`Covariance::fpca`]);
//! - [`density`]: private density estimates — the ICLP KDE (Theorem 14), Hall's GP KDE, IID
//!   Laplace and Bernstein baselines, in 1-D and on 2-D tensor grids;
//! - [`frame`]: the public frame — ceilings in each clipping norm from a public range of values;
//! - [`erm`]: kernel ridge and logistic regression in the RKHS of `C^η` (Theorem 16), released
//!   through the ICLP or the Gaussian process;
//! - [`sparse`]: means of irregular and sparse curves — each record's inverse-probability-weighted
//!   pseudo-curve released by any mean mechanism ([`SparseMean`], [`SparseFrame`]);
//! - [`sparse_covariance`]: the covariance operator and FPCA of sparse curves — each record's own
//!   kernel-ridge fit onto the basis, then the tuned covariance's stages ([`SparseCovariance`]);
//! - [`tuned`]: **private tuning end to end** — a private clipping bound, ψ/M/degree chosen under
//!   DP or by post-processing, one total ε ([`TunedMean`], the default of [`MeanCurve`]): a
//!   [`fdp_core::Sequential`] composition of its bound, pilot and release stages, one file each;
//! - [`tuned_covariance`]: the covariance with its private bound as the first stage of one
//!   mechanism ([`TunedCovariance`]);
//! - [`tuning`]: plug-in tuning from public quantities (Theorem 13) and private cross-validation.

pub mod covariance;
pub mod density;
pub mod erm;
mod error;
pub mod frame;
pub mod mean;
pub mod mechanism;
pub mod sparse;
pub mod sparse_covariance;
mod sums;
pub mod tuned;
pub mod tuned_covariance;
pub mod tuning;

pub use covariance::{Covariance, CovarianceBound, CovarianceNoise, Fpca, PrivateCovariance, Truncation};
pub use density::{
    BasisKde, BernsteinKde, GridPoints, KdeSensitivity, density_kernel, normalise_density, plug_in_bandwidth,
    snap_to_grid,
};
pub use erm::{ErmSetup, KernelErm, Labelled, Loss, misclassification, squared_risk};
pub use error::{EstimatorError, Result};
pub use fdp_core::{
    Accuracy, ClipNorm, ClippingBound, Mechanism, Regularisation, Release, ReleaseMetadata, Session, Tuning,
};
pub use fdp_functional::{BasisOutput, Curve, CurveReleaseExt};
pub use mean::{BasisMean, BernsteinMean, GaussianMean, LaplaceMean, MeanCurve, MeanKind, MeanMechanism, MeanSetup};
pub use mechanism::CurveMechanism;
pub use sparse::{SparseBinnedMean, SparseFrame, SparseMean};
pub use sparse_covariance::SparseCovariance;
pub use tuned::{BoundSearch, BudgetSplit, FamilyChoice, TunedChoice, TunedKind, TunedMean};
pub use tuned_covariance::TunedCovariance;
pub use tuning::{PcvChoice, PlugIn, private_cross_validation};
