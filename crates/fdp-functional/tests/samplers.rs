//! Distribution, covariance, calibration and floating-point-attack tests of the noise over a Mercer
//! basis (moved from fdp-noise with the samplers).

use faer::Mat;
use fdp_functional::{CholeskyGpSampler, GaussianProcessSampler, IclpSampler};
use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary, kernel_matrix};
use fdp_noise::stats::{ks_p_value, ks_statistic, laplace_cdf, normal_cdf};
use fdp_noise::{Delta, Epsilon, LatticeLaplace, NoiseRng, Sensitivity};

/// Many thousands of draws for statistics: variable-time sampling for this whole test process (the
/// same draws as the padded samplers releases use; docs/DESIGN.md section 15.5).
fn simulation() {
    fdp_noise::timing::allow_variable_time_for_simulation();
}

fn basis(k: usize, cap: Option<usize>) -> MercerBasis {
    let grid = Grid::midpoint(0.0, 1.0, k).unwrap();
    let options = cap.map_or(BasisOptions::default(), |j| BasisOptions::default().max_components(j));
    MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid, options).unwrap()
}

/// KS p-values of every column of `draws` against `cdf(x, scale_k * factor)`.
fn column_p_values(draws: &Mat<f64>, scales: &[f64], factor: f64, cdf: fn(f64, f64) -> f64) -> Vec<f64> {
    (0..draws.ncols())
        .map(|k| {
            let mut col: Vec<f64> = draws.col(k).iter().copied().collect();
            let d = ks_statistic(&mut col, |x| cdf(x, scales[k] * factor));
            ks_p_value(d, col.len())
        })
        .collect()
}

/// Passes at the claimed law, Bonferroni over components, and the same test rejects x0.7 and x1.3.
fn check_laws(draws: &Mat<f64>, scales: &[f64], cdf: fn(f64, f64) -> f64) {
    let alpha = 0.01 / scales.len() as f64;
    let at_truth = column_p_values(draws, scales, 1.0, cdf);
    let worst = at_truth.iter().copied().fold(1.0, f64::min);
    assert!(worst > alpha, "true scale rejected: min p = {worst:e}");
    for factor in [0.7, 1.3] {
        let p = column_p_values(draws, scales, factor, cdf);
        assert!(p.iter().all(|&p| p < alpha), "scale x{factor} not rejected everywhere: {p:?}");
    }
}

#[test]
fn iclp_coefficients_are_laplace_with_the_claimed_scales() {
    simulation();
    let basis = basis(100, Some(20));
    let iclp = IclpSampler::calibrated(&basis, Sensitivity::new(0.5).unwrap(), Epsilon::new(2.0).unwrap()).unwrap();
    let draws = iclp.sample_coefficients(20_000, &mut NoiseRng::seeded(11));
    check_laws(&draws, &iclp.scales(), laplace_cdf);
}

#[test]
fn gp_coefficients_are_gaussian_with_the_claimed_scales() {
    simulation();
    let basis = basis(100, Some(20));
    let gp = GaussianProcessSampler::calibrated(
        &basis,
        Sensitivity::new(0.5).unwrap(),
        Epsilon::new(1.0).unwrap(),
        Delta::new(1e-5).unwrap(),
    )
    .unwrap();
    let draws = gp.sample_coefficients(20_000, &mut NoiseRng::seeded(12));
    check_laws(&draws, &gp.sigmas(), normal_cdf);
}

/// Every entry of the sample covariance of `paths` is within 5 Monte Carlo standard errors of `c`,
/// and the test has power: a process with variance off by 10% fails it.
fn check_covariance(paths: &Mat<f64>, c: &Mat<f64>) {
    let (n, k) = (paths.nrows(), paths.ncols());
    let mut worst_z = 0.0_f64;
    let mut worst_z_inflated = 0.0_f64;
    for i in 0..k {
        for j in i..k {
            let prods: Vec<f64> = (0..n).map(|r| paths[(r, i)] * paths[(r, j)]).collect();
            let mean = prods.iter().sum::<f64>() / n as f64;
            let var = prods.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            worst_z = worst_z.max((mean - c[(i, j)]).abs() / se);
            worst_z_inflated = worst_z_inflated.max((mean - 1.1 * c[(i, j)]).abs() / se);
        }
    }
    assert!(worst_z < 5.0, "sample covariance off by {worst_z:.2} standard errors");
    assert!(worst_z_inflated > 5.0, "the covariance check has no power ({worst_z_inflated:.2})");
}

#[test]
fn unit_variance_paths_have_the_kernel_as_covariance() {
    simulation();
    let basis = basis(40, None);
    assert_eq!(basis.len(), 40, "all components kept, so Σ λ_k φ_k φ_k^T = C on the grid");
    let grid = basis.grid();
    let c = kernel_matrix(basis.kernel().as_ref(), grid.points(), grid.points(), 1);
    let iclp = IclpSampler::unit_variance(&basis).unwrap();
    check_covariance(&iclp.sample_paths(20_000, &mut NoiseRng::seeded(21)), &c);
    let gp = GaussianProcessSampler::unit_variance(&basis).unwrap();
    check_covariance(&gp.sample_paths(20_000, &mut NoiseRng::seeded(22)), &c);
    let chol = CholeskyGpSampler::new(basis.kernel().as_ref(), grid, 1e-10).unwrap();
    check_covariance(&chol.sample_paths(20_000, &mut NoiseRng::seeded(23)), &c);
}

#[test]
fn iclp_calibration_bounds_the_loss_and_theorem_7_does_not() {
    simulation();
    let basis = basis(200, None);
    let (delta, eps) = (0.3, 0.5);
    let iclp = IclpSampler::calibrated(&basis, Sensitivity::new(delta).unwrap(), Epsilon::new(eps).unwrap()).unwrap();
    let unit = IclpSampler::unit_variance(&basis).unwrap();
    let lambda = basis.eigenvalues();
    for k in [0, basis.len() / 2, basis.len() - 1] {
        // The worst neighbour pair concentrates its whole ||.||_{1,C} budget on one component.
        let mut d = vec![0.0; basis.len()];
        d[k] = delta * lambda[k].sqrt();
        let loss = iclp.privacy_loss_bound(&d).unwrap();
        assert!(loss <= eps * (1.0 + 1e-12) && loss > eps * (1.0 - 1e-9), "component {k}: {loss}");
        // Theorem 7's f + (Δ/ε) Z with a unit-variance Z: scales Δ sqrt(λ_k/2)/ε, loss sqrt(2) ε.
        let theorem7 = delta / eps * unit.scales()[k];
        assert!((d[k] / theorem7 - std::f64::consts::SQRT_2 * eps).abs() < 1e-9);
    }
    assert_eq!(iclp.guarantee().unwrap().epsilon(), eps);
    assert!(unit.guarantee().is_none());
}

#[test]
fn seeded_streams_reproduce_and_off_grid_paths_agree_with_grid_paths() {
    simulation();
    let basis = basis(60, None);
    let iclp = IclpSampler::unit_variance(&basis).unwrap();
    let a = iclp.sample_paths(3, &mut NoiseRng::seeded(5));
    let b = iclp.sample_paths(3, &mut NoiseRng::seeded(5));
    assert_eq!(a, b);
    assert!(NoiseRng::seeded(5).provenance().is_seeded() && !NoiseRng::from_os().unwrap().provenance().is_seeded());
    // The same coefficients evaluated through the Nyström extension at the grid points.
    let at = iclp.sample_paths_at(3, basis.grid().points(), &mut NoiseRng::seeded(5)).unwrap();
    let lambda = basis.eigenvalues();
    let well_conditioned = lambda.iter().all(|l| *l > 1e-9 * lambda[0]);
    let tol = if well_conditioned { 1e-8 } else { 1e-4 };
    for i in 0..3 {
        for t in 0..basis.n_points() {
            assert!((a[(i, t)] - at[(i, t)]).abs() < tol, "path {i} point {t}");
        }
    }
    assert!(iclp.privatize(&[0.0; 3], &mut NoiseRng::seeded(1)).is_err());
}

/// Mironov's attack: an output `y` of the mechanism run on `x1` is a give-away when `y` cannot be
/// produced from `x0` at all. For the naive sampler `x + b·ln-Laplace(u)` with `u` on the 2^-53 grid,
/// `u ↦ fl(x + f(u))` is monotone, so reachability is decided exactly by bisection over the grid.
fn naive_laplace(x: f64, b: f64, u: u64) -> f64 {
    // u indexes the 2^53 uniform floats in [0, 1); the usual inverse-CDF Laplace of them.
    x + fdp_noise::stats::laplace_quantile((u as f64) / (1u64 << 53) as f64, b)
}

fn naive_reachable(x: f64, b: f64, y: f64) -> bool {
    // Two monotone branches: u < 2^52 (v < 0, output decreasing in |v|) and u >= 2^52.
    let half = 1u64 << 52;
    let search = |lo: u64, hi: u64, increasing: bool| {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let value = naive_laplace(x, b, mid);
            let before = if increasing { value < y } else { value > y };
            if before { lo = mid + 1 } else { hi = mid }
        }
        lo < (1u64 << 53) && naive_laplace(x, b, lo) == y
    };
    search(1, half, true) || search(half, 1u64 << 53, true)
}

#[test]
fn reachable_set_attack_breaks_naive_laplace_but_not_the_lattice_sampler() {
    simulation();
    use rand::Rng;
    let (x0, x1, b) = (0.0, 1.0, 1.0);
    let mut rng = NoiseRng::seeded(99);
    let trials = 2000;
    let distinguishing = (0..trials)
        .filter(|_| {
            let u = rng.next_u64() >> 11;
            let y = naive_laplace(x1, b, u);
            !naive_reachable(x0, b, y)
        })
        .count();
    eprintln!("naive outputs unreachable from the neighbour: {distinguishing}/{trials}");
    assert!(distinguishing > trials / 10, "the attack should expose the naive sampler ({distinguishing}/{trials})");

    let secure = LatticeLaplace::with_scale(b).unwrap();
    let exposed = (0..trials).filter(|_| !secure.is_reachable(secure.release(x1, &mut rng))).count();
    assert_eq!(exposed, 0, "every lattice output is reachable from every input");
    // And the support really is the input-independent lattice.
    let y = secure.release(x0, &mut rng);
    assert_eq!(y / secure.step(), (y / secure.step()).round());
}

#[test]
fn iid_laplace_has_one_scale_and_bounds_the_l1_loss() {
    simulation();
    let basis = basis(100, Some(12));
    let iid = IclpSampler::iid(&basis, Sensitivity::new(0.4).unwrap(), Epsilon::new(0.8).unwrap()).unwrap();
    let b = iid.scales();
    assert!(b.iter().all(|x| *x == b[0]) && (b[0] / 0.5 - 1.0).abs() < 1e-9);
    // Any split of an l1 difference of 0.4 over the components costs at most ε.
    let mut d = vec![0.0; 12];
    d[0] = 0.1;
    d[11] = -0.3;
    assert!(iid.privacy_loss_bound(&d).unwrap() <= 0.8 * (1.0 + 1e-12));
}

/// The Cholesky sampler's contract: path i is `L z_i` with `C + jitter I = L Lᵀ` and `z_i` the K
/// normals of the i-th child stream, in order; and its bits do not depend on the thread count
/// (the factorisation and the product split into a fixed number of pieces; faer's operators took
/// their split from the pool).
#[test]
fn cholesky_paths_are_the_factor_times_each_paths_normals_on_any_thread_count() {
    simulation();
    let (k, m, jitter) = (300, 7, 1e-8);
    let kernel = Stationary::matern52(0.2).unwrap();
    let grid = Grid::midpoint(0.0, 1.0, k).unwrap();
    let sample = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            CholeskyGpSampler::new(&kernel, &grid, jitter).unwrap().sample_paths(m, &mut NoiseRng::seeded(5))
        })
    };
    let paths = sample(1);
    for threads in [2, 3] {
        let other = sample(threads);
        assert!((0..m).all(|i| (0..k).all(|j| paths[(i, j)].to_bits() == other[(i, j)].to_bits())), "{threads}");
    }
    let mut c = fdp_mercer::grid_kernel_matrix(&kernel, &grid);
    for i in 0..k {
        c[(i, i)] += jitter;
    }
    let l = fdp_mercer::linalg::cholesky(c.as_ref()).unwrap();
    let normal = fdp_noise::LatticeGaussian::with_sigma(1.0).unwrap();
    for (i, mut stream) in NoiseRng::seeded(5).split(m).into_iter().enumerate() {
        let z: Vec<f64> = (0..k).map(|_| normal.sample(&mut stream)).collect();
        for j in 0..k {
            let want: f64 = (0..=j).map(|a| l[(j, a)] * z[a]).sum();
            assert!((paths[(i, j)] - want).abs() < 1e-12, "path {i} point {j}: {} against {want}", paths[(i, j)]);
        }
    }
}
