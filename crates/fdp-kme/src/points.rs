//! Point sets in `R^D`.

use rayon::prelude::*;

use crate::error::{KmeError, Result};

/// N points in `R^D`, row-major. A record with a non-finite coordinate is replaced by the public
/// default point (the origin, unless given): never an error, never dropped, N is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSet {
    dim: usize,
    data: Vec<f64>,
}

impl PointSet {
    /// Points from a flat row-major buffer (`N * dim` values), repairing non-finite records.
    pub fn new(dim: usize, data: Vec<f64>) -> Result<Self> {
        Self::with_default(dim, data, None)
    }

    /// As [`new`](Self::new) with a public default point for unusable records.
    pub fn with_default(dim: usize, mut data: Vec<f64>, default: Option<&[f64]>) -> Result<Self> {
        if dim == 0 || !data.len().is_multiple_of(dim) {
            return Err(KmeError::Shape {
                what: "point buffer (a multiple of the dimension)",
                expected: dim,
                got: data.len(),
            });
        }
        let origin = vec![0.0; dim];
        let default = default.unwrap_or(&origin);
        if default.len() != dim || default.iter().any(|v| !v.is_finite()) {
            return Err(KmeError::BadParameter {
                name: "default point",
                value: format!("{default:?}").into(),
                reason: "must be finite with the points' dimension",
            });
        }
        for row in data.chunks_mut(dim) {
            if row.iter().any(|v| !v.is_finite()) {
                row.copy_from_slice(default);
            }
        }
        Ok(Self { dim, data })
    }

    /// N.
    pub fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// D.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Point i.
    pub fn point(&self, i: usize) -> &[f64] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// All coordinates, row-major.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// The points with indices in `rows`.
    pub fn subset(&self, rows: &[usize]) -> Self {
        Self { dim: self.dim, data: rows.iter().flat_map(|&i| self.point(i).iter().copied()).collect() }
    }
}

/// Replace-one mechanisms are built for a public N: a point set of another size is a shape error.
pub(crate) fn check_public_n(data: &PointSet, n: usize) -> Result<()> {
    if data.len() == n {
        Ok(())
    } else {
        Err(KmeError::Shape { what: "number of points", expected: n, got: data.len() })
    }
}

/// Points with real weights: the measure `Σ_m w_m δ_{z_m}` (weights may be negative, as in Balog et
/// al.'s synthetic datasets).
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedPoints {
    pub points: PointSet,
    pub weights: Vec<f64>,
}

impl WeightedPoints {
    /// Pairs points with weights of the same length.
    pub fn new(points: PointSet, weights: Vec<f64>) -> Result<Self> {
        if weights.len() != points.len() {
            return Err(KmeError::Shape { what: "weights", expected: points.len(), got: weights.len() });
        }
        Ok(Self { points, weights })
    }

    /// The weighted points of a released synthetic dataset.
    pub fn from_sample(sample: &fdp_core::WeightedSample) -> Result<Self> {
        Self::new(PointSet::new(sample.dim, sample.points.clone())?, sample.weights.clone())
    }

    /// The empirical measure: weight 1/N on every point.
    pub fn uniform(points: PointSet) -> Self {
        let n = points.len().max(1);
        Self { weights: vec![1.0 / n as f64; points.len()], points }
    }
}

/// A bound on `|k̂ - k|` for one kernel value as summed in fixed point, against the exact value,
/// with `κ = sup k`: the computed value is within `(D + 16) 2^-50 κ` of exact (a few ulps per
/// coordinate — all built-in shapes are `exp` of a rounded argument times a polynomial), and the
/// fixed-point truncation at the exponent of `κ` ([`fdp_core::state::fixed_point_exponent`]) adds at
/// most `2^-61 κ`. Shared by the exponential mechanism's score margin and Algorithm 1's whitening
/// term.
pub(crate) fn kernel_value_error(kappa: f64, dim: usize) -> f64 {
    (dim as f64 + 16.0) * 2f64.powi(-50) * kappa + 2f64.powi(-61) * kappa
}

/// `Σ_i row(i)` over `count` rows of length `width` as exact fixed-point integers
/// (`trunc(v · 2^exponent)` per entry, see [`fdp_core::state`]), in parallel blocks: the same
/// integers whatever the blocking or the order (Algorithm 1's kernel means, the exponential
/// mechanism's statistics, mergeable states).
pub(crate) fn fixed_row_sums(
    count: usize,
    width: usize,
    exponent: i32,
    row: impl Fn(usize) -> Vec<f64> + Sync,
) -> Vec<i128> {
    const BLOCK: usize = 1024;
    let blocks: Vec<usize> = (0..count.div_ceil(BLOCK)).collect();
    let scale = fdp_core::state::fixed_scale(exponent);
    blocks
        .par_iter()
        .map(|b| {
            let mut acc = vec![0i128; width];
            for i in b * BLOCK..((b + 1) * BLOCK).min(count) {
                acc.iter_mut().zip(row(i)).for_each(|(a, v)| *a += fdp_core::state::to_fixed_scaled(v, scale));
            }
            acc
        })
        .reduce(
            || vec![0i128; width],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// `Σ_i row(i)` in floating point (the mean feature vectors of random Fourier features and
/// sketches). Rows are summed in fixed blocks of 1024 whose partial sums are added in block order, so
/// the result is bit-identical on any thread count (a rayon `reduce` combines partial sums in an order
/// that depends on the scheduling, and the RFF sketch of 10^5 points changed from run to run).
pub(crate) fn parallel_row_sum(count: usize, width: usize, row: impl Fn(usize) -> Vec<f64> + Sync) -> Vec<f64> {
    const BLOCK: usize = 1024;
    let blocks: Vec<usize> = (0..count.div_ceil(BLOCK)).collect();
    let partial: Vec<Vec<f64>> = blocks
        .par_iter()
        .map(|b| {
            let mut acc = vec![0.0; width];
            for i in b * BLOCK..((b + 1) * BLOCK).min(count) {
                acc.iter_mut().zip(row(i)).for_each(|(a, f)| *a += f);
            }
            acc
        })
        .collect();
    partial.into_iter().fold(vec![0.0; width], |mut total, part| {
        total.iter_mut().zip(&part).for_each(|(t, p)| *t += p);
        total
    })
}

/// Random Fourier pairs `scale · (cos ω_j·x, sin ω_j·x)` for the frequencies `omegas` (`dim` numbers
/// each), shared by Algorithm 2 and the RFF sketch.
///
/// **Total on finite inputs.** A point whose projection `ω_j·x` overflows (coordinates near 1e308)
/// would give `cos(±∞) = NaN`; such a record gets the features of the public default point, the
/// origin (`cos 0 = 1`, `sin 0 = 0`), before anything is summed. Every output has norm `scale·sqrt(J)`
/// in l2 whatever the input, so the sensitivity bounds hold for every record.
pub(crate) fn fourier_features(omegas: &[f64], dim: usize, x: &[f64], scale: f64) -> Vec<f64> {
    let projections: Vec<f64> = omegas.chunks(dim).map(|om| om.iter().zip(x).map(|(w, v)| w * v).sum()).collect();
    let usable = projections.iter().all(|a: &f64| a.is_finite());
    projections.iter().flat_map(|a| if usable { [scale * a.cos(), scale * a.sin()] } else { [scale, 0.0] }).collect()
}
