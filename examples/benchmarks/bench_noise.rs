//! Throughput of the release samplers (exact lattice Laplace and Gaussian) against a naive
//! floating-point Laplace, in noisy coefficients per second. Compare ratios within one run.
//!
//! `cargo run --release --example bench_noise`

use std::time::Instant;

use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::{Delta, Epsilon, GaussianProcessSampler, IclpSampler, LatticeLaplace, NoiseRng, Sensitivity};
use fdp::prelude::*;
use rand::RngExt;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A benchmark: variable-time sampling (the same draws; releases are padded by default and cost
    // 10-60 us more per exact draw, docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let grid = Grid::midpoint(0.0, 1.0, 200)?;
    let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid, BasisOptions::default().max_components(100))?;
    let mut rng = NoiseRng::seeded(1);
    let rows = 20_000;
    let n = (rows * basis.len()) as f64;

    let iclp = IclpSampler::calibrated(&basis, Sensitivity::new(0.01)?, Epsilon::new(1.0)?)?;
    let start = Instant::now();
    let draws = iclp.sample_coefficients(rows, &mut rng);
    let s = start.elapsed().as_secs_f64();
    println!(
        "bench noise=iclp_lattice_laplace threads=all coefficients={n} per_s={:.3e} check={:.3}",
        n / s,
        draws[(0, 0)].signum()
    );

    let single = LatticeLaplace::with_scale(1.0)?;
    let count = 1_000_000;
    let start = Instant::now();
    let mut acc = 0.0;
    for _ in 0..count {
        acc += single.sample(&mut rng);
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "bench noise=lattice_laplace threads=1 coefficients={count} per_s={:.3e} mean={:.3}",
        count as f64 / s,
        acc / count as f64
    );

    let gp =
        GaussianProcessSampler::calibrated(&basis, Sensitivity::new(0.01)?, Epsilon::new(1.0)?, Delta::new(1e-5)?)?;
    let start = Instant::now();
    let _ = gp.sample_coefficients(rows, &mut rng);
    let s = start.elapsed().as_secs_f64();
    println!("bench noise=gp_lattice_gaussian threads=all coefficients={n} per_s={:.3e}", n / s);

    // The insecure pattern, for the ratio only: x + b·inverse-CDF Laplace of a float uniform.
    let start = Instant::now();
    let mut acc = 0.0;
    for _ in 0..count {
        let u: f64 = rng.random::<f64>() - 0.5;
        acc += -u.signum() * (1.0 - 2.0 * u.abs()).ln();
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "bench noise=naive_float_laplace threads=1 coefficients={count} per_s={:.3e} mean={:.3}",
        count as f64 / s,
        acc / count as f64
    );
    Ok(())
}
