//! **The fused data pass of the clipped sums** (docs/design-notes/fused.md): one sweep per fixed
//! block of [`BLOCK`] records that projects, centres, measures, takes the log of the norm and
//! accumulates, giving the integer sums of [`ClippedSums`] bit for bit.
//!
//! Per block:
//! 1. **Projection** `Cᵀ = Wᵀ Xᵀ` (J x BLOCK), with `Xᵀ` the block's row-major values read as a
//!    column-major K x BLOCK matrix (no copy) and a short block padded with zero records: each record's
//!    coefficients come out contiguous. Each coefficient is the same dot product over the grid in the
//!    same order as `X W` (faer's kernel, fixed split): the same bits as the row-major product
//!    (tested against it), whatever the block's other records.
//! 2. **Centring** `x = c - offset`, each record's J coefficients in place.
//! 3. **Norms** of eight records side by side: each lane adds its record's `|x_k|` (or `x_k²`) in
//!    order from `-0.0`, the operations of [`ClipNorm::norm`] (same bits, tested).
//! 4. Per record: **finiteness** (`‖x‖` finite, which for the l1, l2 and sup norms holds iff every
//!    entry is: a NaN or infinite entry makes each of them NaN or infinite; another norm checks the
//!    entries), the **log-norm** (clamped, one `ln`), the **bucket** `g₀ = #{g: τ_g < ‖x‖}` (the
//!    bounds are increasing, so this is `partition_point`) and the **accumulation**: `x` into
//!    `inside[g₀]` and `x/‖x‖` into `outside[g₀ - 1]`, once per record (not once per bound; the sums
//!    at each bound are prefix sums over the buckets, [`ClippedSums::means`]).
//!
//! While a block's records are summed, the next block of the task is prefetched (a hint only).
//!
//! **Exact accumulation in floating point.** The state adds `t = trunc(v 2^e)` (an integer,
//! `|t| < 2^63`: `|v| <= τ_max (1 + 2^-51)` inside, `|v| <= 1 + 2^-51` outside, and `τ_max 2^e <= 2^62`)
//! as an i128. Here `t` is computed in f64 (`v · 2^e` is exact, `trunc` is exact) and split as
//! `t = h + l`: h is t rounded to a multiple of `2^32` (adding and subtracting `1.5 · 2^84`, both
//! exact here) and `l = t - h` an integer with `|l| <= 2^31` (exact: the result is representable).
//! The h's and the l's of each bucket and coefficient are summed in f64 lanes, and at most
//! [`FLUSH_EVERY`] = 2^20 records are summed before a flush, so every partial sum of h's is a
//! multiple of `2^32` below `2^84` and every partial sum of l's an integer below `2^51`: all exact. A
//! flush adds `Σh + Σl` (converted exactly) to the i128 total: the same integer as adding each `t`.
//! So the sums do not depend on how the records are grouped, ordered, or split over threads, and
//! equal those of [`ClippedSums`]' per-record formula (tested on adversarial records: non-finite,
//! zero, on the bounds, at the ceiling).
//!
//! The per-record arithmetic is compiled for AVX2 + FMA when the processor has it (pulp's runtime
//! dispatch, as faer's kernels are) and for the baseline otherwise; both perform the same IEEE
//! operations (`×`, `/`, `-`, `trunc`, `ln` from the same library call), so the bits do not depend on
//! the machine's vector width either.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;
use std::sync::{Mutex, PoisonError};

use fdp_core::ClipNorm;
use fdp_core::params::l2_norm_from_squares;
use fdp_core::state::{fixed_scale, to_fixed};

use super::{BLOCK, ClippedSums};

/// `1.5 · 2^84`: for an integer `|t| < 2^63`, `t + C` lies in `[2^84, 2^85)`, where the spacing of
/// the doubles is `2^32`, so `(t + C) - C` is `t` rounded to a multiple of `2^32` (and the
/// subtraction is exact).
const ROUND_HIGH: f64 = 1.5 * 19_342_813_113_834_066_795_298_816.0;

/// `2^32`.
const SPLIT: f64 = 4_294_967_296.0;

/// Records summed in the f64 lanes between two flushes into the i128 total: per record `|h| <= 2^63`
/// (a multiple of `2^32`) and `|l| <= 2^31`, so every partial sum of h's is a multiple of `2^32`
/// below `2^84` and every partial sum of l's is below `2^51`: both exact in f64.
const FLUSH_EVERY: usize = 1 << 20;

/// Records whose norms are added side by side ([`norms`]).
const LANES: usize = 8;

/// Blocks one task sweeps in order (so the next block's values can be fetched while the present
/// one is summed).
const GROUP: usize = 16;

/// The public constants of one pass.
struct Sweep<'a> {
    layout: &'a ClippedSums,
    /// The weighted eigenfunctions (K x J), or `None` to sum the grid values themselves.
    phi: Option<MatRef<'a, f64>>,
    /// Grid points per record.
    k: usize,
    /// `offset` (the reference's coefficients, or its grid values) subtracted from every record.
    offset: &'a [f64],
    /// `2^e` of the values and of the unit vectors.
    value_scale: f64,
    unit_scale: f64,
    arch: Arch,
    /// The sums every share flushes into (integer additions: the order does not matter).
    total: Mutex<Vec<i128>>,
}

/// One thread's share of the pass: the sums not yet flushed into the total — f64 lanes for the
/// clipped sums, integers for the rest — and the block's scratch space (allocated once per share,
/// reused for every block).
struct Partial {
    /// The sums after the clipped ones: the log-norm sum and the pointwise bins.
    tail: Vec<i128>,
    /// `h` and `l` of the `2 G` buckets (inside, then outside), `width` lanes each: the layout of the
    /// state's first `2 G width` sums.
    high: Vec<f64>,
    low: Vec<f64>,
    touched: Vec<bool>,
    pending: usize,
    /// The block's centred coefficients, record after record (BLOCK x width).
    coef: Vec<f64>,
    /// A short block's values padded with zero records to BLOCK.
    padded: Vec<f64>,
    sizes: Vec<f64>,
    bins: Vec<f64>,
}

/// The integer sums of [`ClippedSums`] over the row-major records `values` (`k` grid values each),
/// projected by `phi` (K x width) or taken on the grid (`phi = None`, width = k), minus `offset`
/// (length width): parallel over fixed blocks of [`BLOCK`] records.
pub(super) fn clipped_sums(
    layout: &ClippedSums,
    phi: Option<MatRef<'_, f64>>,
    values: &[f64],
    k: usize,
    offset: &[f64],
) -> Vec<i128> {
    let sweep = Sweep {
        layout,
        phi,
        k: k.max(1),
        offset,
        value_scale: fixed_scale(layout.e_value),
        unit_scale: fixed_scale(layout.e_unit),
        arch: Arch::new(),
        total: Mutex::new(vec![0i128; layout.len()]),
    };
    let block_len = BLOCK * sweep.k;
    // Tasks of up to GROUP blocks, two per thread when there are fewer (each task that rayon runs
    // apart costs a share: its scratch and a flush).
    let group = values.len().div_ceil(block_len).div_ceil(2 * rayon::current_num_threads()).clamp(1, GROUP);
    values
        .par_chunks(group * block_len)
        .fold(
            || sweep.partial(),
            |mut part, group| {
                let mut blocks = group.chunks(block_len).peekable();
                while let Some(block) = blocks.next() {
                    sweep.block(&mut part, block, blocks.peek().copied());
                }
                part
            },
        )
        .for_each(|mut part| sweep.flush(&mut part));
    sweep.total.into_inner().unwrap_or_else(PoisonError::into_inner)
}

impl Sweep<'_> {
    fn width(&self) -> usize {
        self.layout.width
    }

    fn partial(&self) -> Partial {
        let lanes = 2 * self.layout.taus.len() * self.width();
        Partial {
            tail: vec![0; self.layout.len() - lanes],
            high: vec![0.0; lanes],
            low: vec![0.0; lanes],
            touched: vec![false; 2 * self.layout.taus.len()],
            pending: 0,
            coef: vec![0.0; BLOCK * self.width()],
            padded: Vec::new(),
            sizes: vec![0.0; BLOCK],
            bins: vec![0.0; self.layout.pointwise.as_ref().map_or(0, |p| p.bins)],
        }
    }

    /// Adds a share's sums to the total — the f64 lanes of every touched bucket exactly (integers,
    /// [`integer`]) and the tail — and clears them.
    fn flush(&self, part: &mut Partial) {
        let w = self.width();
        // A panic elsewhere cannot leave a half-added share: additions only, and the pass fails.
        let mut total = self.total.lock().unwrap_or_else(PoisonError::into_inner);
        let (clipped, tail) = total.split_at_mut(part.high.len());
        for (bucket, touched) in part.touched.iter_mut().enumerate().filter(|(_, t)| **t) {
            let lanes = bucket * w..(bucket + 1) * w;
            for ((sum, h), l) in
                clipped[lanes.clone()].iter_mut().zip(&mut part.high[lanes.clone()]).zip(&mut part.low[lanes])
            {
                *sum += integer(*h, *l);
                (*h, *l) = (0.0, 0.0);
            }
            *touched = false;
        }
        for (sum, part) in tail.iter_mut().zip(&mut part.tail) {
            *sum += std::mem::take(part);
        }
        part.pending = 0;
    }

    /// One block of at most [`BLOCK`] records (`next`: the block that follows, if any, to prefetch).
    fn block(&self, part: &mut Partial, block: &[f64], next: Option<&[f64]>) {
        let (k, w) = (self.k, self.width());
        let rows = block.len() / k;
        match self.phi {
            Some(phi) => {
                let full = if rows == BLOCK {
                    block
                } else {
                    part.padded.clear();
                    part.padded.extend_from_slice(block);
                    part.padded.resize(BLOCK * k, 0.0);
                    &part.padded
                };
                project_block(phi, full, &mut part.coef);
            }
            None => part.coef[..rows * w].copy_from_slice(block),
        }
        self.arch.dispatch(Records { sweep: self, part: &mut *part, block, rows, next });
        part.pending += rows;
        if part.pending > FLUSH_EVERY - BLOCK {
            self.flush(part);
        }
    }

    /// One record's contributions: `x` its centred coordinates, `raw` its grid values (for the
    /// pointwise bins), `size = ‖x‖`; `tail` the log-norm sum and the pointwise bins.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        tail: &mut [i128],
        high: &mut [f64],
        low: &mut [f64],
        touched: &mut [bool],
        bins: &mut [f64],
        x: &[f64],
        raw: &[f64],
        size: f64,
    ) {
        let layout = self.layout;
        let (g_count, w) = (layout.taus.len(), self.width());
        if let Some(p) = &layout.pointwise {
            let at = layout.pointwise_at() - 2 * g_count * w;
            p.record_into(raw, bins);
            tail[at..at + p.bins].iter_mut().zip(bins.iter()).for_each(|(a, v)| *a += to_fixed(*v, p.e_bin));
        }
        let usable = size.is_finite()
            && (matches!(layout.norm, ClipNorm::CoefficientL1 | ClipNorm::L2 | ClipNorm::Sup)
                || x.iter().all(|v| v.is_finite()));
        if let Some((lo, hi)) = layout.log_range {
            let log = if usable { size.ln().clamp(lo, hi) } else { lo };
            tail[0] += to_fixed(log, layout.e_log);
        }
        if !usable {
            return;
        }
        let g0 = layout.taus.iter().filter(|t| **t < size).count();
        let outside = (g_count + g0).wrapping_sub(1);
        match (g0 < g_count, g0 > 0) {
            (true, true) => {
                // Inside g0 and outside g0 - 1, G + g0 - 1 > g0: disjoint lanes.
                let (high_in, high_out) = high.split_at_mut(outside * w);
                let (low_in, low_out) = low.split_at_mut(outside * w);
                add_both(
                    (&mut high_in[g0 * w..(g0 + 1) * w], &mut low_in[g0 * w..(g0 + 1) * w]),
                    (&mut high_out[..w], &mut low_out[..w]),
                    x,
                    (self.value_scale, self.unit_scale, size),
                );
                touched[g0] = true;
                touched[outside] = true;
            }
            (true, false) => {
                let lanes = g0 * w..(g0 + 1) * w;
                add_fixed(&mut high[lanes.clone()], &mut low[lanes], x, self.value_scale);
                touched[g0] = true;
            }
            (false, _) => {
                let lanes = outside * w..(outside + 1) * w;
                add_unit(&mut high[lanes.clone()], &mut low[lanes], x, self.unit_scale, size);
                touched[outside] = true;
            }
        }
    }
}

/// `coef[i·J + j] = Σ_t x_{i,t} φ[t, j]` for the [`BLOCK`] records `x_i` of `full` (row-major, K
/// values each): `Cᵀ = φᵀ Xᵀ` with `Xᵀ` the records read as a column-major K x BLOCK matrix (no copy)
/// and `Cᵀ` written column-major, so each record's J coefficients come out contiguous. Each
/// coefficient is the same dot product, in the same order, as the row-major `X φ` of
/// [`project_rows`](super::project_rows) (tested): the same bits, whatever the other records.
fn project_block(phi: MatRef<'_, f64>, full: &[f64], coef: &mut [f64]) {
    let records = MatRef::from_column_major_slice(full, phi.nrows(), BLOCK);
    let out = MatMut::from_column_major_slice_mut(coef, phi.ncols(), BLOCK);
    matmul(out, Accum::Replace, phi.transpose(), records, 1.0, Par::Seq);
}

/// The per-record part of a block ([`Sweep::block`]), compiled for the processor's vector
/// instructions by [`Arch::dispatch`] (every function it calls is inlined into it).
struct Records<'s, 'p> {
    sweep: &'s Sweep<'s>,
    part: &'p mut Partial,
    block: &'p [f64],
    rows: usize,
    next: Option<&'p [f64]>,
}

impl WithSimd for Records<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let Self { sweep, part, block, rows, next } = self;
        let (k, w) = (sweep.k, sweep.width());
        let Partial { tail, high, low, touched, coef, sizes, bins, .. } = part;
        for x in coef[..rows * w].chunks_exact_mut(w) {
            centre(x, sweep.offset);
        }
        norms(sweep.layout.norm, &coef[..rows * w], w, &mut sizes[..rows]);
        for (i, (x, size)) in coef[..rows * w].chunks_exact(w).zip(sizes.iter()).enumerate() {
            if let Some(next) = next.and_then(|n| n.get(i * k..(i + 1) * k)) {
                prefetch(next);
            }
            sweep.record(tail, high, low, touched, bins, x, &block[i * k..(i + 1) * k], *size);
        }
    }
}

/// Asks the processor to bring `values` into its caches (a hint: no effect on any result).
#[inline(always)]
fn prefetch(values: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        let line = 64 / std::mem::size_of::<f64>();
        for v in values.iter().step_by(line).chain(values.last()) {
            simd.sse._mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T1 }>(std::ptr::from_ref(v).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

/// `h + l` as an integer, for lanes summed within [`FLUSH_EVERY`] records: `h / 2^32` and `l` are
/// integers below `2^52`, exact as i64 (hardware conversions; f64 to i128 is a library call).
#[inline(always)]
fn integer(h: f64, l: f64) -> i128 {
    ((h * (1.0 / SPLIT)) as i64 as i128) * (1i128 << 32) + l as i64 as i128
}

/// `x -= offset`.
#[inline(always)]
fn centre(x: &mut [f64], offset: &[f64]) {
    x.iter_mut().zip(offset).for_each(|(v, o)| *v -= o);
}

/// `(h, l)` with `h + l = trunc(y)`, h a multiple of `2^32` and `|l| <= 2^31` (see the module's
/// docs; `|y| < 2^63`).
#[inline(always)]
fn split(y: f64) -> (f64, f64) {
    let t = y.trunc();
    let h = (t + ROUND_HIGH) - ROUND_HIGH;
    (h, t - h)
}

/// The lanes of `trunc(x_k 2^e)`.
#[inline(always)]
fn add_fixed(high: &mut [f64], low: &mut [f64], x: &[f64], scale: f64) {
    for ((h, l), v) in high.iter_mut().zip(low.iter_mut()).zip(x) {
        let (a, b) = split(v * scale);
        *h += a;
        *l += b;
    }
}

/// The lanes of `trunc((x_k / size) 2^e)`.
#[inline(always)]
fn add_unit(high: &mut [f64], low: &mut [f64], x: &[f64], scale: f64, size: f64) {
    for ((h, l), v) in high.iter_mut().zip(low.iter_mut()).zip(x) {
        let (a, b) = split(v / size * scale);
        *h += a;
        *l += b;
    }
}

/// [`add_fixed`] into `inside` and [`add_unit`] into `outside` in one pass over `x`.
#[inline(always)]
fn add_both(
    inside: (&mut [f64], &mut [f64]),
    outside: (&mut [f64], &mut [f64]),
    x: &[f64],
    (value_scale, unit_scale, size): (f64, f64, f64),
) {
    let lanes = inside.0.iter_mut().zip(inside.1.iter_mut()).zip(outside.0.iter_mut().zip(outside.1.iter_mut()));
    for (((hi, li), (ho, lo)), v) in lanes.zip(x) {
        let (a, b) = split(v * value_scale);
        *hi += a;
        *li += b;
        let (a, b) = split(v / size * unit_scale);
        *ho += a;
        *lo += b;
    }
}

/// `out[i] = norm(record i)` for the records of `coef` (`w` values each), the bits of
/// [`ClipNorm::norm`]: for the l1 and l2 norms [`LANES`] records side by side, each lane adding its
/// record's terms in order from `-0.0` as `Iterator::sum` does.
#[inline(always)]
fn norms(norm: ClipNorm, coef: &[f64], w: usize, out: &mut [f64]) {
    let squares = match norm {
        ClipNorm::CoefficientL1 => false,
        ClipNorm::L2 => true,
        _ => {
            out.iter_mut().zip(coef.chunks_exact(w)).for_each(|(o, x)| *o = norm.norm(x));
            return;
        }
    };
    let mut groups = coef.chunks_exact(LANES * w);
    let mut outs = out.chunks_exact_mut(LANES);
    for (group, o) in (&mut groups).zip(&mut outs) {
        let mut sums = [-0.0f64; LANES];
        for c in 0..w {
            for (lane, s) in sums.iter_mut().enumerate() {
                let v = group[lane * w + c];
                *s += if squares { v * v } else { v.abs() };
            }
        }
        o.copy_from_slice(&sums);
    }
    for (o, x) in outs.into_remainder().iter_mut().zip(groups.remainder().chunks_exact(w)) {
        *o = if squares { x.iter().map(|v| v * v).sum::<f64>() } else { norm.norm(x) };
    }
    if squares {
        out.iter_mut().zip(coef.chunks_exact(w)).for_each(|(o, x)| *o = l2_norm_from_squares(x, *o));
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use faer::Mat;

    /// A xorshift stream of uniforms on [-1/2, 1/2) (the tests' data).
    pub(in crate::sums) fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        }
    }

    #[test]
    fn the_transposed_projection_has_the_bits_of_the_row_major_one() {
        let mut u = uniform(7);
        for (k, j) in [(100, 100), (100, 7), (37, 11), (300, 64), (1000, 40), (1000, 1000)] {
            let full: Vec<f64> = (0..BLOCK * k).map(|_| 10.0 * u()).collect();
            let phi = Mat::<f64>::from_fn(k, j, |_, _| u());
            let mut row_major = Mat::<f64>::zeros(BLOCK, j);
            super::super::project_rows(&full, k, phi.as_ref(), &mut row_major);
            let mut coef = vec![0.0; BLOCK * j];
            project_block(phi.as_ref(), &full, &mut coef);
            for i in 0..BLOCK {
                for c in 0..j {
                    assert_eq!(coef[i * j + c].to_bits(), row_major[(i, c)].to_bits(), "K = {k}, J = {j}, ({i}, {c})");
                }
            }
        }
    }

    #[test]
    fn norms_side_by_side_have_the_bits_of_clip_norm() {
        let mut u = uniform(11);
        let w = 13;
        let special = [0.0, -0.0, 1e-163, -3e-170, 1e300, -1e308, f64::MAX, f64::NAN, f64::INFINITY, 5e-324];
        // 8 x 3 + 5 records (a remainder), each a mixture of ordinary and special entries.
        let rows = 3 * LANES + 5;
        let coef: Vec<f64> = (0..rows * w)
            .map(|i| match (i / w) % 6 {
                0 => u(),
                1 => u() * 1e-160,
                2 => special[i % special.len()],
                3 => u() * 1e155,
                4 => -0.0,
                _ => u() * 1e3,
            })
            .collect();
        for norm in [ClipNorm::CoefficientL1, ClipNorm::L2, ClipNorm::Sup] {
            let mut out = vec![0.0; rows];
            norms(norm, &coef, w, &mut out);
            for (r, o) in out.iter().enumerate() {
                let expected = norm.norm(&coef[r * w..(r + 1) * w]);
                assert_eq!(o.to_bits(), expected.to_bits(), "{norm:?} record {r}: {o} vs {expected}");
            }
        }
    }

    #[test]
    fn the_split_is_exact_up_to_the_flush() {
        // The largest contributions a record can make (just under 2^63), halves, ties and signs.
        let big = 2f64.powi(62) * (1.0 + 2f64.powi(-51));
        let values = [
            big,
            -big,
            2f64.powi(63) - 1024.0,
            -(2f64.powi(63) - 1024.0),
            4_294_967_295.5,
            -4_294_967_296.5,
            2_147_483_648.0,
            6_442_450_944.0,
            -2_147_483_648.75,
            0.9999,
            -0.0,
            3.0e18 + 0.5,
        ];
        for v in values {
            let (h, l) = split(v);
            assert_eq!(integer(h, l), v as i64 as i128, "{v}");
            assert!(h % SPLIT == 0.0 && l.abs() <= 2f64.powi(31), "{v}: {h} {l}");
        }
        // FLUSH_EVERY worst-case records summed in the lanes are still the exact integer sum.
        for v in [big, -big, 2f64.powi(63) - 1024.0 + 0.0] {
            let (h, l) = split(v);
            let (mut sh, mut sl) = (0.0f64, 0.0f64);
            for _ in 0..FLUSH_EVERY {
                sh += h;
                sl += l;
            }
            assert_eq!(integer(sh, sl), (v as i64 as i128) * FLUSH_EVERY as i128, "{v}");
        }
    }
}
