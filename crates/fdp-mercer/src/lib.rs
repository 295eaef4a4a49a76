//! # fdp-mercer: kernels, grids and Mercer eigenbases
//!
//! The geometry every other fdp crate works in (docs/DESIGN.md section 2):
//!
//! - [`grid`]: points on an interval or a box with quadrature weights, `<f, g> = Σ w_i f(t_i) g(t_i)`;
//! - [`kernel`]: covariance kernels (exponential, Matérn 3/2 and 5/2, Gaussian, Brownian, products of
//!   1-D kernels) and the [`Kernel`] trait for your own;
//! - [`basis`]: the [`MercerBasis`] of a kernel on a grid (weighted Nyström, dense or top-J, exploiting
//!   the [`Structure`] of the matrix: centrosymmetric halves, Kronecker products of separable
//!   kernels, FFT products of Toeplitz matrices on uniform grids), with projection, synthesis,
//!   off-grid evaluation, operator powers `C^η`, the norms `||.||_C` and `||.||_{1,C}`, traces and the
//!   eigenvalue decay fit used by plug-in tuning;
//! - [`linalg`]: dense eigen/QR/Cholesky/products split into a fixed number of pieces, so results are
//!   bit-identical on any thread count;
//! - [`diagnostics`]: orthonormality and closed-form accuracy checks of a basis.
//!
//! It needs nothing of differential privacy: it depends on `fdp-core` only so that its
//! [`MercerError`] converts into the release path's error (`fdp_core::Error::Layer`, layer `basis`)
//! and its parameter errors share [`fdp_core::ParamValue`].

pub mod basis;
pub mod diagnostics;
mod error;
pub mod grid;
pub mod kernel;
pub mod linalg;
mod toeplitz;

pub use basis::{
    BasisOptions, BasisOrigin, BasisSummary, DecayFit, DecaySource, MercerBasis, Solver, Structure, grid_kernel_matrix,
    kernel_matrix,
};
pub use error::{MercerError, Result};
pub use grid::{Grid, GridLayout};
pub use kernel::{Brownian, Kernel, KernelSpec, Product, Stationary, StationaryShape};
