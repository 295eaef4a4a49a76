//! Empirical privacy audits of every mean mechanism at its claimed ε, with τ-extreme neighbours
//! swept over all kept components; the same suite catches a sqrt(2)-miscalibrated ICLP-RKHS and
//! shows that clipping holds against records far beyond τ.

mod common;

use common::{basis, curve_from, in_norm, unit, with_record};
use fdp_audit::{AuditConfig, AuditReport, Auditor, NeighbourPair};
use fdp_data::CurveSet;
use fdp_estimators::{BasisMean, BernsteinMean, MeanMechanism, MeanSetup, Mechanism};
use fdp_estimators::{ClipNorm, ClippingBound, Regularisation};
use fdp_mercer::MercerBasis;
use fdp_noise::NoiseRng;
use fdp_noise::{Delta, Epsilon};

/// Many thousands of draws for statistics: variable-time sampling for this whole test process (the
/// same draws as the padded samplers releases use; docs/DESIGN.md section 15.5).
fn simulation() {
    fdp_noise::timing::allow_variable_time_for_simulation();
}

const N: usize = 40;
const TAU: f64 = 1.0;
const EPS: f64 = 1.0;

/// The audit pair of a mean mechanism, through the one Mechanism trait.
fn pair_for<'a>(m: &'a dyn MeanMechanism, label: String, a: &CurveSet, b: &CurveSet) -> NeighbourPair<'a> {
    NeighbourPair::from_mechanism(label, m, a, b).unwrap()
}

/// Neighbours `±scale·τ φ_k` for every kept component k (plus extra pairs), audited together.
fn audit_sweep(
    m: &dyn MeanMechanism,
    basis: &MercerBasis,
    scale: f64,
    extra: Vec<(Vec<f64>, Vec<f64>)>,
    delta: f64,
    config: AuditConfig,
) -> AuditReport {
    let j = basis.len();
    let mut pairs: Vec<NeighbourPair<'_>> = (0..j)
        .map(|k| {
            let plus = with_record(basis, N, &curve_from(basis, &unit(j, k), scale * TAU));
            let minus = with_record(basis, N, &curve_from(basis, &unit(j, k), -scale * TAU));
            pair_for(m, format!("component {k}"), &plus, &minus)
        })
        .collect();
    for (i, (x, y)) in extra.iter().enumerate() {
        pairs.push(pair_for(m, format!("extra {i}"), &with_record(basis, N, x), &with_record(basis, N, y)));
    }
    Auditor::new(config).unwrap().audit(EPS, delta, pairs, &mut NoiseRng::seeded(4242))
}

fn sweep_config() -> AuditConfig {
    AuditConfig { pilot: 400, trials: 1500, confidence: 0.99 }
}

#[test]
fn every_mean_mechanism_passes_its_audit() {
    simulation();
    let basis = basis(30, 0.2);
    let setup = MeanSetup::new(N, Epsilon::new(EPS).unwrap(), ClippingBound::l2(TAU).unwrap()).unwrap();
    let j = basis.len();
    // The l1 mechanism's Cauchy-Schwarz-extreme record spreads its mass like 1/sqrt(λ_k).
    let spread: Vec<f64> = basis.eigenvalues().iter().map(|l| 1.0 / l.sqrt()).collect();
    let norm = spread.iter().map(|v| v * v).sum::<f64>().sqrt();
    let spread_pair = (curve_from(&basis, &spread, TAU / norm), curve_from(&basis, &spread, -TAU / norm));
    let mechanisms: Vec<(Box<dyn MeanMechanism>, f64)> = vec![
        (
            Box::new(
                BasisMean::iclp_rkhs(
                    &basis,
                    in_norm(&setup, ClipNorm::CoefficientL1),
                    Regularisation::new(1.25, 1e-4).unwrap(),
                )
                .unwrap(),
            ),
            0.0,
        ),
        (
            Box::new(
                BasisMean::iclp_l1(&basis, in_norm(&setup, ClipNorm::L2), Regularisation::new(3.0, 1e-3).unwrap())
                    .unwrap(),
            ),
            0.0,
        ),
        (Box::new(BasisMean::iid_laplace(&basis, in_norm(&setup, ClipNorm::L2), 8).unwrap()), 0.0),
        (
            Box::new(
                BasisMean::gaussian_process(
                    &basis,
                    setup.clone(),
                    Regularisation::new(1.25, 1e-4).unwrap(),
                    Delta::new(1e-3).unwrap(),
                )
                .unwrap(),
            ),
            1e-3,
        ),
    ];
    for (m, delta) in &mechanisms {
        let report = audit_sweep(m.as_ref(), &basis, 1.0, vec![spread_pair.clone()], *delta, sweep_config());
        eprintln!(
            "audit mechanism={} pairs={} eps_lb={:.3} claimed={EPS}",
            m.name(),
            report.pairs.len(),
            report.epsilon_lower_bound
        );
        assert!(report.passed, "{} failed its audit: ε_lb = {}", m.name(), report.epsilon_lower_bound);
        assert_eq!(report.pairs.len(), j + 1);
    }
    // Bernstein: constant records at ±τ move every lattice value by 2τ/n.
    let bern = BernsteinMean::new(basis.grid(), in_norm(&setup, ClipNorm::Sup), 10).unwrap();
    let k = basis.n_points();
    let pair = pair_for(
        &bern,
        "constant ±τ".into(),
        &with_record(&basis, N, &vec![TAU; k]),
        &with_record(&basis, N, &vec![-TAU; k]),
    );
    let report = Auditor::new(AuditConfig::default()).unwrap().audit(EPS, 0.0, vec![pair], &mut NoiseRng::seeded(5));
    eprintln!("audit mechanism=bernstein eps_lb={:.3} claimed={EPS}", report.epsilon_lower_bound);
    // Its loss is spread over the k + 1 lattice values, so no half-space event sees much of it.
    assert!(report.passed, "{report:?}");
}

/// The worst pair of ICLP-RKHS puts the whole l1 budget on the component maximising
/// λ^{η-1/2}/(λ^η + ψ); there the loss equals ε exactly.
fn rkhs_worst_component(basis: &MercerBasis, eta: f64, psi: f64) -> usize {
    let f = |l: f64| l.powf(eta - 0.5) / (l.powf(eta) + psi);
    (0..basis.len()).max_by(|&a, &b| f(basis.eigenvalues()[a]).total_cmp(&f(basis.eigenvalues()[b]))).unwrap()
}

#[test]
fn auditor_catches_a_sqrt2_miscalibrated_iclp_rkhs() {
    simulation();
    let basis = basis(30, 0.2);
    let (eta, psi) = (1.25, 1e-4);
    // Calibrated for sqrt(2) ε but claimed at ε: exactly the under-noising of the paper's Theorem 7.
    let cheat = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(N, Epsilon::new(EPS * 2f64.sqrt()).unwrap(), ClippingBound::coefficient_l1(TAU).unwrap())
            .unwrap(),
        Regularisation::new(eta, psi).unwrap(),
    )
    .unwrap();
    let honest = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(N, Epsilon::new(EPS).unwrap(), ClippingBound::coefficient_l1(TAU).unwrap()).unwrap(),
        Regularisation::new(eta, psi).unwrap(),
    )
    .unwrap();
    let k = rkhs_worst_component(&basis, eta, psi);
    let e = unit(basis.len(), k);
    let (plus, minus) =
        (with_record(&basis, N, &curve_from(&basis, &e, TAU)), with_record(&basis, N, &curve_from(&basis, &e, -TAU)));
    let auditor = Auditor::new(AuditConfig::default()).unwrap();
    let caught =
        auditor.audit(EPS, 0.0, vec![pair_for(&cheat, "worst".into(), &plus, &minus)], &mut NoiseRng::seeded(9));
    let fine =
        auditor.audit(EPS, 0.0, vec![pair_for(&honest, "worst".into(), &plus, &minus)], &mut NoiseRng::seeded(9));
    eprintln!(
        "audit miscalibrated eps_lb={:.3} honest eps_lb={:.3} claimed={EPS}",
        caught.epsilon_lower_bound, fine.epsilon_lower_bound
    );
    assert!(!caught.passed, "sqrt(2) miscalibration not caught: ε_lb = {}", caught.epsilon_lower_bound);
    assert!(fine.passed);
}

#[test]
fn clipping_holds_against_records_far_beyond_tau() {
    simulation();
    let basis = basis(30, 0.2);
    let (eta, psi) = (1.25, 1e-4);
    let m = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(N, Epsilon::new(EPS).unwrap(), ClippingBound::coefficient_l1(TAU).unwrap()).unwrap(),
        Regularisation::new(eta, psi).unwrap(),
    )
    .unwrap();
    let k = rkhs_worst_component(&basis, eta, psi);
    let e = unit(basis.len(), k);
    // One record 100 times beyond τ, against the opposite extreme.
    let far = with_record(&basis, N, &curve_from(&basis, &e, 100.0 * TAU));
    let other = with_record(&basis, N, &curve_from(&basis, &e, -100.0 * TAU));
    let report = Auditor::new(AuditConfig::default()).unwrap().audit(
        EPS,
        0.0,
        vec![pair_for(&m, "100 τ".into(), &far, &other)],
        &mut NoiseRng::seeded(3),
    );
    eprintln!("audit clipping eps_lb={:.3} claimed={EPS}", report.epsilon_lower_bound);
    assert!(report.passed, "clipping failed: ε_lb = {}", report.epsilon_lower_bound);
    // And the summary itself saw the record at τ, not at 100 τ.
    let s = m.summarize(&far).unwrap();
    let l = basis.eigenvalues()[k];
    let expected = l.powf(eta) / (l.powf(eta) + psi) * TAU / N as f64;
    assert!((s[k] - expected).abs() < 1e-9 * expected.abs().max(1e-12));
}
