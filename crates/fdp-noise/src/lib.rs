//! # fdp-noise: privacy parameters, secure samplers, ICLP and Gaussian-process noise
//!
//! Everything fdp releases gets its randomness here (docs/DESIGN.md sections 3 and 5).
//!
//! - [`privacy`]: checked ε, δ and sensitivities, sequential composition, the neighbour relation;
//! - [`rng`]: the randomness policy — OS-seeded CSPRNG by default, fixed seeds opt-in and recorded;
//! - [`discrete`]: exact discrete Laplace and Gaussian samplers on Z (Canonne, Kamath & Steinke);
//! - [`secure`]: release noise on power-of-two lattices, immune to floating-point attacks;
//! - [`sampler`]: the ICLP and Gaussian-process samplers over a Mercer basis, unit-variance or calibrated;
//! - [`cholesky`]: Gaussian-process paths by Cholesky, for comparison;
//! - [`calibration`]: the analytic Gaussian multiplier and the classic constants;
//! - [`timing`]: fixed-work sampling (the default) or variable time, an opt-in for simulations;
//! - [`stats`]: Kolmogorov-Smirnov tests and CDFs for validating samplers;
//! - [`exponential`]: the exponential mechanism over a finite candidate set, sampled exactly on
//!   lattice scores;
//! - [`exact_loss`]: the exact privacy loss of two inputs from lattice indices and scales;
//! - [`vector`]: the Gaussian (l2) and Laplace (l1) mechanisms on plain vectors.

pub mod calibration;
pub mod cholesky;
pub mod discrete;
mod error;
pub mod exact_loss;
pub mod exponential;
pub mod privacy;
pub mod rng;
pub mod sampler;
pub mod secure;
pub mod stats;
pub mod timing;
pub mod vector;

pub use cholesky::CholeskyGpSampler;
pub use error::{NoiseError, Result};
pub use privacy::{Delta, Epsilon, NeighbourRelation, PrivacyBudget, PrivacyGuarantee, Sensitivity};
pub use rng::{NoiseRng, RngProvenance};
pub use sampler::{BasisSampler, Calibration, ComponentNoise, GaussianProcessSampler, IclpSampler};
pub use secure::{LatticeGaussian, LatticeLaplace};
