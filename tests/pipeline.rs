//! End to end through the facade: simulate, release with every mean mechanism, write a report.

use fdp::data::{Scenario, simulate};
use fdp::estimators::{BasisMean, BernsteinMean, MeanMechanism, MeanSetup, PlugIn};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::release::Charge;
use fdp::report::{CurveFigure, PALETTE, ReportDir, Series};

#[test]
fn simulate_release_and_report() -> Result<(), Box<dyn std::error::Error>> {
    let grid = Grid::midpoint(0.0, 1.0, 60)?;
    let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid.clone(), BasisOptions::default())?;
    let (n, eps) = (150, 1.0);
    let sim = simulate(Scenario::S2, &basis, n, 11)?;
    let bounds = Scenario::S2.design_bounds(&basis)?;
    let l1 = MeanSetup::new(n, Epsilon::new(eps)?, ClippingBound::coefficient_l1(bounds.coefficient_l1)?)?;
    let plug = PlugIn::new(&basis, &l1)?;
    let l2 = l1.clone().with_bound(ClippingBound::l2(bounds.l2)?)?;
    let mechanisms: Vec<Box<dyn MeanMechanism>> = vec![
        Box::new(BasisMean::iclp_rkhs(&basis, l1.clone(), plug.rkhs)?),
        Box::new(BasisMean::iclp_l1(&basis, l2.clone(), plug.l1)?),
        Box::new(BasisMean::iid_laplace(&basis, l2.clone(), plug.iid_components)?),
        Box::new(BasisMean::gaussian_process(&basis, l2, plug.rkhs, Delta::new(1e-5)?)?),
        Box::new(BernsteinMean::new(&grid, l1.with_bound(ClippingBound::sup(bounds.sup)?)?, 10)?),
    ];
    let mut rng = NoiseRng::seeded(3);
    let mut series = Vec::new();
    for (m, color) in mechanisms.iter().zip(PALETTE) {
        let release = m.release(&sim.curves, &mut rng, Charge::unaccounted())?;
        assert_eq!(release.curve().len(), grid.len());
        assert!(release.curve().iter().all(|v| v.is_finite()), "{}", m.name());
        series.push(Series::from_release(m.name(), &release, color));
    }
    let dir = ReportDir::create(std::env::temp_dir().join(format!("fdp-pipeline-{}", std::process::id())))?;
    let figure = CurveFigure {
        title: "all mechanisms".into(),
        x_label: "t".into(),
        y_label: "mean".into(),
        grid: grid.points().to_vec(),
        background: vec![],
        series,
    };
    figure.write_svg(&dir.file("all.svg"), 800, 500)?;
    assert!(std::fs::metadata(dir.file("all.svg"))?.len() > 1000);
    std::fs::remove_dir_all(dir.path()).ok();
    Ok(())
}
