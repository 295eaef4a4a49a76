//! Throughput of a private mean release: n = 10^6 curves x K = 100 grid points, ICLP-RKHS with the
//! plug-in rule and the privately tuned pipeline (`MeanCurve::build`, what the Python package's
//! default runs) from an in-memory curve set. Prints the wall time and the peak resident memory of
//! each release relative to the data (Linux: the high-water mark is reset just before each release).
//!
//! `cargo run --release --example bench_mean [-- --n N]`

use fdp::release::Charge;
use std::time::Instant;

use fdp::data::{Scenario, simulate};
use fdp::estimators::{BasisMean, MeanSetup, Mechanism, PlugIn};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;

/// A `kB` field of /proc/self/status, in bytes.
fn status_bytes(field: &str) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse::<f64>().ok().map(|kb| kb * 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A benchmark: variable-time sampling (the same draws; releases are padded by default and cost
    // 10-60 us more per exact draw, docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let args: Vec<String> = std::env::args().collect();
    let n: usize =
        args.iter().position(|a| a == "--n").and_then(|i| args.get(i + 1)).map_or(Ok(1_000_000), |s| s.parse())?;
    let grid = Grid::midpoint(0.0, 1.0, 100)?;
    let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid, BasisOptions::default())?;
    let start = Instant::now();
    let sim = simulate(Scenario::S1, &basis, n, 1)?;
    let simulate_s = start.elapsed().as_secs_f64();
    let data_bytes = (sim.curves.values().len() * 8) as f64;

    let tau = Scenario::S1.design_bounds(&basis)?.coefficient_l1;
    let setup = MeanSetup::new(n, Epsilon::new(1.0)?, ClippingBound::coefficient_l1(tau)?)?;
    let plug = PlugIn::new(&basis, &setup)?;
    let mechanism = BasisMean::iclp_rkhs(&basis, setup, plug.rkhs)?;
    let mut rng = NoiseRng::from_os()?;

    // Reset the resident-memory high-water mark so the peak below is the release's own.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let start = Instant::now();
    let release = mechanism.release(&sim.curves, &mut rng, Charge::unaccounted())?;
    let release_s = start.elapsed().as_secs_f64();
    let peak = status_bytes("VmHWM:");
    let ratio = peak.map_or(f64::NAN, |p| p / data_bytes);
    println!(
        "bench mean=iclp_rkhs n={n} K={} J={} release_s={release_s:.3} simulate_s={simulate_s:.3} data_mb={:.0} peak_rss_mb={:.0} peak_over_data={ratio:.2} hwm_reset={reset} curve_norm={:.3}",
        basis.n_points(),
        basis.len(),
        data_bytes / 1e6,
        peak.unwrap_or(f64::NAN) / 1e6,
        release.curve().iter().map(|v| v * v).sum::<f64>().sqrt()
    );

    // The privately tuned pipeline (basis build included, as a Python call builds it too).
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let start = Instant::now();
    let tuned = MeanCurve::iclp_rkhs(Stationary::matern32(0.1)?, ClippingBound::coefficient_l1(tau)?)
        .build(&sim.curves, Epsilon::new(1.0)?)?;
    let release = tuned.release(&sim.curves, &mut rng, Charge::unaccounted())?;
    let release_s = start.elapsed().as_secs_f64();
    let peak = status_bytes("VmHWM:");
    println!(
        "bench mean=tuned_iclp_rkhs n={n} K={} release_s={release_s:.3} peak_over_data={:.2} hwm_reset={reset} curve_norm={:.3}",
        basis.n_points(),
        peak.map_or(f64::NAN, |p| p / data_bytes),
        release.curve().iter().map(|v| v * v).sum::<f64>().sqrt()
    );
    Ok(())
}
