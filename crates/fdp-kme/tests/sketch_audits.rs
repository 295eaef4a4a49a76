//! Audits of the private sketch under add/remove neighbours, and of a miscalibrated variant.

use fdp_audit::{AuditConfig, Auditor, NeighbourPair};
use fdp_kme::sketch::noisy_parts;
use fdp_kme::{FeatureMap, PointSet};
use fdp_noise::vector::LaplaceVector;
use fdp_noise::{Epsilon, NoiseRng, Sensitivity};

#[test]
fn rff_and_race_sketches_pass_their_audits() {
    let maps = [FeatureMap::rff(2, 6, 0.3, 1).unwrap(), FeatureMap::race(2, 6, 4, 0.5, 2).unwrap()];
    let base: Vec<f64> = (0..40).map(|i| (i % 10) as f64 / 10.0).collect();
    let with = PointSet::new(2, [base.clone(), vec![0.95, 0.95]].concat()).unwrap();
    let without = PointSet::new(2, base).unwrap();
    let auditor = Auditor::new(AuditConfig::default()).unwrap();
    for (i, map) in maps.iter().enumerate() {
        let (sa, sb) = (map.feature_sum(&with).unwrap(), map.feature_sum(&without).unwrap());
        let (na, nb) = (with.len(), without.len());
        let pair = NeighbourPair::new(
            "add one record",
            move |r: &mut NoiseRng| {
                let (v, c) = noisy_parts(map, &sa, na, 1.0, r).unwrap();
                [v, vec![c]].concat()
            },
            move |r: &mut NoiseRng| {
                let (v, c) = noisy_parts(map, &sb, nb, 1.0, r).unwrap();
                [v, vec![c]].concat()
            },
        );
        let report = auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(10 + i as u64));
        eprintln!("audit mechanism=sketch_{i} eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
        assert!(report.passed);
    }
}

#[test]
fn sketch_passes_its_audit_and_an_under_noised_one_fails() {
    let map = FeatureMap::hist(2, 5).unwrap();
    let base: Vec<f64> = (0..40).map(|i| (i % 10) as f64 / 10.0).collect();
    let with = PointSet::new(2, [base.clone(), vec![0.95, 0.95]].concat()).unwrap();
    let without = PointSet::new(2, base).unwrap();
    let (sa, sb) = (map.feature_sum(&with).unwrap(), map.feature_sum(&without).unwrap());
    let (na, nb) = (with.len(), without.len());
    let output = |parts: (Vec<f64>, f64)| [parts.0, vec![parts.1]].concat();
    let honest = {
        let (m1, m2, sa, sb) = (&map, &map, sa.clone(), sb.clone());
        NeighbourPair::new(
            "add one record",
            move |r: &mut NoiseRng| output(noisy_parts(m1, &sa, na, 1.0, r).unwrap()),
            move |r: &mut NoiseRng| output(noisy_parts(m2, &sb, nb, 1.0, r).unwrap()),
        )
    };
    let auditor = Auditor::new(AuditConfig::default()).unwrap();
    let report = auditor.audit(1.0, 0.0, vec![honest], &mut NoiseRng::seeded(1));
    eprintln!("audit mechanism=hist_sketch eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
    assert!(report.passed);
    // Calibrated to Δ₁ = 1 instead of the histogram's Δ₁ = d = 2 (one record adds a one in each of
    // the d marginal histograms), and with no share of ε left for the count.
    let cheat = LaplaceVector::new(map.len(), Sensitivity::new(1.0).unwrap(), Epsilon::new(1.0).unwrap()).unwrap();
    let pair = NeighbourPair::new(
        "add one record",
        move |r: &mut NoiseRng| cheat.release(&sa, r).unwrap(),
        move |r: &mut NoiseRng| cheat.release(&sb, r).unwrap(),
    );
    let report = auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(2));
    eprintln!("audit mechanism=hist_sketch_under_noised eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
    assert!(!report.passed);
}
