//! Closed-form and invariant checks of the Mercer bases (issue "Foundation", docs/DESIGN.md sections 2 and 7).

use faer::Mat;
use fdp_mercer::diagnostics::{brownian_errors, orthonormality_error};
use fdp_mercer::{BasisOptions, Brownian, Grid, Kernel, KernelSpec, MercerBasis, MercerError, Solver, Stationary};

/// Deterministic coefficients in [-1, 1] without pulling an RNG crate into the geometry tests.
fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[test]
fn brownian_nystrom_matches_closed_form_at_k1000() {
    let grid = Grid::midpoint(0.0, 1.0, 1000).unwrap();
    let basis = MercerBasis::build(Brownian::new(), grid, BasisOptions::default()).unwrap();
    let err = brownian_errors(&basis, 1.0, 1.0, 10);
    assert!(err.eigenvalue_rel <= 1e-4, "eigenvalue error {:e}", err.eigenvalue_rel);
    assert!(err.eigenfunction_l2 <= 1e-6, "eigenfunction error {:e}", err.eigenfunction_l2);
    assert!(orthonormality_error(&basis) <= 1e-10);
    // The sign rule makes the first significant value positive, as sin((j - 1/2) π t) is near 0.
    assert!(basis.eigenfunctions()[(0, 3)] > 0.0);
}

#[test]
fn brownian_closed_form_basis_is_orthonormal_and_extends_exactly() {
    let kernel = Brownian::with_variance(2.0).unwrap();
    let grid = Grid::midpoint(0.0, 3.0, 300).unwrap();
    let basis = MercerBasis::brownian(kernel, grid.clone(), 40).unwrap();
    assert!(orthonormality_error(&basis) < 1e-12);
    let lambda1 = 2.0 * 9.0 / (0.25 * std::f64::consts::PI.powi(2));
    assert!((basis.eigenvalues()[0] - lambda1).abs() < 1e-12 * lambda1);
    let at = basis.eigenfunctions_at(&[0.1234, 2.9]).unwrap();
    let want = (2.0f64 / 3.0).sqrt() * (4.5 * std::f64::consts::PI * 2.9 / 3.0).sin();
    assert!((at[(1, 4)] - want).abs() < 1e-14);
    // The closed form needs a midpoint grid starting at 0.
    let trap = Grid::trapezoid(0.0, 1.0, 50).unwrap();
    assert!(matches!(MercerBasis::brownian(kernel, trap, 5), Err(MercerError::Unsupported(_))));
    assert!(MercerBasis::brownian(kernel, grid, 301).is_err());
}

#[test]
fn matern32_trace_and_decay() {
    let grid = Grid::midpoint(0.0, 1.0, 1000).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid, BasisOptions::default()).unwrap();
    assert!((basis.trace_power(1.0) - 1.0).abs() < 1e-9, "trace {}", basis.trace_power(1.0));
    let fit = basis.decay();
    assert!((fit.exponent - 4.0).abs() <= 0.15, "decay exponent {}", fit.exponent);
    // The exponential and Matérn 5/2 kernels decay like k^-2 and k^-6.
    let grid = basis.grid().clone();
    for (kernel, want) in [(Stationary::exponential(0.1).unwrap(), 2.0), (Stationary::matern52(0.1).unwrap(), 6.0)] {
        let fit = MercerBasis::build(kernel, grid.clone(), BasisOptions::default()).unwrap().decay();
        assert!((fit.exponent - want).abs() <= 0.2, "{:?}: {}", kernel.shape(), fit.exponent);
    }
}

#[test]
fn gaussian_kernel_truncates_round_off_and_has_no_nan() {
    let grid = Grid::midpoint(0.0, 1.0, 500).unwrap();
    let basis = MercerBasis::build(Stationary::gaussian(0.1).unwrap(), grid, BasisOptions::default()).unwrap();
    assert!(basis.len() < 100, "kept {} components", basis.len());
    let l = basis.eigenvalues();
    assert!(l.iter().all(|v| v.is_finite() && *v > 1e-12 * l[0]));
    assert!(l.windows(2).all(|w| w[0] >= w[1]));
    assert!(basis.eigenfunctions().col_iter().all(|c| c.iter().all(|v| v.is_finite())));
    assert!(basis.power_eigenvalues(0.5).iter().all(|v| v.is_finite()));
    assert!(orthonormality_error(&basis) < 1e-10);
    // A looser tolerance keeps fewer components; a cap is honoured.
    let grid = basis.grid().clone();
    let fewer =
        MercerBasis::build(Stationary::gaussian(0.1).unwrap(), grid.clone(), BasisOptions::default().rtol(1e-6));
    assert!(fewer.unwrap().len() < basis.len());
    let capped =
        MercerBasis::build(Stationary::gaussian(0.1).unwrap(), grid, BasisOptions::default().max_components(7));
    assert_eq!(capped.unwrap().len(), 7);
}

#[test]
fn round_trips_and_batched_products_agree() {
    let grid = Grid::trapezoid(-1.0, 2.0, 301).unwrap();
    let basis = MercerBasis::build(Stationary::matern52(0.3).unwrap(), grid, BasisOptions::default()).unwrap();
    let j = basis.len();
    let coef = pseudo_random(j, 7);
    let f = basis.synthesize(&coef).unwrap();
    let back = basis.project(&f).unwrap();
    assert!(max_abs_diff(&coef, &back) < 1e-10);
    let f2 = basis.synthesize(&back).unwrap();
    assert!(max_abs_diff(&f, &f2) < 1e-10, "synthesis(projection(f)) = f in the span");

    let n = 5;
    let coefs = Mat::from_fn(n, j, |i, c| pseudo_random(1, (i * j + c) as u64 + 1)[0]);
    let curves = basis.synthesize_rows(coefs.as_ref()).unwrap();
    let back_rows = basis.project_rows(curves.as_ref()).unwrap();
    for i in 0..n {
        let row: Vec<f64> = coefs.row(i).iter().copied().collect();
        let curve: Vec<f64> = curves.row(i).iter().copied().collect();
        assert!(max_abs_diff(&basis.synthesize(&row).unwrap(), &curve) < 1e-12);
        let back_row: Vec<f64> = back_rows.row(i).iter().copied().collect();
        assert!(max_abs_diff(&row, &back_row) < 1e-10);
    }
    assert!(matches!(basis.project(&[1.0; 3]), Err(MercerError::LengthMismatch { .. })));
    assert!(basis.synthesize(&[1.0; 2]).is_err());
}

#[test]
fn nystrom_extension_reproduces_grid_values() {
    let grid = Grid::midpoint(0.0, 1.0, 200).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.2).unwrap(), grid.clone(), BasisOptions::default()).unwrap();
    let at = basis.eigenfunctions_at(grid.points()).unwrap();
    let phi = basis.eigenfunctions();
    let l = basis.eigenvalues();
    // Extension divides by λ_k, so round-off grows like λ_1/λ_k; check the well-conditioned components.
    for c in (0..basis.len()).filter(|&c| l[c] > 1e-6 * l[0]) {
        for i in 0..grid.len() {
            assert!((at[(i, c)] - phi[(i, c)]).abs() < 1e-8, "component {c} point {i}");
        }
    }
    // Evaluating a function off the grid interpolates smoothly between grid values.
    let coef = basis.project(&grid.points().iter().map(|t| (2.0 * t).cos()).collect::<Vec<_>>()).unwrap();
    let off = basis.evaluate(&coef, &[0.5, 0.123]).unwrap();
    assert!((off[0] - 1.0f64.cos()).abs() < 1e-4 && (off[1] - 0.246f64.cos()).abs() < 1e-4);
    assert!(basis.eigenfunctions_at(&[f64::NAN]).is_err());
}

#[test]
fn norms_powers_and_diagonal() {
    let grid = Grid::midpoint(0.0, 1.0, 150).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid, BasisOptions::default()).unwrap();
    let l = basis.eigenvalues().to_vec();
    let mut e = vec![0.0; basis.len()];
    e[3] = -2.0;
    assert!((basis.cameron_martin_norm(&e).unwrap() - 2.0 / l[3].sqrt()).abs() < 1e-9 / l[3].sqrt());
    assert!((basis.l1_c_norm(&e).unwrap() - 2.0 / l[3].sqrt()).abs() < 1e-9 / l[3].sqrt());
    let c = pseudo_random(basis.len(), 3);
    let cm: f64 = c.iter().zip(&l).map(|(h, l)| h * h / l).sum::<f64>().sqrt();
    assert!((basis.cameron_martin_norm(&c).unwrap() - cm).abs() < 1e-12 * cm);
    let p = basis.apply_power(1.5, &c).unwrap();
    assert!((p[10] - c[10] * l[10].powf(1.5)).abs() < 1e-15);
    assert!((basis.trace_power(2.0) - l.iter().map(|v| v * v).sum::<f64>()).abs() < 1e-15);
    // With every component kept, C(t, t) = 1 is reproduced on the grid.
    let diag = basis.power_diagonal(1.0);
    assert!(diag.iter().all(|d| (d - 1.0).abs() < 1e-6), "{:?}", &diag[..3]);
}

#[test]
fn randomized_top_j_agrees_with_dense() {
    let grid = Grid::midpoint(0.0, 1.0, 600).unwrap();
    let kernel = Stationary::matern32(0.1).unwrap();
    let dense = MercerBasis::build(kernel, grid.clone(), BasisOptions::default()).unwrap();
    let top = MercerBasis::build(kernel, grid.clone(), BasisOptions::top(50)).unwrap();
    assert_eq!(top.len(), 50);
    assert!(orthonormality_error(&top) < 1e-10);
    for k in 0..25 {
        let rel = (top.eigenvalues()[k] - dense.eigenvalues()[k]).abs() / dense.eigenvalues()[k];
        assert!(rel < 1e-8, "component {k}: {rel:e}");
        let a: Vec<f64> = top.eigenfunctions().col(k).iter().copied().collect();
        let b: Vec<f64> = dense.eigenfunctions().col(k).iter().copied().collect();
        assert!((grid.inner(&a, &b).unwrap().abs() - 1.0).abs() < 1e-8, "eigenfunction {k}");
    }
    // Ritz values never exceed the true eigenvalues (Cauchy interlacing).
    assert!((0..50).all(|k| top.eigenvalues()[k] <= dense.eigenvalues()[k] * (1.0 + 1e-12)));
}

#[test]
fn tensor_grid_basis_of_a_separable_kernel_has_product_eigenvalues() {
    // exp(-|s-t|²/2ρ²) factorises over coordinates, so its 2-D eigenvalues are products of 1-D ones.
    let kernel = Stationary::gaussian(0.3).unwrap();
    let line = Grid::midpoint(0.0, 1.0, 24).unwrap();
    let one = MercerBasis::build(kernel, line.clone(), BasisOptions::default()).unwrap();
    let two = MercerBasis::build(kernel, Grid::tensor(&line, &line).unwrap(), BasisOptions::default()).unwrap();
    let mut products: Vec<f64> =
        one.eigenvalues().iter().flat_map(|a| one.eigenvalues().iter().map(move |b| a * b)).collect();
    products.sort_by(|a, b| b.total_cmp(a));
    for k in 0..10 {
        assert!((two.eigenvalues()[k] - products[k]).abs() < 1e-10 * products[0], "component {k}");
    }
    assert!(orthonormality_error(&two) < 1e-10);
    let at = two.eigenfunctions_at(&[0.5, 0.5, 0.1, 0.9]).unwrap();
    assert_eq!((at.nrows(), at.ncols()), (2, two.len()));
    assert!(two.eigenfunctions_at(&[0.5, 0.5, 0.1]).is_err());
}

#[derive(Debug)]
struct Broken;
impl Kernel for Broken {
    fn eval(&self, s: &[f64], t: &[f64]) -> f64 {
        if s[0] > 0.5 && t[0] > 0.5 { f64::NAN } else { 1.0 }
    }
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("broken")
    }
}

#[test]
fn bad_options_and_kernels_are_errors_not_panics() {
    let grid = Grid::midpoint(0.0, 1.0, 20).unwrap();
    let k = Stationary::matern32(0.1).unwrap();
    for options in [
        BasisOptions::default().rtol(f64::NAN),
        BasisOptions::default().rtol(1.0),
        BasisOptions::default().rtol(-0.1),
        BasisOptions::default().max_components(0),
        BasisOptions::default().solver(Solver::Randomized { power_iterations: 1 }),
    ] {
        assert!(matches!(MercerBasis::build(k, grid.clone(), options), Err(MercerError::BadOption { .. })));
    }
    assert!(matches!(
        MercerBasis::build(Broken, grid.clone(), BasisOptions::default()),
        Err(MercerError::NonFiniteKernel { .. })
    ));
    let negative = Grid::midpoint(-1.0, 1.0, 20).unwrap();
    assert!(matches!(
        MercerBasis::build(Brownian::new(), negative, BasisOptions::default()),
        Err(MercerError::Unsupported(_))
    ));
    // A single-point grid is a valid (one-component) basis.
    let single = MercerBasis::build(k, Grid::midpoint(0.0, 1.0, 1).unwrap(), BasisOptions::default()).unwrap();
    assert_eq!(single.len(), 1);
}

#[test]
fn clones_share_the_decomposition() {
    let grid = Grid::midpoint(0.0, 1.0, 50).unwrap();
    let basis = MercerBasis::build(Stationary::exponential(0.2).unwrap(), grid, BasisOptions::default()).unwrap();
    let copy = basis.clone();
    assert!(std::ptr::eq(basis.eigenvalues().as_ptr(), copy.eigenvalues().as_ptr()));
    let summary = basis.summary();
    assert_eq!(summary.kernel.name, "exponential");
    assert_eq!(summary.components, basis.len());
}

#[test]
fn truncated_basis_keeps_the_leading_block() {
    let grid = Grid::midpoint(0.0, 1.0, 80).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid, BasisOptions::default()).unwrap();
    let lead = basis.truncated(5).unwrap();
    assert_eq!(lead.len(), 5);
    assert_eq!(lead.eigenvalues(), &basis.eigenvalues()[..5]);
    assert_eq!(lead.eigenfunctions().col(4), basis.eigenfunctions().col(4));
    assert!(basis.truncated(0).is_err() && basis.truncated(basis.len() + 1).is_err());
}

/// Regression (issue 29): a dense basis on 20000 points took 6 minutes and 3.2 GB, on 100000 it was
/// OOM-killed. Past `MAX_DENSE_POINTS` a dense decomposition is refused before anything is
/// allocated; the FFT-based randomized solver on a uniform grid (no K x K matrix) stays available.
#[test]
fn dense_bases_are_capped_before_any_allocation() {
    let k = MercerBasis::MAX_DENSE_POINTS + 1;
    let kernel = Stationary::matern32(0.1).unwrap();
    let start = std::time::Instant::now();
    let refused = MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 100_000).unwrap(), BasisOptions::default());
    assert!(matches!(refused, Err(MercerError::BadOption { name: "grid points", .. })), "{refused:?}");
    assert!(MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, k).unwrap(), BasisOptions::default()).is_err());
    assert!(start.elapsed().as_secs_f64() < 5.0, "refused before the K x K matrix was formed");
    let top = MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, k).unwrap(), BasisOptions::top(8)).unwrap();
    assert_eq!(top.len(), 8);
}

/// The decay a 1-D basis on fewer than 1000 points reports, read from the kernel's spectral
/// density (or a coarse eigenvalue-only solve) instead of a 1000-point basis, against the fit the
/// 1000-point basis gave (the previous implementation, these numbers): exponents within 0.2 % where
/// the window is short (the same window, a coarser grid) and within 3 % where it is at the cap
/// (Widom's asymptotics; the old fit carries the 1000-point grid's own boundary and aliasing
/// effects of the same order), constants within a factor of 2 (the intercept at k = 1 carries the
/// slope's difference over ln 31 ≈ 3.4).
#[test]
fn decay_without_a_fine_basis_agrees_with_the_fine_basis_fit() {
    use fdp_mercer::DecaySource;
    // (kernel, exponent, constant, first, last) of the 1000-point fit.
    let cases = [
        ("exponential:0.05", 1.995679, 4.069097e0, 31, 125),
        ("exponential:1", 2.023483, 2.321790e-1, 31, 125),
        ("matern32:0.01", 2.323241, 5.808148e1, 31, 125),
        ("matern32:0.1", 4.045790, 2.774298e2, 31, 125),
        ("matern32:1", 4.095956, 3.520604e-1, 31, 125),
        ("matern52:0.1", 6.060127, 4.514223e4, 31, 125),
        ("matern52:0.3", 6.245958, 4.238438e2, 20, 80),
        ("matern52:1", 6.845776, 7.318086e0, 7, 28),
        ("gaussian:0.01", 5.038049, 2.259711e6, 31, 125),
        ("gaussian:0.05", 13.449377, 1.457731e14, 11, 45),
        ("gaussian:0.3", 10.765132, 1.313936e4, 2, 11),
        ("gaussian:1", 9.872184, 1.031505e1, 1, 6),
    ];
    for (spec, exponent, constant, first, last) in cases {
        let kernel: Stationary = spec.parse().unwrap();
        let basis =
            MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 100).unwrap(), BasisOptions::default()).unwrap();
        let fit = basis.decay();
        assert_eq!((fit.first, fit.last), (first, last), "{spec}: window");
        let tolerance = match fit.source {
            DecaySource::Spectral => 0.03,
            DecaySource::Nystrom { points } => {
                assert!(points < 1000, "{spec}: a fine basis was built");
                0.002
            }
            other => panic!("{spec}: {other:?}"),
        };
        assert_eq!(fit.source == DecaySource::Spectral, last == 125, "{spec}: {:?}", fit.source);
        assert!((fit.exponent / exponent - 1.0).abs() <= tolerance, "{spec}: {} against {exponent}", fit.exponent);
        assert!((fit.constant / constant).ln().abs() <= 2f64.ln(), "{spec}: {} against {constant}", fit.constant);
    }
    // A kernel without a spectral density keeps the 1000-point fit (Brownian: λ_k ∝ (k - 1/2)^-2).
    let brownian = MercerBasis::build(Brownian::new(), Grid::midpoint(0.0, 1.0, 100).unwrap(), BasisOptions::default())
        .unwrap()
        .decay();
    assert_eq!(brownian.source, DecaySource::Nystrom { points: 1000 });
    assert!((brownian.exponent - 2.0).abs() < 0.05, "{}", brownian.exponent);
}

/// The grid's kernel matrix from the Toeplitz profile (a stationary kernel on a uniform grid) is the
/// kernel matrix of the points, and any other kernel or grid gets the kernel matrix itself.
#[test]
fn grid_kernel_matrix_is_the_kernel_matrix_of_the_points() {
    use fdp_mercer::{grid_kernel_matrix, kernel_matrix};
    let grids = [Grid::midpoint(0.0, 2.0, 101).unwrap(), Grid::trapezoid(-1.0, 1.0, 64).unwrap()];
    for grid in grids {
        for kernel in [Stationary::exponential(0.3).unwrap(), Stationary::gaussian(0.2).unwrap()] {
            let want = kernel_matrix(&kernel, grid.points(), grid.points(), 1);
            let got = grid_kernel_matrix(&kernel, &grid);
            let k = grid.len();
            let worst =
                (0..k).flat_map(|i| (0..k).map(move |j| (i, j))).map(|(i, j)| (got[(i, j)] - want[(i, j)]).abs());
            assert!(worst.fold(0.0, f64::max) < 1e-13);
        }
        let coarse = Grid::midpoint(0.0, 1.0, 20).unwrap();
        let brownian = grid_kernel_matrix(&Brownian::new(), &coarse);
        let t = coarse.points();
        assert_eq!(brownian[(3, 7)], Brownian::new().eval(&t[3..4], &t[7..8]));
    }
}

/// FNV-1a over the bits of a basis' eigenvalues, eigenfunctions and weighted eigenfunctions.
fn basis_bits(basis: &MercerBasis) -> u64 {
    let (phi, wphi) = (basis.eigenfunctions(), basis.weighted_eigenfunctions());
    let words = basis.eigenvalues().iter().map(|v| v.to_bits()).chain(
        (0..phi.ncols())
            .flat_map(|c| (0..phi.nrows()).flat_map(move |i| [phi[(i, c)].to_bits(), wphi[(i, c)].to_bits()])),
    );
    words.fold(0xcbf2_9ce4_8422_2325u64, |h, w| (h ^ w).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The centrosymmetric bases map the halves' eigenvectors back column by column into φ (no K x K
/// matrix in between): the same bits as when the merged K x K matrix was formed first (these
/// fingerprints were taken from that implementation), for an even and an odd grid, a truncated
/// basis and the randomized solver.
#[test]
fn centrosymmetric_bases_keep_their_bits() {
    let matern = Stationary::matern32(0.1).unwrap();
    let bases = [
        MercerBasis::build(matern, Grid::midpoint(0.0, 1.0, 200).unwrap(), BasisOptions::default()).unwrap(),
        MercerBasis::build(matern, Grid::trapezoid(0.0, 2.0, 101).unwrap(), BasisOptions::default().max_components(30))
            .unwrap(),
        MercerBasis::build(
            Stationary::gaussian(0.2).unwrap(),
            Grid::midpoint(0.0, 1.0, 300).unwrap(),
            BasisOptions::top(12),
        )
        .unwrap(),
    ];
    let got: Vec<u64> = bases.iter().map(basis_bits).collect();
    assert_eq!(got, [11989139430785976976, 8509691378072420815, 1628248070287664506]);
}
