//! # fdp-functional: the functional layer of the release path
//!
//! What makes a release a *function*: the curve it is, how it is represented, and the noise
//! processes over a Mercer basis that privatise its coefficients. It builds on the release path
//! (`fdp-core`: mechanisms, releases, sessions; `fdp-noise`: budgets and secure samplers), which
//! knows no curve, basis or kernel, and on the basis layer (`fdp-mercer`). The estimators and the
//! kernel-mean-embedding mechanisms build on it.
//!
//! - [`curve`]: [`Curve`] — a released function on a grid (values, evaluation anywhere, the
//!   pointwise noise band, the projection onto a public range) — its [`Representation`] (Mercer
//!   coefficients or a Bernstein lattice), and [`CurveReleaseExt`], the curve accessors of a
//!   `Release<Curve>`;
//! - [`sampler`]: the ICLP ([`IclpSampler`]) and Gaussian-process ([`GaussianProcessSampler`])
//!   noise over a Mercer basis, unit-variance or calibrated ([`BasisSampler`]);
//! - [`cholesky`]: Gaussian-process paths by Cholesky ([`CholeskyGpSampler`]), for comparison;
//! - [`output`]: [`BasisOutput`], the release half of every mechanism that adds noise to basis
//!   coefficients, and [`pointwise_noise_sd`], the band it states;
//! - [`numerics`]: tensor Bernstein polynomials, the Bernstein domain check, linear interpolation;
//! - [`describe`]: the basis and kernel recorded in a release's metadata, and [`MetadataExt`] to
//!   read them back typed.

pub mod cholesky;
pub mod curve;
pub mod describe;
pub mod numerics;
pub mod output;
pub mod sampler;

pub use cholesky::CholeskyGpSampler;
pub use curve::{Curve, CurveReleaseExt, Representation};
pub use describe::MetadataExt;
pub use output::{BasisOutput, pointwise_noise_sd};
pub use sampler::{BasisSampler, GaussianProcessSampler, IclpSampler};
