//! A mechanism written outside the workspace's estimators, through the public API only: a private
//! covariance operator of curves (an output that is not a curve). It is released through a Session,
//! audited by fdp-audit through the same trait as every other mechanism, and its exact loss is
//! checked. The Session's budget accounting and ledger are tested here too.

use fdp::release::Charge;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use fdp::audit::{AuditConfig, Auditor, NeighbourPair};
use fdp::data::{CurveSet, Scenario, simulate};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::exact_loss::laplace_loss;
use fdp::noise::vector::LaplaceVector;
use fdp::noise::{NeighbourRelation, PrivacyGuarantee};
use fdp::noise::{NoiseRng, Sensitivity};
use fdp::prelude::*;
use fdp::release::{
    Accuracy, ClipNorm, ClippingBound, Error, Mechanism, Output, Release, ReleaseMetadata, SensitivityNorm, Session,
    Stage,
};

/// The upper triangle of a private J x J second-moment operator `(1/n) Σ_i x_i x_iᵀ` of the leading
/// J basis coefficients.
#[derive(Debug, Clone, Serialize)]
struct CovarianceOperator {
    components: usize,
    upper: Vec<f64>,
}

impl Output for CovarianceOperator {
    fn values(&self) -> Vec<f64> {
        self.upper.clone()
    }

    fn describe(&self) -> String {
        format!("{0} x {0} covariance operator", self.components)
    }
}

/// **Private second-moment operator.** Records are projected on the leading J components and clipped
/// to `||x||₂ <= τ`. Replacing one record changes the upper triangle of `(1/n) Σ x xᵀ` by at most
/// `(1/n) Σ_{i<=j} (|x_i x_j| + |x'_i x'_j|) <= (1/n)(||x||₁² + ||x||₂²) <= (J + 1) τ² / n` in l1
/// (`||x||₁ <= sqrt(J) ||x||₂`), so Laplace noise for that Δ₁ is ε-DP.
struct PrivateCovariance {
    basis: MercerBasis,
    n: usize,
    tau: ClippingBound,
    noise: LaplaceVector,
    summaries: AtomicUsize,
}

impl PrivateCovariance {
    fn new(
        basis: &MercerBasis,
        components: usize,
        n: usize,
        tau: ClippingBound,
        epsilon: Epsilon,
    ) -> Result<Self, Error> {
        let tau = tau.require(ClipNorm::L2, "private_covariance")?;
        let basis = basis.truncated(components)?;
        let sensitivity = (components as f64 + 1.0) * tau.value().powi(2) / n as f64;
        let count = components * (components + 1) / 2;
        let noise = LaplaceVector::new(count, Sensitivity::new(sensitivity)?, epsilon)?;
        Ok(Self { basis, n, tau, noise, summaries: AtomicUsize::new(0) })
    }
}

impl Mechanism<CurveSet<'_>> for PrivateCovariance {
    type Output = CovarianceOperator;

    fn name(&self) -> &'static str {
        "private_covariance"
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.noise.guarantee()
    }

    fn summarize(&self, curves: &CurveSet) -> Result<Vec<f64>, Error> {
        self.summaries.fetch_add(1, Ordering::SeqCst);
        if curves.n() != self.n {
            return Err(Error::Shape { what: "number of curves", expected: self.n, got: curves.n() });
        }
        let j = self.basis.len();
        let mut upper = vec![0.0; j * (j + 1) / 2];
        for i in 0..curves.n() {
            let mut x = self.basis.project(curves.row(i))?;
            ClipNorm::L2.clip(&mut x, self.tau.value());
            let mut k = 0;
            for a in 0..j {
                for b in a..j {
                    upper[k] += x[a] * x[b] / self.n as f64;
                    k += 1;
                }
            }
        }
        Ok(upper)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<CovarianceOperator>, Error> {
        let upper = self.noise.release(summary, rng)?;
        let metadata = ReleaseMetadata {
            clipping: Some(self.tau),
            components: upper.len(),
            calibration: Some(self.noise.calibration()),
            rng: rng.provenance(),
            sampler_timing: fdp::noise::timing::current(),
            ..ReleaseMetadata::new(self.name(), self.guarantee(), 0.0, SensitivityNorm::L1, self.n)
        };
        Ok(Release::new(CovarianceOperator { components: self.basis.len(), upper }, metadata))
    }

    fn accuracy(&self) -> Accuracy {
        // Independent Laplace noise of scale b on each of the J(J+1)/2 released entries.
        let (b, j) = (self.noise.scale(), self.basis.len());
        Accuracy::independent(&vec![2.0 * b * b; j * (j + 1) / 2], 6.0)
    }
}

fn setup() -> (MercerBasis, CurveSet<'static>) {
    let basis = MercerBasis::build(
        Stationary::matern32(0.2).unwrap(),
        Grid::midpoint(0.0, 1.0, 40).unwrap(),
        BasisOptions::default(),
    )
    .unwrap();
    let curves = simulate(Scenario::S2, &basis, 60, 5).unwrap().curves;
    (basis, curves)
}

/// The data with record 0 replaced by `±τ` along one coefficient direction.
fn neighbour(basis: &MercerBasis, curves: &CurveSet, coefficients: &[f64]) -> CurveSet<'static> {
    let record = basis.truncated(coefficients.len()).unwrap().synthesize(coefficients).unwrap();
    let mut values = curves.values().to_vec();
    values[..record.len()].copy_from_slice(&record);
    CurveSet::from_flat(curves.grid().clone(), values, None).unwrap().0
}

#[test]
fn a_user_mechanism_releases_through_a_session_and_passes_the_audit() {
    let (basis, curves) = setup();
    let tau = ClippingBound::l2(2.0).unwrap();
    let mechanism = PrivateCovariance::new(&basis, 4, 60, tau, Epsilon::new(1.0).unwrap()).unwrap();
    // A bound in the wrong norm is refused up front.
    let wrong = ClippingBound::coefficient_l1(2.0).unwrap();
    assert!(matches!(
        PrivateCovariance::new(&basis, 4, 60, wrong, Epsilon::new(1.0).unwrap()),
        Err(Error::WrongNorm { .. })
    ));

    let mut session = Session::pure(Epsilon::new(2.0).unwrap()).unwrap().with_seed(3);
    let release = session.release(&mechanism, &curves).unwrap();
    assert_eq!(release.output().upper.len(), 10);
    assert!(release.to_json().unwrap().contains("private_covariance"));
    assert_eq!(session.ledger()[0].released, "4 x 4 covariance operator");

    // Worst neighbours: all mass on one coefficient, or spread evenly (the l1-extreme record).
    let spread = [1.0, 1.0, 1.0, 1.0].map(|v: f64| v * tau.value() / 2.0);
    let pairs = [
        ([tau.value(), 0.0, 0.0, 0.0], [0.0, tau.value(), 0.0, 0.0]),
        (spread, spread.map(|v| -v)),
        (spread, [0.0; 4]),
    ];
    let mut audit_pairs = Vec::new();
    for (i, (a, b)) in pairs.iter().enumerate() {
        let (da, db) = (neighbour(&basis, &curves, a), neighbour(&basis, &curves, b));
        let (sa, sb) = (mechanism.summarize(&da).unwrap(), mechanism.summarize(&db).unwrap());
        let loss = laplace_loss(&[mechanism.noise.noise(); 10], &sa, &sb).unwrap();
        assert!(loss <= 1.0 + 1e-12, "pair {i}: exact loss {loss}");
        audit_pairs.push(NeighbourPair::from_mechanism(format!("pair {i}"), &mechanism, &da, &db).unwrap());
    }
    let config = AuditConfig { pilot: 400, trials: 1500, confidence: 0.99 };
    let report = Auditor::new(config).unwrap().audit(1.0, 0.0, audit_pairs, &mut NoiseRng::seeded(11));
    eprintln!("audit mechanism=private_covariance eps_lb={:.3} claimed=1", report.epsilon_lower_bound);
    assert!(report.passed);
}

#[test]
fn a_session_refuses_to_overspend_before_touching_the_data() {
    let (basis, curves) = setup();
    let tau = ClippingBound::l2(2.0).unwrap();
    let mechanism = PrivateCovariance::new(&basis, 3, 60, tau, Epsilon::new(0.1).unwrap()).unwrap();
    let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(1);
    for _ in 0..10 {
        session.release(&mechanism, &curves).unwrap();
    }
    assert_eq!(mechanism.summaries.load(Ordering::SeqCst), 10);
    assert!(session.remaining().0 < 1e-9);
    let refused = session.release(&mechanism, &curves).unwrap_err();
    assert!(matches!(refused, Error::BudgetExceeded { .. }), "{refused}");
    assert!(refused.to_string().contains("private_covariance"));
    assert_eq!(mechanism.summaries.load(Ordering::SeqCst), 10, "a refused release computes nothing");
    assert_eq!(session.ledger().len(), 10);

    // The ledger round-trips through JSON and a file, and the continued session stays exhausted.
    let json = session.to_json().unwrap();
    let mut restored = Session::from_json(&json).unwrap();
    assert_eq!(restored.ledger(), session.ledger());
    assert!(restored.release(&mechanism, &curves).is_err());
    let path = std::env::temp_dir().join(format!("fdp-ledger-{}.json", std::process::id()));
    session.save(&path).unwrap();
    assert_eq!(Session::load(&path).unwrap().ledger().len(), 10);
    std::fs::remove_file(&path).ok();
    assert!(session.ledger().iter().all(|e| e.rng.is_seeded() && e.epsilon == 0.1));

    // A mechanism that protects another unit is refused.
    let mut add_remove = Session::new(NeighbourRelation::AddRemoveOne, Epsilon::new(1.0).unwrap(), None).unwrap();
    assert!(matches!(add_remove.release(&mechanism, &curves), Err(Error::WrongRelation { .. })));
}

/// A mechanism whose stages claim `factor` times its guarantee: what the ledger would charge is not
/// what the release states.
struct MisStaged<'a> {
    inner: &'a PrivateCovariance,
    factor: f64,
}

impl<'d> Mechanism<CurveSet<'d>> for MisStaged<'_> {
    type Output = CovarianceOperator;

    fn name(&self) -> &'static str {
        "mis_staged"
    }

    fn n(&self) -> Option<usize> {
        Some(self.inner.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.inner.guarantee()
    }

    fn summarize(&self, curves: &CurveSet<'d>) -> Result<Vec<f64>, Error> {
        self.inner.summarize(curves)
    }

    fn privatize(
        &self,
        summary: &[f64],
        rng: &mut NoiseRng,
        charge: Charge,
    ) -> Result<Release<CovarianceOperator>, Error> {
        self.inner.privatize(summary, rng, charge)
    }

    fn accuracy(&self) -> Accuracy {
        Mechanism::<CurveSet<'d>>::accuracy(self.inner)
    }

    fn stages(&self) -> Vec<Stage> {
        let epsilon = Epsilon::new(self.guarantee().epsilon() * self.factor).unwrap();
        vec![Stage { name: "release".into(), guarantee: PrivacyGuarantee::pure(epsilon) }]
    }
}

/// The Session charges the stages and the release states the guarantee: a mechanism whose stages
/// add up to less (part of what it spends would go uncharged) or more is refused before the data are
/// touched, and nothing is charged.
#[test]
fn a_session_refuses_a_mechanism_whose_stages_do_not_add_up_to_its_guarantee() {
    let (basis, curves) = setup();
    let inner =
        PrivateCovariance::new(&basis, 3, 60, ClippingBound::l2(2.0).unwrap(), Epsilon::new(0.5).unwrap()).unwrap();
    let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(1);
    for factor in [0.5, 1.5, 1.0 - 1e-9] {
        let refused = session.release(&MisStaged { inner: &inner, factor }, &curves).unwrap_err();
        assert!(refused.to_string().contains("stages must add up to its guarantee"), "{factor}: {refused}");
    }
    assert_eq!(inner.summaries.load(Ordering::SeqCst), 0, "a refused release computes nothing");
    assert_eq!(session.ledger().len(), 0);
    session.release(&MisStaged { inner: &inner, factor: 1.0 }, &curves).unwrap();
    assert_eq!(session.spent(), (0.5, 0.0));
}
