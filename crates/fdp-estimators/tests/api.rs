//! Parameter validation, bad records, release contents, the closed-form noise level, and PCV.

mod common;

use common::{basis, in_norm};
use fdp_core::Charge;
use fdp_data::{CurveSet, Scenario, simulate};
use fdp_estimators::{
    BasisMean, BernsteinMean, EstimatorError, MeanMechanism, MeanSetup, Mechanism, PlugIn, private_cross_validation,
};
use fdp_estimators::{ClipNorm, ClippingBound, CurveReleaseExt, Regularisation};
use fdp_mercer::Grid;
use fdp_noise::{Delta, Epsilon};
use fdp_noise::{NoiseError, NoiseRng};

#[test]
fn bad_parameters_are_errors() {
    let b = basis(40, 0.1);
    for (n, eps, tau) in [
        (0, 1.0, 1.0),
        (10, 0.0, 1.0),
        (10, -1.0, 1.0),
        (10, f64::NAN, 1.0),
        (10, f64::INFINITY, 1.0),
        (10, 1.0, 0.0),
        (10, 1.0, f64::NAN),
    ] {
        let setup =
            Epsilon::new(eps).map_err(EstimatorError::from).and_then(|e| MeanSetup::new(n, e, ClippingBound::l2(tau)?));
        assert!(setup.is_err(), "n={n} ε={eps} τ={tau}");
    }
    let setup = MeanSetup::new(10, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(1.0).unwrap()).unwrap();
    let l2 = setup.clone().with_bound(ClippingBound::l2(1.0).unwrap()).unwrap();
    assert!(matches!(Regularisation::new(0.0, 1e-3), Err(EstimatorError::BadParameter { name: "eta", .. })));
    assert!(matches!(Regularisation::new(1.2, -1.0), Err(EstimatorError::BadParameter { name: "psi", .. })));
    let reg = |eta, psi| Regularisation::new(eta, psi).unwrap();
    // A bound in the wrong norm cannot be used.
    assert!(matches!(BasisMean::iclp_l1(&b, setup.clone(), reg(3.0, 1e-3)), Err(EstimatorError::WrongNorm { .. })));
    assert!(matches!(BernsteinMean::new(b.grid(), l2.clone(), 4), Err(EstimatorError::WrongNorm { .. })));
    assert!(BasisMean::iclp_l1(&b, l2.clone(), reg(3.0, 1e9)).is_err(), "ψ that zeroes every component");
    assert!(BasisMean::iid_laplace(&b, l2.clone(), 0).is_err());
    assert!(BasisMean::iid_laplace(&b, l2.clone(), b.len() + 1).is_err());
    for delta in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(matches!(Delta::new(delta), Err(NoiseError::BadDelta(_))));
    }
    let sup = setup.clone().with_bound(ClippingBound::sup(1.0).unwrap()).unwrap();
    assert!(BernsteinMean::new(b.grid(), sup, 0).is_err());
    assert!(setup.clone().centred_at(vec![f64::NAN; 40]).is_err());
    let wrong_ref = setup.clone().centred_at(vec![0.0; 3]).unwrap();
    assert!(BasisMean::iclp_rkhs(&b, wrong_ref, reg(1.2, 1e-3)).is_err());
    assert!(MeanSetup::new(0, Epsilon::new(1.0).unwrap(), ClippingBound::l2(1.0).unwrap()).is_err());
}

#[test]
fn shapes_are_checked_and_bad_records_never_panic_or_change_n() {
    let b = basis(40, 0.1);
    let m = BasisMean::iclp_rkhs(
        &b,
        MeanSetup::new(5, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(1.0).unwrap()).unwrap(),
        Regularisation::new(1.25, 1e-3).unwrap(),
    )
    .unwrap();
    let mut rng = NoiseRng::seeded(1);
    // Every kind of bad record: all NaN, infinities, huge values, partial gaps.
    let k = b.n_points();
    let mut rows = vec![vec![f64::NAN; k], vec![f64::INFINITY; k], vec![f64::MAX; k], vec![0.5; k], vec![-1e308; k]];
    rows[3][7] = f64::NAN;
    let (curves, report) = CurveSet::from_rows(b.grid().clone(), &rows, None).unwrap();
    assert_eq!((curves.n(), report.defaulted), (5, 2));
    let release = m.release(&curves, &mut rng, Charge::unaccounted()).unwrap();
    assert!(release.curve().iter().all(|v| v.is_finite()));
    // Records whose projections overflow are clipped to the centre, never turned into NaN.
    let summary = m.summarize(&curves).unwrap();
    assert!(summary.iter().all(|v| v.is_finite()));
    let l1: f64 = summary.iter().map(|v| v.abs()).sum();
    assert!(l1 <= 5.0 * 1.0 / 5.0 + 1e-9, "each of 5 records contributes at most τ/n in l1: {l1}");
    // n and the grid are public and checked.
    let (four, _) = CurveSet::from_rows(b.grid().clone(), &rows[..4], None).unwrap();
    assert!(matches!(m.release(&four, &mut rng, Charge::unaccounted()), Err(EstimatorError::Shape { .. })));
    let other = CurveSet::from_rows(Grid::midpoint(0.0, 2.0, k).unwrap(), &rows, None).unwrap().0;
    assert!(matches!(m.release(&other, &mut rng, Charge::unaccounted()), Err(EstimatorError::GridMismatch)));
}

#[test]
fn releases_carry_metadata_and_evaluate_off_the_grid() {
    let b = basis(60, 0.1);
    let sim = simulate(Scenario::S1, &b, 200, 3).unwrap();
    let tau = Scenario::S1.design_bounds(&b).unwrap();
    let reference = vec![0.5; 60];
    let bound = ClippingBound::coefficient_l1(tau.coefficient_l1).unwrap();
    let setup = MeanSetup::new(200, Epsilon::new(1.0).unwrap(), bound).unwrap().centred_at(reference).unwrap();
    let p = PlugIn::new(&b, &setup).unwrap();
    let m = BasisMean::iclp_rkhs(&b, in_norm(&setup, ClipNorm::CoefficientL1), p.rkhs).unwrap();
    let release = m.release(&sim.curves, &mut NoiseRng::seeded(8), Charge::unaccounted()).unwrap();
    let meta = release.metadata();
    assert_eq!(
        (meta.mechanism.as_str(), meta.n, meta.guarantee.epsilon(), meta.guarantee.delta()),
        ("iclp_rkhs", Some(200), 1.0, 0.0)
    );
    assert!(meta.rng.is_seeded() && meta.centred && meta.tuning == fdp_estimators::Tuning::PlugIn);
    let json = release.to_json().unwrap();
    for key in [
        "\"mechanism\"",
        "\"ReplaceOne\"",
        "\"sensitivity\"",
        "\"clipping\"",
        "\"CoefficientL1\"",
        "\"psi\"",
        "\"eta\"",
        "\"FixedSeed\"",
        "\"matern32\"",
        "\"curve\"",
    ] {
        assert!(json.contains(key), "release.json lacks {key}");
    }
    // Off-grid evaluation reproduces the grid values (Nyström extension + interpolated reference).
    let at = release.evaluate(b.grid().points()).unwrap();
    let worst = at.iter().zip(release.curve()).map(|(a, c)| (a - c).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-6, "off-grid evaluation differs by {worst}");
    // The same for Bernstein.
    let bern = BernsteinMean::new(b.grid(), in_norm(&setup, ClipNorm::Sup), 12).unwrap();
    let r = bern.release(&sim.curves, &mut NoiseRng::from_os().unwrap(), Charge::unaccounted()).unwrap();
    assert!(!r.metadata().rng.is_seeded());
    let at = r.evaluate(b.grid().points()).unwrap();
    assert!(at.iter().zip(r.curve()).all(|(a, c)| (a - c).abs() < 1e-9));
    assert!(r.evaluate(&[f64::NAN]).is_err());
}

#[test]
fn closed_form_noise_level_matches_sampled_releases() {
    // A statistical test (many releases): variable-time sampling for this test process, the same
    // draws as the padded default (docs/DESIGN.md 15.5).
    fdp_noise::timing::allow_variable_time_for_simulation();
    let b = basis(50, 0.1);
    let sim = simulate(Scenario::S2, &b, 100, 5).unwrap();
    let setup = MeanSetup::new(100, Epsilon::new(0.5).unwrap(), ClippingBound::l2(5.0).unwrap()).unwrap();
    let mechanisms: Vec<Box<dyn MeanMechanism>> = vec![
        Box::new(
            BasisMean::iclp_rkhs(
                &b,
                in_norm(&setup, ClipNorm::CoefficientL1),
                Regularisation::new(1.25, 1e-3).unwrap(),
            )
            .unwrap(),
        ),
        Box::new(
            BasisMean::iclp_l1(&b, in_norm(&setup, ClipNorm::L2), Regularisation::new(3.0, 1e-2).unwrap()).unwrap(),
        ),
        Box::new(BasisMean::iid_laplace(&b, in_norm(&setup, ClipNorm::L2), 6).unwrap()),
        Box::new(
            BasisMean::gaussian_process(
                &b,
                setup.clone(),
                Regularisation::new(1.25, 1e-3).unwrap(),
                Delta::new(1e-5).unwrap(),
            )
            .unwrap(),
        ),
        Box::new(BernsteinMean::new(b.grid(), in_norm(&setup, ClipNorm::Sup), 8).unwrap()),
    ];
    let mut rng = NoiseRng::seeded(77);
    for m in &mechanisms {
        let s = m.summarize(&sim.curves).unwrap();
        let est = m.estimate_curve(&s).unwrap();
        let draws = 3000;
        let sq: Vec<f64> = (0..draws)
            .map(|_| {
                let r = m.privatize(&s, &mut rng, Charge::unaccounted()).unwrap();
                let d: Vec<f64> = r.curve().iter().zip(&est).map(|(a, b)| a - b).collect();
                b.grid().inner(&d, &d).unwrap()
            })
            .collect();
        let mean = sq.iter().sum::<f64>() / draws as f64;
        let se = (sq.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (draws - 1) as f64 / draws as f64).sqrt();
        let expected = m.expected_noise_sq();
        assert!((mean - expected).abs() < 5.0 * se, "{}: sampled {mean} vs closed form {expected} (se {se})", m.name());
    }
}

#[test]
fn pcv_prefers_a_sensible_psi_and_validates_folds() {
    let b = basis(50, 0.1);
    let sim = simulate(Scenario::S3, &b, 300, 9).unwrap();
    let tau = Scenario::S3.design_bounds(&b).unwrap().coefficient_l1;
    let build = |psi: f64, n: usize| -> fdp_estimators::Result<Box<dyn MeanMechanism>> {
        let setup = MeanSetup::new(n, Epsilon::new(1.0)?, ClippingBound::l2(tau)?)?
            .tuned_by(fdp_estimators::Tuning::CrossValidated);
        Ok(Box::new(BasisMean::iclp_rkhs(
            &b,
            in_norm(&setup, ClipNorm::CoefficientL1),
            Regularisation::new(1.25, psi)?,
        )?))
    };
    let candidates = [1e-7, 1e-5, 1e-3, 1e-1, 10.0];
    let choice = private_cross_validation(&sim.curves, 5, &candidates, build).unwrap();
    // The extremes are dominated by noise (ψ → 0) or bias (ψ large).
    assert!(choice.chosen > 1e-7 && choice.chosen < 10.0, "{choice:?}");
    assert_eq!(choice.errors.len(), candidates.len());
    assert!(private_cross_validation(&sim.curves, 1, &candidates, build).is_err());
    assert!(private_cross_validation(&sim.curves, 5, &[], build).is_err());
}

/// Each plug-in rule is its own function: at a bound so large that the RKHS rule's ψ = (τ/(n ε))^η
/// overflows, the methods that use it are refused naming the bound (not "psi = inf"), a ψ given by
/// the caller is used, and ICLP-l1 and IID Laplace, whose rules stay finite, are unaffected.
#[test]
fn a_plug_in_rule_that_overflows_stops_only_its_methods() {
    let b = basis(30, 0.1);
    let setup = MeanSetup::new(40, Epsilon::new(1.0).unwrap(), ClippingBound::l2(1e300).unwrap()).unwrap();
    let err = PlugIn::rkhs_for(&b, &setup, None).unwrap_err().to_string();
    assert!(err.contains("invalid parameter bound = 1e300") && err.contains("give psi"), "{err}");
    assert!(PlugIn::new(&b, &setup).is_err());
    assert_eq!(PlugIn::rkhs_for(&b, &setup, Some(0.5)).unwrap().psi(), 0.5);
    assert!(PlugIn::l1_for(&b, &setup, None).unwrap().psi().is_finite());
    assert_eq!(PlugIn::iid_components_for(&b, 40), 3);
    assert!(BasisMean::iid_laplace(&b, setup, PlugIn::iid_components_for(&b, 40)).is_ok());
}
