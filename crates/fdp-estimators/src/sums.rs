//! Clipped sums at a grid of bounds, exact and mergeable: the summary of every mean mechanism.
//!
//! A record `x` (its centred basis coefficients, or its centred grid values for the sup norm) clipped
//! at τ is `x · min(1, τ/‖x‖)`. With bounds `τ_0 < … < τ_{G-1}` and `g₀` the first index with
//! `τ_{g₀} >= ‖x‖`, the record contributes `x` to every sum with `g >= g₀` and `τ_g · x/‖x‖` to every
//! sum with `g < g₀`. So two integer accumulators per bucket suffice — `inside[g₀] += x` and
//! `outside[g₀] += x/‖x‖` — and the clipped sum at τ_g is
//!
//! `Σ_{g₀ <= g} inside[g₀] + τ_g Σ_{g₀ > g} outside[g₀]`:
//!
//! 2 J additions per record instead of G J (G = 64 for the private-tuning pipeline). Every addition
//! is of a fixed-point integer ([`fdp_core::state`]): `|x_k| <= ‖x‖ <= τ_max` inside, `|x_k|/‖x‖ <= 1`
//! outside, `|clamp(ln ‖x‖)| <= max(|lo|, |hi|)` for the log-norm, each truncated toward zero, so no
//! contribution grows and the sums are exact — the same summary whatever the partitioning, the
//! thread count or the order. A record whose norm or entries are not finite contributes 0 (the centre
//! of every ball) and log-norm `lo`; it still counts in n.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use rayon::prelude::*;

use fdp_core::ClipNorm;
use fdp_core::error::public_range;
use fdp_core::state::{fingerprint_of, fixed_point_exponent, from_fixed};
use fdp_data::CurveSet;
use fdp_mercer::MercerBasis;

use crate::error::{EstimatorError, Result};

mod sweep;

/// Records per block (and rows of every projection product).
const BLOCK: usize = 256;

/// **Floating-point operations between the exact sums and a coordinate a mean mechanism adds noise
/// to**, at most: the two integer-to-float conversions, `τ_g ·` the outside sum, the addition and
/// the division by n in [`ClippedSums::means`] (5), then what a mechanism does to the mean before
/// the noise: a shrinkage factor or a soft threshold (1), or a linear interpolation at a Bernstein
/// lattice point (3). Products by the powers of two `2^-e` are exact (the smallest nonzero sum,
/// one unit, is `2^-e >= 2^-1022`, never subnormal). The calibration charges
/// `Δ (1 + γ_8 n)` ([`fdp_noise::Sensitivity::of_mean`]; docs/DESIGN.md §15.4).
pub(crate) const MEAN_ROUNDINGS: u32 = 8;

/// **The clipping slack**: records are clipped at `τ (1 − 2⁻³²)`, not at τ, so that the rounding of
/// the per-record side — the computed norm (at most `(J + 2) u` below the true one for J
/// coordinates), the division by it and the truncation to fixed point — keeps every clipped
/// contribution inside the exact ball of radius τ the sensitivity is stated for, for any
/// J < 2²⁰ (`2⁻³² > (J + 4) u`). The rounding after the exact sums is charged separately
/// ([`MEAN_ROUNDINGS`]). Shared by the clipped means, the covariance and the sparse mean.
pub(crate) const CLIP_SLACK: f64 = 1.0 / 4_294_967_296.0;

/// The public layout of the sums: the norm, the bounds, the record width and the log-norm range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClippedSums {
    norm: ClipNorm,
    taus: Vec<f64>,
    width: usize,
    log_range: Option<(f64, f64)>,
    e_value: i32,
    e_unit: i32,
    e_log: i32,
    pointwise: Option<PointwiseBins>,
    /// Per-coordinate scales applied to every projected record before it is clipped (powers of
    /// two, so `scale · x_k` is exact): the clip norm becomes the weighted norm `‖w ∘ x‖`.
    scales: Option<Vec<f64>>,
}

/// **The pointwise part of the sums** (the binned family of the tuned default; docs/DESIGN.md
/// section 16): each record's grid values clamped to the public range `[lo, hi]` (a non-finite value
/// replaced by the midpoint `m = (lo + hi)/2`, the public default), averaged with the quadrature
/// weights over `bins` contiguous bins of grid points, minus `m`. Each entry is a convex combination
/// of values in `[lo, hi]` minus `m`, clamped again to `[-R, R]`, `R = (hi - lo)/2` (so no rounding
/// of the average can leave it): replacing one record moves each bin's mean by at most `2R/n` — a
/// sensitivity that follows from the public range alone, whatever the records' roughness.
///
/// **What is released is the bin means in the averaging Haar basis** ([`haar`](Self::haar)): their
/// mean (the level), then for each split of a run of bins into halves `L | R` the contrast
/// `(mean_L - mean_R)/2`. One record moves the bin means by some `Δ` in the box `[-2R/n, 2R/n]^K`;
/// `‖HΔ‖₁` is convex in Δ, so its largest value on the box is at a vertex:
/// `Δ₁ = (2R/n) max_{σ ∈ {±1}^K} ‖Hσ‖₁` ([`vertex_norm`](Self::vertex_norm)): 1 for K = 1 and 2
/// (the level and the contrast of two bins for the price of one bin mean, where the bin means
/// themselves cost 2), 11/6 for K = 3. The coordinates are computed from the exact sums' means, a
/// product by public numbers after them ([`sensitivity`](Self::sensitivity) charges the rounding).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PointwiseBins {
    lo: f64,
    hi: f64,
    bins: usize,
    /// The bin of each grid point.
    bin_of: Vec<usize>,
    /// `w_i / W_b` for grid point i in bin b (`W_b` the bin's total quadrature weight).
    share: Vec<f64>,
    e_bin: i32,
    /// `W_b`, each bin's total quadrature weight.
    weights: Vec<f64>,
    /// `max_σ ‖Hσ‖₁` over the vertices of `[-1, 1]^K` (the triangle bound K beyond 16 bins).
    vertex_norm: f64,
}

/// `1 + 2^-50`: the enumerated vertex norm times this is at least the exact one.
const VERTEX_NORM_ROUND_UP: f64 = 1.0 + 4.0 * f64::EPSILON;

/// The largest number of bins whose Haar vertex norm is found by enumerating the `2^K` vertices;
/// beyond it the triangle bound `K` (each row of H has l1 norm 1) is used.
const VERTEX_ENUMERATION_MAX_BINS: usize = 16;

/// The runs of bins the averaging Haar tree splits, in the order of its contrasts (pre-order):
/// `[a, b)` into `[a, c) | [c, b)`, `c = (a + b)/2`, for every run of at least two bins.
fn haar_splits(k: usize) -> Vec<(usize, usize, usize)> {
    fn visit(a: usize, b: usize, out: &mut Vec<(usize, usize, usize)>) {
        if b - a >= 2 {
            let c = (a + b) / 2;
            out.push((a, c, b));
            visit(a, c, out);
            visit(c, b, out);
        }
    }
    let mut out = Vec::new();
    visit(0, k, &mut out);
    out
}

impl PointwiseBins {
    /// `bins` (1 ..= the grid's size) contiguous bins of equally many grid points (the first
    /// `i · bins / K` rule) in the public range `lo < hi` (both finite).
    pub(crate) fn new(weights: &[f64], lo: f64, hi: f64, bins: usize) -> Result<Self> {
        let k = weights.len();
        public_range(lo, hi)?;
        if !(bins >= 1 && bins <= k) {
            return Err(EstimatorError::BadParameter {
                name: "pointwise bins",
                value: bins.into(),
                reason: "need 1 <= bins <= the number of grid points",
            });
        }
        let bin_of: Vec<usize> = (0..k).map(|i| i * bins / k).collect();
        let mut totals = vec![0.0; bins];
        bin_of.iter().zip(weights).for_each(|(b, w)| totals[*b] += w);
        let share = bin_of.iter().zip(weights).map(|(b, w)| w / totals[*b]).collect();
        // The enumeration's sums are within a few ulps of the exact ones (11/6 comes out 7e-17 low):
        // rounded up by a relative 2^-50, far above that error and far below the rounding charge.
        let vertex_norm = if bins <= VERTEX_ENUMERATION_MAX_BINS {
            let vertex =
                |code: usize| -> Vec<f64> { (0..bins).map(|b| if code >> b & 1 == 1 { 1.0 } else { -1.0 }).collect() };
            (0..1usize << bins)
                .map(|code| Self::haar_of(&vertex(code)).iter().map(|h| h.abs()).sum())
                .fold(0.0, f64::max)
                * VERTEX_NORM_ROUND_UP
        } else {
            bins as f64
        };
        let e_bin = fixed_point_exponent((hi - lo) / 2.0);
        Ok(Self { lo, hi, bins, bin_of, share, e_bin, weights: totals, vertex_norm })
    }

    /// The averaging Haar coefficients of a bin vector `m` (length K): `mean(m)`, then
    /// `(mean m[a..c] - mean m[c..b]) / 2` for every split of [`haar_splits`]. Each row has l1
    /// norm 1, so every coefficient of a vector in `[-R, R]^K` is in `[-R, R]`.
    fn haar_of(m: &[f64]) -> Vec<f64> {
        let mean = |a: usize, b: usize| m[a..b].iter().sum::<f64>() / (b - a) as f64;
        std::iter::once(mean(0, m.len()))
            .chain(haar_splits(m.len()).into_iter().map(|(a, c, b)| (mean(a, c) - mean(c, b)) / 2.0))
            .collect()
    }

    /// The averaging Haar coefficients of the bin vector `m` (see [`haar_of`](Self::haar_of)).
    pub(crate) fn haar(&self, m: &[f64]) -> Vec<f64> {
        Self::haar_of(m)
    }

    /// The bin vector with Haar coefficients `h` (the inverse of [`haar`](Self::haar)): from the
    /// level down, a run `[a, b)` of mean μ with contrast γ has halves of means
    /// `μ + 2γ |R|/(b - a)` and `μ - 2γ |L|/(b - a)`.
    pub(crate) fn unhaar(&self, h: &[f64]) -> Vec<f64> {
        let mut means = vec![h[0]; self.bins];
        for ((a, c, b), gamma) in haar_splits(self.bins).into_iter().zip(&h[1..]) {
            let mu = means[a];
            let (left, right) = ((c - a) as f64, (b - c) as f64);
            means[a..c].fill(mu + 2.0 * gamma * right / (left + right));
            means[c..b].fill(mu - 2.0 * gamma * left / (left + right));
        }
        means
    }

    /// `W_b`, each bin's total quadrature weight.
    pub(crate) fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// `max_σ ‖Hσ‖₁` over `σ ∈ {±1}^K`: the released coefficients' l1 sensitivity in units of `2R/n`.
    pub(crate) fn vertex_norm(&self) -> f64 {
        self.vertex_norm
    }

    /// **The l1 sensitivity of the released Haar coefficients** for `n` records:
    /// `(2R/n) max_σ ‖Hσ‖₁` (see the type's docs), with the rounding charged
    /// ([`fdp_noise::Sensitivity::with_rounding`]): each coefficient is computed from the exact
    /// sums' means ([`MEAN_ROUNDINGS`] operations) by at most `2K` more (a run's sum of up to K - 1
    /// additions, a division, a subtraction and a halving: `K + 2 <= 2K` for K >= 2, and 1 for
    /// K = 1), of absolute value at most R each, so at most `K R` in l1. The product
    /// `2 (R/n) max_σ ‖Hσ‖₁` is rounded up by the same relative `2^-50` as the vertex norm.
    pub(crate) fn sensitivity(&self, n: usize) -> Result<fdp_noise::Sensitivity> {
        let k = self.bins as f64;
        let rounding = MEAN_ROUNDINGS + 2 * self.bins as u32;
        let delta = 2.0 * (self.half() / n.max(1) as f64) * self.vertex_norm * VERTEX_NORM_ROUND_UP;
        Ok(fdp_noise::Sensitivity::new(delta)?.with_rounding(k * self.half(), rounding)?)
    }

    /// The number of bins.
    pub(crate) fn bins(&self) -> usize {
        self.bins
    }

    /// The bin of each grid point.
    pub(crate) fn bin_of(&self) -> &[usize] {
        &self.bin_of
    }

    /// `R = (hi - lo)/2`: every entry of a record's bin vector is in `[-R, R]`.
    pub(crate) fn half(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    /// The midpoint of the range, subtracted from every bin mean.
    pub(crate) fn mid(&self) -> f64 {
        self.lo + self.half()
    }

    /// One record's bin vector (see the type's docs), each entry in `[-R, R]`, written to `out`
    /// (length [`bins`](Self::bins)).
    fn record_into(&self, raw: &[f64], out: &mut [f64]) {
        let (mid, half) = (self.mid(), self.half());
        out.fill(0.0);
        for ((x, b), share) in raw.iter().zip(&self.bin_of).zip(&self.share) {
            let v = if x.is_finite() { x.clamp(self.lo, self.hi) - mid } else { 0.0 };
            out[*b] += share * v;
        }
        out.iter_mut().for_each(|v| *v = v.clamp(-half, half));
    }

    fn fingerprint_words(&self) -> Vec<u64> {
        vec![self.lo.to_bits(), self.hi.to_bits(), self.bins as u64]
    }
}

impl ClippedSums {
    /// Sums of records of `width` numbers clipped in `norm` at each of `taus` (positive, increasing;
    /// each less [`CLIP_SLACK`]), and with `log_range = (lo, hi)` the sum of `clamp(ln ‖x‖, lo, hi)`.
    pub(crate) fn new(norm: ClipNorm, taus: &[f64], width: usize, log_range: Option<(f64, f64)>) -> Result<Self> {
        if width == 0 {
            return Err(EstimatorError::BadParameter {
                name: "record width",
                value: width.into(),
                reason: "need at least one coordinate per record",
            });
        }
        if taus.is_empty() || taus.iter().any(|t| !(t.is_finite() && *t > 0.0)) || taus.windows(2).any(|w| w[1] <= w[0])
        {
            return Err(EstimatorError::BadParameter {
                name: "clipping bounds",
                value: format!("{taus:?}").into(),
                reason: "need finite, positive, increasing bounds",
            });
        }
        let log_bound = log_range.map_or(1.0, |(lo, hi)| lo.abs().max(hi.abs()).max(1.0));
        Ok(Self {
            norm,
            taus: taus.iter().map(|t| t * (1.0 - CLIP_SLACK)).collect(),
            width,
            log_range,
            e_value: fixed_point_exponent(taus[taus.len() - 1]),
            e_unit: fixed_point_exponent(1.0),
            e_log: fixed_point_exponent(log_bound),
            pointwise: None,
            scales: None,
        })
    }

    /// The same sums of the records' coordinates multiplied by `scales` (one per coordinate, each a
    /// power of two in `(0, 1]`, so the products are exact but in the subnormal and overflow
    /// corners, where a scaled coefficient may round once more or stay finite where the unscaled one
    /// overflowed) before the norm, the clipping and the log-norm: records are clipped in the
    /// weighted norm `‖w ∘ x‖` and the sums hold `w ∘ x` clipped. Privacy does not rest on the
    /// exactness: each record's scaled coordinates are a function of that record alone, clipped in
    /// the norm of those same coordinates. Projected records only ([`clipped_sums`] refuses the
    /// scales without a basis).
    pub(crate) fn with_scales(mut self, scales: Vec<f64>) -> Result<Self> {
        let scale = |w: f64| w <= 1.0 && fdp_noise::secure::is_power_of_two(w);
        if scales.len() != self.width || !scales.iter().all(|w| scale(*w)) {
            return Err(EstimatorError::BadParameter {
                name: "component scales",
                value: format!("{scales:?}").into(),
                reason: "need one power of two in (0, 1] per coordinate",
            });
        }
        self.scales = Some(scales);
        Ok(self)
    }

    /// The same sums followed by the pointwise bins of every record ([`PointwiseBins`]).
    pub(crate) fn with_pointwise(mut self, pointwise: PointwiseBins) -> Self {
        self.pointwise = Some(pointwise);
        self
    }

    /// Where the pointwise bins start in the state (after the clipped sums and the log sum).
    fn pointwise_at(&self) -> usize {
        2 * self.taus.len() * self.width + 1
    }

    /// How many integers the state holds: `inside` (G x width), `outside` (G x width), the log sum,
    /// then the pointwise bins if any.
    pub(crate) fn len(&self) -> usize {
        self.pointwise_at() + self.pointwise.as_ref().map_or(0, PointwiseBins::bins)
    }

    /// The words a mechanism's fingerprint includes for this layout.
    pub(crate) fn fingerprint_words(&self) -> Vec<u64> {
        let norm = match self.norm {
            ClipNorm::CoefficientL1 => 1,
            ClipNorm::L2 => 2,
            _ => 3,
        };
        let (lo, hi) = self.log_range.unwrap_or((0.0, 0.0));
        let mut words = vec![norm, self.width as u64, lo.to_bits(), hi.to_bits(), self.log_range.is_some() as u64];
        words.extend(self.taus.iter().map(|t| t.to_bits()));
        if let Some(p) = &self.pointwise {
            words.extend(p.fingerprint_words());
        }
        if let Some(scales) = &self.scales {
            words.push(u64::MAX);
            words.extend(scales.iter().map(|w| w.to_bits()));
        }
        words
    }

    /// The clipped means at every bound (G vectors of `width`) and the mean clamped log-norm, from
    /// the sums of `n` records.
    pub(crate) fn means(&self, sums: &[i128], n: usize) -> (Vec<Vec<f64>>, f64) {
        let (g_count, w) = (self.taus.len(), self.width);
        let n = n.max(1) as f64;
        // inside: prefix over g0 <= g; outside (stored at g0 - 1): suffix over g0 - 1 >= g.
        let mut inside = vec![0i128; w];
        let mut outside_suffix = vec![vec![0i128; w]; g_count + 1];
        for g in (0..g_count).rev() {
            let at = (g_count + g) * w;
            let next = outside_suffix[g + 1].clone();
            outside_suffix[g].iter_mut().zip(next.iter().zip(&sums[at..at + w])).for_each(|(s, (a, b))| *s = a + b);
        }
        let means = (0..g_count)
            .map(|g| {
                inside.iter_mut().zip(&sums[g * w..(g + 1) * w]).for_each(|(a, b)| *a += b);
                (0..w)
                    .map(|k| {
                        (from_fixed(inside[k], self.e_value)
                            + self.taus[g] * from_fixed(outside_suffix[g][k], self.e_unit))
                            / n
                    })
                    .collect()
            })
            .collect();
        (means, from_fixed(sums[2 * g_count * w], self.e_log) / n)
    }

    /// The Haar coefficients ([`PointwiseBins::haar`]) of the mean pointwise bin vector over `n`
    /// records: what the binned family releases (empty without pointwise bins).
    pub(crate) fn pointwise_coefficients(&self, sums: &[i128], n: usize) -> Vec<f64> {
        let n = n.max(1) as f64;
        match &self.pointwise {
            Some(p) => {
                let at = self.pointwise_at();
                p.haar(&sums[at..at + p.bins].iter().map(|s| from_fixed(*s, p.e_bin) / n).collect::<Vec<f64>>())
            }
            None => Vec::new(),
        }
    }
}

/// The sums of the records of `curves` minus `reference`, projected onto `basis` (or on the grid
/// values themselves when `basis` is `None`, for the sup norm), in one fused sweep per fixed block
/// of [`BLOCK`] records, in parallel ([`sweep`]).
///
/// The projection of each record does not depend on which other records share its block
/// ([`project_rows`]), and each record adds the same integers, so the sums are the same however the
/// data are partitioned.
pub(crate) fn clipped_sums(
    layout: &ClippedSums,
    basis: Option<&MercerBasis>,
    curves: &CurveSet,
    reference: Option<&[f64]>,
) -> Result<Vec<i128>> {
    let k = curves.grid().len();
    let phi = basis.map(MercerBasis::weighted_eigenfunctions);
    // The sweep's blocks are shaped by these (a mechanism's own layout always matches them).
    let (rows, cols) = phi.map_or((k, k), |p| (p.nrows(), p.ncols()));
    if rows != k || cols != layout.width {
        return Err(EstimatorError::Shape {
            what: "record width of the clipped sums",
            expected: cols,
            got: layout.width,
        });
    }
    let mut offset = offset(basis, reference, layout.width)?;
    if offset.len() != layout.width {
        return Err(EstimatorError::Shape { what: "reference length", expected: layout.width, got: offset.len() });
    }
    // Weighted coordinates: the projection's columns and the offset scaled by powers of two (exact,
    // so each record's scaled coefficients are the same bits as its coefficients times the scale).
    let scaled = match (&layout.scales, phi) {
        (Some(scales), Some(p)) => {
            offset.iter_mut().zip(scales).for_each(|(o, w)| *o *= w);
            Some(Mat::from_fn(p.nrows(), p.ncols(), |i, j| p[(i, j)] * scales[j]))
        }
        (Some(_), None) => {
            return Err(EstimatorError::BadParameter {
                name: "component scales",
                value: layout.width.into(),
                reason: "scale projected coefficients only: give the basis",
            });
        }
        (None, _) => None,
    };
    let phi = scaled.as_ref().map(Mat::as_ref).or(phi);
    Ok(sweep::clipped_sums(layout, phi, curves.values(), k, &offset))
}

/// What every record is centred by: the reference's coefficients on `basis`, the reference itself
/// (`basis = None`), or zeros.
fn offset(basis: Option<&MercerBasis>, reference: Option<&[f64]>, width: usize) -> Result<Vec<f64>> {
    Ok(match (basis, reference) {
        (Some(b), Some(r)) => b.project(r)?,
        (None, Some(r)) => r.to_vec(),
        _ => vec![0.0; width],
    })
}

/// The integer sums `Σ_i add(x_i)` of `len` accumulators over the records `x_i` of `curves`
/// minus `reference`, projected onto `basis` (`width` = its number of components) or taken on the
/// grid (`basis = None`, `width` = the grid size): the parallel-block pipeline of the covariance's
/// rank-one sums (the mean's [`clipped_sums`] run the fused [`sweep`]). `add(acc, row, raw)` must add one
/// record's integer contribution to the accumulators (`row` its centred coordinates, `raw` its grid
/// values); the record's projection is the same bits whatever
/// the partitioning ([`project_rows`]), and integer addition is exact, so the sums are too.
pub(crate) fn record_sums(
    basis: Option<&MercerBasis>,
    curves: &CurveSet,
    reference: Option<&[f64]>,
    width: usize,
    len: usize,
    add: impl Fn(&mut [i128], &[f64], &[f64]) + Sync,
) -> Result<Vec<i128>> {
    let k = curves.grid().len();
    let offset = offset(basis, reference, width)?;
    let sums = curves
        .values()
        .par_chunks(BLOCK * k.max(1))
        .map(|block| {
            let rows = block.len() / k.max(1);
            let mut acc = vec![0i128; len];
            let mut row = vec![0.0; width];
            match basis {
                Some(b) => {
                    let mut c = Mat::<f64>::zeros(BLOCK, width);
                    project_rows(block, k, b.weighted_eigenfunctions(), &mut c);
                    for i in 0..rows {
                        row.iter_mut().enumerate().for_each(|(col, v)| *v = c[(i, col)] - offset[col]);
                        add(&mut acc, &row, &block[i * k..(i + 1) * k]);
                    }
                }
                None => {
                    for record in block.chunks_exact(k) {
                        row.iter_mut().zip(record.iter().zip(&offset)).for_each(|(v, (x, r))| *v = x - r);
                        add(&mut acc, &row, record);
                    }
                }
            }
            acc
        })
        .reduce(
            || vec![0i128; len],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    Ok(sums)
}

/// `c_i = Σ_t x_{i,t} W[t, ·]` for the rows `x_i` of `rows` (row-major, `k` values each, at most
/// [`BLOCK`]), written to `out` (row-major). The product is always taken on a full block of
/// [`BLOCK`] rows (a short block is padded with zero rows), so the matrix-product kernel, its
/// blocking and the order of its operations are the same for every record wherever it sits and
/// however many records share its block: a record's coefficients are the same bits under any
/// partitioning of the data (tested with 1, 4 and 64 uneven parts in `tests/mergeable.rs`).
fn project_rows(rows: &[f64], k: usize, w: MatRef<'_, f64>, out: &mut Mat<f64>) {
    let n = rows.len() / k.max(1);
    let padded;
    let full = if n == BLOCK {
        rows
    } else {
        padded = [rows, &vec![0.0; (BLOCK - n) * k]].concat();
        &padded
    };
    let x = MatRef::from_row_major_slice(full, BLOCK, k);
    matmul(out.as_mut(), Accum::Replace, x, w, 1.0, Par::Seq);
}

/// The fingerprint of a mean mechanism: its name, the layout, the grid, the reference and the
/// projection (eigenvalues and weighted eigenfunctions), all public.
pub(crate) fn mean_fingerprint(
    name: &str,
    layout: &ClippedSums,
    basis: Option<&MercerBasis>,
    grid: &fdp_mercer::Grid,
    reference: Option<&[f64]>,
) -> u64 {
    let mut words: Vec<u64> = name.bytes().map(u64::from).collect();
    words.extend(layout.fingerprint_words());
    words.extend(grid.points().iter().chain(grid.weights()).map(|v| v.to_bits()));
    words.extend(reference.unwrap_or(&[]).iter().map(|v| v.to_bits()));
    if let Some(b) = basis {
        words.extend(b.eigenvalues().iter().map(|v| v.to_bits()));
        let phi = b.weighted_eigenfunctions();
        words.extend((0..phi.nrows()).flat_map(|i| (0..phi.ncols()).map(move |j| phi[(i, j)].to_bits())));
    }
    fingerprint_of(words)
}

#[cfg(test)]
mod tests {
    use super::sweep::tests::uniform;
    use super::*;
    use crate::sparse::tests::basis;
    use fdp_core::state::to_fixed;

    /// The sums' definition, one record at a time (the implementation before the fused sweep): the
    /// oracle [`clipped_sums`] must match integer for integer.
    fn add_record(layout: &ClippedSums, acc: &mut [i128], row: &[f64], raw: &[f64]) {
        let (g_count, w) = (layout.taus.len(), layout.width);
        if let Some(p) = &layout.pointwise {
            let at = layout.pointwise_at();
            let mut bins = vec![0.0; p.bins];
            p.record_into(raw, &mut bins);
            acc[at..at + p.bins].iter_mut().zip(bins).for_each(|(a, v)| *a += to_fixed(v, p.e_bin));
        }
        let size = layout.norm.norm(row);
        let usable = size.is_finite() && row.iter().all(|v| v.is_finite());
        if let Some((lo, hi)) = layout.log_range {
            let log = if usable { size.ln().clamp(lo, hi) } else { lo };
            acc[2 * g_count * w] += to_fixed(log, layout.e_log);
        }
        if !usable {
            return;
        }
        let g0 = layout.taus.partition_point(|t| *t < size);
        if g0 < g_count {
            let inside = &mut acc[g0 * w..(g0 + 1) * w];
            inside.iter_mut().zip(row).for_each(|(a, v)| *a += to_fixed(*v, layout.e_value));
        }
        if g0 > 0 {
            let at = (g_count + g0 - 1) * w;
            let outside = &mut acc[at..at + w];
            outside.iter_mut().zip(row).for_each(|(a, v)| *a += to_fixed(v / size, layout.e_unit));
        }
    }

    fn oracle(
        layout: &ClippedSums,
        basis: Option<&MercerBasis>,
        curves: &CurveSet,
        reference: Option<&[f64]>,
    ) -> Vec<i128> {
        record_sums(basis, curves, reference, layout.width, layout.len(), |acc, row, raw| {
            add_record(layout, acc, row, raw)
        })
        .unwrap()
    }

    /// `n` records on `k` points: ordinary curves at scales from 1e-3 to 1e3 and, every few records,
    /// the adversarial ones — zero, huge (their projections overflow to ±∞ or NaN), tiny (their
    /// squares underflow), constant at a bound (on a bound exactly in the sup norm).
    fn records(k: usize, n: usize, taus: &[f64], seed: u64) -> Vec<f64> {
        let mut u = uniform(seed);
        let mut values = Vec::with_capacity(n * k);
        for i in 0..n {
            let (kind, scale) = (i % 13, 10f64.powf(6.0 * u()));
            let phase = u();
            values.extend((0..k).map(|t| match kind {
                0 => 0.0,
                1 => f64::MAX,
                2 if t % 2 == 0 => f64::MAX,
                2 => -f64::MAX,
                3 => 1e-160 * (1.0 + u()),
                4 => taus[i % taus.len()],
                5 => -taus[(i / 7) % taus.len()],
                _ => scale * ((t as f64 * 0.1 + phase * 6.0).sin() + 0.3 * u()),
            }));
        }
        values
    }

    /// The averaging Haar transform of the binned family: the inverse rebuilds the bins, every row
    /// has l1 norm 1 (so each coefficient of a vector in `[-R, R]^K` is in `[-R, R]`), and the
    /// vertex norm is the closed form: 1 for one and two bins, 11/6 for three, at most K, and at
    /// least the l1 norm of the transform of any point of the box (random points).
    #[test]
    fn a_record_whose_computed_norm_rounds_low_is_clipped_inside_the_ball() {
        // 1 then 999 terms of 2^-54: each addition to 1 rounds down (below half an ulp), so the
        // computed l1 norm is 1 while the true one is 1 + 999 2^-54. At τ = 1 the record passed as
        // unclipped and contributed more than τ in l1; with the slack it is clipped at τ (1 - 2^-32).
        let k = 1000;
        let mut row = vec![2f64.powi(-54); k];
        row[0] = 1.0;
        assert_eq!(ClipNorm::CoefficientL1.norm(&row), 1.0);
        let grid = fdp_mercer::Grid::midpoint(0.0, 1.0, k).unwrap();
        let curves = CurveSet::from_flat(grid, row, None).unwrap().0;
        let layout = ClippedSums::new(ClipNorm::CoefficientL1, &[1.0], k, None).unwrap();
        let (means, _) = layout.means(&clipped_sums(&layout, None, &curves, None).unwrap(), 1);
        let (head, tail) = (means[0][0], means[0][1..].iter().sum::<f64>());
        // The tail is a sum of small dyadic numbers (exact), and 1 - head is exact (Sterbenz).
        assert!(head <= 1.0 && tail <= 1.0 - head, "contribution's l1 norm above τ: {head} + {tail}");
    }

    #[test]
    fn the_haar_transform_of_the_bins_and_its_vertex_norm() {
        let weights: Vec<f64> = (0..20).map(|i| 0.02 + 0.01 * (i % 3) as f64).collect();
        let mut rng = fdp_noise::NoiseRng::seeded(4);
        let noise = fdp_noise::LatticeLaplace::with_scale(1.0).unwrap();
        for k in 1..=9 {
            let bins = PointwiseBins::new(&weights, -2.0, 2.0, k).unwrap();
            let m: Vec<f64> = (0..k).map(|b| (b as f64 * 1.7).sin()).collect();
            let back = bins.unhaar(&bins.haar(&m));
            assert!(back.iter().zip(&m).all(|(x, y)| (x - y).abs() <= 1e-12), "{k}: {back:?} {m:?}");
            // H's columns: the coefficients of each unit bin vector.
            let columns: Vec<Vec<f64>> =
                (0..k).map(|b| bins.haar(&(0..k).map(|c| f64::from(c == b)).collect::<Vec<f64>>())).collect();
            assert!(columns.iter().flatten().all(|h| h.abs() <= 1.0));
            let rows_l1: Vec<f64> = (0..k).map(|row| columns.iter().map(|column| column[row].abs()).sum()).collect();
            assert!(rows_l1.iter().all(|r| (r - 1.0).abs() <= 1e-12), "{k}: {rows_l1:?}");
            let norm = bins.vertex_norm();
            assert!(norm <= k as f64 + 1e-12);
            for _ in 0..200 {
                let point: Vec<f64> = (0..k).map(|_| noise.sample(&mut rng).clamp(-1.0, 1.0)).collect();
                assert!(bins.haar(&point).iter().map(|h| h.abs()).sum::<f64>() <= norm + 1e-12);
            }
            let expected = match k {
                1 | 2 => Some(1.0),
                3 => Some(11.0 / 6.0),
                _ => None,
            };
            if let Some(e) = expected {
                assert!((norm - e).abs() <= 1e-12, "{k}: {norm}");
            }
            let sensitivity = bins.sensitivity(100).unwrap().get();
            let plain = 2.0 * bins.half() * norm / 100.0;
            assert!(sensitivity > plain && sensitivity < plain * (1.0 + 1e-10));
            // The charge covers the operations of `haar` after the mean's (a run's sum, a division,
            // a subtraction, a halving) on coefficients of at most R each, K of them (Higham).
            let after_mean = if k == 1 { 1 } else { k as u32 + 2 };
            let ops = f64::from(MEAN_ROUNDINGS + after_mean) * fdp_noise::privacy::UNIT_ROUNDOFF;
            let needed = 2.0 * ops / (1.0 - ops) * k as f64 * bins.half();
            assert!(sensitivity - plain >= needed, "{k}: charge {} < {needed}", sensitivity - plain);
        }
    }

    #[test]
    fn the_fused_sweep_adds_the_integers_of_the_per_record_formula() {
        let full = basis();
        let k = full.n_points();
        let truncated = full.truncated(7).unwrap();
        let taus: Vec<f64> = (0..64).map(|g| 1e-3 * 1.3f64.powi(g)).collect();
        let reference: Vec<f64> = (0..k).map(|t| (t as f64 * 0.05).cos()).collect();
        let bins = PointwiseBins::new(full.grid().weights(), -2.0, 3.0, 9).unwrap();
        // Lengths: empty, one short block, several blocks with a short last one, several tasks.
        for n in [0, 3, 1037, 9000] {
            let curves = CurveSet::from_flat(full.grid().clone(), records(k, n, &taus, n as u64 + 5), None).unwrap().0;
            for (norm, basis) in [
                (ClipNorm::CoefficientL1, Some(&full)),
                (ClipNorm::CoefficientL1, Some(&truncated)),
                (ClipNorm::L2, Some(&full)),
                (ClipNorm::L2, Some(&truncated)),
                (ClipNorm::Sup, None),
                (ClipNorm::L2, None),
            ] {
                let width = basis.map_or(k, MercerBasis::len);
                for (grid, log_range, pointwise) in [
                    (&taus[..], Some((-3.0, 8.0)), false),
                    (&taus[..], Some((-3.0, 8.0)), true),
                    (&taus[20..21], None, false),
                    (&taus[60..], None, true),
                ] {
                    let layout = ClippedSums::new(norm, grid, width, log_range).unwrap();
                    let layout = if pointwise { layout.with_pointwise(bins.clone()) } else { layout };
                    for reference in [None, Some(&reference[..])] {
                        let fused = clipped_sums(&layout, basis, &curves, reference).unwrap();
                        let expected = oracle(&layout, basis, &curves, reference);
                        assert!(
                            fused == expected,
                            "n = {n}, {norm:?}, width {width}, {} bounds, pointwise {pointwise}, reference {}",
                            grid.len(),
                            reference.is_some()
                        );
                    }
                }
            }
        }
    }

    /// With component scales (the soft tail's weights, section 16.9) the sums are those of the
    /// records' coefficients times the scales, clipped in the weighted norm: the per-record formula
    /// on the scaled rows, integer for integer (records whose projections would overflow are left
    /// out: at half the scale a projection may stay finite where the unscaled one overflowed).
    #[test]
    fn scaled_sums_are_the_sums_of_the_scaled_coefficients() {
        let full = basis();
        let k = full.n_points();
        let taus: Vec<f64> = (0..64).map(|g| 1e-3 * 1.3f64.powi(g)).collect();
        let reference: Vec<f64> = (0..k).map(|t| (t as f64 * 0.05).cos()).collect();
        let scales: Vec<f64> = (0..full.len()).map(|j| if j < 4 { 1.0 } else { 0.5 }).collect();
        for n in [3, 1037] {
            let values: Vec<f64> = records(k, n, &taus, n as u64 + 9)
                .into_iter()
                .map(|v| if v.abs() == f64::MAX { 1e-8 * v } else { v })
                .collect();
            let curves = CurveSet::from_flat(full.grid().clone(), values, None).unwrap().0;
            for norm in [ClipNorm::CoefficientL1, ClipNorm::L2] {
                let plain = ClippedSums::new(norm, &taus, full.len(), Some((-3.0, 8.0))).unwrap();
                let layout = plain.clone().with_scales(scales.clone()).unwrap();
                assert_ne!(layout.fingerprint_words(), plain.fingerprint_words());
                for reference in [None, Some(&reference[..])] {
                    let fused = clipped_sums(&layout, Some(&full), &curves, reference).unwrap();
                    let expected =
                        record_sums(Some(&full), &curves, reference, layout.width, layout.len(), |acc, row, raw| {
                            let scaled: Vec<f64> = row.iter().zip(&scales).map(|(x, w)| x * w).collect();
                            add_record(&layout, acc, &scaled, raw)
                        })
                        .unwrap();
                    assert!(fused == expected, "n = {n}, {norm:?}, reference {}", reference.is_some());
                    assert!(fused != clipped_sums(&plain, Some(&full), &curves, reference).unwrap());
                }
            }
        }
        // Scales must be powers of two in (0, 1], one per coordinate.
        let layout = || ClippedSums::new(ClipNorm::CoefficientL1, &taus, 3, None).unwrap();
        for bad in [
            vec![1.0, 0.3, 0.5],
            vec![1.0, 0.0, 0.5],
            vec![2.0, 1.0, 1.0],
            vec![1.0, f64::NAN, 1.0],
            vec![1.0, f64::from_bits(1), 1.0],
        ] {
            assert!(layout().with_scales(bad.clone()).is_err(), "{bad:?}");
        }
        assert!(layout().with_scales(vec![1.0, 0.5]).is_err());
        assert!(layout().with_scales(vec![1.0, 0.5, 0.25]).is_ok());
        // Scales of grid values (no basis) are refused, not ignored.
        let on_grid = ClippedSums::new(ClipNorm::Sup, &taus, k, None).unwrap().with_scales(vec![0.5; k]).unwrap();
        let curves = CurveSet::from_flat(full.grid().clone(), vec![0.5; 3 * k], None).unwrap().0;
        assert!(clipped_sums(&on_grid, None, &curves, None).is_err());
    }

    #[test]
    fn the_fused_sweep_is_the_same_on_any_thread_count() {
        let basis = basis();
        let k = basis.n_points();
        let taus: Vec<f64> = (0..64).map(|g| 1e-2 * 1.25f64.powi(g)).collect();
        let curves = CurveSet::from_flat(basis.grid().clone(), records(k, 20_000, &taus, 3), None).unwrap().0;
        let layout = ClippedSums::new(ClipNorm::CoefficientL1, &taus, basis.len(), Some((-4.0, 6.0))).unwrap();
        let sums = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| clipped_sums(&layout, Some(&basis), &curves, None).unwrap())
        };
        let one = sums(1);
        assert!(one.iter().any(|s| *s != 0));
        assert_eq!(one, sums(2));
        assert_eq!(one, sums(5));
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        assert!(ClippedSums::new(ClipNorm::L2, &[1.0], 0, None).is_err());
        let basis = basis();
        let curves = CurveSet::from_flat(basis.grid().clone(), vec![0.5; 120], None).unwrap().0;
        let wrong = ClippedSums::new(ClipNorm::L2, &[1.0], basis.len() + 1, None).unwrap();
        assert!(clipped_sums(&wrong, Some(&basis), &curves, None).is_err());
        let on_grid = ClippedSums::new(ClipNorm::Sup, &[1.0], 40, None).unwrap();
        assert!(clipped_sums(&on_grid, None, &curves, Some(&[0.0; 39])).is_err());
        assert!(clipped_sums(&on_grid, None, &curves, Some(&[0.0; 40])).is_ok());
    }
}
