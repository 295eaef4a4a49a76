//! # fdp: differentially private functional data
//!
//! The facade of the fdp workspace: it re-exports the crates, in the order the data flows
//! (kernel -> basis -> summary -> noise -> release -> report).
//!
//! - [`mercer`]: kernels, grids and Mercer eigenbases.

pub use fdp_mercer as mercer;

/// The names most programs need.
pub mod prelude {
    pub use fdp_mercer::{BasisOptions, Brownian, Grid, Kernel, MercerBasis, Solver, Stationary};
}
