//! The public frame at the front door (issue 23): a public range of the values gives the centre, the
//! ceiling in the mechanism's norm and the clamp, so a curator never derives a coefficient-l1 bound
//! by hand.

use fdp::data::CurveSet;
use fdp::estimators::frame::ceiling_from_range;
use fdp::front::{MeanMethod, MeanRequest, TuningMode};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::prelude::*;
use fdp::release::ClipNorm;

/// Growth-like curves: heights between 75 and 180 cm over ages 1-18 (mapped to [0, 1]).
fn heights(n: usize) -> CurveSet<'static> {
    let grid = Grid::trapezoid(0.0, 1.0, 31).unwrap();
    let values: Vec<f64> = (0..n)
        .flat_map(|r| {
            let offset = ((r as f64) * 0.618_033_988_75).fract() * 20.0 - 10.0;
            (0..31).map(move |i| 80.0 + 90.0 * (i as f64 / 30.0).sqrt() + offset)
        })
        .collect();
    CurveSet::from_flat(grid, values, None).unwrap().0
}

#[test]
fn a_range_gives_the_centre_the_ceiling_and_the_clamp() -> Result<(), Box<dyn std::error::Error>> {
    let curves = heights(40);
    let kernel = Stationary::matern32(0.1)?;
    let eps = Epsilon::new(0.25)?;
    for method in [MeanMethod::IclpRkhs, MeanMethod::IidLaplace, MeanMethod::Bernstein] {
        let request = MeanRequest::in_range(method, kernel, (40.0, 210.0), eps);
        assert_eq!(request.effective_centre(), Some(125.0));
        let mechanism = request.build(curves.grid(), curves.n())?;
        // The same release as the one built with the derived ceiling and centre by hand (at n ε = 10
        // the bound's share is 0: both release at the ceiling, so the wider search does not enter).
        let basis = MercerBasis::build(kernel, curves.grid().clone(), BasisOptions::default())?;
        let ceiling = ceiling_from_range(method.norm(), &basis, 40.0, 210.0, Some(125.0))?;
        let by_hand = MeanRequest {
            centre: Some(125.0),
            range: Some((40.0, 210.0)),
            ..MeanRequest::new(method, kernel, ceiling, eps)
        }
        .build(curves.grid(), curves.n())?;
        let mut session = Session::pure(eps)?.with_seed(5);
        let release = session.release(&mechanism, &curves)?;
        let again = Session::pure(eps)?.with_seed(5).release(&by_hand, &curves)?;
        assert_eq!(release.curve(), again.curve(), "{method:?}");
        assert!(release.curve().iter().all(|v| (40.0..=210.0).contains(v)), "{method:?}: left the range");
        let stages = &release.metadata().stages;
        assert!(stages.iter().any(|s| s.stage == "range"), "{method:?}: no range stage");
        assert_eq!(session.spent().0, 0.25);
    }
    Ok(())
}

#[test]
fn a_request_needs_a_bound_or_a_range_and_a_range_needs_private_tuning() -> Result<(), Box<dyn std::error::Error>> {
    let curves = heights(20);
    let kernel = Stationary::matern32(0.1)?;
    let eps = Epsilon::new(1.0)?;
    let neither = MeanRequest {
        bound: None,
        range: None,
        ..MeanRequest::in_range(MeanMethod::IclpRkhs, kernel, (0.0, 1.0), eps)
    };
    let err = neither.build(curves.grid(), curves.n()).unwrap_err().to_string();
    assert!(err.contains("bound") && err.contains("range"), "{err}");
    let plug_in = MeanRequest {
        tuning: TuningMode::PlugIn,
        ..MeanRequest::in_range(MeanMethod::IclpRkhs, kernel, (40.0, 210.0), eps)
    };
    assert!(plug_in.build(curves.grid(), curves.n()).unwrap_err().to_string().contains("plug-in"));
    for (range, centre) in [((1.0, 1.0), None), ((2.0, 1.0), None), ((0.0, 1.0), Some(3.0))] {
        let request = MeanRequest { centre, ..MeanRequest::in_range(MeanMethod::IclpRkhs, kernel, range, eps) };
        assert!(request.build(curves.grid(), curves.n()).is_err(), "{range:?} {centre:?}");
    }
    // Norms: the method's table.
    assert_eq!(MeanMethod::IclpRkhs.norm(), ClipNorm::CoefficientL1);
    assert_eq!(MeanMethod::GaussianProcess.norm(), ClipNorm::L2);
    assert_eq!(MeanMethod::Bernstein.norm(), ClipNorm::Sup);
    Ok(())
}

/// The grid rule every door shares: a 1-D grid goes onto [0, 1] (ends to 0 and 1, weights scaled),
/// a grid already there or of one point stays as it is.
#[test]
fn one_grid_rule_maps_every_curve_grid_onto_the_unit_interval() {
    use fdp::front::{on_unit_interval, unit_grid};
    let ages = Grid::trapezoid_points((0..31).map(|i| 1.0 + 17.0 * i as f64 / 30.0).collect()).unwrap();
    let unit = unit_grid(&ages).unwrap();
    assert_eq!((unit.points()[0], unit.points()[30]), (0.0, 1.0));
    assert!((unit.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let already = Grid::trapezoid(0.0, 1.0, 11).unwrap();
    assert_eq!(unit_grid(&already).unwrap(), already);
    let single = Grid::with_weights(vec![5.0], vec![1.0]).unwrap();
    assert_eq!(unit_grid(&single).unwrap(), single);
    let curves = CurveSet::from_flat(ages, vec![1.0; 2 * 31], None).unwrap().0;
    let mapped = on_unit_interval(&curves).unwrap();
    assert_eq!(mapped.grid(), &unit);
    assert_eq!(mapped.values(), curves.values());
}

/// Each ledger entry says what its own stage released: the free post-processing records between
/// the charged stages (`family` when the binned family is a candidate, `tuning`, ...) do not shift
/// the labels (they were paired by position: the release's entry read "family: ...").
#[test]
fn each_ledger_entry_describes_its_own_stage() -> Result<(), Box<dyn std::error::Error>> {
    let curves = heights(150);
    let eps = Epsilon::new(1.0)?;
    let mechanism = MeanRequest::in_range(MeanMethod::IclpRkhs, Stationary::matern32(0.1)?, (40.0, 210.0), eps)
        .build(curves.grid(), curves.n())?;
    let mut session = Session::pure(eps)?.with_seed(2);
    let release = session.release(&mechanism, &curves)?;
    let records: Vec<&str> = release.metadata().stages.iter().map(|s| s.stage.as_str()).collect();
    assert!(records.contains(&"family"), "a record between the charged stages: {records:?}");
    let entries = session.ledger();
    assert_eq!(entries.len(), 2);
    assert!(entries[0].released.starts_with("bound: "), "{}", entries[0].released);
    assert!(entries[1].released.starts_with("release: "), "{}", entries[1].released);
    Ok(())
}
