//! Benchmark of the Mercer basis: full (dense) eigendecomposition and the top-J randomized path.
//!
//! `cargo run --release --example bench_basis` prints one record per case; compare ratios within a run.
//! Targets (2 cores): K = 1000 full basis <= 0.2 s, K = 10000 top-200 <= 10 s.

use std::time::Instant;

use fdp::mercer::{BasisOptions, Grid, MercerBasis, Solver};
use fdp::prelude::*;

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kernel = Stationary::matern32(0.1)?;
    // Warm the thread pool so that the first record does not pay for it.
    MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 50)?, BasisOptions::default())?;
    let mut dense_2000 = None;
    for k in [500, 1000, 2000] {
        let grid = Grid::midpoint(0.0, 1.0, k)?;
        let (basis, s) = time(|| MercerBasis::build(kernel, grid, BasisOptions::default().solver(Solver::Dense)));
        let basis = basis?;
        println!("bench basis=full kernel=matern32 K={k} components={} build_s={s:.4}", basis.len());
        if k == 2000 {
            dense_2000 = Some(basis);
        }
    }
    for k in [2000, 10000] {
        let grid = Grid::midpoint(0.0, 1.0, k)?;
        let (basis, s) = time(|| MercerBasis::build(kernel, grid, BasisOptions::top(200)));
        let basis = basis?;
        let mut record = format!("bench basis=top_j kernel=matern32 K={k} J={} build_s={s:.4}", basis.len());
        if let (Some(dense), 2000) = (&dense_2000, k) {
            let rel = |range: std::ops::Range<usize>| {
                range
                    .map(|j| (basis.eigenvalues()[j] - dense.eigenvalues()[j]).abs() / dense.eigenvalues()[j])
                    .fold(0.0, f64::max)
            };
            record += &format!(" eig_rel_err_first100={:.2e} eig_rel_err_all={:.2e}", rel(0..100), rel(0..200));
        }
        println!("{record}");
    }
    Ok(())
}
