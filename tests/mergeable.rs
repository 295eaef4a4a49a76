//! Mergeable summaries: any partitioning and merge order gives the one-pass summary bit for bit, and
//! the same release at a fixed seed; damaged or foreign states are refused.

use fdp::data::CurveSet;
use fdp::estimators::GridPoints;
use fdp::front::{KdeMethod, KdeRequest, MeanMethod, MeanRequest, SketchRequest, TuningMode};
use fdp::functional::CurveReleaseExt;
use fdp::kme::PointSet;
use fdp::mercer::{Grid, Stationary};
use fdp::noise::{Delta, Epsilon, NeighbourRelation};
use fdp::release::{ClippingBound, Mechanism, MergeableMechanism, Session, SummaryState};

/// 1000 curves on 30 points, with adversarial records: huge values, NaN, an all-missing record.
fn curves() -> CurveSet<'static> {
    let k = 30;
    let grid = Grid::trapezoid_points((0..k).map(|j| j as f64 / (k - 1) as f64).collect()).unwrap();
    let mut values: Vec<f64> = (0..1000 * k)
        .map(|i| {
            let (r, j) = (i / k, i % k);
            0.5 + 0.3 * ((r * 7919 % 997) as f64 / 997.0 - 0.5) + 0.2 * (6.0 * j as f64 / k as f64 + r as f64).sin()
        })
        .collect();
    values[5 * k..6 * k].fill(1e300);
    values[7 * k + 3] = f64::NAN;
    values[9 * k..10 * k].fill(f64::NAN);
    values[11 * k + 2] = -1e308;
    CurveSet::from_flat(grid, values, None).unwrap().0
}

/// The state of `parts` contiguous parts of `data` (sizes uneven), merged in a scrambled order.
fn partitioned<M: MergeableMechanism<CurveSet<'static>>>(
    m: &M,
    data: &CurveSet<'static>,
    parts: usize,
) -> SummaryState {
    let n = data.n();
    let cuts: Vec<usize> = (0..=parts).map(|p| (p * p * n) / (parts * parts)).collect();
    let mut states: Vec<SummaryState> = cuts
        .windows(2)
        .map(|w| {
            let mut s = m.empty_state();
            m.update_state(&mut s, &data.subset(&(w[0]..w[1]).collect::<Vec<_>>())).unwrap();
            s
        })
        .collect();
    states.reverse();
    states.rotate_left(parts / 3);
    // A tree reduce through bytes, as a cluster would.
    while states.len() > 1 {
        states = states
            .chunks(2)
            .map(|pair| {
                let mut a = SummaryState::from_bytes(&pair[0].to_bytes()).unwrap();
                if let Some(b) = pair.get(1) {
                    a.merge(&SummaryState::from_bytes(&b.to_bytes()).unwrap()).unwrap();
                }
                a
            })
            .collect();
    }
    states.pop().unwrap()
}

#[test]
fn every_mean_mechanism_gives_the_one_pass_summary_from_any_partitioning() {
    let data = curves();
    let eps = Epsilon::new(1.0).unwrap();
    let requests = [
        (MeanMethod::IclpRkhs, "l1:2", TuningMode::Private),
        (MeanMethod::IclpRkhs, "l1:2", TuningMode::PlugIn),
        (MeanMethod::IidLaplace, "l2:2", TuningMode::Private),
        (MeanMethod::GaussianProcess, "l2:2", TuningMode::PlugIn),
        (MeanMethod::Bernstein, "sup:2", TuningMode::Private),
        (MeanMethod::Bernstein, "sup:2", TuningMode::PlugIn),
    ];
    for (method, bound, tuning) in requests {
        let mut request =
            MeanRequest::new(method, Stationary::matern32(0.1).unwrap(), bound.parse::<ClippingBound>().unwrap(), eps);
        request.tuning = tuning;
        request.centre = Some(0.5);
        request.delta = (method == MeanMethod::GaussianProcess).then(|| Delta::new(1e-6).unwrap());
        let m = request.build(data.grid(), data.n()).unwrap();
        let one_pass = m.summarize(&data).unwrap();
        for parts in [1, 4, 64] {
            let state = partitioned(&m, &data, parts);
            assert_eq!(state.records(), 1000);
            let merged = m.state_summary(&state).unwrap();
            assert_eq!(
                merged.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                one_pass.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{method:?} {tuning:?} parts={parts}"
            );
            let delta = (method == MeanMethod::GaussianProcess).then(|| Delta::new(1e-6).unwrap());
            let session = || Session::new(NeighbourRelation::ReplaceOne, eps, delta).unwrap().with_seed(9);
            let direct = session().release(&m, &data).unwrap();
            let mut session = session();
            let via_state = session.release_state(&m, &state).unwrap();
            assert_eq!(direct.curve(), via_state.curve(), "{method:?} parts={parts}");
            assert_eq!(session.ledger().len(), m.stages().len());
        }
    }
}

#[test]
fn one_record_per_state_still_gives_the_one_pass_summary() {
    let data = curves();
    let bound = ClippingBound::coefficient_l1(2.0).unwrap();
    let m =
        MeanRequest::new(MeanMethod::IclpRkhs, Stationary::matern52(0.2).unwrap(), bound, Epsilon::new(1.0).unwrap())
            .build(data.grid(), data.n())
            .unwrap();
    let mut state = m.empty_state();
    for i in (0..data.n()).rev() {
        let mut single = m.empty_state();
        m.update_state(&mut single, &data.subset(&[i])).unwrap();
        state.merge(&single).unwrap();
    }
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    assert_eq!(bits(m.state_summary(&state).unwrap()), bits(m.summarize(&data).unwrap()));
}

#[test]
fn densities_and_sketches_merge_exactly_too() {
    let eps = Epsilon::new(1.0).unwrap();
    let xs: Vec<f64> = (0..5000).map(|i| ((i * 7919) % 1000) as f64 / 1000.0).chain([f64::NAN, 9.0]).collect();
    let kde = KdeRequest::new(KdeMethod::Iclp, (0.0, 1.0), eps);
    let m = kde.build(xs.len()).unwrap();
    let grid = kde.grid().unwrap();
    let whole = GridPoints::snap(&grid, &xs).unwrap();
    let mut state = m.empty_state();
    for part in xs.chunks(777) {
        let mut s = m.empty_state();
        m.update_state(&mut s, &GridPoints::snap(&grid, part).unwrap()).unwrap();
        state.merge(&s).unwrap();
    }
    assert_eq!(m.state_summary(&state).unwrap(), m.summarize(&whole).unwrap());

    let sketch =
        SketchRequest { map: "rff".into(), dim: 2, size: 50, width: 0.3, buckets: 8, map_seed: 3, epsilon: eps }
            .build()
            .unwrap();
    let points = PointSet::with_default(2, xs.iter().flat_map(|x| [*x, 1.0 - x]).collect(), None).unwrap();
    let mut state = sketch.empty_state();
    for rows in (0..points.len()).collect::<Vec<_>>().chunks(1000).rev() {
        let mut s = sketch.empty_state();
        sketch.update_state(&mut s, &points.subset(rows)).unwrap();
        state.merge(&s).unwrap();
    }
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    assert_eq!(bits(sketch.state_summary(&state).unwrap()), bits(sketch.summarize(&points).unwrap()));

    // Balog et al.'s Algorithm 1: the kernel sums at the synthetic points.
    let alg1 = fdp::front::KmeRequest {
        kernel: Stationary::gaussian(0.3).unwrap(),
        centre: vec![0.5, 0.5],
        scale: 0.5,
        synthetic_points: 25,
        points_seed: 1,
        epsilon: eps,
        delta: Delta::new(1e-6).unwrap(),
    }
    .build(points.len())
    .unwrap();
    let mut state = alg1.empty_state();
    for rows in (0..points.len()).collect::<Vec<_>>().chunks(333) {
        let mut s = alg1.empty_state();
        alg1.update_state(&mut s, &points.subset(rows)).unwrap();
        state.merge(&s).unwrap();
    }
    assert_eq!(bits(alg1.state_summary(&state).unwrap()), bits(alg1.summarize(&points).unwrap()));
}

#[test]
fn foreign_incomplete_and_damaged_states_are_refused_before_any_charge() {
    let data = curves();
    let eps = Epsilon::new(1.0).unwrap();
    let bound = ClippingBound::coefficient_l1(2.0).unwrap();
    let m = MeanRequest::new(MeanMethod::IclpRkhs, Stationary::matern32(0.1).unwrap(), bound, eps)
        .build(data.grid(), 1000)
        .unwrap();
    let other = MeanRequest::new(MeanMethod::IclpRkhs, Stationary::matern32(0.2).unwrap(), bound, eps)
        .build(data.grid(), 1000)
        .unwrap();
    let mut session = Session::pure(eps).unwrap();
    let foreign = partitioned(&other, &data, 4);
    assert!(session.release_state(&m, &foreign).unwrap_err().to_string().contains("another mechanism"));
    let mut half = m.empty_state();
    m.update_state(&mut half, &data.subset(&(0..500).collect::<Vec<_>>())).unwrap();
    assert!(session.release_state(&m, &half).unwrap_err().to_string().contains("records in the summary state"));
    assert!(m.empty_state().merge(&foreign).is_err());
    let bytes = partitioned(&m, &data, 4).to_bytes();
    assert!(SummaryState::from_bytes(&bytes[..bytes.len() / 2]).is_err());
    let mut corrupt = bytes.clone();
    corrupt[100] ^= 0x10;
    assert!(SummaryState::from_bytes(&corrupt).unwrap_err().to_string().contains("CRC"));
    // Right fingerprint, record count and CRC, one sum short: refused before the charge (it used to
    // panic in `state_summary` with an index out of bounds after the ledger was charged).
    let full = partitioned(&m, &data, 4);
    let width = full.sums().len();
    let mut short = SummaryState::new(full.fingerprint(), width - 1);
    short.add(full.records(), &full.sums()[..width - 1]).unwrap();
    let short = SummaryState::from_bytes(&short.to_bytes()).unwrap();
    let err = session.release_state(&m, &short).unwrap_err().to_string();
    assert!(err.contains("sums in the summary state"), "{err}");
    assert!(m.state_summary(&short).is_err());
    assert!(session.ledger().is_empty(), "nothing may be charged for a refused state");
}

/// A crafted partial density state with a count of −1 in one bin (and +1 in another, so that the
/// merged state has n records): merged with a victim's point inside or outside that bin, the release
/// succeeds either way. It used to succeed when the victim's point cancelled the −1 and fail after
/// the charge ("negative count") otherwise: an error that depended on the victim's record.
#[test]
fn a_crafted_negative_count_gives_the_same_outcome_whatever_the_victim() {
    let eps = Epsilon::new(1.0).unwrap();
    let n = 100;
    for method in [KdeMethod::Iclp, KdeMethod::Bernstein] {
        let kde = KdeRequest::new(method, (0.0, 1.0), eps);
        let m = kde.build(n).unwrap();
        let grid = kde.grid().unwrap();
        let honest: Vec<f64> = (0..n - 2).map(|i| i as f64 / n as f64).collect();
        let mut base = m.empty_state();
        m.update_state(&mut base, &GridPoints::snap(&grid, &honest).unwrap()).unwrap();
        let raw = u64::from_le_bytes(base.to_bytes()[10..18].try_into().unwrap());
        let mut crafted_sums = vec![0i128; grid.len()];
        crafted_sums[0] = -1;
        crafted_sums[grid.len() - 1] = 1;
        let mut crafted = SummaryState::new(raw, grid.len());
        crafted.add(1, &crafted_sums).unwrap();
        let outcome = |victim: f64| {
            let mut state = base.clone();
            state.merge(&crafted).unwrap();
            m.update_state(&mut state, &GridPoints::snap(&grid, &[victim]).unwrap()).unwrap();
            let mut session = Session::pure(eps).unwrap().with_seed(3);
            session.release_state(&m, &state).map(|_| ()).map_err(|e| e.to_string())
        };
        assert_eq!(outcome(0.0), outcome(0.5), "{method:?}");
        assert!(outcome(0.5).is_ok(), "{method:?}: {:?}", outcome(0.5));
    }
}
