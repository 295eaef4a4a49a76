//! The sparse default (issue 25) from outside the crate: a black-box audit of `SparseBinnedMean` at
//! its total ε (n = 10, where one record moves the release most), and its stages through a Session;
//! the same audit of the sparse covariance (`SparseCovariance`).

use fdp::audit::{AuditConfig, Auditor, NeighbourPair};
use fdp::data::SparseCurves;
use fdp::estimators::{Mechanism, SparseBinnedMean, SparseCovariance, SparseFrame};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;

/// n sparse records of 2-5 points each, with record 0 replaced by `first`.
fn data(n: usize, first: (Vec<f64>, Vec<f64>)) -> SparseCurves {
    let mut records: Vec<(Vec<f64>, Vec<f64>)> = (0..n)
        .map(|i| {
            let t: Vec<f64> = (0..2 + i % 4).map(|j| ((i * 5 + j * 9) % 20) as f64 / 20.0 + 0.02).collect();
            let y = t.iter().map(|t| 0.5 + 0.1 * (4.0 * t).cos()).collect();
            (t, y)
        })
        .collect();
    records[0] = first;
    SparseCurves::new((0.0, 1.0), &records).unwrap()
}

/// The audits' records: n = 10 on a 20-point Matérn 3/2 (ρ = 0.2) basis over [0, 1].
const N: usize = 10;

fn audit_basis() -> (MercerBasis, SparseFrame) {
    let basis = MercerBasis::build(
        Stationary::matern32(0.2).unwrap(),
        Grid::midpoint(0.0, 1.0, 20).unwrap(),
        BasisOptions::default(),
    )
    .unwrap();
    let frame = SparseFrame::new(basis.grid(), (0.0, 1.0)).unwrap();
    (basis, frame)
}

/// Neighbouring datasets differing in record 0: one point at each end at the range's edges, many
/// points at one time at opposite edges, and a record against an empty one.
fn audit_datasets() -> Vec<(SparseCurves, SparseCurves)> {
    let pairs = [
        ((vec![0.0], vec![1.0]), (vec![1.0], vec![0.0])),
        ((vec![0.5; 30], vec![1.0; 30]), (vec![0.5; 30], vec![0.0; 30])),
        ((vec![0.0, 0.05], vec![1.0, 1.0]), (vec![], vec![])),
    ];
    pairs.into_iter().map(|(a, b)| (data(N, a), data(N, b))).collect()
}

/// The black-box audit of `mechanism` at ε = 1 on `datasets`; asserts it passes and has power (the
/// pairs are seen to differ: a claim of ε = 0.01 would fail). The exact-loss tests (fdp-estimators'
/// sparse tests, privacy_edges) are the tight check.
fn audit_at_epsilon_one<M>(name: &str, mechanism: &M, datasets: &[(SparseCurves, SparseCurves)], seed: u64)
where
    M: Mechanism<SparseCurves>,
{
    fdp::noise::timing::allow_variable_time_for_simulation();
    let audit_pairs = datasets
        .iter()
        .enumerate()
        .map(|(i, (a, b))| NeighbourPair::from_mechanism(format!("pair {i}"), mechanism, a, b).unwrap())
        .collect();
    let config = AuditConfig { pilot: 1000, trials: 4000, confidence: 0.99 };
    let report = Auditor::new(config).unwrap().audit(1.0, 0.0, audit_pairs, &mut NoiseRng::seeded(seed));
    eprintln!("audit mechanism={name} eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
    assert!(report.passed);
    assert!(report.epsilon_lower_bound > 0.01, "the audit has no power on these pairs: {}", report.epsilon_lower_bound);
}

#[test]
fn the_sparse_default_passes_a_black_box_audit_at_its_total_epsilon() {
    let (basis, frame) = audit_basis();
    let mechanism = SparseBinnedMean::new(&basis, N, Epsilon::new(1.0).unwrap(), frame).unwrap();
    let datasets = audit_datasets();
    audit_at_epsilon_one("sparse_binned_mean", &mechanism, &datasets, 21);

    // Through a session: one ledger entry per stage, summing to the total ε.
    let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(3);
    let stages = mechanism.stages();
    let release = session.release(&mechanism, &datasets[0].0).unwrap();
    assert_eq!(session.ledger().len(), stages.len());
    assert!(session.remaining().0 < 1e-12);
    assert!(release.curve().iter().all(|v| (0.0..=1.0).contains(v)));
}

#[test]
fn the_sparse_covariance_passes_a_black_box_audit_at_its_total_epsilon() {
    let (basis, frame) = audit_basis();
    let ceiling = ClippingBound::l2(0.5).unwrap();
    let mechanism = SparseCovariance::laplace(&basis, N, Epsilon::new(1.0).unwrap(), frame, ceiling, 2, 1.0).unwrap();
    audit_at_epsilon_one("sparse_covariance_laplace", &mechanism, &audit_datasets(), 22);
}
