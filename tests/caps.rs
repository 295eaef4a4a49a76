//! Issue 29: every mechanism the front doors build ([`MeanRequest`], [`KdeRequest`],
//! [`KmeRequest`], [`SketchRequest`]) either refuses at build time or releases — it never fails
//! after a [`Session`] has charged the budget — across extreme public parameters (ε = 1e-12 and
//! 2^30 (the largest ε), tiny and huge bounds, bandwidths and scales) and every size cap plus one; and what the
//! ledger charges for each is exactly its guarantee (one entry per stage).

use fdp::data::{Scenario, simulate};
use fdp::estimators::GridPoints;
use fdp::front::{KdeMethod, KdeRequest, KmeRequest, MeanMethod, MeanRequest, SketchRequest, TuningMode};
use fdp::kme::{FeatureMap, PointSet, SyntheticSubspace};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::prelude::*;
use fdp::release::{ClipNorm, Mechanism, Result};

/// Releases a built mechanism through a session whose budget covers it; panics if the release
/// fails after the charge. Returns the released numbers, or `None` if it was not built.
fn built_then_released<D: ?Sized, M: Mechanism<D>>(label: &str, built: Result<M>, data: &D) -> Option<Vec<f64>> {
    let Ok(m) = built else { return None };
    let g = m.guarantee();
    let delta = (g.delta() > 0.0).then(|| Delta::new((2.0 * g.delta()).min(0.5)).unwrap());
    let mut session = Session::new(g.relation(), Epsilon::new((2.0 * g.epsilon()).min(Epsilon::MAX)).unwrap(), delta)
        .unwrap()
        .with_seed(5);
    let release = session.release(&m, data).unwrap_or_else(|e| {
        panic!("{label}: {} failed after the charge ({} ledger entries): {e}", m.name(), session.ledger().len())
    });
    // What the ledger charged is what the mechanism proves: one entry per stage, adding up to the
    // guarantee.
    let (spent_epsilon, spent_delta) = session.spent();
    assert_eq!(session.ledger().len(), m.stages().len(), "{label}");
    assert!((spent_epsilon - g.epsilon()).abs() <= 1e-12 * g.epsilon(), "{label}: charged {spent_epsilon}");
    assert!((spent_delta - g.delta()).abs() <= 1e-12 * g.delta().max(f64::MIN_POSITIVE), "{label}");
    Some(release.values())
}

const EPSILONS: [f64; 3] = [1e-12, 1.0, Epsilon::MAX];

#[test]
fn mean_requests_build_and_release_or_refuse() {
    let grid = Grid::midpoint(0.0, 1.0, 20).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid.clone(), BasisOptions::default()).unwrap();
    let curves = simulate(Scenario::S1, &basis, 40, 2).unwrap().curves;
    let (mut built, mut refused) = (0, 0);
    let methods = [
        (MeanMethod::IclpRkhs, ClipNorm::CoefficientL1),
        (MeanMethod::IclpL1, ClipNorm::L2),
        (MeanMethod::IidLaplace, ClipNorm::L2),
        (MeanMethod::GaussianProcess, ClipNorm::L2),
        (MeanMethod::Bernstein, ClipNorm::Sup),
    ];
    for (method, norm) in methods {
        for tuning in [TuningMode::Private, TuningMode::PlugIn] {
            for eps in [1e-12, Epsilon::MAX] {
                // Below 2^-960 a bound is refused when it is made (its fixed-point scale would not be
                // representable); just above it, the mechanism builds and releases or refuses.
                assert!(ClippingBound::new(1e-300, norm).is_err());
                for bound in [1e-280, 10.0, 1e300] {
                    let mut request = MeanRequest::new(
                        method,
                        Stationary::matern32(0.1).unwrap(),
                        ClippingBound::new(bound, norm).unwrap(),
                        Epsilon::new(eps).unwrap(),
                    );
                    request.tuning = tuning;
                    request.delta = (method == MeanMethod::GaussianProcess).then(|| Delta::new(1e-6).unwrap());
                    let label = format!("{method:?} {tuning:?} eps {eps:e} bound {bound:e}");
                    let mechanism = request.build(&grid, 40);
                    // At a huge bound the plug-in ψ = (τ/(n ε))^η of ICLP-RKHS and the GP overflows:
                    // they refuse, naming the bound (not a ψ nobody gave). The other plug-in means
                    // build (IID Laplace and Bernstein, which have no ψ, were refused over it) and
                    // release finite values.
                    let plug_in_huge = tuning == TuningMode::PlugIn && bound == 1e300 && eps == Epsilon::MAX;
                    let overflows = matches!(method, MeanMethod::IclpRkhs | MeanMethod::GaussianProcess);
                    if plug_in_huge && overflows {
                        let Err(e) = &mechanism else { panic!("{label}: built") };
                        assert!(e.to_string().contains("invalid parameter bound = 1e300"), "{label}: {e}");
                    }
                    let released = built_then_released(&label, mechanism, &curves);
                    if plug_in_huge && !overflows {
                        let values = released.as_deref().unwrap_or_else(|| panic!("{label}: refused"));
                        assert!(values.iter().all(|v| v.is_finite()), "{label}");
                    }
                    if released.is_some() { built += 1 } else { refused += 1 }
                }
            }
        }
        // The plug-in sizes at and past their caps.
        let mut request = MeanRequest::new(
            method,
            Stationary::matern32(0.1).unwrap(),
            ClippingBound::new(1.0, norm).unwrap(),
            Epsilon::new(1.0).unwrap(),
        );
        request.tuning = TuningMode::PlugIn;
        request.delta = (method == MeanMethod::GaussianProcess).then(|| Delta::new(1e-6).unwrap());
        for (components, degree, psi) in [
            (Some(basis.len()), None, None),
            (Some(basis.len() + 1), None, None),
            (None, Some(1000), None),
            (None, Some(fdp::estimators::BernsteinMean::MAX_LATTICE), None),
            (None, Some(1 << 40), None),
            (None, None, Some(1e300)),
        ] {
            let request = MeanRequest { components, degree, psi, ..request.clone() };
            let label = format!("{method:?} components {components:?} degree {degree:?} psi {psi:?}");
            let ok = built_then_released(&label, request.build(&grid, 40), &curves).is_some();
            if ok { built += 1 } else { refused += 1 }
        }
    }
    assert!(built > 30 && refused > 10, "built {built}, refused {refused}");
}

#[test]
fn kde_requests_build_and_release_or_refuse() {
    let data: Vec<f64> = (0..60).map(|i| (i as f64 * 0.618) % 1.0).collect();
    let (mut built, mut refused) = (0, 0);
    for method in [KdeMethod::Iclp, KdeMethod::GaussianProcess, KdeMethod::IidLaplace, KdeMethod::Bernstein] {
        for eps in EPSILONS {
            for grid_points in [2, 50, MercerBasis::MAX_DENSE_POINTS + 1] {
                for bandwidth in [None, Some(1e-300), Some(1e300)] {
                    // A degree is Bernstein's only (another method refuses it: parameter_errors.rs).
                    let degrees =
                        if method == KdeMethod::Bernstein { vec![None, Some(10_000_000)] } else { vec![None] };
                    for degree in degrees {
                        let mut request = KdeRequest::new(method, (0.0, 1.0), Epsilon::new(eps).unwrap());
                        request.grid_points = grid_points;
                        request.bandwidth = bandwidth;
                        request.degree = degree;
                        request.delta = (method == KdeMethod::GaussianProcess).then(|| Delta::new(1e-6).unwrap());
                        let points = GridPoints::snap(&request.grid().unwrap(), &data).unwrap();
                        let label = format!("{method:?} eps {eps} K {grid_points} h {bandwidth:?} degree {degree:?}");
                        let ok = built_then_released(&label, request.build(60), &points).is_some();
                        if ok { built += 1 } else { refused += 1 }
                    }
                }
            }
        }
    }
    assert!(built > 20 && refused > 20, "built {built}, refused {refused}");
}

#[test]
fn kme_and_sketch_requests_build_and_release_or_refuse() {
    let data = PointSet::new(2, (0..120).map(|i| ((i * 37) % 101) as f64 / 101.0).collect()).unwrap();
    let (mut built, mut refused) = (0, 0);
    for eps in EPSILONS {
        for scale in [1e-300, 1.0, 1e300] {
            for synthetic_points in [1, 30, SyntheticSubspace::MAX_POINTS + 1] {
                for rho in [1e-3, 1.0, 1e3] {
                    let request = KmeRequest {
                        kernel: Stationary::gaussian(rho).unwrap(),
                        centre: vec![0.5, 0.5],
                        scale,
                        synthetic_points,
                        points_seed: 3,
                        epsilon: Epsilon::new(eps).unwrap(),
                        delta: Delta::new(1e-6).unwrap(),
                    };
                    let label = format!("kme eps {eps} scale {scale} M {synthetic_points} rho {rho}");
                    if built_then_released(&label, request.build(data.len()), &data).is_some() {
                        built += 1
                    } else {
                        refused += 1
                    }
                }
            }
        }
        for map in ["hist", "rff", "race"] {
            for size in [1, 10, FeatureMap::MAX_LEN / 2 + 1, FeatureMap::MAX_LEN + 1] {
                for width in [1e-300, 0.3, 1e300] {
                    let request = SketchRequest {
                        map: map.into(),
                        dim: 2,
                        size,
                        width,
                        buckets: 16,
                        map_seed: 1,
                        epsilon: Epsilon::new(eps).unwrap(),
                    };
                    let label = format!("{map} eps {eps} size {size} width {width}");
                    if built_then_released(&label, request.build(), &data).is_some() {
                        built += 1
                    } else {
                        refused += 1
                    }
                }
            }
        }
    }
    assert!(built > 20 && refused > 20, "built {built}, refused {refused}");
}

/// The Bernstein KDE's accuracy preview in closed form (`Π_axes Σ_j b_j(t)²` per grid point) is the
/// unit-vector sum it replaced (`Σ_j ||B_j||²`, O((k + 1)^{2d} K) operations), on a 2-D grid; and a
/// lattice past the cap is refused when built (a 2^40 Bernstein degree aborted on 8.8 TB).
#[test]
fn bernstein_accuracy_in_closed_form_and_lattice_caps() {
    use fdp::estimators::{BernsteinKde, BernsteinMean, CurveMechanism, MeanSetup, density_kernel};
    use fdp::mercer::StationaryShape;
    let grid = Grid::tensor(&Grid::midpoint(0.0, 1.0, 9).unwrap(), &Grid::midpoint(0.0, 2.0, 7).unwrap()).unwrap();
    let kernel = density_kernel(StationaryShape::Gaussian, 0.2, 2).unwrap();
    let kde = BernsteinKde::new(kernel, &grid, 50, Epsilon::new(1.0).unwrap(), 4).unwrap();
    let count = 25;
    let mut total = 0.0;
    for j in 0..count {
        let mut unit = vec![0.0; count];
        unit[j] = 1.0;
        let b = kde.estimate_curve(&unit).unwrap();
        total += b.iter().zip(grid.weights()).map(|(v, w)| w * v * v).sum::<f64>();
    }
    let direct = 2.0 * kde.noise().scale().powi(2) * total;
    let closed = kde.accuracy().expected_sq_error;
    assert!((closed - direct).abs() <= 1e-12 * direct, "{closed} vs {direct}");
    assert!(BernsteinKde::new(kernel, &grid, 50, Epsilon::new(1.0).unwrap(), 256).is_err(), "257² lattice values");
    let line = Grid::midpoint(0.0, 1.0, 20).unwrap();
    let setup = MeanSetup::new(10, Epsilon::new(1.0).unwrap(), ClippingBound::sup(1.0).unwrap()).unwrap();
    assert!(BernsteinMean::new(&line, setup.clone(), 1 << 40).is_err());
    assert!(BernsteinMean::new(&line, setup.clone(), BernsteinMean::MAX_LATTICE + 1).is_err());
    assert!(BernsteinMean::new(&line, setup, BernsteinMean::MAX_LATTICE).is_ok());
}

/// ERM's solves (the ridge system, every Newton step's Hessian) are Cholesky factorisations of
/// `Gram/n + ψ diag(λ^{-η})`, SPD in exact arithmetic: they are checked to succeed in f64 for every
/// dataset when the mechanism is built (a tiny ψ is refused there), never after the charge.
#[test]
fn erm_builds_and_releases_or_refuses() {
    use fdp::estimators::{ErmSetup, KernelErm, Labelled, Loss};
    use fdp::release::Regularisation;
    let grid = Grid::midpoint(0.0, 1.0, 60).unwrap();
    let options = BasisOptions::default().max_components(30);
    let basis = MercerBasis::build(Stationary::gaussian(0.05).unwrap(), grid.clone(), options).unwrap();
    // Five distinct inputs: a Gram matrix of rank 5 on 30 components, held up by the penalty alone.
    let x: Vec<f64> = (0..200).map(|i| (i % 5) as f64 / 5.0 + 0.1).collect();
    let y: Vec<f64> = x.iter().map(|t| if (t * 9.0).sin() > 0.0 { 1.0 } else { -1.0 }).collect();
    let data = Labelled::snap(&grid, &x, y).unwrap();
    let (mut built, mut refused) = (0, 0);
    for loss in [Loss::Squared { bound: 1.0 }, Loss::Logistic] {
        for psi in [1e-300, 1e-30, 1e-18, 1e-12, 1e-3, 1e3] {
            for eta in [0.5, 1.25, 3.0] {
                let setup = ErmSetup::new(loss, 200, Regularisation::new(eta, psi).unwrap()).unwrap();
                let label = format!("{loss:?} psi {psi} eta {eta}");
                let iclp = KernelErm::iclp(&basis, setup, Epsilon::new(1.0).unwrap());
                let gp =
                    KernelErm::gaussian_process(&basis, setup, Epsilon::new(1.0).unwrap(), Delta::new(1e-6).unwrap());
                for ok in [
                    built_then_released(&label, iclp, &data).is_some(),
                    built_then_released(&label, gp, &data).is_some(),
                ] {
                    if ok { built += 1 } else { refused += 1 }
                }
            }
        }
    }
    assert!(built > 10 && refused > 0, "built {built}, refused {refused}");
}

/// A count a user gives (grid points, synthetic points) is checked against its cap **before**
/// anything of that size is allocated: 2^62 grid points was a capacity-overflow panic, 10^9 an
/// 8 GB allocation that aborted the process (an independent fuzz of the doors found both).
#[test]
fn counts_are_refused_before_anything_of_their_size_is_allocated() {
    for k in [1usize << 28, 1_000_000_000, 1 << 62, usize::MAX] {
        assert!(Grid::midpoint(0.0, 1.0, k).unwrap_err().to_string().contains("grid points"), "{k}");
        assert!(Grid::trapezoid(0.0, 1.0, k).is_err(), "{k}");
    }
    for method in [KdeMethod::Iclp, KdeMethod::GaussianProcess, KdeMethod::IidLaplace] {
        let mut request = KdeRequest::new(method, (0.0, 1.0), Epsilon::new(1.0).unwrap());
        request.grid_points = 100_000_000;
        request.delta = (method == KdeMethod::GaussianProcess).then(|| Delta::new(1e-6).unwrap());
        assert!(request.build(100).err().unwrap().to_string().contains("grid_points"), "{method:?}");
    }
    let synthetic =
        SyntheticSubspace::from_wide_gaussian(Stationary::gaussian(0.3).unwrap(), &[0.5, 0.5], 0.3, 1_000_000_000, 1);
    assert!(synthetic.err().unwrap().to_string().contains("synthetic points"));
}
