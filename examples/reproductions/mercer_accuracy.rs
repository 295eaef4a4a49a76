//! Accuracy of the Mercer bases against closed forms, one DESIGN-8 record per (kernel, K).
//!
//! `cargo run --release --example mercer_accuracy`

use std::time::Instant;

use fdp::mercer::diagnostics::{brownian_errors, orthonormality_error};
use fdp::mercer::{BasisOptions, Brownian, Grid, MercerBasis};
use fdp::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for k in [100, 1000] {
        let grid = Grid::midpoint(0.0, 1.0, k)?;
        let start = Instant::now();
        let basis = MercerBasis::build(Brownian::new(), grid.clone(), BasisOptions::default())?;
        let build_s = start.elapsed().as_secs_f64();
        let err = brownian_errors(&basis, 1.0, 1.0, 10);
        println!(
            "basis kernel=brownian K={k} components={} eig_rel_err={:.3e} fn_l2_err={:.3e} ortho_err={:.3e} build_s={build_s:.4}",
            basis.len(),
            err.eigenvalue_rel,
            err.eigenfunction_l2,
            orthonormality_error(&basis)
        );
        for (name, kernel) in [
            ("exponential", Stationary::exponential(0.1)?),
            ("matern32", Stationary::matern32(0.1)?),
            ("matern52", Stationary::matern52(0.1)?),
            ("gaussian", Stationary::gaussian(0.1)?),
        ] {
            let start = Instant::now();
            let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
            let build_s = start.elapsed().as_secs_f64();
            let fit = basis.decay();
            println!(
                "basis kernel={name} K={k} rho=0.1 components={} trace={:.6} decay_exponent={:.3} fit_first={} fit_last={} ortho_err={:.3e} build_s={build_s:.4}",
                basis.len(),
                basis.trace_power(1.0),
                fit.exponent,
                fit.first,
                fit.last,
                orthonormality_error(&basis)
            );
        }
    }
    Ok(())
}
