//! # fdp-noise: privacy parameters and secure samplers
//!
//! Everything fdp releases gets its randomness here (docs/DESIGN.md sections 3 and 5). This crate
//! is the bottom of the release path: it knows vectors, lattices and budgets, never a kernel, a
//! basis or a curve (the ICLP and Gaussian-process samplers over a Mercer basis are in
//! `fdp-functional`).
//!
//! - [`privacy`]: checked ε, δ and sensitivities, sequential composition, the neighbour relation;
//! - [`rng`]: the randomness policy — OS-seeded CSPRNG by default, fixed seeds opt-in and recorded;
//! - [`discrete`]: exact discrete Laplace and Gaussian samplers on Z (Canonne, Kamath & Steinke);
//! - [`secure`]: release noise on power-of-two lattices, immune to floating-point attacks, and
//!   [`ComponentNoise`], one released component's noise (what the samplers above add to a
//!   coefficient);
//! - [`calibration`]: the analytic Gaussian multiplier, the classic constants, and
//!   [`Calibration`], how a release's noise scales were set (recorded with it);
//! - [`timing`]: fixed-work sampling (the default) or variable time, an opt-in for simulations;
//! - [`stats`]: Kolmogorov-Smirnov tests and CDFs for validating samplers;
//! - [`exponential`]: the exponential mechanism over a finite candidate set, sampled exactly on
//!   lattice scores;
//! - [`exact_loss`]: the exact privacy loss of two inputs from lattice indices and scales;
//! - [`vector`]: the Gaussian (l2) and Laplace (l1) mechanisms on plain vectors.

pub mod calibration;
pub mod discrete;
mod error;
pub mod exact_loss;
mod exp_neg;
pub mod exponential;
pub mod privacy;
pub mod rng;
pub mod secure;
pub mod stats;
pub mod timing;
pub mod vector;

pub use calibration::Calibration;
pub use error::{NoiseError, Result, Shown, check_len};
pub use privacy::{Delta, Epsilon, NeighbourRelation, PrivacyBudget, PrivacyGuarantee, Sensitivity};
pub use rng::{NoiseRng, RngProvenance};
pub use secure::{ComponentNoise, LatticeGaussian, LatticeLaplace};
