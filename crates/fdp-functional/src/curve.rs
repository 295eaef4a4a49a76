//! A released function on a grid — [`Curve`] — and how it is represented beyond its grid values
//! ([`Representation`]: Mercer-basis coefficients or a Bernstein lattice). Post-processing only:
//! everything here is computed from a release and public quantities.

use serde::{Serialize, Serializer};

use fdp_core::{Error, Output, Release, Result};
use fdp_mercer::{Grid, MercerBasis};

use crate::numerics::{bernstein_value, interpolate};

/// How a released curve is represented beyond its grid values.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Representation {
    /// `reference + Σ_k c_k φ_k`.
    Basis { basis: MercerBasis, coefficients: Vec<f64> },
    /// `reference + Σ_j y_j Π_a C(k, j_a) u_a^{j_a} (1 - u_a)^{k-j_a}`, `u_a = (t_a - lo_a)/(hi_a - lo_a)`,
    /// over the `(k + 1)^d` lattice (row-major, last axis fastest).
    Bernstein { values: Vec<f64>, degree: usize, domain: Vec<(f64, f64)> },
}

/// A released function on a grid (a curve in 1-D, a surface on a tensor grid): its values on the
/// grid, evaluation anywhere, and the released coefficients.
#[derive(Debug, Clone)]
pub struct Curve {
    grid: Grid,
    values: Vec<f64>,
    reference: Option<Vec<f64>>,
    representation: Representation,
    /// A public range `[lo, hi]` the function is clamped to (see [`Curve::clamped`]).
    range: Option<(f64, f64)>,
    /// The pointwise standard deviation of the release's noise on the grid, if the mechanism states
    /// it (see [`Curve::with_noise_sd`]).
    noise_sd: Option<Vec<f64>>,
}

impl Curve {
    /// The function given by `representation` (plus an optional public reference curve on the grid).
    pub fn new(grid: Grid, reference: Option<Vec<f64>>, representation: Representation) -> Result<Self> {
        let mut values = match &representation {
            Representation::Basis { basis, coefficients } => basis.synthesize(coefficients)?,
            Representation::Bernstein { values, degree, domain } => {
                (0..grid.len()).map(|i| bernstein_value(values, *degree, domain, grid.point(i))).collect()
            }
        };
        if let Some(r) = &reference {
            if r.len() != grid.len() {
                return Err(Error::Shape { what: "reference curve length", expected: grid.len(), got: r.len() });
            }
            values.iter_mut().zip(r).for_each(|(c, r)| *c += r);
        }
        Ok(Self { grid, values, reference, representation, range: None, noise_sd: None })
    }

    /// **The pointwise standard deviation of the noise** in the released values, `sd(t_i)`, on the
    /// grid. For noise `ζ_k` added independently to basis coefficients (scaled by public shrinkage
    /// factors `s_k`), `sd(t_i)² = Σ_k s_k² Var(ζ_k) φ_k(t_i)²`. It is a function of the noise scales
    /// and of choices made from the release (post-processing), so it costs no privacy. It describes
    /// the noise only: clipping and smoothing bias are not in it. An error unless there is one
    /// finite, non-negative value per grid point.
    pub fn with_noise_sd(mut self, sd: Vec<f64>) -> Result<Self> {
        if sd.len() != self.grid.len() {
            return Err(Error::Shape { what: "noise sd", expected: self.grid.len(), got: sd.len() });
        }
        if let Some(bad) = sd.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err(Error::BadParameter {
                name: "noise sd",
                value: (*bad).into(),
                reason: "must be finite and >= 0",
            });
        }
        self.noise_sd = Some(sd);
        Ok(self)
    }

    /// The pointwise standard deviation of the noise, if the mechanism stated it.
    pub fn noise_sd(&self) -> Option<&[f64]> {
        self.noise_sd.as_deref()
    }

    /// The pointwise band `values ∓ z sd(t_i)` of the noise (clamped to the public range, if any),
    /// if the mechanism stated its noise's sd: e.g. `z = 2` for a ±2 sd band. `z` must be finite and
    /// `>= 0` (a negative one gave a lower end above the upper).
    pub fn band(&self, z: f64) -> Result<Option<(Vec<f64>, Vec<f64>)>> {
        let z = fdp_core::error::non_negative("z", z)?;
        let Some(sd) = self.noise_sd.as_ref() else { return Ok(None) };
        let (lo, hi) = self.range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let lower = self.values.iter().zip(sd).map(|(v, s)| (v - z * s).clamp(lo, hi)).collect();
        let upper = self.values.iter().zip(sd).map(|(v, s)| (v + z * s).clamp(lo, hi)).collect();
        Ok(Some((lower, upper)))
    }

    /// **The projection onto a public range** (post-processing: costs no privacy): the function
    /// clamped pointwise to `[lo, hi]`, on the grid and wherever it is evaluated, and the number of
    /// grid points that moved. With positive quadrature weights `w_i` the pointwise clamp is the
    /// projection in `||f||² = Σ_i w_i f(t_i)²` onto the convex set of grid functions in `[lo, hi]`;
    /// for any target in that set (a mean of records in the range) it cannot increase the error
    /// (projections onto closed convex sets are non-expansive and fix the set's points).
    pub fn clamped(mut self, lo: f64, hi: f64) -> Result<(Self, usize)> {
        fdp_core::error::public_range(lo, hi)?;
        let moved = self.values.iter().filter(|v| **v < lo || **v > hi).count();
        self.values.iter_mut().for_each(|v| *v = v.clamp(lo, hi));
        self.range = Some((lo, hi));
        Ok((self, moved))
    }

    /// The public range the function is clamped to, if any.
    pub fn range(&self) -> Option<(f64, f64)> {
        self.range
    }

    /// The values on the grid.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Released coefficients (basis coefficients or Bernstein lattice values).
    pub fn coefficients(&self) -> &[f64] {
        match &self.representation {
            Representation::Basis { coefficients, .. } => coefficients,
            Representation::Bernstein { values, .. } => values,
        }
    }

    /// The representation.
    pub fn representation(&self) -> &Representation {
        &self.representation
    }

    /// The function at arbitrary points (post-processing: costs no privacy). Basis releases use the
    /// Nyström extension, Bernstein releases their polynomial; a reference curve is interpolated.
    pub fn evaluate(&self, points: &[f64]) -> Result<Vec<f64>> {
        let mut out = match &self.representation {
            Representation::Basis { basis, coefficients } => basis.evaluate(coefficients, points)?,
            Representation::Bernstein { values, degree, domain } => {
                let count = self.grid.count_points(points)?;
                let dim = self.grid.dim();
                (0..count).map(|i| bernstein_value(values, *degree, domain, &points[i * dim..(i + 1) * dim])).collect()
            }
        };
        if let Some(r) = &self.reference {
            out.iter_mut().zip(points).for_each(|(o, t)| *o += interpolate(self.grid.points(), r, *t));
        }
        if let Some((lo, hi)) = self.range {
            out.iter_mut().for_each(|v| *v = v.clamp(lo, hi));
        }
        Ok(out)
    }
}

impl Serialize for Curve {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Record<'a> {
            grid_points: &'a [f64],
            grid_weights: &'a [f64],
            curve: &'a [f64],
            coefficients: &'a [f64],
            reference: Option<&'a [f64]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            noise_sd: Option<&'a [f64]>,
        }
        Record {
            grid_points: self.grid.points(),
            grid_weights: self.grid.weights(),
            curve: &self.values,
            coefficients: self.coefficients(),
            reference: self.reference.as_deref(),
            noise_sd: self.noise_sd.as_deref(),
        }
        .serialize(serializer)
    }
}

impl Output for Curve {
    fn values(&self) -> Vec<f64> {
        self.coefficients().to_vec()
    }

    fn describe(&self) -> String {
        format!("curve on {} grid points ({} coefficients)", self.grid.len(), self.coefficients().len())
    }
}

/// The curve accessors of a [`Release<Curve>`]: the release path (`fdp-core`) knows no curves, so
/// they are a trait here (`use fdp_functional::CurveReleaseExt`, or the facade's prelude).
pub trait CurveReleaseExt {
    /// The private curve on the grid.
    fn curve(&self) -> &[f64];
    /// The grid.
    fn grid(&self) -> &Grid;
    /// Released coefficients (basis coefficients or Bernstein lattice values).
    fn coefficients(&self) -> &[f64];
    /// The private curve at arbitrary points (post-processing).
    fn evaluate(&self, points: &[f64]) -> Result<Vec<f64>>;
}

impl CurveReleaseExt for Release<Curve> {
    fn curve(&self) -> &[f64] {
        self.output().values()
    }

    fn grid(&self) -> &Grid {
        self.output().grid()
    }

    fn coefficients(&self) -> &[f64] {
        self.output().coefficients()
    }

    fn evaluate(&self, points: &[f64]) -> Result<Vec<f64>> {
        self.output().evaluate(points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23: the projection onto the public range clamps the grid values and every evaluation,
    /// counts what moved, only brings values closer to any function in the range, and refuses a
    /// range that is not one.
    #[test]
    fn clamped_curves_stay_in_the_public_range() {
        let grid = Grid::midpoint(0.0, 1.0, 11).unwrap();
        let line = Representation::Bernstein { values: vec![-2.0, 3.0], degree: 1, domain: vec![(0.0, 1.0)] };
        let curve = Curve::new(grid.clone(), None, line).unwrap();
        let raw = curve.values().to_vec();
        let (clamped, moved) = curve.clone().clamped(-1.0, 1.0).unwrap();
        assert_eq!(moved, raw.iter().filter(|v| v.abs() > 1.0).count());
        assert!(moved > 0 && clamped.range() == Some((-1.0, 1.0)));
        assert!(clamped.values().iter().all(|v| (-1.0..=1.0).contains(v)));
        let anywhere = clamped.evaluate(&[0.0, 0.5, 1.0]).unwrap();
        assert_eq!(anywhere, vec![-1.0, 0.5, 1.0]);
        // Non-expansive towards a target in the range (here the zero function).
        let sq = |v: &[f64]| grid.weights().iter().zip(v).map(|(w, v)| w * v * v).sum::<f64>();
        assert!(sq(clamped.values()) <= sq(&raw));
        for (lo, hi) in [(1.0, 1.0), (2.0, 1.0), (f64::NAN, 1.0), (0.0, f64::INFINITY)] {
            assert!(curve.clone().clamped(lo, hi).is_err(), "{lo} {hi}");
        }
    }
}
