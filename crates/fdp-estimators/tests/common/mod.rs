//! Shared fixtures: each test binary uses a subset of them.
#![allow(dead_code)]

use fdp_data::CurveSet;
use fdp_estimators::{ClipNorm, ClippingBound, MeanSetup};
use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};

pub fn basis(k: usize, rho: f64) -> MercerBasis {
    let grid = Grid::midpoint(0.0, 1.0, k).unwrap();
    MercerBasis::build(Stationary::matern32(rho).unwrap(), grid, BasisOptions::default()).unwrap()
}

/// n - 1 zero curves and one `record` (a curve on the grid).
pub fn with_record(basis: &MercerBasis, n: usize, record: &[f64]) -> CurveSet<'static> {
    let k = basis.n_points();
    let mut values = vec![0.0; n * k];
    values[(n - 1) * k..].copy_from_slice(record);
    CurveSet::from_flat(basis.grid().clone(), values, None).unwrap().0
}

/// `scale · Σ_k c_k φ_k` on the grid.
pub fn curve_from(basis: &MercerBasis, coefficients: &[f64], scale: f64) -> Vec<f64> {
    basis.synthesize(&coefficients.iter().map(|c| c * scale).collect::<Vec<_>>()).unwrap()
}

/// The unit vector e_k of length J.
pub fn unit(j: usize, k: usize) -> Vec<f64> {
    let mut e = vec![0.0; j];
    e[k] = 1.0;
    e
}

/// The same setup with its τ read in `norm` (these tests use one numeric τ in every mechanism's norm).
pub fn in_norm(setup: &MeanSetup, norm: ClipNorm) -> MeanSetup {
    setup.clone().with_bound(ClippingBound::new(setup.bound().value(), norm).unwrap()).unwrap()
}
