//! Benchmark of the Mercer basis: full eigendecomposition, the top-J randomized path, and a 2-D
//! tensor grid, each with the structure the solver exploited (docs/DESIGN.md section 2).
//!
//! `cargo run --release --example bench_basis` prints one record per case; compare ratios within a run.
//! Targets (2 cores): K = 2000 full basis <= 0.4 s, K = 10000 top-200 <= 2 s.
//!
//! `-- --decay K [SHAPE:RHO]` builds one basis on K midpoints of [0, 1] and fits its eigenvalue decay
//! (what plug-in and private tuning pay before any data is read), printing the fit: run it as a whole
//! process to time the build's fixed cost at that K.

use std::time::Instant;

use fdp::mercer::{BasisOptions, BasisOrigin, Grid, MercerBasis, Solver, Structure};
use fdp::prelude::*;

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

/// `dense`, `centrosymmetric`, `kronecker`, `randomized`, `centrosymmetric+randomized`, ...
fn solver_label(basis: &MercerBasis) -> String {
    match basis.origin() {
        BasisOrigin::Nystrom { solver, structure } => {
            let solver = match solver {
                Solver::Randomized { .. } => "randomized",
                _ => "dense",
            };
            match structure {
                Structure::Plain => solver.to_string(),
                Structure::Kronecker => "kronecker".to_string(),
                s => format!("{}+{solver}", format!("{s:?}").to_lowercase()),
            }
        }
        other => format!("{other:?}"),
    }
}

/// `--decay K [SHAPE:RHO]`: one basis and its decay fit.
fn decay_record(k: usize, kernel: Stationary) -> Result<(), Box<dyn std::error::Error>> {
    let (fit, s) = time(|| {
        MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, k)?, BasisOptions::default()).map(|b| (b.len(), b.decay()))
    });
    let (components, fit) = fit?;
    println!(
        "bench basis=decay kernel={kernel} K={k} components={components} exponent={:.6} constant={:.6e} fit_first={} fit_last={} build_and_fit_s={s:.5}",
        fit.exponent, fit.constant, fit.first, fit.last
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--decay") {
        let k = args.get(i + 1).ok_or("--decay needs K")?.parse()?;
        let kernel = args.get(i + 2).map_or(Ok(Stationary::matern32(0.1)?), |s| s.parse())?;
        return decay_record(k, kernel);
    }
    let kernel = Stationary::matern32(0.1)?;
    // Warm the thread pool so that the first record does not pay for it.
    MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 50)?, BasisOptions::default())?;
    let mut dense_2000 = None;
    for k in [500, 1000, 2000] {
        let grid = Grid::midpoint(0.0, 1.0, k)?;
        let (basis, s) = time(|| MercerBasis::build(kernel, grid.clone(), BasisOptions::default()));
        let basis = basis?;
        println!(
            "bench basis=full kernel=matern32 K={k} components={} solver={} build_s={s:.4}",
            basis.len(),
            solver_label(&basis)
        );
        if k == 2000 {
            // The same matrix without its structure, for the ratio.
            let plain = BasisOptions::default().solver(Solver::Dense).structure(Structure::Plain);
            let (dense, s) = time(|| MercerBasis::build(kernel, grid, plain));
            let dense = dense?;
            println!(
                "bench basis=full kernel=matern32 K={k} components={} solver={} build_s={s:.4}",
                dense.len(),
                solver_label(&dense)
            );
            dense_2000 = Some(dense);
        }
    }
    for k in [2000, 10000] {
        let grid = Grid::midpoint(0.0, 1.0, k)?;
        let (basis, s) = time(|| MercerBasis::build(kernel, grid, BasisOptions::top(200)));
        let basis = basis?;
        let mut record = format!(
            "bench basis=top_j kernel=matern32 K={k} J={} solver={} build_s={s:.4}",
            basis.len(),
            solver_label(&basis)
        );
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
    // 2-D: a 100 x 100 tensor grid; the Gaussian kernel is separable.
    let axis = Grid::midpoint(0.0, 1.0, 100)?;
    let grid = Grid::tensor(&axis, &axis)?;
    let (basis, s) = time(|| MercerBasis::build(Stationary::gaussian(0.1)?, grid, BasisOptions::default()));
    let basis = basis?;
    println!(
        "bench basis=full_2d kernel=gaussian K=100x100 components={} solver={} build_s={s:.4}",
        basis.len(),
        solver_label(&basis)
    );
    Ok(())
}
