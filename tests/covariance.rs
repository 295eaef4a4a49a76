//! The private covariance operator (issue 25) from outside the crate: a black-box audit at its
//! total ε through a Session's mechanism trait, and FPCA of a release on the simulated scenarios.

use fdp::audit::{AuditConfig, Auditor, NeighbourPair};
use fdp::data::{CurveSet, Scenario, simulate};
use fdp::estimators::{MeanSetup, PrivateCovariance};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;

fn basis() -> MercerBasis {
    MercerBasis::build(
        Stationary::matern32(0.2).unwrap(),
        Grid::midpoint(0.0, 1.0, 40).unwrap(),
        BasisOptions::default(),
    )
    .unwrap()
}

/// `curves` with record 0 replaced by the curve with leading coefficients `x`.
fn neighbour(basis: &MercerBasis, curves: &CurveSet, x: &[f64]) -> CurveSet<'static> {
    let record = basis.truncated(x.len()).unwrap().synthesize(x).unwrap();
    let mut values = curves.values().to_vec();
    values[..record.len()].copy_from_slice(&record);
    CurveSet::from_flat(curves.grid().clone(), values, None).unwrap().0
}

#[test]
fn the_private_covariance_passes_a_black_box_audit_at_its_total_epsilon() {
    let basis = basis();
    let n = 60;
    let curves = simulate(Scenario::S2, &basis, n, 5).unwrap().curves;
    let tau = 2.0;
    let setup = MeanSetup::new(n, Epsilon::new(1.0).unwrap(), ClippingBound::l2(tau).unwrap()).unwrap();
    let mechanism = PrivateCovariance::laplace(&basis, setup, 3).unwrap();
    let s = tau / 3f64.sqrt();
    let pairs = [
        ([tau, 0.0, 0.0], [-0.5 * tau, 0.866 * tau, 0.0]),
        ([s, s, s], [-s, -s, -s]),
        ([s, s, s], [0.0; 3]),
        ([s, -s, s], [s, s, -s]),
    ];
    let audit_pairs = pairs
        .iter()
        .enumerate()
        .map(|(i, (a, b))| {
            let (da, db) = (neighbour(&basis, &curves, a), neighbour(&basis, &curves, b));
            NeighbourPair::from_mechanism(format!("pair {i}"), &mechanism, &da, &db).unwrap()
        })
        .collect();
    let config = AuditConfig { pilot: 400, trials: 1500, confidence: 0.99 };
    let report = Auditor::new(config).unwrap().audit(1.0, 0.0, audit_pairs, &mut NoiseRng::seeded(12));
    eprintln!("audit mechanism=private_covariance_laplace eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
    assert!(report.passed);

    // Through a session: one ledger entry at the total ε, the FPCA of the release is finite.
    let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(3);
    let release = session.release(&mechanism, &curves).unwrap();
    assert_eq!(session.ledger().len(), 1);
    assert!(session.remaining().0 < 1e-12);
    assert!(release.to_json().unwrap().contains("private_covariance_laplace"));
    let fpca = release.output().fpca(2).unwrap();
    assert!(fpca.eigenvalues().iter().all(|v| v.is_finite() && *v >= 0.0));
}
