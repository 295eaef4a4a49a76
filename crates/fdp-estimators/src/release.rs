//! `Release`: a private curve with everything needed to use it and to know what it guarantees.

use serde::{Deserialize, Serialize};

use fdp_mercer::{BasisSummary, Grid, MercerBasis};
use fdp_noise::{Calibration, PrivacyGuarantee, RngProvenance};

use crate::clip::ClipNorm;
use crate::error::{EstimatorError, Result};

/// What a release records about how it was made (serialised into `release.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseMetadata {
    /// `iclp_rkhs`, `iclp_l1`, `iid_laplace`, `bernstein`, `gaussian_process`, ...
    pub mechanism: String,
    /// ε, δ (0 for pure DP) and the neighbour relation.
    pub guarantee: PrivacyGuarantee,
    /// The sensitivity the noise is calibrated to, before the lattice rounding charge.
    pub sensitivity: f64,
    /// The norm that sensitivity is measured in (`l1_c`, `cameron_martin`, `l1`, ...).
    pub sensitivity_norm: String,
    /// The clipping bound τ (fixed before the data were seen) and its norm; `None` where records
    /// need no clipping (density estimates: points snapped to the grid, a bounded kernel).
    pub tau: Option<f64>,
    pub clip_norm: Option<ClipNorm>,
    /// Regularisation ψ and kernel power η, where the mechanism has them.
    pub psi: Option<f64>,
    pub eta: Option<f64>,
    /// Number of released components (basis coefficients or Bernstein lattice values).
    pub components: usize,
    /// The number of records (public under replace-one).
    pub n: usize,
    /// The basis the release lives in, if any.
    pub basis: Option<BasisSummary>,
    /// How the noise scales were set, where a basis sampler was used.
    pub calibration: Option<Calibration>,
    /// Seeded (reproducible, for experiments) or OS entropy (for real releases).
    pub rng: RngProvenance,
    /// How ψ / M were chosen: `plug_in` (private) or `pcv` (data-dependent).
    pub tuning: String,
    /// Whether a public reference curve was subtracted before clipping (and added back).
    pub centred: bool,
}

impl ReleaseMetadata {
    /// The fields every mechanism sets, with the rest at their defaults: no clipping bound, no ψ or
    /// η, no basis or calibration (filled in by [`BasisOutput`](crate::BasisOutput)), OS entropy
    /// (each release records its own RNG), plug-in tuning, not centred.
    pub(crate) fn new(
        mechanism: &str,
        guarantee: PrivacyGuarantee,
        sensitivity: f64,
        sensitivity_norm: &str,
        n: usize,
    ) -> Self {
        Self {
            mechanism: mechanism.into(),
            guarantee,
            sensitivity,
            sensitivity_norm: sensitivity_norm.into(),
            tau: None,
            clip_norm: None,
            psi: None,
            eta: None,
            components: 0,
            n,
            basis: None,
            calibration: None,
            rng: RngProvenance::OsEntropy,
            tuning: "plug_in".into(),
            centred: false,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Representation {
    /// `reference + Σ_k c_k φ_k`.
    Basis { basis: MercerBasis, coefficients: Vec<f64> },
    /// `reference + Σ_j y_j Π_a C(k, j_a) u_a^{j_a} (1 - u_a)^{k-j_a}`, `u_a = (t_a - lo_a)/(hi_a - lo_a)`,
    /// over the `(k + 1)^d` lattice (row-major, last axis fastest).
    Bernstein { values: Vec<f64>, degree: usize, domain: Vec<(f64, f64)> },
}

/// The tensor Bernstein polynomial of `values` on the `(degree + 1)^d` lattice of `domain`, at `point`.
pub(crate) fn bernstein_value(values: &[f64], degree: usize, domain: &[(f64, f64)], point: &[f64]) -> f64 {
    let weights: Vec<Vec<f64>> =
        domain.iter().zip(point).map(|((lo, hi), t)| bernstein_weights(degree, (t - lo) / (hi - lo))).collect();
    values
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let mut rest = index;
            let mut w = 1.0;
            for axis in weights.iter().rev() {
                w *= axis[rest % (degree + 1)];
                rest /= degree + 1;
            }
            w * v
        })
        .sum()
}

/// A private summary curve: values on the grid, evaluation anywhere, and metadata.
#[derive(Debug, Clone)]
pub struct Release {
    grid: Grid,
    curve: Vec<f64>,
    reference: Option<Vec<f64>>,
    representation: Representation,
    metadata: ReleaseMetadata,
}

/// Bernstein basis polynomial values `C(k, j) u^j (1 - u)^{k - j}` for j = 0..=k, in log space
/// (`ln C(k, j)` accumulated as `Σ ln((k - i)/(i + 1))`), so that no degree overflows: the direct
/// product overflows `C(k, j)` from k ≈ 1030 and released an all-NaN curve.
pub(crate) fn bernstein_weights(k: usize, u: f64) -> Vec<f64> {
    let u = u.clamp(0.0, 1.0);
    let mut out = vec![0.0; k + 1];
    if u == 0.0 || u == 1.0 {
        out[if u == 0.0 { 0 } else { k }] = 1.0;
        return out;
    }
    let (ln_u, ln_v) = (u.ln(), (-u).ln_1p());
    let mut ln_binom = 0.0;
    for (j, o) in out.iter_mut().enumerate() {
        *o = (ln_binom + j as f64 * ln_u + (k - j) as f64 * ln_v).exp();
        ln_binom += ((k - j) as f64 / (j + 1) as f64).ln();
    }
    out
}

/// Bernstein mechanisms map the domain onto `[0, 1]`: it must have a positive, finite width.
pub(crate) fn check_bernstein_domain(grid: &Grid) -> Result<()> {
    match grid.domain().iter().find(|(lo, hi)| !(hi > lo && (hi - lo).is_finite())) {
        None => Ok(()),
        Some((lo, _)) => Err(EstimatorError::BadParameter {
            name: "grid domain",
            value: *lo,
            reason: "the Bernstein mechanism needs a domain of positive width on every axis (a one-point grid has none)",
        }),
    }
}

/// Linear interpolation of grid values at `t` (constant beyond the ends).
pub(crate) fn interpolate(points: &[f64], values: &[f64], t: f64) -> f64 {
    let k = points.len();
    if t <= points[0] || k == 1 {
        return values[0];
    }
    if t >= points[k - 1] {
        return values[k - 1];
    }
    let i = points.partition_point(|p| *p <= t) - 1;
    let s = (t - points[i]) / (points[i + 1] - points[i]);
    values[i] + s * (values[i + 1] - values[i])
}

impl Release {
    pub(crate) fn new(
        grid: Grid,
        reference: Option<Vec<f64>>,
        representation: Representation,
        metadata: ReleaseMetadata,
    ) -> Result<Self> {
        let mut curve = match &representation {
            Representation::Basis { basis, coefficients } => basis.synthesize(coefficients)?,
            Representation::Bernstein { values, degree, domain } => {
                (0..grid.len()).map(|i| bernstein_value(values, *degree, domain, grid.point(i))).collect()
            }
        };
        if let Some(r) = &reference {
            curve.iter_mut().zip(r).for_each(|(c, r)| *c += r);
        }
        Ok(Self { grid, curve, reference, representation, metadata })
    }

    /// The private curve on the grid.
    pub fn curve(&self) -> &[f64] {
        &self.curve
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

    /// The metadata.
    pub fn metadata(&self) -> &ReleaseMetadata {
        &self.metadata
    }

    /// The private curve at arbitrary points (post-processing: costs no privacy). Basis releases use
    /// the Nyström extension, Bernstein releases their polynomial; a reference curve is interpolated.
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
        Ok(out)
    }

    /// The release as JSON: metadata, grid, curve and coefficients.
    pub fn to_json(&self) -> Result<String> {
        #[derive(Serialize)]
        struct Record<'a> {
            metadata: &'a ReleaseMetadata,
            grid_points: &'a [f64],
            grid_weights: &'a [f64],
            curve: &'a [f64],
            coefficients: &'a [f64],
            reference: Option<&'a [f64]>,
        }
        let record = Record {
            metadata: &self.metadata,
            grid_points: self.grid.points(),
            grid_weights: self.grid.weights(),
            curve: &self.curve,
            coefficients: self.coefficients(),
            reference: self.reference.as_deref(),
        };
        serde_json::to_string_pretty(&record).map_err(|e| EstimatorError::Json(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_bernstein_reproduces_lattice_corners_and_constants() {
        let domain = [(0.0, 1.0), (-1.0, 1.0)];
        let values: Vec<f64> = (0..9).map(|i| i as f64).collect();
        assert_eq!(bernstein_value(&values, 2, &domain, &[0.0, -1.0]), 0.0);
        assert_eq!(bernstein_value(&values, 2, &domain, &[0.0, 1.0]), 2.0);
        assert_eq!(bernstein_value(&values, 2, &domain, &[1.0, -1.0]), 6.0);
        assert!((bernstein_value(&[3.0; 9], 2, &domain, &[0.3, 0.2]) - 3.0).abs() < 1e-14);
    }

    #[test]
    fn bernstein_weights_partition_unity_and_interpolation_is_linear() {
        let w = bernstein_weights(7, 0.3);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert_eq!(bernstein_weights(3, 0.0), vec![1.0, 0.0, 0.0, 0.0]);
        assert_eq!(bernstein_weights(3, 1.0), vec![0.0, 0.0, 0.0, 1.0]);
        for k in [1, 10, 1100, 5000] {
            let w = bernstein_weights(k, 0.37);
            assert!(w.iter().all(|v| v.is_finite() && *v >= 0.0), "k = {k}");
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-9, "k = {k}");
        }
        let direct = [0.3f64.powi(2), 2.0 * 0.3 * 0.7, 0.7f64.powi(2)];
        bernstein_weights(2, 0.7).iter().zip(direct).for_each(|(a, b)| assert!((a - b).abs() < 1e-15));
        let p = [0.0, 1.0, 3.0];
        let v = [0.0, 2.0, 6.0];
        assert_eq!(interpolate(&p, &v, 2.0), 4.0);
        assert_eq!(interpolate(&p, &v, -1.0), 0.0);
        assert_eq!(interpolate(&p, &v, 9.0), 6.0);
    }
}
