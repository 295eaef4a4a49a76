//! Throughput of the release samplers (exact lattice Laplace and Gaussian) against a naive
//! floating-point Laplace, in noisy coefficients per second. Compare ratios within one run.
//!
//! `cargo run --release --example bench_noise`

use std::time::Instant;

use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::{
    Delta, Epsilon, GaussianProcessSampler, IclpSampler, LatticeGaussian, LatticeLaplace, NoiseRng, Sensitivity,
};
use fdp::prelude::*;
use rand::RngExt;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A benchmark: variable-time sampling (the same draws; releases are padded by default, which
    // costs the same except a fixed-work division at non-power-of-two Laplace scales, DESIGN 15.5).
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
    one_thread("lattice_laplace", count, || (1, single.sample(&mut rng)));

    // The exact lattice Gaussian on one thread, as the GP paths draw it (σ = 1 on its default
    // lattice: 2^20 steps per standard deviation), one call a draw and in batches of 500 (one
    // path's normals at K = 500; the same draws).
    let normal = LatticeGaussian::with_sigma(1.0)?;
    one_thread("lattice_gaussian", count, || (1, normal.sample(&mut rng)));
    let mut batch = vec![0.0; 500];
    one_thread("lattice_gaussian_batch", count, || {
        normal.fill_samples(&mut rng, &mut batch);
        (batch.len(), batch.iter().sum())
    });

    let gp =
        GaussianProcessSampler::calibrated(&basis, Sensitivity::new(0.01)?, Epsilon::new(1.0)?, Delta::new(1e-5)?)?;
    let start = Instant::now();
    let _ = gp.sample_coefficients(rows, &mut rng);
    let s = start.elapsed().as_secs_f64();
    println!("bench noise=gp_lattice_gaussian threads=all coefficients={n} per_s={:.3e}", n / s);

    // The insecure pattern, for the ratio only: x + b·inverse-CDF Laplace of a float uniform.
    one_thread("naive_float_laplace", count, || {
        let u: f64 = rng.random::<f64>() - 0.5;
        (1, -u.signum() * (1.0 - 2.0 * u.abs()).ln())
    });
    Ok(())
}

/// Times `draw` (which makes some draws and returns how many and their sum) on this thread until
/// `count` draws are made, and prints the record.
fn one_thread(name: &str, count: usize, mut draw: impl FnMut() -> (usize, f64)) {
    let start = Instant::now();
    let (mut made, mut sum) = (0, 0.0);
    while made < count {
        let (n, s) = draw();
        made += n;
        sum += s;
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "bench noise={name} threads=1 coefficients={made} per_s={:.3e} ns_per_draw={:.1} mean={:.3}",
        made as f64 / s,
        s / made as f64 * 1e9,
        sum / made as f64
    );
}
