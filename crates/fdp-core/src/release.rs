//! What a private release is: an output (a curve, a vector, a weighted point set, a sketch) and the
//! metadata that says how it was made and what it guarantees.

use serde::{Deserialize, Serialize, Serializer};

use fdp_mercer::{BasisSummary, Grid, KernelSpec, MercerBasis};
use fdp_noise::timing::{self, SamplerTiming};
use fdp_noise::{Calibration, NeighbourRelation, PrivacyGuarantee, RngProvenance};

use crate::error::{Error, Result};
use crate::params::{ClippingBound, Regularisation, SensitivityNorm, Tuning};

/// What a release records about how it was made (serialised with it). One type for every mechanism.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseMetadata {
    /// `iclp_rkhs`, `gaussian_process_kde`, `balog_alg1`, `rff_sketch`, ...
    pub mechanism: String,
    /// ε, δ (0 for pure DP) and the neighbour relation.
    pub guarantee: PrivacyGuarantee,
    /// The sensitivity the noise is calibrated to, before the lattice rounding charge.
    pub sensitivity: f64,
    /// The norm that sensitivity is measured in.
    pub sensitivity_norm: SensitivityNorm,
    /// The clipping bound with its norm (fixed before the data were seen); `None` where records need
    /// no clipping (bounded kernels and feature maps, points snapped to a grid).
    pub clipping: Option<ClippingBound>,
    /// η and ψ, where the mechanism has them (a KDE's kernel power has ψ = 0).
    pub regularisation: Option<Regularisation>,
    /// Number of released numbers (coefficients, lattice values, coordinates, features).
    pub components: usize,
    /// The number of records, public under replace-one; `None` under add/remove.
    pub n: Option<usize>,
    /// The basis the release lives in, if any.
    pub basis: Option<BasisSummary>,
    /// The kernel, where there is one and no basis records it.
    pub kernel: Option<KernelSpec>,
    /// How the noise scales were set.
    pub calibration: Option<Calibration>,
    /// Seeded (reproducible, for experiments) or OS entropy (for real releases).
    pub rng: RngProvenance,
    /// Whether the exact samplers ran in fixed work (`padded`, the default) or in variable time
    /// (`variable`, an opt-in for simulations whose running time leaks the noise drawn): docs/DESIGN.md
    /// section 15.5. The draws are the same in both. Read as `variable` when absent from an older
    /// release's JSON (its samplers were variable-time).
    #[serde(default = "SamplerTiming::unrecorded")]
    pub sampler_timing: SamplerTiming,
    /// How the tuning parameters were chosen.
    pub tuning: Tuning,
    /// Whether a public reference curve was subtracted before clipping (and added back).
    pub centred: bool,
    /// For a multi-stage mechanism (a private bound, a private tuning step, the release): what each
    /// stage spent and what it chose, in order. Empty for a single-stage mechanism.
    pub stages: Vec<StageRecord>,
    /// Who the guarantee protects: one record (row), or one person (every row with the same public
    /// id, combined into one record before the mechanism saw the data). Read as
    /// [`PrivacyUnit::Record`] when absent from an older release's JSON.
    #[serde(default)]
    pub privacy_unit: PrivacyUnit,
}

/// Who a release's guarantee protects: the unit that neighbouring datasets differ by.
///
/// Under [`Record`](Self::Record) replacing one row of the data changes the release's distribution
/// by at most `e^ε`; a person with `m` rows is then protected only at `m ε` (group privacy).
/// Under [`Person`](Self::Person) the rows are first grouped by the public id column and each
/// person's rows combined into one bounded record (for curves: the mean of the person's repaired
/// curves, [`fdp_data::CurveSet::per_person`]), so replacing **every** row of one person — any
/// number of them, with any contents — is one replaced record of the grouped data, and the
/// mechanism's record-level sensitivity with n = the number of persons is the person-level one.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PrivacyUnit {
    /// One record (one row, one curve, one point).
    #[default]
    Record,
    /// One person: every row with the same value in the public column `id_column`.
    Person {
        /// The column (or variable) whose values name the persons.
        id_column: String,
    },
}

impl PrivacyUnit {
    /// One person, identified by the values of `id_column`.
    pub fn person(id_column: impl Into<String>) -> Self {
        Self::Person { id_column: id_column.into() }
    }
}

impl std::fmt::Display for PrivacyUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Record => f.write_str("one record (row)"),
            Self::Person { id_column } => write!(f, "one person (every row with the same {id_column:?})"),
        }
    }
}

/// What one stage of a multi-stage release spent and chose (recorded in the release and the ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// `bound`, `pilot`, `release`, or `tuning` (a post-processing choice, ε = 0).
    pub stage: String,
    /// What the stage was charged (0 for post-processing).
    pub epsilon: f64,
    pub delta: f64,
    /// What it chose or released, e.g. `tau = 0.31 (coefficient_l1)`.
    pub outcome: String,
}

impl ReleaseMetadata {
    /// The fields every mechanism sets, with the rest at their defaults: no clipping, regularisation,
    /// basis, kernel or calibration; OS entropy (each release records its own RNG); the samplers'
    /// current timing mode ([`fdp_noise::timing::current`]); plug-in tuning;
    /// not centred; n public exactly when the relation is replace-one.
    pub fn new(
        mechanism: &str,
        guarantee: PrivacyGuarantee,
        sensitivity: f64,
        sensitivity_norm: SensitivityNorm,
        n: usize,
    ) -> Self {
        let n = (guarantee.relation() == NeighbourRelation::ReplaceOne).then_some(n);
        Self {
            mechanism: mechanism.into(),
            guarantee,
            sensitivity,
            sensitivity_norm,
            clipping: None,
            regularisation: None,
            components: 0,
            n,
            basis: None,
            kernel: None,
            calibration: None,
            rng: RngProvenance::OsEntropy,
            sampler_timing: timing::current(),
            tuning: Tuning::PlugIn,
            centred: false,
            stages: Vec::new(),
            privacy_unit: PrivacyUnit::Record,
        }
    }
}

/// The released object of a mechanism. Implement it for a new kind of output.
pub trait Output: Serialize + Clone + Send + Sync + std::fmt::Debug {
    /// The released numbers as one vector — what a black-box audit looks at.
    fn values(&self) -> Vec<f64>;
    /// A short description for the session ledger, e.g. `curve on 100 grid points`.
    fn describe(&self) -> String;
}

/// A private output with its metadata.
#[derive(Debug, Clone)]
pub struct Release<O> {
    output: O,
    metadata: ReleaseMetadata,
}

impl<O: Output> Release<O> {
    /// Pairs an output with its metadata (the mechanism's `privatize` does this).
    pub fn new(output: O, metadata: ReleaseMetadata) -> Self {
        Self { output, metadata }
    }

    /// The released object.
    pub fn output(&self) -> &O {
        &self.output
    }

    /// The metadata.
    pub fn metadata(&self) -> &ReleaseMetadata {
        &self.metadata
    }

    /// The released numbers as one vector.
    pub fn values(&self) -> Vec<f64> {
        self.output.values()
    }

    /// The output and the metadata (e.g. for a pipeline that wraps a stage's release).
    pub fn into_parts(self) -> (O, ReleaseMetadata) {
        (self.output, self.metadata)
    }

    /// The release as JSON: `{"metadata": ..., "output": ...}`.
    pub fn to_json(&self) -> Result<String> {
        #[derive(Serialize)]
        struct Record<'a, O> {
            metadata: &'a ReleaseMetadata,
            output: &'a O,
        }
        serde_json::to_string_pretty(&Record { metadata: &self.metadata, output: &self.output })
            .map_err(|e| Error::Json(e.to_string()))
    }
}

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
            return Err(Error::BadParameter { name: "noise sd", value: *bad, reason: "must be finite and >= 0" });
        }
        self.noise_sd = Some(sd);
        Ok(self)
    }

    /// The pointwise standard deviation of the noise, if the mechanism stated it.
    pub fn noise_sd(&self) -> Option<&[f64]> {
        self.noise_sd.as_deref()
    }

    /// The pointwise band `values ∓ z sd(t_i)` of the noise (clamped to the public range, if any),
    /// if the mechanism stated its noise's sd: e.g. `z = 2` for a ±2 sd band.
    pub fn band(&self, z: f64) -> Option<(Vec<f64>, Vec<f64>)> {
        let sd = self.noise_sd.as_ref()?;
        let (lo, hi) = self.range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let lower = self.values.iter().zip(sd).map(|(v, s)| (v - z * s).clamp(lo, hi)).collect();
        let upper = self.values.iter().zip(sd).map(|(v, s)| (v + z * s).clamp(lo, hi)).collect();
        Some((lower, upper))
    }

    /// **The projection onto a public range** (post-processing: costs no privacy): the function
    /// clamped pointwise to `[lo, hi]`, on the grid and wherever it is evaluated, and the number of
    /// grid points that moved. With positive quadrature weights `w_i` the pointwise clamp is the
    /// projection in `||f||² = Σ_i w_i f(t_i)²` onto the convex set of grid functions in `[lo, hi]`;
    /// for any target in that set (a mean of records in the range) it cannot increase the error
    /// (projections onto closed convex sets are non-expansive and fix the set's points).
    pub fn clamped(mut self, lo: f64, hi: f64) -> Result<(Self, usize)> {
        crate::error::public_range(lo, hi)?;
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

impl Release<Curve> {
    /// The private curve on the grid.
    pub fn curve(&self) -> &[f64] {
        self.output.values()
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        self.output.grid()
    }

    /// Released coefficients (basis coefficients or Bernstein lattice values).
    pub fn coefficients(&self) -> &[f64] {
        self.output.coefficients()
    }

    /// The private curve at arbitrary points (post-processing).
    pub fn evaluate(&self, points: &[f64]) -> Result<Vec<f64>> {
        self.output.evaluate(points)
    }
}

/// A released vector (a mean feature vector, coordinates in a subspace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coefficients(pub Vec<f64>);

impl Output for Coefficients {
    fn values(&self) -> Vec<f64> {
        self.0.clone()
    }

    fn describe(&self) -> String {
        format!("vector of {} numbers", self.0.len())
    }
}

/// A released weighted point set in `R^D` (a synthetic dataset): `Σ_m w_m δ_{z_m}`, points public.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedSample {
    /// D.
    pub dim: usize,
    /// The points, row-major (`M * D` numbers), chosen without the data.
    pub points: Vec<f64>,
    /// The released weights (may be negative).
    pub weights: Vec<f64>,
}

impl WeightedSample {
    /// CSV with a header `x1,...,xD,weight`, one synthetic point per line.
    pub fn to_csv(&self) -> String {
        let mut out = (1..=self.dim).map(|i| format!("x{i}")).collect::<Vec<_>>().join(",") + ",weight\n";
        for (point, w) in self.points.chunks(self.dim.max(1)).zip(&self.weights) {
            let row: Vec<String> = point.iter().map(|v| format!("{v}")).collect();
            out += &format!("{},{w}\n", row.join(","));
        }
        out
    }
}

impl Output for WeightedSample {
    fn values(&self) -> Vec<f64> {
        self.weights.clone()
    }

    fn describe(&self) -> String {
        format!("{} weighted points in R^{}", self.weights.len(), self.dim)
    }
}

/// A released sketch `S = (Σ Φ(x_i) + ξ) / (n + ζ)` with its noisy count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sketch {
    /// The normalised sketch S.
    pub sketch: Vec<f64>,
    /// `n + ζ`, at least 1 (post-processing).
    pub noisy_count: f64,
    /// The noisy sum `Σ Φ(x_i) + ξ` before the division.
    pub noisy_sum: Vec<f64>,
}

impl Output for Sketch {
    fn values(&self) -> Vec<f64> {
        let mut v = self.noisy_sum.clone();
        v.push(self.noisy_count);
        v
    }

    fn describe(&self) -> String {
        format!("sketch of {} features", self.sketch.len())
    }
}

/// The tensor Bernstein polynomial of `values` on the `(degree + 1)^d` lattice of `domain`, at `point`.
pub fn bernstein_value(values: &[f64], degree: usize, domain: &[(f64, f64)], point: &[f64]) -> f64 {
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

/// Bernstein basis polynomial values `C(k, j) u^j (1 - u)^{k - j}` for j = 0..=k, in log space
/// (`ln C(k, j)` accumulated as `Σ ln((k - i)/(i + 1))`), so that no degree overflows: the direct
/// product overflows `C(k, j)` from k ≈ 1030 and released an all-NaN curve.
pub fn bernstein_weights(k: usize, u: f64) -> Vec<f64> {
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
pub fn check_bernstein_domain(grid: &Grid) -> Result<()> {
    match grid.domain().iter().find(|(lo, hi)| !(hi > lo && (hi - lo).is_finite())) {
        None => Ok(()),
        Some((lo, _)) => Err(Error::BadParameter {
            name: "grid domain",
            value: *lo,
            reason: "the Bernstein mechanism needs a domain of positive width on every axis (a one-point grid has none)",
        }),
    }
}

/// Linear interpolation of grid values at `t` (constant beyond the ends).
pub fn interpolate(points: &[f64], values: &[f64], t: f64) -> f64 {
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
