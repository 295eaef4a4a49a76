//! The pointwise noise band a release states (`Curve::noise_sd`) is the noise's actual pointwise
//! standard deviation: checked against 4,000 seeded releases of a plug-in ICLP-RKHS and a Bernstein mean.

use fdp::data::{Scenario, simulate};
use fdp::front::{MeanMethod, MeanRequest, TuningMode};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::release::Mechanism;
use fdp::release::{Charge, Curve, Release};

#[test]
fn the_stated_noise_sd_is_the_empirical_pointwise_sd() {
    let (first, grid) =
        stated_sd_is_empirical(MeanMethod::IclpRkhs, ClippingBound::coefficient_l1(5.0).unwrap(), None, 30, 11);
    // The band is the curve ∓ 2 sd.
    let stated = first.output().noise_sd().unwrap();
    let (lower, upper) = first.output().band(2.0).unwrap().unwrap();
    for i in 0..grid.len() {
        assert!((upper[i] - lower[i] - 4.0 * stated[i]).abs() < 1e-12 * (1.0 + stated[i]));
    }
    // A band's width in sds is finite and >= 0 (a negative one put the lower end above the upper).
    for z in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(first.output().band(z).is_err(), "z = {z}");
    }
}

/// The privately tuned default states the band of its shrunk noise: `Σ_i w_i sd(t_i)² = Σ_k s_k² v`
/// (the eigenfunctions are orthonormal in the grid's weights), at most the preview's upper bound
/// `K v` at the ceiling, since `s_k ≤ 1` and the private bound is at most the ceiling.
#[test]
fn the_tuned_default_states_the_band_of_its_shrunk_noise() {
    let grid = Grid::midpoint(0.0, 1.0, 40).unwrap();
    let kernel = Stationary::matern32(0.1).unwrap();
    let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default()).unwrap();
    let curves = simulate(Scenario::S2, &basis, 300, 5).unwrap().curves;
    let request = MeanRequest::new(
        MeanMethod::IclpRkhs,
        kernel,
        ClippingBound::coefficient_l1(20.0).unwrap(),
        Epsilon::new(1.0).unwrap(),
    );
    let mechanism = request.build(&grid, curves.n()).unwrap();
    let preview = mechanism.accuracy();
    assert!(preview.upper_bound);
    for seed in 0..20 {
        let release =
            Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(seed).release(&mechanism, &curves).unwrap();
        let sd = release.output().noise_sd().expect("the tuned default states its band");
        let integrated: f64 = sd.iter().zip(grid.weights()).map(|(s, w)| w * s * s).sum();
        assert!(sd.iter().all(|s| s.is_finite() && *s >= 0.0));
        assert!(integrated <= preview.expected_sq_error * (1.0 + 1e-9), "{integrated} > {}", preview.expected_sq_error);
    }
}

/// The Bernstein mean states its band (independent Laplace noise on the lattice values, so
/// `sd(t)² = 2 b² Σ_j B_j(t)²`): the stated sd against the empirical sd of 4,000 seeded releases.
#[test]
fn the_bernstein_mean_states_its_noise_sd() {
    stated_sd_is_empirical(MeanMethod::Bernstein, ClippingBound::sup(5.0).unwrap(), Some(6), 25, 12);
}

/// A plug-in `method` mean of S-2's records on `points` grid points: the noise sd stated by every
/// one of 4,000 seeded releases (the same) against the empirical pointwise sd of their curves. The
/// sd of a sample sd of N draws of kurtosis <= 6 is about sd ((6 - 1)/(4N))^{1/2} = 1.8%: 9% is five
/// of those, while a band off by a factor sqrt(2) or without φ_k(t)² would miss. Returns the first
/// release and the grid.
fn stated_sd_is_empirical(
    method: MeanMethod,
    bound: ClippingBound,
    degree: Option<usize>,
    points: usize,
    seed: u64,
) -> (Release<Curve>, Grid) {
    fdp::noise::timing::allow_variable_time_for_simulation();
    let grid = Grid::midpoint(0.0, 1.0, points).unwrap();
    let kernel = Stationary::matern32(0.1).unwrap();
    let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default()).unwrap();
    let curves = simulate(Scenario::S2, &basis, 200, 4).unwrap().curves;
    let request = MeanRequest {
        tuning: TuningMode::PlugIn,
        degree,
        ..MeanRequest::new(method, kernel, bound, Epsilon::new(1.0).unwrap())
    };
    let mechanism = request.build(&grid, curves.n()).unwrap();
    let summary = mechanism.summarize(&curves).unwrap();
    let mut streams = NoiseRng::seeded(seed).split(4000);
    let first = mechanism.privatize(&summary, &mut streams[0], Charge::unaccounted()).unwrap();
    let stated = first.output().noise_sd().expect("the release states its noise sd").to_vec();
    let (mut sum, mut sum_sq) = (vec![0.0; points], vec![0.0; points]);
    for rng in streams.iter_mut() {
        let release = mechanism.privatize(&summary, rng, Charge::unaccounted()).unwrap();
        assert_eq!(release.output().noise_sd().unwrap(), stated.as_slice());
        for (i, v) in release.curve().iter().enumerate() {
            sum[i] += v;
            sum_sq[i] += v * v;
        }
    }
    let n = streams.len() as f64;
    for i in 0..points {
        let empirical = ((sum_sq[i] - sum[i] * sum[i] / n) / (n - 1.0)).sqrt();
        assert!(
            (empirical / stated[i] - 1.0).abs() < 0.09,
            "{method:?} t_{i}: empirical {empirical}, stated {}",
            stated[i]
        );
    }
    (first, grid)
}
