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
        if dim == 0 || data.len() % dim != 0 {
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
                value: f64::NAN,
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

    /// The empirical measure: weight 1/N on every point.
    pub fn uniform(points: PointSet) -> Self {
        let n = points.len().max(1);
        Self { weights: vec![1.0 / n as f64; points.len()], points }
    }
}

/// `Σ_i row(i)` over `count` rows of length `width`, summed in parallel (the mean feature vectors of
/// random Fourier features and sketches).
pub(crate) fn parallel_row_sum(count: usize, width: usize, row: impl Fn(usize) -> Vec<f64> + Sync) -> Vec<f64> {
    (0..count)
        .into_par_iter()
        .fold(
            || vec![0.0; width],
            |mut acc, i| {
                acc.iter_mut().zip(row(i)).for_each(|(a, f)| *a += f);
                acc
            },
        )
        .reduce(
            || vec![0.0; width],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        )
}
