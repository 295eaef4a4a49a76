//! Grids on an interval or a box, with quadrature weights.
//!
//! A [`Grid`] holds points `t_1..t_K` in `T ⊂ R^d` (d = 1, or d = 2 for tensor grids) and
//! weights `w_i > 0` so that `∫_T f ≈ Σ_i w_i f(t_i)`. Every inner product, norm and Mercer basis of
//! fdp is taken in this weighted geometry: `<f, g> = Σ_i w_i f(t_i) g(t_i)`.

use serde::{Deserialize, Serialize};

use crate::error::{MercerError, Result, check_finite, check_len};

/// How a grid was built; kept so that closed forms (e.g. the Brownian basis) can check they apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum GridLayout {
    /// `t_i = a + (i + 1/2) h`, `w_i = h = (b - a) / K`.
    Midpoint { start: f64, end: f64 },
    /// `t_i = a + i h` with both ends, `h = (b - a) / (K - 1)`, trapezoid weights.
    Trapezoid { start: f64, end: f64 },
    /// User-supplied points and weights.
    Custom,
    /// Tensor product of two 1-D grids; point `(i, j)` is stored at index `i * ny + j`.
    Tensor { nx: usize, ny: usize },
}

/// Points with quadrature weights, validated once at construction.
///
/// Points are stored flat: point `i` is `points()[i * dim .. (i + 1) * dim]`.
///
/// ```
/// use fdp_mercer::Grid;
/// let g = Grid::midpoint(0.0, 1.0, 4)?;
/// assert_eq!(g.points(), &[0.125, 0.375, 0.625, 0.875]);
/// assert!((g.weights().iter().sum::<f64>() - 1.0).abs() < 1e-15);
/// # Ok::<(), fdp_mercer::MercerError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    dim: usize,
    points: Vec<f64>,
    weights: Vec<f64>,
    layout: GridLayout,
    /// Per-dimension `(min, max)` of the domain T.
    domain: Vec<(f64, f64)>,
}

/// Finite ends, `start < end`, and a finite width `end - start` (quadrature weights and every map
/// onto the interval divide by it).
fn check_interval(start: f64, end: f64) -> Result<()> {
    if start.is_finite() && end.is_finite() && start < end && (end - start).is_finite() {
        Ok(())
    } else {
        Err(MercerError::BadInterval { start, end })
    }
}

fn check_weights(weights: &[f64]) -> Result<()> {
    match weights.iter().position(|w| !(w.is_finite() && *w > 0.0)) {
        None => Ok(()),
        Some(index) => Err(MercerError::BadWeight { index, value: weights[index] }),
    }
}

fn check_increasing(points: &[f64]) -> Result<()> {
    check_finite(points)?;
    match points.windows(2).position(|p| p[1] <= p[0]) {
        None => Ok(()),
        Some(i) => Err(MercerError::NotIncreasing { index: i + 1, value: points[i + 1], previous: points[i] }),
    }
}

/// Nearest index in an increasing sequence of `len >= 1` values given by `at`.
fn nearest_sorted(len: usize, at: impl Fn(usize) -> f64, x: f64) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if at(mid) < x { lo = mid + 1 } else { hi = mid }
    }
    match lo {
        0 => 0,
        i if i == len => len - 1,
        i => {
            if x - at(i - 1) <= at(i) - x {
                i - 1
            } else {
                i
            }
        }
    }
}

/// `k` if a grid of `k` points fits the caps ([`fdp_core::caps::MAX_F64_VALUES`] values per array),
/// checked before anything is allocated: a count from a user (`grid_points`, `--grid LO,HI,K`) must
/// be a parameter error, not an allocation failure.
fn checked_points(k: usize) -> Result<usize> {
    if k > fdp_core::caps::MAX_F64_VALUES {
        return Err(MercerError::BadOption {
            name: "grid points",
            value: k.into(),
            reason: "at most 2^27 (1 GiB of f64 per array); a dense basis takes at most 4096",
        });
    }
    Ok(k)
}

impl Grid {
    /// Midpoint rule on `[start, end]` with `k` cells: `t_i = start + (i + 1/2) h`, `w_i = h`.
    pub fn midpoint(start: f64, end: f64, k: usize) -> Result<Self> {
        check_interval(start, end)?;
        if k == 0 {
            return Err(MercerError::TooFewPoints { needed: 1, got: 0 });
        }
        let k = checked_points(k)?;
        let h = (end - start) / k as f64;
        let points: Vec<f64> = (0..k).map(|i| start + (i as f64 + 0.5) * h).collect();
        check_increasing(&points)?;
        Ok(Self {
            dim: 1,
            points,
            weights: vec![h; k],
            layout: GridLayout::Midpoint { start, end },
            domain: vec![(start, end)],
        })
    }

    /// Uniform points including both ends, `t_i = start + i h` with `h = (end - start) / (k - 1)`,
    /// and trapezoid weights (`h/2` at the ends, `h` inside). Needs `k >= 2`.
    pub fn trapezoid(start: f64, end: f64, k: usize) -> Result<Self> {
        check_interval(start, end)?;
        if k < 2 {
            return Err(MercerError::TooFewPoints { needed: 2, got: k });
        }
        let k = checked_points(k)?;
        let h = (end - start) / (k - 1) as f64;
        let mut points: Vec<f64> = (0..k).map(|i| start + i as f64 * h).collect();
        points[k - 1] = end;
        check_increasing(&points)?;
        let mut weights = vec![h; k];
        weights[0] = h / 2.0;
        weights[k - 1] = h / 2.0;
        Ok(Self { dim: 1, points, weights, layout: GridLayout::Trapezoid { start, end }, domain: vec![(start, end)] })
    }

    /// Arbitrary strictly increasing 1-D points with user weights.
    ///
    /// The ICLP authors' grid, for instance, is `seq(0, 1, length = 101)` with all weights `1/101`.
    pub fn with_weights(points: Vec<f64>, weights: Vec<f64>) -> Result<Self> {
        if points.is_empty() {
            return Err(MercerError::TooFewPoints { needed: 1, got: 0 });
        }
        check_increasing(&points)?;
        if points.len() > 1 {
            check_interval(points[0], points[points.len() - 1])?;
        }
        check_len("weights", points.len(), weights.len())?;
        check_weights(&weights)?;
        let domain = vec![(points[0], points[points.len() - 1])];
        Ok(Self { dim: 1, points, weights, layout: GridLayout::Custom, domain })
    }

    /// Arbitrary strictly increasing 1-D points with trapezoid weights
    /// (`w_i = (t_{i+1} - t_{i-1}) / 2`, half cells at the ends). Needs at least two points.
    pub fn trapezoid_points(points: Vec<f64>) -> Result<Self> {
        if points.len() < 2 {
            return Err(MercerError::TooFewPoints { needed: 2, got: points.len() });
        }
        check_increasing(&points)?;
        check_interval(points[0], points[points.len() - 1])?;
        let k = points.len();
        let weights = (0..k).map(|i| 0.5 * (points[(i + 1).min(k - 1)] - points[i.saturating_sub(1)])).collect();
        Self::with_weights(points, weights)
    }

    /// The same 1-D grid mapped affinely onto `[start, end]` (points and weights rescaled; the layout
    /// is kept for midpoint and trapezoid grids).
    pub fn rescaled(&self, start: f64, end: f64) -> Result<Self> {
        check_interval(start, end)?;
        if self.dim != 1 {
            return Err(MercerError::Unsupported("only 1-D grids can be rescaled"));
        }
        let (a, b) = self.domain[0];
        let scale = (end - start) / (b - a);
        let points: Vec<f64> = self.points.iter().map(|t| start + (t - a) * scale).collect();
        check_increasing(&points)?;
        let weights = self.weights.iter().map(|w| w * scale).collect();
        let layout = match self.layout {
            GridLayout::Midpoint { .. } => GridLayout::Midpoint { start, end },
            GridLayout::Trapezoid { .. } => GridLayout::Trapezoid { start, end },
            _ => GridLayout::Custom,
        };
        Ok(Self { dim: 1, points, weights, layout, domain: vec![(start, end)] })
    }

    /// Tensor product of two 1-D grids on the box `domain(x) × domain(y)`, weights `w_i^x w_j^y`.
    /// Point `(x_i, y_j)` is stored at index `i * ny + j`.
    pub fn tensor(x: &Grid, y: &Grid) -> Result<Self> {
        if x.dim != 1 || y.dim != 1 {
            return Err(MercerError::Unsupported("tensor grids are built from two 1-D grids"));
        }
        let (nx, ny) = (x.len(), y.len());
        let mut points = Vec::with_capacity(2 * nx * ny);
        let mut weights = Vec::with_capacity(nx * ny);
        for (xi, wx) in x.points.iter().zip(&x.weights) {
            for (yj, wy) in y.points.iter().zip(&y.weights) {
                points.extend_from_slice(&[*xi, *yj]);
                weights.push(wx * wy);
            }
        }
        Ok(Self {
            dim: 2,
            points,
            weights,
            layout: GridLayout::Tensor { nx, ny },
            domain: vec![x.domain[0], y.domain[0]],
        })
    }

    /// Number of points K.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Always false: a grid has at least one point.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Dimension d of the domain.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The points, flat (`dim` numbers per point).
    pub fn points(&self) -> &[f64] {
        &self.points
    }

    /// Point `i` as a slice of length `dim`.
    pub fn point(&self, i: usize) -> &[f64] {
        &self.points[i * self.dim..(i + 1) * self.dim]
    }

    /// The quadrature weights `w_i`.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// How the grid was built.
    pub fn layout(&self) -> &GridLayout {
        &self.layout
    }

    /// Per-dimension `(min, max)` of the domain: the interval for midpoint and trapezoid grids,
    /// the hull of the points for custom grids.
    pub fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }

    /// Weighted inner product `Σ_i w_i f_i g_i` of two curves on the grid.
    pub fn inner(&self, f: &[f64], g: &[f64]) -> Result<f64> {
        check_len("f", self.len(), f.len())?;
        check_len("g", self.len(), g.len())?;
        Ok(self.weights.iter().zip(f).zip(g).map(|((w, a), b)| w * a * b).sum())
    }

    /// Squared weighted L2 distance `Σ_i w_i (f_i - g_i)²` (integrated squared error).
    pub fn sq_distance(&self, f: &[f64], g: &[f64]) -> Result<f64> {
        check_len("f", self.len(), f.len())?;
        check_len("g", self.len(), g.len())?;
        Ok(self.weights.iter().zip(f).zip(g).map(|((w, a), b)| w * (a - b) * (a - b)).sum())
    }

    /// Weighted L2 norm `(Σ_i w_i f_i^2)^{1/2}`.
    pub fn norm_l2(&self, f: &[f64]) -> Result<f64> {
        self.inner(f, f).map(f64::sqrt)
    }

    /// Index of the grid point nearest to `point` (length `dim`): a binary search on 1-D grids, one per
    /// axis on tensor grids. Points outside the domain map to the nearest boundary point. `None` for a
    /// non-finite coordinate or a wrong length.
    pub fn nearest(&self, point: &[f64]) -> Option<usize> {
        if point.len() != self.dim || point.iter().any(|v| !v.is_finite()) {
            return None;
        }
        match self.layout {
            GridLayout::Tensor { nx, ny } => {
                let i = nearest_sorted(nx, |i| self.points[2 * i * ny], point[0]);
                let j = nearest_sorted(ny, |j| self.points[2 * j + 1], point[1]);
                Some(i * ny + j)
            }
            _ => Some(nearest_sorted(self.len(), |i| self.points[i], point[0])),
        }
    }

    /// Checks that `points` is a flat list of finite d-dimensional points and returns how many.
    pub fn count_points(&self, points: &[f64]) -> Result<usize> {
        if !points.len().is_multiple_of(self.dim) {
            return Err(MercerError::LengthMismatch {
                what: "points (a multiple of the grid dimension)",
                expected: points.len().div_ceil(self.dim) * self.dim,
                got: points.len(),
            });
        }
        check_finite(points)?;
        Ok(points.len() / self.dim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_grids_are_errors() {
        assert!(matches!(Grid::midpoint(0.0, 1.0, 0), Err(MercerError::TooFewPoints { .. })));
        assert!(matches!(Grid::midpoint(1.0, 1.0, 5), Err(MercerError::BadInterval { .. })));
        assert!(matches!(Grid::midpoint(f64::NAN, 1.0, 5), Err(MercerError::BadInterval { .. })));
        assert!(matches!(Grid::trapezoid(0.0, 1.0, 1), Err(MercerError::TooFewPoints { .. })));
        let unsorted = Grid::with_weights(vec![0.0, 0.5, 0.4], vec![1.0; 3]);
        assert!(matches!(unsorted, Err(MercerError::NotIncreasing { index: 2, .. })));
        let dup = Grid::with_weights(vec![0.0, 0.5, 0.5], vec![1.0; 3]);
        assert!(matches!(dup, Err(MercerError::NotIncreasing { .. })));
        let nan = Grid::with_weights(vec![0.0, f64::NAN], vec![1.0; 2]);
        assert!(matches!(nan, Err(MercerError::NonFinitePoint { index: 1, .. })));
        let zero_w = Grid::with_weights(vec![0.0, 1.0], vec![1.0, 0.0]);
        assert!(matches!(zero_w, Err(MercerError::BadWeight { index: 1, .. })));
        let short_w = Grid::with_weights(vec![0.0, 1.0], vec![1.0]);
        assert!(matches!(short_w, Err(MercerError::LengthMismatch { .. })));
        assert!(matches!(Grid::with_weights(vec![], vec![]), Err(MercerError::TooFewPoints { .. })));
    }

    #[test]
    fn quadrature_integrates_polynomials() {
        let mid = Grid::midpoint(0.0, 2.0, 200).unwrap();
        let trap = Grid::trapezoid(0.0, 2.0, 201).unwrap();
        for g in [&mid, &trap] {
            let ones = vec![1.0; g.len()];
            let t: Vec<f64> = g.points().to_vec();
            assert!((g.inner(&ones, &ones).unwrap() - 2.0).abs() < 1e-12);
            // ∫_0^2 t^2 = 8/3, second-order rules.
            assert!((g.inner(&t, &t).unwrap() - 8.0 / 3.0).abs() < 1e-4);
        }
        assert_eq!(trap.points()[200], 2.0);
        let uneven = Grid::trapezoid_points(vec![0.0, 0.5, 0.75, 2.0]).unwrap();
        assert_eq!(uneven.weights(), &[0.25, 0.375, 0.75, 0.625]);
        let moved = uneven.rescaled(0.0, 1.0).unwrap();
        assert_eq!(moved.points(), &[0.0, 0.25, 0.375, 1.0]);
        assert!((moved.weights().iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert!(Grid::trapezoid_points(vec![1.0]).is_err());
    }

    #[test]
    fn tensor_grid_layout_and_weights() {
        let x = Grid::midpoint(-1.0, 1.0, 3).unwrap();
        let y = Grid::trapezoid(0.0, 1.0, 4).unwrap();
        let g = Grid::tensor(&x, &y).unwrap();
        assert_eq!((g.dim(), g.len()), (2, 12));
        assert_eq!(g.point(4 + 2), &[x.points()[1], y.points()[2]]);
        assert!((g.weights().iter().sum::<f64>() - 2.0).abs() < 1e-12);
        assert_eq!(g.domain(), &[(-1.0, 1.0), (0.0, 1.0)]);
        assert!(g.count_points(&[0.0, 1.0, 2.0]).is_err());
        // x points: -2/3, 0, 2/3; y points: 0, 1/3, 2/3, 1.
        assert_eq!(g.nearest(&[0.1, 0.9]), Some(4 + 3));
        assert_eq!(g.nearest(&[-5.0, -5.0]), Some(0));
        assert_eq!(g.nearest(&[0.5, 0.45]), Some(2 * 4 + 1));
        assert_eq!(g.nearest(&[f64::NAN, 0.0]), None);
        assert_eq!(g.nearest(&[0.0]), None);
        assert_eq!(x.nearest(&[0.34]), Some(2));
        assert_eq!(x.nearest(&[0.33]), Some(1));
        assert_eq!(g.count_points(&[0.0, 1.0, 2.0, 3.0]).unwrap(), 2);
    }
}
