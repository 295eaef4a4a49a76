//! **The exact-loss edge suite, as a library**: for any registered mechanism, the exact privacy loss
//! of neighbouring datasets an adversary would choose, computed from the lattice points the releases
//! are centred at and the noise's own law ([`fdp_core::Mechanism::exact_losses`]) — never from the
//! mechanism's own sensitivity bound, so a miscalibrated mechanism shows a ratio above 1.
//!
//! [`edge_suite`] takes a built mechanism and a base dataset of its input kind; it replaces one
//! record of the base (replace-one neighbours; n public) — or adds one (add/remove neighbours) — by
//! each of the adversarial records of that kind ([`adversarial_curves`], [`adversarial_sparse`],
//! [`adversarial_points`], [`adversarial_labelled`]: huge finite values, NaN and ±∞, spikes,
//! subnormals, far-away points, records with many or no observations, inputs outside the domain),
//! summarises every dataset, and reports the largest loss-to-budget ratio over every pair and every
//! stage. `tests/registry.rs` runs it on every registered mechanism: a mechanism that states no
//! exact-loss law is refused, and one whose worst ratio exceeds 1 fails. The specialised cases of
//! `examples/harness/privacy_edges.rs` (the smallest eigencomponents, extreme η and ψ, Spark-scale n) add to
//! it.

use fdp_core::{Error, Result};
use fdp_data::{CurveSet, SparseCurves};
use fdp_noise::NeighbourRelation;

use super::{Built, Input, RECORD};

/// What the suite found: the worst loss-to-budget ratio (at most 1 iff every stage held its
/// guarantee on every pair), the stage it occurred in, and how many pairs were compared.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeReport {
    /// The largest exact loss divided by its stage's budget.
    pub worst: f64,
    /// The stage of the worst ratio.
    pub stage: &'static str,
    /// Neighbouring pairs compared.
    pub pairs: usize,
}

/// Curves an adversary would submit, on `k` grid points (the data's units): zero, ±f64::MAX,
/// alternating ±f64::MAX, a spike of 1e308, a negative spike at the end, subnormals, all NaN, all
/// +∞, half NaN, and NaN between the extremes.
pub fn adversarial_curves(k: usize) -> Vec<Vec<f64>> {
    let mut spike = vec![0.0; k];
    spike[k / 2] = 1e308;
    let mut low_spike = vec![0.0; k];
    low_spike[k - 1] = -1e308;
    let mut extreme_nan = vec![f64::NAN; k];
    extreme_nan[0] = 1.7e308;
    extreme_nan[k - 1] = -1.7e308;
    let mut half_nan = vec![1.0; k];
    half_nan[..k / 2].fill(f64::NAN);
    vec![
        vec![0.0; k],
        vec![1e3; k],
        vec![f64::MAX; k],
        vec![-f64::MAX; k],
        (0..k).map(|i| if i % 2 == 0 { f64::MAX } else { -f64::MAX }).collect(),
        spike,
        low_spike,
        vec![5e-324; k],
        vec![f64::NAN; k],
        vec![f64::INFINITY; k],
        extreme_nan,
        half_nan,
    ]
}

/// Sparse records an adversary would submit on `domain`: none at all, one observation at
/// ±f64::MAX, fifty alternating ±f64::MAX at one time, NaN and infinite times and values, times
/// outside the domain, and an ordinary record.
pub fn adversarial_sparse((lo, hi): (f64, f64)) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mid = lo + (hi - lo) / 2.0;
    vec![
        (vec![], vec![]),
        (vec![lo], vec![f64::MAX]),
        (vec![hi], vec![-f64::MAX]),
        (vec![mid; 50], (0..50).map(|i| if i % 2 == 0 { f64::MAX } else { -f64::MAX }).collect()),
        ((0..50).map(|i| lo + (hi - lo) * i as f64 / 49.0).collect(), vec![1e308; 50]),
        (vec![f64::NAN, mid], vec![1.0, f64::NAN]),
        (vec![mid, mid], vec![f64::INFINITY, f64::NEG_INFINITY]),
        (vec![lo - 1e6, hi + 1e6], vec![f64::MAX, -f64::MAX]),
        (vec![lo, mid, hi], vec![0.0, 0.0, 0.0]),
    ]
}

/// Points an adversary would submit in `dim` coordinates: the origin, ±f64::MAX, mixed extremes,
/// NaN, ±∞, a subnormal, and a point 10^6 away.
pub fn adversarial_points(dim: usize) -> Vec<Vec<f64>> {
    vec![
        vec![0.0; dim],
        vec![f64::MAX; dim],
        vec![-f64::MAX; dim],
        (0..dim).map(|i| if i % 2 == 0 { f64::MAX } else { -f64::MAX }).collect(),
        vec![f64::NAN; dim],
        vec![f64::INFINITY; dim],
        vec![f64::NEG_INFINITY; dim],
        vec![5e-324; dim],
        vec![1e6; dim],
        vec![1.0; dim],
    ]
}

/// Labelled points an adversary would submit: inputs at the ends and the middle of `[0, 1]`, NaN,
/// 1e308 and −∞, each with responses ±f64::MAX, NaN, ±1 and 0.
pub fn adversarial_labelled() -> Vec<(f64, f64)> {
    let xs = [0.0, 0.5, 1.0, f64::NAN, 1e308, f64::NEG_INFINITY];
    let ys = [f64::MAX, -f64::MAX, f64::NAN, 1.0, -1.0, 0.0];
    xs.iter().flat_map(|&x| ys.iter().map(move |&y| (x, y))).collect()
}

/// **The edge suite of `built` around `base`** (a dataset of the mechanism's input kind and n):
/// every neighbour of `base` obtained by replacing its first record by an adversarial one (or, for
/// add/remove neighbours, the base without its first record against it plus each adversarial
/// record), summarised, and every pair's exact loss per stage divided by the stage's budget.
/// Refused when the mechanism states no exact-loss law.
pub fn edge_suite(built: &Built, base: Input<'_>) -> Result<EdgeReport> {
    let add_remove = built.guarantee().relation() == NeighbourRelation::AddRemoveOne;
    let summaries: Vec<Vec<f64>> =
        neighbours(base, add_remove)?.iter().map(|data| built.summary(data.input())).collect::<Result<_>>()?;
    worst_over_pairs(&summaries, add_remove, built.name(), |a, b| built.exact_losses(a, b))
}

/// The worst loss-to-budget ratio over the neighbouring pairs of `summaries`, by `losses` (a
/// mechanism's [`fdp_core::Mechanism::exact_losses`]): with `add_remove` the first summary is the
/// data without the record and each other one a neighbour of it; otherwise every two are neighbours
/// (they differ in one record). For a mechanism outside the registry, e.g. one being written.
pub fn worst_over_pairs(
    summaries: &[Vec<f64>],
    add_remove: bool,
    name: &str,
    losses: impl Fn(&[f64], &[f64]) -> Option<Result<Vec<(&'static str, f64)>>>,
) -> Result<EdgeReport> {
    let mut report = EdgeReport { worst: 0.0, stage: "release", pairs: 0 };
    let pairs: Vec<(usize, usize)> = if add_remove {
        (1..summaries.len()).map(|j| (0, j)).collect()
    } else {
        (0..summaries.len()).flat_map(|i| (i + 1..summaries.len()).map(move |j| (i, j))).collect()
    };
    for (i, j) in pairs {
        let stages = losses(&summaries[i], &summaries[j]).ok_or_else(|| Error::BadSpec {
            what: "the mechanism",
            spec: name.into(),
            reason: "states no exact-loss law (Mechanism::exact_losses): the edge suite cannot check it",
        })??;
        for (stage, ratio) in stages {
            // A NaN ratio is a failure too: it takes the place of the worst (and fails any bound).
            if ratio.is_nan() || ratio > report.worst {
                report.worst = ratio;
                report.stage = stage;
            }
        }
        report.pairs += 1;
    }
    Ok(report)
}

/// A dataset of one input kind that owns its data (what the suite builds, and what tests hold):
/// [`input`](Self::input) lends it to a mechanism.
#[derive(Debug, Clone)]
pub enum Dataset {
    /// Curves on a common grid.
    Curves(CurveSet<'static>),
    /// Sparse curves.
    Sparse(SparseCurves),
    /// Points, row-major, and their dimension.
    Points(Vec<f64>, usize),
    /// 1-D inputs and their responses.
    Labelled(Vec<f64>, Vec<f64>),
}

impl Dataset {
    /// The dataset as a mechanism's input.
    pub fn input(&self) -> Input<'_> {
        match self {
            Self::Curves(c) => Input::Curves { curves: c, unit: RECORD },
            Self::Sparse(s) => Input::Sparse { curves: s, unit: RECORD },
            Self::Points(data, dim) => Input::Points { data, dim: *dim },
            Self::Labelled(x, y) => Input::Labelled { x, y },
        }
    }
}

/// The base's neighbours: its first record replaced by each adversarial record (replace-one, the
/// base itself first), or the base without its first record and that plus each adversarial record
/// (add/remove).
fn neighbours(base: Input<'_>, add_remove: bool) -> Result<Vec<Dataset>> {
    let mut out = Vec::new();
    match base {
        Input::Curves { curves, .. } => {
            let k = curves.grid().len();
            let rest = &curves.values()[k..];
            let with = |record: &[f64]| -> Result<Dataset> {
                Ok(Dataset::Curves(CurveSet::from_flat(curves.grid().clone(), [record, rest].concat(), None)?.0))
            };
            out.push(if add_remove {
                Dataset::Curves(CurveSet::from_flat(curves.grid().clone(), rest.to_vec(), None)?.0)
            } else {
                Dataset::Curves(CurveSet::from_flat(curves.grid().clone(), curves.values().to_vec(), None)?.0)
            });
            for record in adversarial_curves(k) {
                out.push(with(&record)?);
            }
        }
        Input::Sparse { curves: sparse, .. } => {
            let rest: Vec<(Vec<f64>, Vec<f64>)> =
                (1..sparse.n()).map(|i| (sparse.record(i).0.to_vec(), sparse.record(i).1.to_vec())).collect();
            let first = (sparse.record(0).0.to_vec(), sparse.record(0).1.to_vec());
            let with = |record: (Vec<f64>, Vec<f64>)| -> Result<Dataset> {
                let records: Vec<_> = std::iter::once(record).chain(rest.iter().cloned()).collect();
                Ok(Dataset::Sparse(SparseCurves::new(sparse.domain(), &records)?))
            };
            out.push(if add_remove {
                Dataset::Sparse(SparseCurves::new(sparse.domain(), &rest)?)
            } else {
                with(first)?
            });
            for record in adversarial_sparse(sparse.domain()) {
                out.push(with(record)?);
            }
        }
        Input::Points { data, dim } => {
            let rest = &data[dim.min(data.len())..];
            out.push(Dataset::Points(if add_remove { rest.to_vec() } else { data.to_vec() }, dim));
            for record in adversarial_points(dim) {
                out.push(Dataset::Points([record.as_slice(), rest].concat(), dim));
            }
        }
        Input::Labelled { x, y } => {
            let (rest_x, rest_y) = (&x[1.min(x.len())..], &y[1.min(y.len())..]);
            out.push(if add_remove {
                Dataset::Labelled(rest_x.to_vec(), rest_y.to_vec())
            } else {
                Dataset::Labelled(x.to_vec(), y.to_vec())
            });
            for (a, b) in adversarial_labelled() {
                out.push(Dataset::Labelled([&[a], rest_x].concat(), [&[b], rest_y].concat()));
            }
        }
    }
    Ok(out)
}
