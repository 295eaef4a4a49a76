//! Privacy at the numeric edges: exact losses of adversarial neighbours for every mechanism, the
//! regression cases of the numeric-edges issue, huge ε, bad inputs, and releases that do not depend
//! on the number of threads.

#[allow(dead_code)]
#[path = "../examples/harness/privacy_edges.rs"]
mod privacy_edges;

use fdp::data::{Scenario, simulate};
use fdp::estimators::{
    BasisKde, BasisMean, BernsteinKde, BernsteinMean, CurveMechanism, ErmSetup, GridPoints, KernelErm, Labelled, Loss,
    MeanMechanism, MeanSetup, Mechanism, PlugIn, TunedMean, density_kernel,
};
use fdp::functional::CurveReleaseExt;
use fdp::kme::{CandidateFamily, FeatureMap, PointSet, PrivateSketch, RandomFourierFeatures, SyntheticSubspace};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::mercer::{Kernel, KernelSpec, MercerError, StationaryShape};
use fdp::noise::exact_loss::{exponential_loss, gaussian_loss, laplace_loss};
use fdp::noise::exponential::ExponentialMechanism;
use fdp::noise::{IclpSampler, NoiseRng, Sensitivity};
use fdp::prelude::*;
use fdp::release::Charge;
use fdp::release::Regularisation;

const TOLERANCE: f64 = 1.0 + 1e-12;

#[test]
fn every_mechanism_holds_its_guarantee_against_adversarial_records() {
    let records = privacy_edges::run().unwrap();
    assert!(records.len() >= 39, "every mechanism family is covered: {}", records.len());
    // Every registered mechanism has exact-loss cases: registering one without them fails here.
    for entry in fdp::registry::REGISTRY {
        let grid = Grid::midpoint(0.0, 1.0, 20).unwrap();
        let spec = fdp::registry::Spec::example(entry).unwrap();
        let built = fdp::registry::build(&spec, &fdp::registry::Frame::new(100, Some(grid))).unwrap();
        assert!(
            records.iter().any(|r| r.mechanism.contains(built.name())),
            "registered mechanism {} ({}) has no exact-loss case in examples/harness/privacy_edges.rs",
            entry.name,
            built.name()
        );
    }
    for r in &records {
        assert!(r.cases > 0, "{}", r.mechanism);
        assert!(r.worst_loss_over_eps <= TOLERANCE, "{}: loss/ε = {}", r.mechanism, r.worst_loss_over_eps);
    }
    // The calibrations are tight: the ICLP and Bernstein means reach their budget on some pair.
    let rkhs = records.iter().find(|r| r.mechanism == "iclp_rkhs_psi0").unwrap();
    assert!(rkhs.worst_loss_over_eps > 0.999, "{}", rkhs.worst_loss_over_eps);
    // The covariance operator: every variant is covered, and the Gaussian constant is attained.
    for j in [1, 2, 5] {
        for name in [
            format!("private_covariance_laplace_j{j}"),
            format!("private_covariance_gaussian_j{j}"),
            format!("covariance_bound_j{j}"),
            format!("tuned_covariance_laplace_j{j}"),
            format!("tuned_covariance_gaussian_j{j}"),
        ] {
            assert!(records.iter().any(|r| r.mechanism == name), "{name}");
        }
    }
    // The sparse default, with and without a stated design, the tuned and the sparse covariance:
    // covered, and
    // their release stages reached by the adversarial pairs (not only the bound stage, which is tight
    // by construction).
    let release_stages = ["sparse_binned_mean", "sparse_binned_mean_stated_design"]
        .map(String::from)
        .into_iter()
        .chain([1, 2, 5].into_iter().flat_map(|j| {
            [
                format!("tuned_covariance_laplace_j{j}"),
                format!("tuned_covariance_gaussian_j{j}"),
                format!("sparse_covariance_laplace_j{j}"),
                format!("sparse_covariance_gaussian_j{j}"),
            ]
        }));
    for name in release_stages {
        assert!(records.iter().any(|r| r.mechanism == name), "{name}");
        let stage = records.iter().find(|r| r.mechanism == format!("{name}_release_stage")).unwrap();
        assert!(
            stage.worst_loss_over_eps > 0.5,
            "{name}: the release stage reaches only {}",
            stage.worst_loss_over_eps
        );
    }
    // The Gaussian releases are tight on these pairs (the loss ratio scales with 1/σ): noise even 1%
    // below its calibration would show a ratio above 1.
    for name in [
        "private_covariance_gaussian_j5",
        "sparse_covariance_gaussian_j2_release_stage",
        "sparse_covariance_gaussian_j5_release_stage",
    ] {
        let gaussian = records.iter().find(|r| r.mechanism == name).unwrap();
        assert!(gaussian.worst_loss_over_eps > 0.99, "{name}: {}", gaussian.worst_loss_over_eps);
    }
}

/// The same exact-loss computation flags a mechanism calibrated to half its sensitivity: the suite
/// can fail.
#[test]
fn exact_loss_catches_an_under_noised_iclp() {
    let basis = MercerBasis::build(
        Stationary::matern32(0.1).unwrap(),
        Grid::midpoint(0.0, 1.0, 30).unwrap(),
        BasisOptions::default(),
    )
    .unwrap();
    let n = 200;
    let mechanism = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(n, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap()).unwrap(),
        Regularisation::new(3.0, 0.0).unwrap(),
    )
    .unwrap();
    let base = simulate(Scenario::S1, &basis, n, 1).unwrap().curves;
    let phi = basis.eigenfunctions();
    let last = basis.len() - 1;
    let mut plus = base.values().to_vec();
    let mut minus = base.values().to_vec();
    for i in 0..30 {
        plus[i] = 1e3 * phi[(i, last)];
        minus[i] = -1e3 * phi[(i, last)];
    }
    let grid = basis.grid().clone();
    let a = mechanism.summarize(&fdp::data::CurveSet::from_flat(grid.clone(), plus, None).unwrap().0).unwrap();
    let b = mechanism.summarize(&fdp::data::CurveSet::from_flat(grid, minus, None).unwrap().0).unwrap();
    let honest = laplace_loss(mechanism.sampler().components(), &a, &b).unwrap();
    let half = IclpSampler::calibrated(
        &basis,
        Sensitivity::new(mechanism.sensitivity() / 2.0).unwrap(),
        Epsilon::new(1.0).unwrap(),
    )
    .unwrap();
    let under = laplace_loss(half.components(), &a, &b).unwrap();
    assert!(honest <= TOLERANCE && honest > 0.99, "{honest}");
    assert!(under > 1.9, "{under}");
}

/// The exponential mechanism's calibration is tight (the pair of the edge suite reaches 0.999 ε) and
/// the exact loss flags a selection calibrated to half the score's sensitivity.
#[test]
fn exact_loss_catches_an_over_sharp_exponential_mechanism() {
    let honest = privacy_edges::tight_exponential_pair().unwrap();
    let family = honest.family();
    let a = family.statistics(&privacy_edges::far_split(-3.0).unwrap()).unwrap();
    let b = family.statistics(&privacy_edges::far_split(3.0).unwrap()).unwrap();
    let loss = exponential_loss(honest.selection(), &honest.levels(&a).unwrap(), &honest.levels(&b).unwrap()).unwrap();
    assert!(loss <= TOLERANCE && loss > 0.999, "{loss}");
    let sharp = ExponentialMechanism::new(
        Sensitivity::new(honest.selection().sensitivity() / 2.0).unwrap(),
        Epsilon::new(1.0).unwrap(),
    )
    .unwrap();
    let levels = |s: &[f64]| sharp.levels(&family.distances(s).unwrap()).unwrap();
    let under = exponential_loss(&sharp, &levels(&a), &levels(&b)).unwrap();
    assert!(under > 1.9, "{under}");
}

/// Case 1: Algorithm 1 with a Matérn kernel and a finite point at (1e154, 1e154) — the kernel gave
/// NaN, every coordinate of α became NaN, and the loss reached 98 ε.
#[test]
fn regression_matern_kernel_mean_at_1e154() {
    let kernel = Stationary::matern32(1.0).unwrap();
    assert_eq!(kernel.eval(&[1e154, 1e154], &[0.0, 0.0]), 0.0);
    let subspace = SyntheticSubspace::from_wide_gaussian(kernel, &[0.0, 0.0], 2.0, 20, 7).unwrap();
    let n = 100;
    let base: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.31) % 2.0 - 1.0).collect();
    let mut far = base.clone();
    far[..2].copy_from_slice(&[1e154, 1e154]);
    let a = subspace.coordinates(&PointSet::new(2, base).unwrap()).unwrap();
    let b = subspace.coordinates(&PointSet::new(2, far).unwrap()).unwrap();
    assert!(b.iter().all(|v| v.is_finite()));
    let mechanism = subspace.mechanism(n, Epsilon::new(1.0).unwrap(), Delta::new(1e-6).unwrap()).unwrap();
    let noise = mechanism.noise();
    let loss = gaussian_loss(&vec![noise.noise(); 20], noise.multiplier(), &a, &b).unwrap();
    assert!(loss <= TOLERANCE, "{loss}");
}

/// Case 2: random Fourier features of a point near 1e308 — ω·x overflowed, cos(±∞) = NaN.
#[test]
fn regression_random_features_near_1e308() {
    let rff = RandomFourierFeatures::new(Stationary::gaussian(1.0).unwrap(), 2, 20, 3).unwrap();
    let f = rff.features(&[1.7e308, -1.7e308]);
    assert!((f.iter().map(|v| v * v).sum::<f64>() - 1.0).abs() < 1e-12);
    let map = FeatureMap::rff(2, 20, 0.3, 5).unwrap();
    let g = map.features(&[1e308, 1e308]);
    assert!(g.iter().all(|v| v.is_finite()) && g.iter().map(|v| v.abs()).sum::<f64>() <= map.l1_bound());
}

/// Case 3: exponential kernel, K = 30, ε = 50, τ = 10, η = 142.865..., ψ = 0, record ±1e3 φ_30.
#[test]
fn regression_subnormal_eta_with_zero_psi() {
    let basis = MercerBasis::build(
        Stationary::exponential(0.1).unwrap(),
        Grid::midpoint(0.0, 1.0, 30).unwrap(),
        BasisOptions::default(),
    )
    .unwrap();
    let (n, eta) = (200, 142.86529247115914);
    let mechanism = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(n, Epsilon::new(50.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap()).unwrap(),
        Regularisation::new(eta, 0.0).unwrap(),
    )
    .unwrap();
    let phi = basis.eigenfunctions();
    let last = basis.len() - 1;
    let data = |sign: f64| {
        let mut v = vec![0.0; n * 30];
        for i in 0..30 {
            v[i] = sign * 1e3 * phi[(i, last)];
        }
        fdp::data::CurveSet::from_flat(basis.grid().clone(), v, None).unwrap().0
    };
    let (a, b) = (mechanism.summarize(&data(1.0)).unwrap(), mechanism.summarize(&data(-1.0)).unwrap());
    let exact = laplace_loss(mechanism.sampler().components(), &a, &b).unwrap() / 50.0;
    let difference: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let bound = mechanism.sampler().privacy_loss_bound(&difference).unwrap() / 50.0;
    assert!(exact <= TOLERANCE && bound <= TOLERANCE, "exact {exact}, bound {bound} (was 1.0045)");
}

/// ε up to 10^6 answers for every mechanism, with a finite release (ε ≥ 710 hung every Gaussian one).
#[test]
fn huge_epsilon_answers_for_every_mechanism() {
    let eps = 1e6;
    let grid = Grid::midpoint(0.0, 1.0, 30).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid.clone(), BasisOptions::default()).unwrap();
    let curves = simulate(Scenario::S2, &basis, 100, 2).unwrap().curves;
    let rng = &mut NoiseRng::seeded(1);
    let setup = |bound: fdp::release::Result<ClippingBound>| {
        MeanSetup::new(100, Epsilon::new(eps).unwrap(), bound.unwrap()).unwrap()
    };
    let (l1, l2, sup) = (ClippingBound::coefficient_l1(10.0), ClippingBound::l2(10.0), ClippingBound::sup(10.0));
    let reg = |eta, psi| Regularisation::new(eta, psi).unwrap();
    let means: Vec<Box<dyn MeanMechanism>> = vec![
        Box::new(BasisMean::iclp_rkhs(&basis, setup(l1), reg(2.0, 1e-6)).unwrap()),
        Box::new(BasisMean::iclp_l1(&basis, setup(ClippingBound::l2(10.0)), reg(3.0, 1e-6)).unwrap()),
        Box::new(BasisMean::iid_laplace(&basis, setup(ClippingBound::l2(10.0)), 5).unwrap()),
        Box::new(BasisMean::gaussian_process(&basis, setup(l2), reg(2.0, 1e-6), Delta::new(1e-6).unwrap()).unwrap()),
        Box::new(BernsteinMean::new(&grid, setup(sup), 10).unwrap()),
    ];
    for m in &means {
        assert!(
            m.release(&curves, rng, Charge::unaccounted()).unwrap().curve().iter().all(|v| v.is_finite()),
            "{}",
            m.name()
        );
    }
    let kernel = density_kernel(StationaryShape::Gaussian, 0.05, 1).unwrap();
    let kde_basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default()).unwrap();
    let points = GridPoints::snap(&grid, &[0.1, 0.5, 0.9]).unwrap();
    let kdes: Vec<Box<dyn CurveMechanism<GridPoints>>> = vec![
        Box::new(BasisKde::iclp(&kde_basis, 3, Epsilon::new(eps).unwrap(), 1.25).unwrap()),
        Box::new(
            BasisKde::gaussian_process(&kde_basis, 3, Epsilon::new(eps).unwrap(), 1.25, Delta::new(1e-6).unwrap())
                .unwrap(),
        ),
        Box::new(BasisKde::iid_laplace(&kde_basis, 3, Epsilon::new(eps).unwrap(), 5).unwrap()),
        Box::new(BernsteinKde::new(kernel, &grid, 3, Epsilon::new(eps).unwrap(), 10).unwrap()),
    ];
    for m in &kdes {
        assert!(
            m.release(&points, rng, Charge::unaccounted()).unwrap().curve().iter().all(|v| v.is_finite()),
            "{}",
            m.name()
        );
    }
    let labelled = Labelled::snap(&grid, &[0.1, 0.9], vec![1.0, -1.0]).unwrap();
    let setup = ErmSetup::new(Loss::Logistic, 2, Regularisation::new(1.25, 0.1).unwrap()).unwrap();
    assert!(
        KernelErm::iclp(&basis, setup, Epsilon::new(eps).unwrap())
            .unwrap()
            .release(&labelled, rng, Charge::unaccounted())
            .is_ok()
    );
    assert!(
        KernelErm::gaussian_process(&basis, setup, Epsilon::new(eps).unwrap(), Delta::new(1e-6).unwrap())
            .unwrap()
            .release(&labelled, rng, Charge::unaccounted())
            .is_ok()
    );
    let data = PointSet::new(2, vec![0.1, 0.2, 0.3, 0.4]).unwrap();
    let subspace =
        SyntheticSubspace::from_wide_gaussian(Stationary::gaussian(1.0).unwrap(), &[0.0, 0.0], 1.0, 5, 1).unwrap();
    let (e, d) = (Epsilon::new(eps).unwrap(), Delta::new(1e-6).unwrap());
    let alg1 = subspace.mechanism(2, e, d).unwrap();
    assert!(alg1.release(&data, rng, Charge::unaccounted()).unwrap().values().iter().all(|w| w.is_finite()));
    let rff = RandomFourierFeatures::new(Stationary::gaussian(1.0).unwrap(), 2, 10, 1).unwrap();
    assert!(
        rff.mechanism(2, e, d)
            .unwrap()
            .release(&data, rng, Charge::unaccounted())
            .unwrap()
            .values()
            .iter()
            .all(|v| v.is_finite())
    );
    let sketch = PrivateSketch::new(FeatureMap::hist(2, 4).unwrap(), e)
        .unwrap()
        .release(&data, rng, Charge::unaccounted())
        .unwrap();
    assert!(sketch.values().iter().all(|v| v.is_finite()));
}

#[test]
fn bad_inputs_are_clear_errors_or_finite_releases() {
    let grid = Grid::midpoint(0.0, 1.0, 30).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid.clone(), BasisOptions::default()).unwrap();
    let curves = simulate(Scenario::S1, &basis, 50, 2).unwrap().curves;
    let rng = &mut NoiseRng::seeded(3);
    // Bernstein of degree 1100 and more: finite curves (the binomials overflowed to NaN).
    for degree in [1100, 3000] {
        let m = BernsteinMean::new(
            &grid,
            MeanSetup::new(50, Epsilon::new(1.0).unwrap(), ClippingBound::sup(10.0).unwrap()).unwrap(),
            degree,
        )
        .unwrap();
        assert!(
            m.release(&curves, rng, Charge::unaccounted()).unwrap().curve().iter().all(|v| v.is_finite()),
            "degree {degree}"
        );
        assert!(m.expected_noise_sq().is_finite());
    }
    // A one-point grid (a one-column CSV): a clear error for Bernstein, not a NaN release.
    let one = Grid::with_weights(vec![3.0], vec![1.0]).unwrap();
    let err = BernsteinMean::new(
        &one,
        MeanSetup::new(5, Epsilon::new(1.0).unwrap(), ClippingBound::sup(1.0).unwrap()).unwrap(),
        4,
    )
    .unwrap_err();
    assert!(err.to_string().contains("positive width"), "{err}");
    // Grids whose width overflows are rejected where they are built (repair stored NaN, Bernstein panicked).
    assert!(matches!(Grid::with_weights(vec![-1e308, 1e308], vec![1.0, 1.0]), Err(MercerError::BadInterval { .. })));
    assert!(Grid::trapezoid_points(vec![-1.7e308, 0.0, 1.7e308]).is_err());
    assert!(Grid::midpoint(-f64::MAX, f64::MAX, 10).is_err());
    // Finite-width grids far out (points near 1e308): finite Bernstein and ICLP releases.
    let far = Grid::with_weights(vec![1.0e308, 1.2e308, 1.4e308, 1.6e308], vec![0.25; 4]).unwrap();
    let values: Vec<f64> = (0..40).map(|i| if i % 7 == 0 { f64::NAN } else { (i % 5) as f64 }).collect();
    let (far_curves, _) = fdp::data::CurveSet::from_flat(far.clone(), values, None).unwrap();
    assert!(far_curves.values().iter().all(|v| v.is_finite()));
    let m = BernsteinMean::new(
        &far,
        MeanSetup::new(10, Epsilon::new(1.0).unwrap(), ClippingBound::sup(5.0).unwrap()).unwrap(),
        6,
    )
    .unwrap();
    assert!(m.release(&far_curves, rng, Charge::unaccounted()).unwrap().curve().iter().all(|v| v.is_finite()));
    // Counts whose total overflows usize: an error, not a wrapped n.
    assert!(GridPoints::from_counts(&Grid::midpoint(0.0, 1.0, 2).unwrap(), vec![usize::MAX, 2]).is_err());
    // η = 10^6 says what is wrong in the user's terms.
    let err = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(50, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap()).unwrap(),
        Regularisation::new(1e6, 1e-3).unwrap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("eta") && err.to_string().contains("lower eta"), "{err}");
    let kde_basis = MercerBasis::build(
        density_kernel(StationaryShape::Gaussian, 0.05, 1).unwrap(),
        grid.clone(),
        BasisOptions::default(),
    )
    .unwrap();
    let err = BasisKde::iclp(&kde_basis, 10, Epsilon::new(1.0).unwrap(), 1e6).unwrap_err();
    assert!(err.to_string().contains("lower eta"), "{err}");
    let err = KernelErm::iclp(
        &basis,
        ErmSetup::new(Loss::Logistic, 10, Regularisation::new(1e6, 0.1).unwrap()).unwrap(),
        Epsilon::new(1.0).unwrap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("eta"), "{err}");
    // τ so large that n·τ overflows.
    assert!(MeanSetup::new(10, Epsilon::new(1.0).unwrap(), ClippingBound::l2(f64::MAX).unwrap()).is_err());
    // Asymmetric and indefinite custom kernels are rejected.
    #[derive(Debug)]
    struct Skewed;
    impl Kernel for Skewed {
        fn eval(&self, s: &[f64], t: &[f64]) -> f64 {
            (-(s[0] - t[0]).abs()).exp() + 0.1 * (s[0] - t[0])
        }
        fn spec(&self) -> KernelSpec {
            KernelSpec::new("skewed")
        }
    }
    #[derive(Debug)]
    struct Indefinite;
    impl Kernel for Indefinite {
        fn eval(&self, s: &[f64], t: &[f64]) -> f64 {
            (10.0 * (s[0] - t[0])).cos() - 0.5
        }
        fn spec(&self) -> KernelSpec {
            KernelSpec::new("indefinite")
        }
    }
    assert!(matches!(
        MercerBasis::build(Skewed, grid.clone(), BasisOptions::default()),
        Err(MercerError::AsymmetricKernel { .. })
    ));
    assert!(matches!(
        MercerBasis::build(Indefinite, grid.clone(), BasisOptions::default()),
        Err(MercerError::IndefiniteKernel { .. })
    ));
    // A curve of ±1.7e308 next to NaN is repaired to finite values and released finite.
    let mut values = curves.values().to_vec();
    values[..30].fill(f64::NAN);
    values[0] = 1.7e308;
    values[29] = -1.7e308;
    let (bad, _) = fdp::data::CurveSet::from_flat(grid.clone(), values, None).unwrap();
    assert!(bad.row(0).iter().all(|v| v.is_finite()));
    let setup = MeanSetup::new(50, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap()).unwrap();
    let tuning = PlugIn::new(&basis, &setup).unwrap();
    let m = BasisMean::iclp_rkhs(&basis, setup, tuning.rkhs).unwrap();
    assert!(m.release(&bad, rng, Charge::unaccounted()).unwrap().curve().iter().all(|v| v.is_finite()));
}

/// The release JSON of every kind of mechanism, built and released inside a pool of `threads`.
fn releases_on(threads: usize) -> Vec<String> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let grid = Grid::midpoint(0.0, 1.0, 100).unwrap();
        let basis =
            MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid.clone(), BasisOptions::default()).unwrap();
        let curves = simulate(Scenario::S2, &basis, 5000, 4).unwrap().curves;
        let l1 =
            MeanSetup::new(5000, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap()).unwrap();
        let l2 = l1.clone().with_bound(ClippingBound::l2(10.0).unwrap()).unwrap();
        let sup = l1.clone().with_bound(ClippingBound::sup(10.0).unwrap()).unwrap();
        let tuning = PlugIn::new(&basis, &l1).unwrap();
        let means: Vec<Box<dyn MeanMechanism>> = vec![
            Box::new(BasisMean::iclp_rkhs(&basis, l1, tuning.rkhs).unwrap()),
            Box::new(BasisMean::iclp_l1(&basis, l2.clone(), tuning.l1).unwrap()),
            Box::new(BasisMean::iid_laplace(&basis, l2.clone(), tuning.iid_components).unwrap()),
            Box::new(BasisMean::gaussian_process(&basis, l2, tuning.rkhs, Delta::new(1e-6).unwrap()).unwrap()),
            Box::new(BernsteinMean::new(&grid, sup, 20).unwrap()),
        ];
        let mut out: Vec<String> = means
            .iter()
            .map(|m| m.release(&curves, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap())
            .collect();
        // The privately tuned pipelines (bound, SURE or pilot, release).
        let eps = Epsilon::new(1.0).unwrap();
        for tuned in [
            TunedMean::iclp_rkhs(&basis, 5000, eps, ClippingBound::coefficient_l1(10.0).unwrap()).unwrap(),
            TunedMean::iid_laplace(&basis, 5000, eps, ClippingBound::l2(10.0).unwrap()).unwrap(),
        ] {
            out.push(
                tuned.release(&curves, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap(),
            );
        }
        let kernel = density_kernel(StationaryShape::Gaussian, 0.05, 1).unwrap();
        let kde_basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default()).unwrap();
        let raw: Vec<f64> = (0..3000).map(|i| (i as f64 * 0.618) % 1.0).collect();
        let points = GridPoints::snap(&grid, &raw).unwrap();
        let kde = BasisKde::iclp(&kde_basis, 3000, Epsilon::new(1.0).unwrap(), 1.25).unwrap();
        out.push(kde.release(&points, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap());
        let x: Vec<f64> = (0..20_000).map(|i| ((i * 37) % 1009) as f64 / 1009.0).collect();
        let data = PointSet::new(2, x).unwrap();
        let subspace =
            SyntheticSubspace::from_wide_gaussian(Stationary::gaussian(0.5).unwrap(), &[0.5, 0.5], 1.0, 30, 2).unwrap();
        let (e, d) = (Epsilon::new(1.0).unwrap(), Delta::new(1e-6).unwrap());
        let alg1 = subspace.mechanism(data.len(), e, d).unwrap();
        out.push(alg1.release(&data, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap());
        let rff = RandomFourierFeatures::new(Stationary::gaussian(0.5).unwrap(), 2, 50, 2).unwrap();
        let alg2 = rff.mechanism(data.len(), e, d).unwrap();
        out.push(alg2.release(&data, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap());
        let sketch = PrivateSketch::new(FeatureMap::rff(2, 50, 0.3, 1).unwrap(), e).unwrap();
        out.push(sketch.release(&data, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap());
        let few = data.subset(&(0..2000).collect::<Vec<_>>());
        let family =
            CandidateFamily::new(Stationary::gaussian(0.5).unwrap(), data.subset(&[0, 3, 7, 11, 19, 23]), 4).unwrap();
        let em = family.mechanism(few.len(), Epsilon::new(0.5).unwrap()).unwrap();
        out.push(em.release(&few, &mut NoiseRng::seeded(9), Charge::unaccounted()).unwrap().to_json().unwrap());
        out
    })
}

#[test]
fn a_fixed_seed_gives_the_same_release_on_any_thread_count() {
    let one = releases_on(1);
    assert!(one.iter().all(|json| json.contains("FixedSeed")), "every release records its RNG provenance");
    for threads in [2, 7] {
        let other = releases_on(threads);
        for (i, (a, b)) in one.iter().zip(&other).enumerate() {
            assert!(a == b, "release {i} differs between 1 and {threads} threads");
        }
    }
}

/// Issue 29, case 2: a record of coefficients ~1e-163 had an L2 norm of 0 (its squares underflow),
/// so at τ = 1e-170 it was never clipped and the plug-in IID Laplace lost 9.07 ε. The norm is now
/// scaled (it cannot underflow), and bounds whose fixed-point scale overflows are refused.
#[test]
fn regression_l2_norm_underflow_at_tiny_bounds() {
    let basis = MercerBasis::build(
        Stationary::matern32(0.1).unwrap(),
        Grid::midpoint(0.0, 1.0, 30).unwrap(),
        BasisOptions::default(),
    )
    .unwrap();
    let n = 200;
    let mechanism = BasisMean::iid_laplace(
        &basis,
        MeanSetup::new(n, Epsilon::new(1.0).unwrap(), ClippingBound::l2(1e-170).unwrap()).unwrap(),
        5,
    )
    .unwrap();
    let phi = basis.eigenfunctions();
    let data = |scale: f64| {
        let mut v = vec![0.0; n * 30];
        for i in 0..30 {
            v[i] = scale * (phi[(i, 0)] + phi[(i, 1)] - phi[(i, 2)]);
        }
        fdp::data::CurveSet::from_flat(basis.grid().clone(), v, None).unwrap().0
    };
    let a = mechanism.summarize(&data(1e-163)).unwrap();
    let b = mechanism.summarize(&data(-1e-163)).unwrap();
    let loss = laplace_loss(mechanism.sampler().components(), &a, &b).unwrap();
    assert!(loss <= TOLERANCE, "loss/ε {loss} (was 9.07)");
    assert!(ClippingBound::l2(2.6e-290).is_err() && "l2:1e-300".parse::<ClippingBound>().is_err());
}
