//! The person as the privacy unit: neighbours that replace **every** row of one person (a person
//! with 8 visits replaced by 8 adversarial rows — ±f64::MAX, NaN, ∞, spikes — or by a different
//! number of rows) stay within ε once the rows are grouped by the public id
//! ([`CurveSet::per_person`]) and the mechanism is built for n = the number of persons; the same
//! pairs at the row unit exceed ε, which is what the person unit is for.

#[allow(dead_code)]
#[path = "../examples/harness/privacy_edges.rs"]
mod privacy_edges;

use fdp::data::{CurveSet, Scenario, simulate};
use fdp::estimators::{BasisMean, BernsteinMean, MeanSetup, Mechanism, TunedMean};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::exact_loss::{gaussian_loss, laplace_loss};
use fdp::noise::{Calibration, LatticeGaussian, LatticeLaplace};
use fdp::prelude::*;
use fdp::release::{PerUnit, PrivacyUnit, Regularisation};

const TOLERANCE: f64 = 1.0 + 1e-12;
const PERSONS: usize = 60;

type Rows = (Vec<Vec<f64>>, Vec<usize>);

/// 60 persons; person p has `1 + p % 8` rows (person 7 has 8), each its simulated curve plus a
/// row-specific shift; returned as rows and each row's person.
fn base_rows(basis: &MercerBasis) -> Rows {
    let persons = simulate(Scenario::S1, basis, PERSONS, 5).unwrap().curves;
    let (mut rows, mut keys) = (Vec::new(), Vec::new());
    for p in 0..PERSONS {
        for r in 0..1 + p % 8 {
            rows.push(persons.row(p).iter().map(|v| v + 0.05 * r as f64).collect());
            keys.push(p);
        }
    }
    (rows, keys)
}

/// The rows an adversary would give one person, eight at a time (and fewer): every row the same
/// extreme curve of the edge suite, or a mix of them.
fn adversarial_persons(basis: &MercerBasis) -> Vec<Vec<Vec<f64>>> {
    let singles = privacy_edges::adversarial_curves(basis);
    let smallest = |scale: f64| {
        let last = basis.len() - 1;
        (0..basis.n_points()).map(|i| scale * basis.eigenfunctions()[(i, last)]).collect::<Vec<f64>>()
    };
    let mut out: Vec<Vec<Vec<f64>>> = singles.iter().map(|row| vec![row.clone(); 8]).collect();
    out.push(singles.iter().take(8).cloned().collect()); // eight different rows
    out.push(vec![smallest(1e3)]); // one row instead of eight
    out.push(vec![smallest(-1e3); 3]);
    out
}

/// The rows with person 7's rows replaced by `replacement` (appended at the end, so the order of
/// first appearance changes too).
fn neighbour(base: &Rows, replacement: &[Vec<f64>]) -> Rows {
    let (mut rows, mut keys): Rows = (Vec::new(), Vec::new());
    for (row, &key) in base.0.iter().zip(&base.1) {
        if key != 7 {
            rows.push(row.clone());
            keys.push(key);
        }
    }
    for row in replacement {
        rows.push(row.clone());
        keys.push(7);
    }
    (rows, keys)
}

/// The person-level records of some rows: each row repaired, then each person's mean.
fn persons(grid: &Grid, rows: &Rows) -> CurveSet<'static> {
    let (set, _) = CurveSet::from_rows(grid.clone(), &rows.0, None).unwrap();
    set.per_person(&rows.1).unwrap().curves
}

/// The summaries of the base data and of every neighbour, at the person unit.
fn person_summaries<M: Mechanism<CurveSet<'static>>>(mechanism: &M, basis: &MercerBasis) -> Vec<Vec<f64>> {
    let base = base_rows(basis);
    let grid = basis.grid();
    let mut out = vec![mechanism.summarize(&persons(grid, &base)).unwrap()];
    for replacement in adversarial_persons(basis) {
        out.push(mechanism.summarize(&persons(grid, &neighbour(&base, &replacement))).unwrap());
    }
    out
}

/// The largest loss over all pairs (every pair of summaries differs in at most person 7).
fn worst(summaries: &[Vec<f64>], loss: impl Fn(&[f64], &[f64]) -> f64) -> f64 {
    let mut w = 0.0_f64;
    for i in 0..summaries.len() {
        for j in i + 1..summaries.len() {
            w = w.max(loss(&summaries[i], &summaries[j]));
        }
    }
    w
}

fn basis() -> MercerBasis {
    MercerBasis::build(
        Stationary::matern32(0.1).unwrap(),
        Grid::midpoint(0.0, 1.0, 30).unwrap(),
        BasisOptions::default(),
    )
    .unwrap()
}

fn laplace(noise: &[LatticeLaplace], epsilon: f64) -> impl Fn(&[f64], &[f64]) -> f64 + '_ {
    move |a, b| laplace_loss(noise, a, b).unwrap() / epsilon
}

fn gaussian(noise: &[LatticeGaussian], multiplier: f64) -> impl Fn(&[f64], &[f64]) -> f64 + '_ {
    move |a, b| gaussian_loss(noise, multiplier, a, b).unwrap()
}

#[test]
fn replacing_a_whole_person_costs_at_most_epsilon_at_the_person_unit() {
    let basis = basis();
    let eps = Epsilon::new(1.0).unwrap();
    let tau = 10.0;
    let setup = |bound: ClippingBound| MeanSetup::new(PERSONS, eps, bound).unwrap();
    let unit = PrivacyUnit::person("id");

    let rkhs = PerUnit::new(
        BasisMean::iclp_rkhs(
            &basis,
            setup(ClippingBound::coefficient_l1(tau).unwrap()),
            Regularisation::new(3.0, 0.0).unwrap(),
        )
        .unwrap(),
        unit.clone(),
    );
    let s = person_summaries(&rkhs, &basis);
    let loss = worst(&s, laplace(rkhs.inner().sampler().components(), 1.0));
    eprintln!("person_unit mechanism=iclp_rkhs_psi0 worst_loss_over_eps={loss}");
    assert!(loss <= TOLERANCE, "iclp_rkhs per person: loss/ε = {loss}");
    assert!(loss > 0.9, "the pairs reach the calibration: {loss}");

    let gp = BasisMean::gaussian_process(
        &basis,
        setup(ClippingBound::l2(tau).unwrap()),
        Regularisation::new(3.0, 0.0).unwrap(),
        Delta::new(1e-6).unwrap(),
    )
    .unwrap();
    let multiplier = match gp.sampler().calibration() {
        Calibration::GaussianProcess { multiplier, .. } => multiplier,
        other => panic!("{other:?}"),
    };
    let s = person_summaries(&gp, &basis);
    let loss = worst(&s, gaussian(gp.sampler().components(), multiplier));
    eprintln!("person_unit mechanism=gaussian_process worst_loss_over_eps={loss}");
    assert!(loss <= TOLERANCE, "gaussian_process per person: {loss}");

    let bernstein = BernsteinMean::new(basis.grid(), setup(ClippingBound::sup(tau).unwrap()), 10).unwrap();
    let s = person_summaries(&bernstein, &basis);
    let loss = worst(&s, laplace(&[bernstein.noise().noise(); 11], 1.0));
    eprintln!("person_unit mechanism=bernstein worst_loss_over_eps={loss}");
    assert!(loss <= TOLERANCE, "bernstein per person: {loss}");

    // The privately tuned pipeline (what the front doors run): every stage within its budget.
    let tuned = PerUnit::new(
        TunedMean::iclp_rkhs(&basis, PERSONS, eps, ClippingBound::coefficient_l1(tau).unwrap()).unwrap(),
        unit,
    );
    let s = person_summaries(&tuned, &basis);
    let loss = worst(&s, |a, b| tuned.inner().stage_losses(a, b).unwrap().iter().fold(0.0, |w, (_, r)| w.max(*r)));
    eprintln!("person_unit mechanism=tuned_iclp_rkhs worst_loss_over_eps={loss}");
    assert!(loss <= TOLERANCE, "tuned_iclp_rkhs per person: {loss}");
}

/// The same neighbours at the row unit (rows as records, n = rows): replacing eight rows is eight
/// replace-one steps, and the loss goes far past ε — the README's DTI example before the person unit.
#[test]
fn the_row_unit_does_not_protect_a_person_with_eight_rows() {
    let basis = basis();
    let base = base_rows(&basis);
    let rows = base.0.len();
    let mechanism = BasisMean::iclp_rkhs(
        &basis,
        MeanSetup::new(rows, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap()).unwrap(),
        Regularisation::new(3.0, 0.0).unwrap(),
    )
    .unwrap();
    let phi = basis.eigenfunctions();
    let last = basis.len() - 1;
    let column = |scale: f64| (0..basis.n_points()).map(|i| scale * phi[(i, last)]).collect::<Vec<f64>>();
    let summary = |rows: &Rows| {
        let (set, _) = CurveSet::from_rows(basis.grid().clone(), &rows.0, None).unwrap();
        mechanism.summarize(&set).unwrap()
    };
    let a = summary(&neighbour(&base, &vec![column(1e3); 8]));
    let b = summary(&neighbour(&base, &vec![column(-1e3); 8]));
    let loss = laplace_loss(mechanism.sampler().components(), &a, &b).unwrap();
    eprintln!("row_unit mechanism=iclp_rkhs_psi0 eight_rows_loss_over_eps={loss}");
    assert!(loss > 7.0, "eight replaced rows cost about 8 ε at the row unit: {loss}");
}

/// The unit is recorded in the release and changes nothing else: the same numbers at a fixed seed.
#[test]
fn the_unit_is_in_the_metadata_and_the_release_is_otherwise_the_same() {
    let basis = basis();
    let grid = basis.grid();
    let data = persons(grid, &base_rows(&basis));
    let mean =
        TunedMean::iclp_rkhs(&basis, PERSONS, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap())
            .unwrap();
    let wrapped = PerUnit::new(mean.clone(), PrivacyUnit::person("id"));
    assert_eq!(wrapped.privacy_unit(), PrivacyUnit::person("id"));
    assert_eq!(mean.privacy_unit(), PrivacyUnit::Record);
    let plain = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(9).release(&mean, &data).unwrap();
    let person = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(9).release(&wrapped, &data).unwrap();
    assert_eq!(plain.curve(), person.curve());
    assert_eq!(plain.metadata().privacy_unit, PrivacyUnit::Record);
    assert_eq!(person.metadata().privacy_unit, PrivacyUnit::person("id"));
    let json: serde_json::Value = serde_json::from_str(&person.to_json().unwrap()).unwrap();
    assert_eq!(json["metadata"]["privacy_unit"]["person"]["id_column"], "id");
    // An older release without the field reads as the record unit.
    let mut old: serde_json::Value = serde_json::from_str(&plain.to_json().unwrap()).unwrap();
    old["metadata"].as_object_mut().unwrap().remove("privacy_unit");
    let metadata: fdp::release::ReleaseMetadata = serde_json::from_value(old["metadata"].clone()).unwrap();
    assert_eq!(metadata.privacy_unit, PrivacyUnit::Record);
}
