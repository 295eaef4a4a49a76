//! Curve sets: n curves on a shared grid, stored n x K row-major, with per-record repair of
//! missing and non-finite values.

use std::borrow::Cow;

use faer::MatRef;
use serde::{Deserialize, Serialize};

use fdp_mercer::Grid;

use crate::error::{DataError, Result};

/// What happened to one record on the way in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Repair {
    /// Every value was present and finite.
    Complete,
    /// Some values were missing or non-finite and were filled by interpolation along the grid.
    Interpolated,
    /// No usable value: the record was replaced by the public default curve.
    Defaulted,
}

/// Counts of repairs, for the data curator. They describe the private data: do not publish them
/// without charging privacy budget.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairReport {
    pub complete: usize,
    pub interpolated: usize,
    pub defaulted: usize,
}

impl RepairReport {
    fn count(&mut self, r: Repair) {
        match r {
            Repair::Complete => self.complete += 1,
            Repair::Interpolated => self.interpolated += 1,
            Repair::Defaulted => self.defaulted += 1,
        }
    }
}

/// Fills the non-finite entries of one record from its finite ones: linear interpolation in `t`
/// between the nearest finite neighbours, the nearest finite value beyond the ends; with no finite
/// entry at all, the record becomes `default`. Never fails, so a record's content cannot turn into
/// an error (docs/DESIGN.md section 4).
pub fn repair_record(values: &mut [f64], points: &[f64], default: &[f64]) -> Repair {
    let finite: Vec<usize> = (0..values.len()).filter(|&i| values[i].is_finite()).collect();
    if finite.len() == values.len() {
        return Repair::Complete;
    }
    let (Some(&first), Some(&last)) = (finite.first(), finite.last()) else {
        values.copy_from_slice(default);
        return Repair::Defaulted;
    };
    for pair in finite.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        for i in a + 1..b {
            values[i] = interpolate_between(values[a], values[b], points[a], points[i], points[b]);
        }
    }
    let (head, tail) = (values[first], values[last]);
    values[..first].fill(head);
    values[last + 1..].fill(tail);
    Repair::Interpolated
}

/// The value at `t` on the segment from `(ta, va)` to `(tb, vb)`, finite for every finite input:
/// `s = (t - ta)/(tb - ta)` is taken on halved points (exact in f64 away from the subnormal range,
/// and no difference of points near ±1e308 overflows) and the value as `(1 - s) va + s vb` (never
/// `vb - va`, which overflows for ±1.7e308); if rounding still lands beyond the largest float, the
/// nearer endpoint's value is used.
fn interpolate_between(va: f64, vb: f64, ta: f64, t: f64, tb: f64) -> f64 {
    let s = ((t / 2.0 - ta / 2.0) / (tb / 2.0 - ta / 2.0)).clamp(0.0, 1.0);
    let v = (1.0 - s) * va + s * vb;
    if v.is_finite() {
        v
    } else if s < 0.5 {
        va
    } else {
        vb
    }
}

/// One record's observations `(t, y)`, at any times, as values on the public grid `points`: linear
/// interpolation between observations, the first (last) observation's value before (after) them.
/// An observation whose `t` or `y` is not finite is missing (dropped); observations at the same `t`
/// are averaged. With no usable observation every value is NaN, so the record is repaired like any
/// other ([`repair_record`]: the public default curve). Total: no observation can raise an error,
/// and the result is finite wherever it is not NaN (segments are interpolated as in
/// [`repair_record`], which never overflows). This is how long tables are put on a public grid, so
/// that the set of observation times — private — never becomes the grid of a release.
pub fn onto_grid(t: &[f64], y: &[f64], points: &[f64]) -> Vec<f64> {
    let mut obs: Vec<(f64, f64)> =
        t.iter().zip(y).filter(|(t, y)| t.is_finite() && y.is_finite()).map(|(&t, &y)| (t, y)).collect();
    obs.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Average ties: the mean of m finite values, each divided first, is finite (clamped against
    // rounding past the largest float).
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(obs.len());
    let mut i = 0;
    while i < obs.len() {
        let j = i + obs[i..].iter().take_while(|o| o.0 == obs[i].0).count();
        let m = (j - i) as f64;
        let mean = obs[i..j].iter().map(|o| o.1 / m).sum::<f64>().clamp(-f64::MAX, f64::MAX);
        merged.push((obs[i].0, mean));
        i = j;
    }
    let (Some(&(t_first, y_first)), Some(&(t_last, y_last))) = (merged.first(), merged.last()) else {
        return vec![f64::NAN; points.len()];
    };
    points
        .iter()
        .map(|&p| {
            if p <= t_first {
                y_first
            } else if p >= t_last {
                y_last
            } else {
                let b = merged.partition_point(|o| o.0 < p);
                let ((ta, va), (tb, vb)) = (merged[b - 1], merged[b]);
                if tb == p { vb } else { interpolate_between(va, vb, ta, p, tb) }
            }
        })
        .collect()
}

/// Curves grouped by person: one record per person (see [`CurveSet::per_person`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PersonCurves<K> {
    /// One curve per person, the mean of that person's (repaired) rows, in order of first
    /// appearance. n = the number of persons.
    pub curves: CurveSet<'static>,
    /// The persons' ids, in the same order.
    pub ids: Vec<K>,
    /// How many rows each person had. This describes the private data: for the curator only,
    /// never for a publishable report.
    pub rows: Vec<usize>,
}

impl<K> PersonCurves<K> {
    /// The largest number of rows of one person (local: describes the private data).
    pub fn max_rows(&self) -> usize {
        self.rows.iter().copied().max().unwrap_or(0)
    }
}

/// n curves observed on one 1-D [`Grid`] (K points), stored row-major (`n x K`, contiguous).
///
/// Every constructor repairs records with missing or non-finite values (see [`repair_record`]) and
/// keeps n unchanged: n is public, and so is the default curve used for unusable records.
///
/// ```
/// use fdp_data::CurveSet;
/// use fdp_mercer::Grid;
/// let grid = Grid::midpoint(0.0, 1.0, 4)?;
/// let rows = vec![vec![1.0, f64::NAN, 3.0, 4.0], vec![f64::NAN; 4]];
/// let (set, report) = CurveSet::from_rows(grid, &rows, None)?;
/// assert_eq!(set.row(0), &[1.0, 2.0, 3.0, 4.0]);   // interpolated along the grid
/// assert_eq!(set.row(1), &[0.0; 4]);               // unusable: the public default (zero) curve
/// assert_eq!((set.n(), report.defaulted), (2, 1));
/// # Ok::<(), fdp_data::DataError>(())
/// ```
///
/// The values are owned, or borrowed from the caller's buffer ([`CurveSet::borrowed`], e.g. a numpy
/// array) when no record needs repair, so a large dataset is never copied just to be read.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveSet<'a> {
    grid: Grid,
    values: Cow<'a, [f64]>,
}

impl CurveSet<'static> {
    /// From a flat row-major buffer of `n * K` values; `default` (length K, zero if `None`) replaces
    /// unusable records.
    pub fn from_flat(grid: Grid, mut values: Vec<f64>, default: Option<&[f64]>) -> Result<(Self, RepairReport)> {
        let k = check_shape(&grid, values.len())?;
        let default = checked_default(default, k)?;
        let mut report = RepairReport::default();
        for row in values.chunks_mut(k) {
            report.count(repair_record(row, grid.points(), &default));
        }
        Ok((Self { grid, values: Cow::Owned(values) }, report))
    }

    /// From rows (each of length K).
    pub fn from_rows(grid: Grid, rows: &[Vec<f64>], default: Option<&[f64]>) -> Result<(Self, RepairReport)> {
        let k = grid.len();
        if let Some(bad) = rows.iter().find(|r| r.len() != k) {
            return Err(DataError::LengthMismatch { what: "curve", expected: k, got: bad.len() });
        }
        Self::from_flat(grid, rows.concat(), default)
    }

    /// From an `n x K` matrix.
    pub fn from_mat(grid: Grid, m: MatRef<'_, f64>, default: Option<&[f64]>) -> Result<(Self, RepairReport)> {
        if m.ncols() != grid.len() {
            return Err(DataError::LengthMismatch { what: "matrix columns", expected: grid.len(), got: m.ncols() });
        }
        let values = (0..m.nrows()).flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)])).collect();
        Self::from_flat(grid, values, default)
    }
}

/// `K`, after checking that the grid is 1-D and `len` is a multiple of it.
fn check_shape(grid: &Grid, len: usize) -> Result<usize> {
    let k = grid.len();
    if grid.dim() != 1 {
        return Err(DataError::BadParameter {
            name: "grid dimension",
            value: grid.dim() as f64,
            reason: "curve sets live on 1-D grids",
        });
    }
    if !len.is_multiple_of(k) {
        return Err(DataError::LengthMismatch {
            what: "curve values (a multiple of the grid size)",
            expected: len.div_ceil(k) * k,
            got: len,
        });
    }
    Ok(k)
}

/// The public default curve (zero if `None`), checked to have length `k` and finite values.
fn checked_default(default: Option<&[f64]>, k: usize) -> Result<Vec<f64>> {
    let default = default.map_or_else(|| vec![0.0; k], <[f64]>::to_vec);
    if default.len() != k {
        return Err(DataError::LengthMismatch { what: "default curve", expected: k, got: default.len() });
    }
    if let Some(i) = default.iter().position(|v| !v.is_finite()) {
        return Err(DataError::BadParameter {
            name: "default curve value",
            value: default[i],
            reason: "the public default curve must be finite",
        });
    }
    Ok(default)
}

impl<'a> CurveSet<'a> {
    /// A view of a caller's row-major `n * K` buffer, **without copying it** when every value is
    /// finite; otherwise the values are copied once and the unusable records repaired as in
    /// [`from_flat`](CurveSet::from_flat) (the result is the same either way).
    pub fn borrowed(grid: Grid, values: &'a [f64], default: Option<&[f64]>) -> Result<(Self, RepairReport)> {
        check_shape(&grid, values.len())?;
        checked_default(default, grid.len())?;
        if values.iter().all(|v| v.is_finite()) {
            let n = values.len() / grid.len();
            let report = RepairReport { complete: n, ..RepairReport::default() };
            return Ok((Self { grid, values: Cow::Borrowed(values) }, report));
        }
        let (owned, report) = CurveSet::from_flat(grid, values.to_vec(), default)?;
        Ok((owned, report))
    }

    /// The same curves owning their values (a copy only if they were borrowed).
    pub fn into_owned(self) -> CurveSet<'static> {
        CurveSet { grid: self.grid, values: Cow::Owned(self.values.into_owned()) }
    }

    /// Number of curves n.
    pub fn n(&self) -> usize {
        self.values.len() / self.grid.len()
    }

    /// The shared grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Curve i on the grid.
    pub fn row(&self, i: usize) -> &[f64] {
        let k = self.grid.len();
        &self.values[i * k..(i + 1) * k]
    }

    /// All values, row-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The curves as an `n x K` matrix view (no copy).
    pub fn as_mat(&self) -> MatRef<'_, f64> {
        MatRef::from_row_major_slice(&self.values, self.n(), self.grid.len())
    }

    /// The pointwise sample mean (the non-private estimate).
    pub fn mean_curve(&self) -> Vec<f64> {
        let k = self.grid.len();
        let mut mean = vec![0.0; k];
        for row in self.values.chunks(k) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
        }
        let n = self.n().max(1) as f64;
        mean.iter_mut().for_each(|m| *m /= n);
        mean
    }

    /// The same curves, their values borrowed (nothing copied; they were repaired when read).
    pub fn view(&self) -> CurveSet<'_> {
        CurveSet { grid: self.grid.clone(), values: Cow::Borrowed(&self.values) }
    }

    /// The same curves on the grid mapped onto `[start, end]` (e.g. `[0, 1]`, where kernel
    /// length-scales are set).
    pub fn rescaled(&self, start: f64, end: f64) -> Result<CurveSet<'a>> {
        Ok(Self { grid: self.grid.rescaled(start, end)?, values: self.values.clone() })
    }

    /// The rows grouped by person: `keys[i]` names the person of row `i` (a public id column), and
    /// each person's record is the pointwise mean of their rows, each row already repaired
    /// (`(1/m) Σ_r x_r`, computed as `Σ_r (x_r / m)` and clamped to ±`f64::MAX`, so it is finite for
    /// any finite rows; the terms at each grid point added in ascending order, so the record does
    /// not depend on the order of the person's rows). Persons are in order of first appearance.
    ///
    /// **Why the mean.** The mean of a person's curves lies in every convex ball that holds each of
    /// them, so a person whose rows are within a bound stays within it, and the mechanism clips the
    /// combined record in its own norm anyway: replacing every row of one person changes exactly
    /// one record of the result, whatever the number of rows, so a mechanism that is ε-DP for
    /// replace-one neighbours at n = the number of persons is ε-DP for persons (docs/DESIGN.md, the
    /// privacy unit). The number of rows of each person is not public under that unit: it is in
    /// [`PersonCurves::rows`] for the curator only.
    ///
    /// ```
    /// use fdp_data::CurveSet;
    /// use fdp_mercer::Grid;
    /// let rows = vec![vec![1.0, 3.0], vec![5.0, 5.0], vec![3.0, f64::NAN]];
    /// let (set, _) = CurveSet::from_rows(Grid::midpoint(0.0, 1.0, 2)?, &rows, None)?;
    /// let persons = set.per_person(&["p", "q", "p"])?;
    /// assert_eq!((persons.curves.n(), persons.ids.clone(), persons.rows.clone()), (2, vec!["p", "q"], vec![2, 1]));
    /// assert_eq!(persons.curves.row(0), &[2.0, 3.0]); // the mean of [1, 3] and the repaired [3, 3]
    /// # Ok::<(), fdp_data::DataError>(())
    /// ```
    pub fn per_person<K: Clone + Eq + std::hash::Hash>(&self, keys: &[K]) -> Result<PersonCurves<K>> {
        if keys.len() != self.n() {
            return Err(DataError::LengthMismatch {
                what: "person ids (one per row)",
                expected: self.n(),
                got: keys.len(),
            });
        }
        let k = self.grid.len();
        let mut index = std::collections::HashMap::new();
        let mut ids = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for (row, key) in keys.iter().enumerate() {
            let person = *index.entry(key.clone()).or_insert_with(|| {
                ids.push(key.clone());
                members.push(Vec::new());
                ids.len() - 1
            });
            members[person].push(row);
        }
        // At each grid point the terms `x_r / m` are added in ascending order, so a person's record
        // does not depend on the order of their rows (a file's order, or a Spark shuffle's).
        let mut values = vec![0.0; ids.len() * k];
        let mut terms = Vec::new();
        for (person, rows) in members.iter().enumerate() {
            let m = rows.len() as f64;
            for (j, out) in values[person * k..(person + 1) * k].iter_mut().enumerate() {
                terms.clear();
                terms.extend(rows.iter().map(|&row| self.row(row)[j] / m));
                terms.sort_by(f64::total_cmp);
                *out = terms.iter().sum::<f64>().clamp(-f64::MAX, f64::MAX);
            }
        }
        let rows = members.iter().map(Vec::len).collect();
        Ok(PersonCurves { curves: CurveSet { grid: self.grid.clone(), values: Cow::Owned(values) }, ids, rows })
    }

    /// The curves with indices in `rows` (e.g. a cross-validation fold).
    pub fn subset(&self, rows: &[usize]) -> CurveSet<'static> {
        let values = rows.iter().flat_map(|&i| self.row(i).iter().copied()).collect();
        CurveSet { grid: self.grid.clone(), values: Cow::Owned(values) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persons_record_does_not_depend_on_the_order_of_their_rows() {
        let grid = Grid::midpoint(0.0, 1.0, 3).unwrap();
        // Terms whose floating-point sum depends on the order: 1e16 + 1 - 1e16 + 1.
        let rows = [[1e16, 0.1, 3.0], [1.0, 0.2, f64::NAN], [-1e16, 0.3, 5.0], [1.0, 0.7, 1.0]];
        let mut orders = vec![[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]];
        let records: Vec<Vec<f64>> = orders
            .drain(..)
            .map(|order| {
                let shuffled: Vec<Vec<f64>> = order.iter().map(|&i| rows[i].to_vec()).collect();
                let (set, _) = CurveSet::from_rows(grid.clone(), &shuffled, None).unwrap();
                set.per_person(&[7; 4]).unwrap().curves.row(0).to_vec()
            })
            .collect();
        assert!(
            records.iter().all(|r| r.iter().zip(&records[0]).all(|(a, b)| a.to_bits() == b.to_bits())),
            "{records:?}"
        );
        assert!(records[0].iter().all(|v| v.is_finite()));
    }

    #[test]
    fn repair_interpolates_extrapolates_and_defaults() {
        let t = [0.0, 1.0, 2.0, 4.0, 5.0];
        let mut v = [f64::NAN, 1.0, f64::INFINITY, 5.0, f64::NAN];
        assert_eq!(repair_record(&mut v, &t, &[9.0; 5]), Repair::Interpolated);
        assert_eq!(v, [1.0, 1.0, 1.0 + 4.0 / 3.0, 5.0, 5.0]);
        // Extreme finite neighbours and points: the repaired value stays finite and between them.
        let mut extreme = [f64::MAX, f64::NAN, -f64::MAX, f64::MAX, f64::NAN, f64::MAX];
        let far = [-1e308, -0.5e308, 0.0, 0.5e308, 1.0e308, 1.5e308];
        assert_eq!(repair_record(&mut extreme, &far, &[0.0; 6]), Repair::Interpolated);
        assert!(extreme.iter().all(|v| v.is_finite()), "{extreme:?}");
        assert_eq!(extreme[4], f64::MAX);
        let mut empty = [f64::NAN; 5];
        assert_eq!(repair_record(&mut empty, &t, &[9.0; 5]), Repair::Defaulted);
        assert_eq!(empty, [9.0; 5]);
    }

    #[test]
    fn shapes_are_checked_but_contents_never_fail() {
        let grid = Grid::midpoint(0.0, 1.0, 3).unwrap();
        assert!(CurveSet::from_flat(grid.clone(), vec![1.0; 4], None).is_err());
        assert!(CurveSet::from_rows(grid.clone(), &[vec![1.0; 2]], None).is_err());
        assert!(CurveSet::from_flat(grid.clone(), vec![1.0; 3], Some(&[f64::NAN; 3])).is_err());
        let (set, report) =
            CurveSet::from_flat(grid, vec![f64::NAN, f64::NEG_INFINITY, 1e308, 1.0, 2.0, 3.0], None).unwrap();
        assert_eq!(set.n(), 2);
        assert_eq!(set.row(0), &[1e308; 3]);
        assert_eq!(report, RepairReport { complete: 1, interpolated: 1, defaulted: 0 });
        assert_eq!(set.mean_curve()[2], (1e308 + 3.0) / 2.0);
        assert_eq!(set.as_mat()[(1, 2)], 3.0);
        assert_eq!(set.subset(&[1]).row(0), &[1.0, 2.0, 3.0]);
    }

    #[test]
    fn per_person_means_stay_finite_and_follow_first_appearance() {
        let grid = Grid::midpoint(0.0, 1.0, 2).unwrap();
        let rows = vec![vec![f64::MAX, -f64::MAX], vec![0.0, 1.0], vec![f64::MAX, -f64::MAX], vec![f64::NAN; 2]];
        let (set, _) = CurveSet::from_rows(grid, &rows, None).unwrap();
        let persons = set.per_person(&[7, 3, 7, 3]).unwrap();
        assert_eq!(persons.ids, vec![7, 3]);
        assert_eq!(persons.rows, vec![2, 2]);
        assert_eq!(persons.max_rows(), 2);
        assert_eq!(persons.curves.row(0), &[f64::MAX, -f64::MAX]);
        assert_eq!(persons.curves.row(1), &[0.0, 0.5]); // the defaulted row counts as zero
        assert!(set.per_person(&[1, 2]).is_err());
    }

    #[test]
    fn observations_go_onto_the_public_grid_totally() {
        let points = [0.0, 0.25, 0.5, 0.75, 1.0];
        // Linear inside, constant outside, ties averaged, non-finite observations dropped.
        let v = onto_grid(&[0.6, 0.2, 0.2, f64::NAN, 0.4], &[3.0, 1.0, 3.0, 9.0, f64::INFINITY], &points);
        let expected = [2.0, 2.125, 2.75, 3.0, 3.0];
        assert!(v.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-12), "{v:?}");
        assert!(onto_grid(&[f64::NAN], &[1.0], &points).iter().all(|v| v.is_nan()));
        let far = onto_grid(&[-1e308, 1e308], &[-f64::MAX, f64::MAX], &points);
        assert!(far.iter().all(|v| v.is_finite()), "{far:?}");
        assert_eq!(onto_grid(&[0.0, 0.0], &[f64::MAX, f64::MAX], &[0.0]), vec![f64::MAX]);
    }

    #[test]
    fn borrowed_views_clean_data_and_repairs_like_from_flat() {
        let grid = Grid::midpoint(0.0, 1.0, 3).unwrap();
        let clean = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let (view, report) = CurveSet::borrowed(grid.clone(), &clean, None).unwrap();
        assert_eq!(view.values().as_ptr(), clean.as_ptr()); // no copy
        assert_eq!(report, RepairReport { complete: 2, interpolated: 0, defaulted: 0 });
        let dirty = [1.0, f64::NAN, 3.0, f64::NAN, f64::INFINITY, f64::NAN];
        let (view, report) = CurveSet::borrowed(grid.clone(), &dirty, Some(&[7.0; 3])).unwrap();
        let (owned, owned_report) = CurveSet::from_flat(grid.clone(), dirty.to_vec(), Some(&[7.0; 3])).unwrap();
        assert_eq!((view.values(), report), (owned.values(), owned_report));
        assert_eq!(view.row(1), &[7.0; 3]);
        assert!(CurveSet::borrowed(grid.clone(), &clean[..5], None).is_err());
        assert!(CurveSet::borrowed(grid, &clean, Some(&[f64::NAN; 3])).is_err());
    }
}
