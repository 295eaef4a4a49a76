//! # fdp-kme: differentially private kernel mean embeddings
//!
//! The kernel mean embedding `μ_X = (1/N) Σ_n k(x_n, ·)` of a dataset in `R^D` summarises its whole
//! distribution; releasing it privately lets anyone compute expectations of RKHS functions, or
//! sample a synthetic weighted dataset (Balog, Tolstikhin & Schölkopf 2018).
//!
//! - [`points`]: point sets and weighted point sets (non-finite records become a public default);
//! - [`embedding`]: RKHS inner products, distances and MMD between weighted point sets by blocked,
//!   parallel kernel sums;
//! - [`synthetic`]: Balog et al.'s Algorithm 1 — the private projection of `μ_X` onto the span of
//!   public synthetic points, released as a weighted synthetic dataset;
//! - [`exponential`]: the exponential-mechanism instance (Balog et al. §3, SmallDB with the RKHS
//!   distance) over a public family of synthetic datasets drawn from a pool, sampled exactly;
//! - [`features`]: random Fourier features with `||φ(x)||₂ = 1` exactly, Algorithm 2 (the Gaussian
//!   mechanism on the mean feature vector) and its reduced-set fit;
//! - [`sketch`]: private sketches (RFF, RACE, histograms) and M2M estimation with implicit weights.

pub mod embedding;
mod error;
pub mod exponential;
pub mod features;
pub mod points;
pub mod sketch;
pub mod synthetic;

pub use embedding::{kernel_sum, mmd, rkhs_distance_sq};
pub use error::{KmeError, Result};
pub use exponential::{CandidateFamily, ExponentialSynthetic};
pub use features::{FeatureMean, RandomFourierFeatures, ReducedSetOptions};
pub use points::{PointSet, WeightedPoints};
pub use sketch::{
    FeatureMap, M2mDesign, M2mEstimator, PrivateSketch, Query, implicit_logistic_regression, noise_aware_lambda,
    uniform_prior,
};
pub use synthetic::{SyntheticData, SyntheticSubspace};
