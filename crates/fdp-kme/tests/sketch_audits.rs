//! Audits of the private sketches under add/remove neighbours, through the one Mechanism trait, and
//! of a sketch calibrated for a larger ε than it claims.

use fdp_audit::{AuditConfig, Auditor, NeighbourPair};
use fdp_kme::{FeatureMap, PointSet, PrivateSketch};
use fdp_noise::{Epsilon, NoiseRng};

/// Many thousands of draws for statistics: variable-time sampling for this whole test process (the
/// same draws as the padded samplers releases use; docs/DESIGN.md section 15.5).
fn simulation() {
    fdp_noise::timing::allow_variable_time_for_simulation();
}

/// 40 points, and the same with one more record at (0.95, 0.95).
fn neighbours() -> (PointSet, PointSet) {
    let base: Vec<f64> = (0..40).map(|i| (i % 10) as f64 / 10.0).collect();
    (PointSet::new(2, [base.clone(), vec![0.95, 0.95]].concat()).unwrap(), PointSet::new(2, base).unwrap())
}

fn audit(sketch: &PrivateSketch, seed: u64) -> fdp_audit::AuditReport {
    let (with, without) = neighbours();
    let pair = NeighbourPair::from_mechanism("add one record", sketch, &with, &without).unwrap();
    Auditor::new(AuditConfig::default()).unwrap().audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(seed))
}

#[test]
fn every_sketch_passes_its_audit() {
    simulation();
    let maps = [
        FeatureMap::rff(2, 6, 0.3, 1).unwrap(),
        FeatureMap::race(2, 6, 4, 0.5, 2).unwrap(),
        FeatureMap::hist(2, 5).unwrap(),
    ];
    for (i, map) in maps.into_iter().enumerate() {
        let sketch = PrivateSketch::new(map, Epsilon::new(1.0).unwrap()).unwrap();
        let report = audit(&sketch, 10 + i as u64);
        eprintln!(
            "audit mechanism={} eps_lb={:.3} claimed=1",
            fdp_core::Mechanism::name(&sketch),
            report.epsilon_lower_bound
        );
        assert!(report.passed);
    }
}

#[test]
fn a_sketch_calibrated_for_a_larger_epsilon_fails() {
    simulation();
    // Built for ε = 2.5 but claimed at ε = 1: one record adds a one to each of the d = 2 marginal
    // histograms, and the noise is 2.5 times too small for the claim.
    let cheat = PrivateSketch::new(FeatureMap::hist(2, 5).unwrap(), Epsilon::new(2.5).unwrap()).unwrap();
    let report = audit(&cheat, 2);
    eprintln!("audit mechanism=hist_sketch_under_noised eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
    assert!(!report.passed);
}
