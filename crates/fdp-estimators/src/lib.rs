//! # fdp-estimators: private functional summaries
//!
//! - [`mechanism`]: the [`Mechanism`] trait (summarise, then privatise) and [`BasisOutput`];
//! - [`clip`]: per-record clipping in the norm each sensitivity uses;
//! - [`mean`]: private mean curves — ICLP-RKHS, ICLP-l1, IID Laplace and the Gaussian process
//!   ([`BasisMean`]) and the Bernstein mechanism ([`BernsteinMean`]), behind [`MeanMechanism`];
//! - [`density`]: private density estimates — the ICLP KDE (Theorem 14), Hall's GP KDE, IID
//!   Laplace and Bernstein baselines, in 1-D and on 2-D tensor grids;
//! - [`erm`]: kernel ridge and logistic regression in the RKHS of `C^η` (Theorem 16), released
//!   through the ICLP or the Gaussian process;
//! - [`tuning`]: plug-in tuning from public quantities (Theorem 13) and private cross-validation;
//! - [`release`]: [`Release`], a private curve with off-grid evaluation and JSON metadata.

pub mod clip;
pub mod density;
pub mod erm;
mod error;
pub mod mean;
pub mod mechanism;
pub mod release;
pub mod tuning;

pub use clip::ClipNorm;
pub use density::{
    BasisKde, BernsteinKde, GridPoints, KdeSensitivity, density_kernel, normalise_density, plug_in_bandwidth,
    snap_to_grid,
};
pub use erm::{ErmSetup, KernelErm, Labelled, Loss, misclassification, squared_risk};
pub use error::{EstimatorError, Result};
pub use mean::{BasisMean, BernsteinMean, GaussianMean, LaplaceMean, MeanMechanism, MeanSetup};
pub use mechanism::{BasisOutput, Mechanism};
pub use release::{Release, ReleaseMetadata};
pub use tuning::{PcvChoice, PlugIn, private_cross_validation};
