//! The one registry of mechanisms (`fdp::registry`): every registered mechanism builds from its
//! example spec, is charged exactly its guarantee (one ledger entry per stage), releases the same
//! bytes from merged part states as from the whole data, and refuses bad specs before any charge.
//! Exact-loss coverage of every registered mechanism is asserted in tests/privacy_edges.rs.

use fdp::data::{CurveSet, SparseCurves};
use fdp::kme::PointSet;
use fdp::mercer::Grid;
use fdp::noise::{Delta, Epsilon};
use fdp::registry::{self, Built, Frame, Input, InputKind, REGISTRY, Released, Spec};
use fdp::release::Session;

/// The data of one input kind, in the data's units (a grid on [0, 10], not [0, 1], so the grid rule
/// is exercised), and its public frame.
enum Fixture {
    Curves(CurveSet<'static>),
    Sparse(SparseCurves),
    Points(PointSet),
    Labelled(PointSet, Vec<f64>),
}

const N: usize = 60;
const K: usize = 20;

fn grid() -> Grid {
    Grid::trapezoid_points((0..K).map(|i| 10.0 * i as f64 / (K - 1) as f64).collect()).unwrap()
}

fn value(i: usize, j: usize) -> f64 {
    let t = j as f64 / (K - 1) as f64;
    (0.5 + 0.3 * (6.0 * t + i as f64 * 0.1).sin() * (1.0 - 0.005 * i as f64)).clamp(0.0, 1.0)
}

fn fixture(entry: &registry::Entry, spec: &Spec, rows: std::ops::Range<usize>) -> Fixture {
    match entry.input {
        InputKind::Curves => {
            let values = rows.flat_map(|i| (0..K).map(move |j| value(i, j))).collect();
            Fixture::Curves(CurveSet::from_flat(grid(), values, None).unwrap().0)
        }
        InputKind::SparseCurves => {
            let records: Vec<(Vec<f64>, Vec<f64>)> = rows
                .map(|i| {
                    let js = [(i * 7) % K, (i * 3 + 5) % K, (i * 11 + 2) % K];
                    (
                        js.iter().map(|&j| 10.0 * j as f64 / (K - 1) as f64).collect(),
                        js.iter().map(|&j| value(i, j)).collect(),
                    )
                })
                .collect();
            Fixture::Sparse(SparseCurves::new((0.0, 10.0), &records).unwrap())
        }
        InputKind::Points => {
            let dim = spec
                .params
                .get("dim")
                .and_then(|d| d.as_u64())
                .map(|d| d as usize)
                .or_else(|| spec.params.get("centre").and_then(|c| c.as_array()).map(Vec::len))
                .unwrap_or(1);
            let data = rows.flat_map(|i| (0..dim).map(move |d| ((i * (d + 3)) % 17) as f64 / 17.0)).collect();
            Fixture::Points(registry::points(dim, data).unwrap())
        }
        InputKind::Labelled => {
            let x: Vec<f64> = rows.clone().map(|i| ((i * 7) % 23) as f64 / 23.0).collect();
            let y = rows.map(|i| (6.0 * ((i * 7) % 23) as f64 / 23.0).sin() * 0.8).collect();
            Fixture::Labelled(registry::points(1, x).unwrap(), y)
        }
    }
}

impl Fixture {
    fn input(&self) -> Input<'_> {
        match self {
            Self::Curves(c) => Input::Curves(c),
            Self::Sparse(s) => Input::Sparse(s),
            Self::Points(p) => Input::Points(p),
            Self::Labelled(x, y) => Input::Labelled(x, y),
        }
    }
}

fn frame(entry: &registry::Entry) -> Frame {
    let grid = matches!(entry.input, InputKind::Curves | InputKind::SparseCurves).then(grid);
    Frame::new(N, grid)
}

fn session(built: &Built, seed: u64) -> Session {
    let g = built.guarantee();
    Session::new(g.relation(), Epsilon::new(10.0).unwrap(), Some(Delta::new(1e-3).unwrap())).unwrap().with_seed(seed)
}

#[test]
fn every_registered_mechanism_is_charged_exactly_its_guarantee_stage_by_stage() {
    assert!(
        REGISTRY.len() >= 8,
        "means, sparse means, FPCA, densities, Algorithms 1 and 2, the exponential mechanism, sketches"
    );
    for entry in REGISTRY {
        let spec = Spec::example(entry).unwrap();
        let built = registry::build(&spec, &frame(entry)).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        assert_eq!(built.input(), entry.input, "{}", entry.name);
        let g = built.guarantee();
        let staged: (f64, f64) =
            built.stages().iter().fold((0.0, 0.0), |(e, d), s| (e + s.guarantee.epsilon(), d + s.guarantee.delta()));
        assert!((staged.0 - g.epsilon()).abs() <= 1e-12 && (staged.1 - g.delta()).abs() <= 1e-15, "{}", entry.name);

        let data = fixture(entry, &spec, 0..N);
        let mut s = session(&built, 3);
        let released = built.release(&mut s, data.input()).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        let (spent_e, spent_d) = s.spent();
        assert!((spent_e - g.epsilon()).abs() <= 1e-12, "{}: charged {spent_e}, proved {}", entry.name, g.epsilon());
        assert!((spent_d - g.delta()).abs() <= 1e-15, "{}: charged δ {spent_d}, proved {}", entry.name, g.delta());
        assert_eq!(s.ledger().len(), built.stages().len(), "{}: one ledger entry per stage", entry.name);
        assert!(released.values().iter().all(|v| v.is_finite()), "{}", entry.name);
        assert!(released.to_json().unwrap().contains(built.name()), "{}", entry.name);

        // The spec round-trips through JSON and builds the same mechanism: the same bytes at a seed.
        let again = registry::build(&Spec::from_json(&spec.to_json().unwrap()).unwrap(), &frame(entry)).unwrap();
        let twin = again.release(&mut session(&again, 3), data.input()).unwrap();
        assert_eq!(bits(&twin), bits(&released), "{}", entry.name);

        if built.is_mergeable() {
            let mut state = built.part_state(fixture(entry, &spec, 0..N / 3).input()).unwrap();
            state.merge(&built.part_state(fixture(entry, &spec, N / 3..N).input()).unwrap()).unwrap();
            let merged = built.release_state(&mut session(&built, 3), &state).unwrap();
            assert_eq!(bits(&merged), bits(&released), "{}: merged parts release the same bytes", entry.name);
        } else {
            assert!(built.part_state(data.input()).is_err(), "{}", entry.name);
        }
    }
}

fn bits(released: &Released) -> Vec<u64> {
    released.values().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn bad_specs_are_refused_before_anything_is_charged() {
    let mean = registry::entry("mean").unwrap();
    let frame = frame(mean);
    let refused = |spec: Spec| registry::build(&spec, &frame).unwrap_err().to_string();
    assert!(refused(Spec::new("no_such_mechanism")).contains("not a registered mechanism"));
    assert!(refused(Spec::example(mean).unwrap().with("epsilom", 1.0)).contains("epsilom"));
    assert!(refused(Spec::new("mean")).contains("epsilon"));
    let negative = refused(Spec::example(mean).unwrap().with("epsilon", -1.0));
    assert!(negative.contains("-1"), "{negative}");
    assert!(refused(Spec::example(mean).unwrap().with("epsilon", "one")).contains("number"));
    assert!(refused(Spec::example(mean).unwrap().with("range", serde_json::json!([0.0]))).contains("pair"));
    assert!(refused(Spec::example(mean).unwrap().with("delta", 1e-6)).contains("delta"));
    assert!(refused(Spec::example(mean).unwrap().with("kernel", "matern99:0.1")).contains("matern99"));
    // The same names with `-` in place of `_` are the same mechanism.
    assert!(registry::entry("sparse-mean").is_ok());
    // Data of the wrong kind are refused, and nothing is charged.
    let built = registry::build(&Spec::example(mean).unwrap(), &frame).unwrap();
    let points = registry::points(1, vec![0.5; N]).unwrap();
    let mut s = session(&built, 1);
    assert!(built.release(&mut s, Input::Points(&points)).is_err());
    assert_eq!(s.spent(), (0.0, 0.0));
}

#[test]
fn the_registry_maps_a_grid_in_the_data_units_onto_the_unit_interval() {
    // The same curves on [0, 10] and on [0, 1] give the same release at a seed: one grid rule.
    let mean = registry::entry("mean").unwrap();
    let spec = Spec::example(mean).unwrap();
    let Fixture::Curves(on_ten) = fixture(mean, &spec, 0..N) else { unreachable!() };
    let unit = Grid::trapezoid_points((0..K).map(|i| i as f64 / (K - 1) as f64).collect()).unwrap();
    let on_unit = CurveSet::from_flat(unit.clone(), on_ten.values().to_vec(), None).unwrap().0;
    let a = registry::build(&spec, &Frame::new(N, Some(grid()))).unwrap();
    let b = registry::build(&spec, &Frame::new(N, Some(unit))).unwrap();
    let ra = a.release(&mut session(&a, 5), Input::Curves(&on_ten)).unwrap();
    let rb = b.release(&mut session(&b, 5), Input::Curves(&on_unit)).unwrap();
    assert_eq!(bits(&ra), bits(&rb));
}

#[test]
fn every_entry_describes_its_parameters_with_defaults_that_parse() {
    for entry in REGISTRY {
        let described = entry.describe();
        assert_eq!(described["mechanism"], entry.name);
        assert!(entry.params.iter().any(|p| p.name == "epsilon"), "{}", entry.name);
        for p in entry.params {
            assert!(
                p.default.is_empty() || serde_json::from_str::<serde_json::Value>(p.default).is_ok(),
                "{}.{}",
                entry.name,
                p.name
            );
        }
        assert!(serde_json::from_str::<serde_json::Value>(entry.example).is_ok(), "{}", entry.name);
    }
}
