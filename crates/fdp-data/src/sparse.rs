//! **Irregular and sparse curves**: every record observed at its own times.
//!
//! A record is `(t_i1, y_i1), ..., (t_im_i, y_im_i)` on a public domain `[a, b]`: growth measured
//! at different ages per child, clinic visits, a wearable with gaps. The privacy unit is the whole
//! record (all of one subject's observations: user-level DP), and the number of records n is
//! public; the observation times, their number `m_i` and the values are private.
//!
//! Like [`CurveSet`], nothing inside a record can raise an error: an observation
//! whose time or value is not finite, or whose time lies outside the public domain, is **dropped**
//! (counted in [`SparseRepairs`], a local report that no release contains), and a record left with
//! no observation stays a record (n never changes) that mechanisms replace by their public default.
//! Only the shape of the input (a time and a value per observation) and the public domain are
//! checked.

use std::collections::HashMap;
use std::hash::Hash;

use rand::RngExt;

use crate::curves::CurveSet;
use crate::error::{DataError, Result};

/// What was dropped while building a [`SparseCurves`]: observations with a non-finite time or value,
/// observations outside the domain, and records left empty. **Local** (it describes private data):
/// for the curator's eyes, never part of a release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SparseRepairs {
    /// Observations with a NaN/±∞ time or value.
    pub non_finite: usize,
    /// Observations whose time lies outside the public domain.
    pub outside_domain: usize,
    /// Records with no usable observation (mechanisms use their public default for them).
    pub empty_records: usize,
}

/// n records, each a list of `(time, value)` observations on a public domain (see the
/// [module docs](self)). Stored flat: `times[offsets[i]..offsets[i + 1]]` are record i's times.
///
/// ```
/// use fdp_data::SparseCurves;
/// let curves = SparseCurves::new(
///     (0.0, 1.0),
///     &[(vec![0.1, 0.5], vec![1.0, 2.0]), (vec![0.3, f64::NAN, 2.0], vec![1.5, 0.0, 3.0])],
/// )?;
/// assert_eq!(curves.n(), 2);
/// assert_eq!(curves.record(1), (&[0.3][..], &[1.5][..])); // NaN time and t = 2 dropped
/// assert_eq!(curves.repairs().non_finite + curves.repairs().outside_domain, 2);
/// # Ok::<(), fdp_data::DataError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SparseCurves {
    domain: (f64, f64),
    offsets: Vec<usize>,
    times: Vec<f64>,
    values: Vec<f64>,
    repairs: SparseRepairs,
}

impl SparseCurves {
    /// Records given as `(times, values)` pairs of equal length on the public `domain = (a, b)`,
    /// `a < b` finite. An error only for a bad domain or a record whose two lists differ in length.
    pub fn new(domain: (f64, f64), records: &[(Vec<f64>, Vec<f64>)]) -> Result<Self> {
        let mut builder = Builder::new(domain)?;
        for (t, y) in records {
            if t.len() != y.len() {
                return Err(DataError::LengthMismatch {
                    what: "values of a record (one per time)",
                    expected: t.len(),
                    got: y.len(),
                });
            }
            builder.push(t.iter().copied().zip(y.iter().copied()));
        }
        Ok(builder.finish())
    }

    /// From a **long table**: one observation per row, `ids[r]` naming the record (the subject: all
    /// rows with the same id form one record, the privacy unit), at time `t[r]` with value `y[r]`.
    /// Records are ordered by first appearance; rows of a record keep their order. An error for a bad
    /// domain or columns of different lengths.
    pub fn from_long<K: Eq + Hash + Clone>(domain: (f64, f64), ids: &[K], t: &[f64], y: &[f64]) -> Result<Self> {
        for (what, len) in [("time column", t.len()), ("value column", y.len())] {
            if len != ids.len() {
                return Err(DataError::LengthMismatch { what, expected: ids.len(), got: len });
            }
        }
        let mut index: HashMap<K, usize> = HashMap::new();
        let mut rows: Vec<Vec<usize>> = Vec::new();
        for (r, id) in ids.iter().enumerate() {
            let next = rows.len();
            let i = *index.entry(id.clone()).or_insert(next);
            if i == next {
                rows.push(Vec::new());
            }
            rows[i].push(r);
        }
        let mut builder = Builder::new(domain)?;
        for record in &rows {
            builder.push(record.iter().map(|&r| (t[r], y[r])));
        }
        Ok(builder.finish())
    }

    /// **Sparse records from dense curves**, for studies: from each curve, `m` grid points drawn
    /// without replacement, uniformly over the grid's indices (each index with probability `m/K`),
    /// kept in grid order; the domain is the grid's. A 1-D grid and `1 <= m <= K`, else an error.
    pub fn subsample<R: rand::Rng + ?Sized>(curves: &CurveSet, m: usize, rng: &mut R) -> Result<Self> {
        let grid = curves.grid();
        if grid.dim() != 1 {
            return Err(DataError::BadParameter {
                name: "grid dimension",
                value: grid.dim() as f64,
                reason: "sparse curves are 1-D",
            });
        }
        let k = grid.len();
        if m == 0 || m > k {
            return Err(DataError::BadParameter {
                name: "points per curve m",
                value: m as f64,
                reason: "need 1 <= m <= grid points",
            });
        }
        let (lo, hi) = grid.domain()[0];
        let mut builder = Builder::new((lo, hi))?;
        let mut picked = vec![false; k];
        for i in 0..curves.n() {
            picked.iter_mut().for_each(|p| *p = false);
            // Floyd's algorithm: m distinct indices, uniformly, with m draws.
            for j in (k - m)..k {
                let r = rng.random_range(0..=j);
                let slot = if picked[r] { j } else { r };
                picked[slot] = true;
            }
            let row = curves.row(i);
            builder.push((0..k).filter(|&g| picked[g]).map(|g| (grid.points()[g], row[g])));
        }
        Ok(builder.finish())
    }

    /// The number of records (public).
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The public domain `(a, b)`.
    pub fn domain(&self) -> (f64, f64) {
        self.domain
    }

    /// Record i's times and values (finite, times in the domain).
    pub fn record(&self, i: usize) -> (&[f64], &[f64]) {
        let (s, e) = (self.offsets[i], self.offsets[i + 1]);
        (&self.times[s..e], &self.values[s..e])
    }

    /// The total number of kept observations (private: local use only).
    pub fn observations(&self) -> usize {
        self.times.len()
    }

    /// What was dropped (local, see [`SparseRepairs`]).
    pub fn repairs(&self) -> SparseRepairs {
        self.repairs
    }

    /// The same records on the domain `(start, end)`: every time mapped by the affine map of the
    /// domain onto it (a public change of units, e.g. onto [0, 1] where kernels are set).
    pub fn rescaled(&self, start: f64, end: f64) -> Result<Self> {
        let mut builder = Builder::new((start, end))?;
        let (a, b) = self.domain;
        let map = |t: f64| (start + (t - a) / (b - a) * (end - start)).clamp(start, end);
        for i in 0..self.n() {
            let (t, y) = self.record(i);
            builder.push(t.iter().map(|t| map(*t)).zip(y.iter().copied()));
        }
        let mut out = builder.finish();
        out.repairs = self.repairs;
        Ok(out)
    }

    /// The records `rows` (in that order), e.g. one part of the data for a mergeable state.
    pub fn subset(&self, rows: &[usize]) -> Self {
        let mut out = Self {
            domain: self.domain,
            offsets: vec![0],
            times: Vec::new(),
            values: Vec::new(),
            repairs: self.repairs,
        };
        for &i in rows {
            let (t, y) = self.record(i);
            out.times.extend_from_slice(t);
            out.values.extend_from_slice(y);
            out.offsets.push(out.times.len());
        }
        out
    }
}

/// Appends records, dropping what cannot be used.
struct Builder {
    curves: SparseCurves,
}

impl Builder {
    fn new((a, b): (f64, f64)) -> Result<Self> {
        if !(a.is_finite() && b.is_finite() && a < b && (b - a).is_finite()) {
            return Err(DataError::BadParameter {
                name: "domain width",
                value: b - a,
                reason: "need a finite domain a < b",
            });
        }
        let curves = SparseCurves {
            domain: (a, b),
            offsets: vec![0],
            times: Vec::new(),
            values: Vec::new(),
            repairs: SparseRepairs::default(),
        };
        Ok(Self { curves })
    }

    fn push(&mut self, observations: impl Iterator<Item = (f64, f64)>) {
        let c = &mut self.curves;
        let (a, b) = c.domain;
        let start = c.times.len();
        for (t, y) in observations {
            if !(t.is_finite() && y.is_finite()) {
                c.repairs.non_finite += 1;
            } else if !(a..=b).contains(&t) {
                c.repairs.outside_domain += 1;
            } else {
                c.times.push(t);
                c.values.push(y);
            }
        }
        if c.times.len() == start {
            c.repairs.empty_records += 1;
        }
        c.offsets.push(c.times.len());
    }

    fn finish(self) -> SparseCurves {
        self.curves
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdp_mercer::Grid;
    use rand::SeedableRng;

    #[test]
    fn bad_observations_are_dropped_not_errors() {
        let c = SparseCurves::new(
            (0.0, 1.0),
            &[
                (vec![f64::NAN, 0.2, f64::INFINITY, -0.1], vec![1.0, f64::MAX, 2.0, 3.0]),
                (vec![], vec![]),
                (vec![0.5], vec![f64::NAN]),
            ],
        )
        .unwrap();
        assert_eq!(c.n(), 3);
        assert_eq!(c.record(0), (&[0.2][..], &[f64::MAX][..]));
        assert_eq!(c.repairs(), SparseRepairs { non_finite: 3, outside_domain: 1, empty_records: 2 });
    }

    #[test]
    fn shapes_and_domains_are_checked() {
        assert!(SparseCurves::new((1.0, 1.0), &[]).is_err());
        assert!(SparseCurves::new((0.0, f64::INFINITY), &[]).is_err());
        assert!(SparseCurves::new((0.0, 1.0), &[(vec![0.1], vec![])]).is_err());
        assert!(SparseCurves::from_long((0.0, 1.0), &[1, 2], &[0.1], &[1.0, 2.0]).is_err());
    }

    #[test]
    fn long_tables_group_by_id_in_order_of_appearance() {
        let c = SparseCurves::from_long(
            (0.0, 10.0),
            &["b", "a", "b", "c", "a"],
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[10.0, 20.0, 30.0, 40.0, 50.0],
        )
        .unwrap();
        assert_eq!(c.n(), 3);
        assert_eq!(c.record(0), (&[1.0, 3.0][..], &[10.0, 30.0][..]));
        assert_eq!(c.record(1), (&[2.0, 5.0][..], &[20.0, 50.0][..]));
        assert_eq!(c.subset(&[2, 0]).record(0), (&[4.0][..], &[40.0][..]));
    }

    #[test]
    fn subsampling_keeps_m_distinct_grid_points_uniformly() {
        let grid = Grid::midpoint(0.0, 1.0, 10).unwrap();
        let rows: Vec<Vec<f64>> = (0..2000).map(|i| (0..10).map(|g| (i * 10 + g) as f64).collect()).collect();
        let (curves, _) = CurveSet::from_rows(grid.clone(), &rows, None).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let sparse = SparseCurves::subsample(&curves, 3, &mut rng).unwrap();
        let mut hits = [0usize; 10];
        for i in 0..sparse.n() {
            let (t, y) = sparse.record(i);
            assert_eq!(t.len(), 3);
            assert!(t.windows(2).all(|w| w[0] < w[1]));
            for (t, y) in t.iter().zip(y) {
                let g = grid.nearest(&[*t]).unwrap();
                assert_eq!(*y, (i * 10 + g) as f64);
                hits[g] += 1;
            }
        }
        // Each index is kept with probability 3/10: 600 of 2000 expected, sd ≈ 20.5.
        assert!(hits.iter().all(|&h| (h as f64 - 600.0).abs() < 5.0 * 20.5), "{hits:?}");
        assert!(SparseCurves::subsample(&curves, 0, &mut rng).is_err());
        assert!(SparseCurves::subsample(&curves, 11, &mut rng).is_err());
    }
}
