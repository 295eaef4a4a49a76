//! Bernoulli(exp(−γ)) for rational `γ = num/den ≥ 0`, exactly, with a one-word fast path.
//!
//! **The decision.** Let `U∞ = Σ_{i≥1} w_i 2^{-64 i}` be a uniform on `[0, 1)` whose 64-bit words
//! `w_1, w_2, …` are drawn from the caller's stream only as far as needed. The result is
//! `[U∞ < e^{-γ}]`, which is true with probability exactly `e^{-γ}`. After `k` words the prefix
//! `P = w_1 … w_k` (an integer below `2^p`, `p = 64k`) places `U∞` in `[P, P + 1) / 2^p` (almost
//! surely: the event that every later bit is 1 has probability 0). Given integers
//! `L ≤ e^{-γ} 2^p ≤ H`:
//! - `P < L`: then `U∞ < (P + 1)/2^p ≤ L/2^p ≤ e^{-γ}`, the result is true;
//! - `P ≥ H`: then `U∞ ≥ P/2^p ≥ H/2^p ≥ e^{-γ}`, the result is false;
//! - otherwise one more word is drawn and the bounds are recomputed at the next precision.
//!
//! So whatever bounds are used, a decision is exactly `[U∞ < e^{-γ}]`: **the bounds only decide how
//! many words are read, never the result.** The loop ends almost surely because the bounds of
//! [`exp_neg_bounds`] are within a few units of `e^{-γ} 2^p` at every `p` with `⌊γ⌋ < 0.7 p`, so
//! step `k` is undecided with probability `O(2^{-64k})`.
//!
//! **The fast path** (`k = 1`) takes `L, H` from one f64 `exp` ([`Threshold::of`]), widened by a
//! relative window of [`WINDOW`] = 2^-36 that covers every rounding error of the f64 computation
//! with a wide safety factor (the argument is on [`Threshold::of`]). A call therefore reads one word,
//! computes one `exp` and makes two comparisons, and takes the exact **fallback** ([`refine`]:
//! further words against big-integer bounds at 128, 192, … bits) with probability at most
//! `2 · 2^-36 · e^{-γ} + 3 · 2^-64`.
//!
//! **The geometric** `v` of the discrete Laplace (`P(v ≥ k) = e^{-k}`, the number of successes of
//! Bernoulli(exp(−1)) before the first failure in CKS) is `#{k ≥ 1 : U∞ < e^{-k}}` for one such
//! uniform ([`geometric`]): the word's leading zeros give all but one of the comparisons with the
//! constants `⌊e^{-k} 2^64⌋`, one table entry gives the last, without a loop on the value; the same
//! exact fallback runs when the word equals that entry or is 0.
//!
//! **The big-integer bounds** ([`exp_neg_bounds`]) are the Taylor series of `e^{-γ}` in fixed point
//! with every term rounded down and up separately and the series' tail bounded by its next term,
//! so that `L ≤ e^{-γ} 2^p ≤ H` holds by construction (no floating point), and `H − L` is a few
//! units. The arithmetic is a small natural-number type ([`Nat`]): addition, subtraction,
//! multiplication by a u128 and division by a u128, nothing else.

use std::hint::black_box;

use rand::Rng;

/// The fast path's relative window: `L` and `H` are `e^{-γ} 2^64 (1 ∓ WINDOW)`, rounded outwards.
/// The f64 computation is within `2^-44.8 + E` of `e^{-γ}` (relative; `E` is libm `exp`'s error,
/// below one ulp, `2^-52`, in glibc, musl and the other C libraries Rust links): the window holds
/// for any `E < 2^-37`, some 30 000 ulps.
pub(crate) const WINDOW: f64 = 1.0 / (1u64 << 36) as f64;

/// `2^64` as an f64 (exact).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
/// The f64 `γ` is clamped to `[GAMMA_MIN, GAMMA_MAX]` before the `exp`, so that libm always runs
/// its main path (glibc's `exp` returns early below `2^-54` and takes a slower special case above
/// `512`): the fast path's work does not depend on `γ`. Clamping up to `2^-50` moves `e^{-γ}` by
/// less than `2^-50` (relative), inside the window; above `GAMMA_MAX` the bounds are `[0, 2]`,
/// which hold because `e^{-γ} 2^64 < 1` there.
const GAMMA_MIN: f64 = 1.0 / (1u64 << 50) as f64;
const GAMMA_MAX: f64 = 500.0;

/// Integer bounds `lo ≤ e^{-γ} 2^64 ≤ hi` for the first word of `U∞`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Threshold {
    lo: u128,
    hi: u128,
}

impl Threshold {
    /// The bounds for `γ = num/den` from `gamma = Denominator::new(den).gamma(num)`.
    ///
    /// **Margin.** For `γ ≤ 44.4` (beyond it `e^{-γ} 2^64 < 1` and `[0, hi ≥ 2]` are bounds
    /// whatever the f64 result): [`Denominator`] puts `gamma` within `γ (1 ± 6.001 · 2^-53)`, so
    /// `e^{-gamma}` is within a relative `44.4 · 6.001 · 2^-53 < 2^-44.9` of `e^{-γ}`; the clamp at
    /// `GAMMA_MIN` adds `< 2^-50`; libm's `exp` adds `E`; the scaling by `2^64` is exact (the result
    /// is a normal number) and each product by `1 ∓ WINDOW` rounds by `≤ 2^-53`. In all,
    /// `x = e^{-gamma} 2^64` is within a relative `2^-44.8 + E` of `e^{-γ} 2^64`, and `x (1 ∓ WINDOW)`
    /// truncated, less 1 / plus 2, bracket it while `E < 2^-37`. (`x (1 - WINDOW) < e^{-γ} 2^64 ≤
    /// 2^64` fits a u64; `x (1 + WINDOW)` may reach `2^64` for `γ < 2^-36`, where the conversion
    /// saturates at `2^64 − 1` and `hi = 2^64 + 1` is still above `e^{-γ} 2^64`.) Both sides are
    /// checked against the exact bounds in the tests.
    #[inline(always)]
    pub(crate) fn of(gamma: f64) -> Self {
        let x = (-gamma.clamp(GAMMA_MIN, GAMMA_MAX)).exp() * TWO_POW_64;
        let window = window();
        let lo = u128::from((x * (1.0 - window)) as u64).saturating_sub(1);
        let hi = u128::from((x * (1.0 + window)) as u64) + 2;
        Self { lo, hi }
    }
}

/// A denominator `den ≥ 1` as the f64 `1/den`, so that `γ = num/den` costs a product, not a
/// division, when `den` is fixed for many draws (the Laplace's `t`, the Gaussian's `2σ²t²`).
/// [`Self::gamma`] is within a relative `6.001 · 2^-53` of `num/den`: each u128 is converted within
/// `2 · 2^-53` ([`to_f64`]), the reciprocal and the product round once each. Every caller computes
/// `γ` this way, so the same `(num, den)` always gives the same f64 and the same fast-path bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Denominator(f64);

impl Denominator {
    #[inline(always)]
    pub(crate) fn new(den: u128) -> Self {
        Self(1.0 / to_f64(den))
    }

    /// `num / den` in f64.
    #[inline(always)]
    pub(crate) fn gamma(self, num: u128) -> f64 {
        to_f64(num) * self.0
    }
}

/// A u128 in f64 within a relative `2 · 2^-53`, without a branch on the value (the compiler's u128
/// conversion has one): its two 64-bit halves, each rounded to nearest, summed with one more
/// rounding (the parts are nonnegative, so the errors add up to at most `2^-53` of the sum each).
#[inline(always)]
fn to_f64(v: u128) -> f64 {
    ((v >> 64) as u64 as f64) * TWO_POW_64 + (v as u64 as f64)
}

/// The fast path's window ([`WINDOW`]; tests may widen it on their thread to run the fallback often).
#[inline(always)]
fn window() -> f64 {
    #[cfg(test)]
    {
        tests::WINDOW_OVERRIDE.with(std::cell::Cell::get).unwrap_or(WINDOW)
    }
    #[cfg(not(test))]
    {
        WINDOW
    }
}

/// Bernoulli(exp(−num/den)), exactly, for `den ≥ 1`, given the fast path's bounds `threshold` for
/// this `γ` (module docs). One word from `rng`, two comparisons without a branch on their result,
/// and with probability `≤ 2 · WINDOW · e^{-γ} + 3 · 2^-64` the exact fallback.
#[inline(always)]
pub(crate) fn bernoulli<R: Rng + ?Sized>(rng: &mut R, threshold: Threshold, num: u128, den: u128) -> bool {
    #[cfg(test)]
    tests::DECISIONS.with(|c| c.set(c.get() + 1));
    let w = rng.next_u64();
    let word = u128::from(w);
    let (below, open) = (word < threshold.lo, (word >= threshold.lo) & (word < threshold.hi));
    // `black_box` keeps the result a computed flag rather than two branches on the word (which
    // the compiler may otherwise emit, making the time depend on the result).
    if black_box(open) {
        return refine(rng, w, num, den);
    }
    black_box(below)
}

/// The exact fallback: more words of `U∞` against [`exp_neg_bounds`] at 64 bits a word, until the
/// prefix decides (module docs). `first` is the word the fast path read.
#[cold]
#[inline(never)]
fn refine<R: Rng + ?Sized>(rng: &mut R, first: u64, num: u128, den: u128) -> bool {
    #[cfg(test)]
    tests::FALLBACKS.with(|c| c.set(c.get() + 1));
    #[cfg(test)]
    let (num, den) = tests::biased(num, den);
    let mut prefix = Prefix(vec![first]);
    prefix.extend(rng);
    prefix.below_exp_neg(rng, num, den)
}

/// `⌊e^{-k} 2^64⌋` for `k = 1..=44` (`e^{-k} 2^64 < 1` from `k = 45`), from Python's `Decimal` at
/// 120 digits and checked against [`exp_neg_bounds`] in the tests. `e^{-k} 2^64` is irrational, so
/// it lies strictly between each entry and the next integer.
const EXP_NEG_K: [u64; 44] = [
    0x5E2D58D8B3BCDF1A,
    0x22A555477F03973F,
    0xCBED86667585764,
    0x4B0556E084F3D1D,
    0x1B993FE00D53761,
    0xA2728F889EA6AE,
    0x3BC2D73849531D,
    0x15FC21041027AC,
    0x8167912932A2C,
    0x2F9AF36AC8F93,
    0x118354238F676,
    0x671530ED0EF2,
    0x25EC0A77303B,
    0xDF3637ED80B,
    0x521D72889FB,
    0x1E355BBAEE8,
    0xB1CF18BAD3,
    0x41698A31A6,
    0x181056FF2C,
    0x8DA432AF9,
    0x341B61A1B,
    0x132B48BF1,
    0x70D49F90,
    0x29820F1F,
    0xF451BD2,
    0x59E14A9,
    0x2110A53,
    0xC29F80,
    0x47990A,
    0x1A56E0,
    0x9B090,
    0x3908C,
    0x14FB5,
    0x7B80,
    0x2D6E,
    0x10B6,
    0x626,
    0x243,
    0xD5,
    0x4E,
    0x1C,
    0xA,
    0x3,
    0x1,
];

/// The discrete Laplace's geometric `v`, `P(v ≥ k) = e^{-k}` (what CKS draws as the successes of
/// Bernoulli(exp(−1)) before the first failure), as `v = #{k ≥ 1 : U∞ < e^{-k}}` (`U∞ < e^{-k}` has
/// probability `e^{-k}`, and the events are nested), from one word `w` of `U∞`.
///
/// Let `w ≥ 1`, `ℓ` its leading zeros (`2^{63-ℓ} ≤ w < 2^{64-ℓ}`) and `a = ⌊ℓ ln 2⌋`. For
/// `k ≤ a`, `e^{-k} 2^64 ≥ 2^{64-ℓ} > w`, so `⌊e^{-k} 2^64⌋ > w` and `U∞ < (w + 1)/2^64 ≤ e^{-k}`.
/// For `k ≥ a + 2 > ℓ ln 2 + 1`, `e^{-k} 2^64 < 2^{64-ℓ}/e < 2^{63-ℓ} ≤ w`, so
/// `U∞ ≥ w/2^64 > e^{-k}` (this covers every `k ≥ 45`, where `e^{-k} 2^64 < 1`). Only
/// `k = a + 1 ≤ 44` is left: `w < ⌊e^{-(a+1)} 2^64⌋` decides it true, `w >` it false. So
/// `v = a + [w < EXP_NEG_K[a]]`: a leading-zero count, a product, one table entry and one comparison,
/// whatever `v`. When `w` equals that entry or is 0 (probability `≤ 2^-63`) the exact fallback
/// decides `U∞ < e^{-k}` for `k = 1, 2, …` on further words until the first false.
#[inline(always)]
pub(crate) fn geometric<R: Rng + ?Sized>(rng: &mut R) -> u64 {
    #[cfg(test)]
    tests::DECISIONS.with(|c| c.set(c.get() + 1));
    let w = rng.next_u64();
    let zeros = u64::from(w.leading_zeros()).min(63);
    // ⌊ℓ ln 2⌋ for ℓ ≤ 64 (45426 / 2^16 = 0.693146…, checked against ln 2 for every ℓ in the tests).
    let a = (zeros * 45_426) >> 16;
    let entry = EXP_NEG_K[a as usize];
    if undecided(w, entry) | (w == 0) {
        return geometric_refine(rng, w);
    }
    a + u64::from(w < entry)
}

/// Whether the word `w` leaves `U∞ < e^{-k}` open against the entry `⌊e^{-k} 2^64⌋` (in the tests,
/// with a widened window, any `w` within that relative distance of the entry).
#[inline(always)]
fn undecided(w: u64, entry: u64) -> bool {
    #[cfg(test)]
    if let Some(window) = tests::WINDOW_OVERRIDE.with(std::cell::Cell::get) {
        return w.abs_diff(entry) as f64 <= window * entry as f64;
    }
    w == entry
}

/// [`geometric`]'s exact fallback: `v` = the first `k` with `U∞ ≥ e^{-(k+1)}`, each comparison on
/// the prefix of `U∞` extended as needed.
#[cold]
#[inline(never)]
fn geometric_refine<R: Rng + ?Sized>(rng: &mut R, first: u64) -> u64 {
    #[cfg(test)]
    tests::FALLBACKS.with(|c| c.set(c.get() + 1));
    let mut prefix = Prefix(vec![first]);
    let mut v = 0u64;
    #[cfg(test)]
    let step = |k: u64| tests::biased(u128::from(k), 1);
    #[cfg(not(test))]
    let step = |k: u64| (u128::from(k), 1);
    loop {
        let (num, den) = step(v + 1);
        if !prefix.below_exp_neg(rng, num, den) {
            return v;
        }
        v += 1;
    }
}

/// The words of `U∞` read so far, most significant first.
struct Prefix(Vec<u64>);

impl Prefix {
    fn extend<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.0.push(rng.next_u64());
    }

    /// `[U∞ < e^{-num/den}]`, reading further words until the prefix decides (module docs).
    fn below_exp_neg<R: Rng + ?Sized>(&mut self, rng: &mut R, num: u128, den: u128) -> bool {
        loop {
            let (lo, hi) = exp_neg_bounds(num, den, 64 * self.0.len() as u64);
            let p = Nat::from_limbs(self.0.iter().rev().copied().collect());
            if p < lo {
                return true;
            }
            if p >= hi {
                return false;
            }
            self.extend(rng);
        }
    }
}

/// A natural number: little-endian 64-bit limbs, no leading zero limbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Nat(Vec<u64>);

impl Nat {
    fn from_limbs(mut limbs: Vec<u64>) -> Self {
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        Self(limbs)
    }

    pub(crate) fn from_u128(v: u128) -> Self {
        Self::from_limbs(vec![v as u64, (v >> 64) as u64])
    }

    /// `2^bits`.
    fn pow2(bits: u64) -> Self {
        let mut limbs = vec![0; (bits / 64) as usize + 1];
        limbs[(bits / 64) as usize] = 1 << (bits % 64);
        Self(limbs)
    }

    fn add(&self, other: &Self) -> Self {
        let (long, short) = if self.0.len() >= other.0.len() { (self, other) } else { (other, self) };
        let mut out = Vec::with_capacity(long.0.len() + 1);
        let mut carry = 0u128;
        for (i, &a) in long.0.iter().enumerate() {
            let sum = u128::from(a) + u128::from(short.0.get(i).copied().unwrap_or(0)) + carry;
            out.push(sum as u64);
            carry = sum >> 64;
        }
        out.push(carry as u64);
        Self::from_limbs(out)
    }

    /// `self − other`, or 0 if `other > self`.
    fn saturating_sub(&self, other: &Self) -> Self {
        if other >= self {
            return Self(Vec::new());
        }
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = false;
        for (i, &a) in self.0.iter().enumerate() {
            let (d, b1) = a.overflowing_sub(other.0.get(i).copied().unwrap_or(0));
            let (d, b2) = d.overflowing_sub(u64::from(borrow));
            out.push(d);
            borrow = b1 | b2;
        }
        Self::from_limbs(out)
    }

    fn mul_u128(&self, m: u128) -> Self {
        let factors = [m as u64, (m >> 64) as u64];
        let mut out = vec![0u64; self.0.len() + 2];
        for (j, &f) in factors.iter().enumerate() {
            let mut carry = 0u128;
            for (i, &a) in self.0.iter().enumerate() {
                let cur = u128::from(a) * u128::from(f) + u128::from(out[i + j]) + carry;
                out[i + j] = cur as u64;
                carry = cur >> 64;
            }
            out[self.0.len() + j] = carry as u64;
        }
        Self::from_limbs(out)
    }

    /// `⌊self / d⌋` (`up = false`) or `⌈self / d⌉` (`up = true`), `d ≥ 1`.
    fn div_u128(&self, d: u128, up: bool) -> Self {
        let (mut q, exact) = match u64::try_from(d) {
            Ok(d) => {
                // Limb by limb: the remainder is below d < 2^64, so (rem, limb) fits in u128.
                let mut q = vec![0u64; self.0.len()];
                let mut rem = 0u64;
                for i in (0..self.0.len()).rev() {
                    let cur = (u128::from(rem) << 64) | u128::from(self.0[i]);
                    q[i] = (cur / u128::from(d)) as u64;
                    rem = (cur % u128::from(d)) as u64;
                }
                (Self::from_limbs(q), rem == 0)
            }
            Err(_) => {
                // Bit by bit (restoring division); the remainder is below d < 2^128 and the carry
                // holds the bit shifted out of it.
                let mut q = vec![0u64; self.0.len()];
                let mut rem = 0u128;
                for bit in (0..64 * self.0.len()).rev() {
                    let carry = rem >> 127;
                    rem = (rem << 1) | u128::from((self.0[bit / 64] >> (bit % 64)) & 1);
                    if carry == 1 || rem >= d {
                        rem = rem.wrapping_sub(d);
                        q[bit / 64] |= 1 << (bit % 64);
                    }
                }
                (Self::from_limbs(q), rem == 0)
            }
        };
        if up && !exact {
            q = q.add(&Self::from_u128(1));
        }
        q
    }

    /// `⌊self / 2^bits⌋` or `⌈self / 2^bits⌉`.
    fn shr(&self, bits: u64, up: bool) -> Self {
        let (limbs, rest) = ((bits / 64) as usize, bits % 64);
        let mut exact = self.0.iter().take(limbs).all(|&l| l == 0);
        let mut out: Vec<u64> = self.0.iter().skip(limbs).copied().collect();
        if rest > 0 {
            exact &= out.first().is_none_or(|&l| l & ((1 << rest) - 1) == 0);
            for i in 0..out.len() {
                let high = out.get(i + 1).map_or(0, |&h| h << (64 - rest));
                out[i] = (out[i] >> rest) | high;
            }
        }
        let q = Self::from_limbs(out);
        if up && !exact { q.add(&Self::from_u128(1)) } else { q }
    }
}

impl PartialOrd for Nat {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Nat {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

/// Integer bounds `L ≤ e^{-num/den} 2^p ≤ H` (`den ≥ 1`), with `H − L` a few units whenever
/// `⌊γ⌋ < 0.7 p` (else `L = 0, H = 1`: then `e^{-γ} ≤ e^{-0.7 p} < 2^-p`).
///
/// `(⌊a² / den⌋, a² mod den)` for `den ≥ 1`, the quotient saturated at `u64::MAX`: the discrete
/// Gaussian's acceptance exponent `a²/den` split into a whole part and a fraction when `a²` leaves
/// u128 (see `discrete::Gaussian::draw`). Exact (big-integer arithmetic); the saturation only
/// matters for exponents above `2^64`, whose `e^{-q}` the one-word geometric cannot reach anyway.
pub(crate) fn square_div_rem(a: u128, den: u128) -> (u64, u128) {
    let square = Nat::from_u128(a).mul_u128(a);
    let quotient = square.div_u128(den, false);
    let rest = square.saturating_sub(&quotient.mul_u128(den));
    let low = |n: &Nat, i: usize| n.0.get(i).copied().unwrap_or(0);
    let q = if quotient.0.len() > 1 { u64::MAX } else { low(&quotient, 0) };
    (q, u128::from(low(&rest, 0)) | (u128::from(low(&rest, 1)) << 64))
}

/// The Taylor series `e^{-γ} = Σ_j (−1)^j a_j`, `a_j = γ^j / j!`, in fixed point at
/// `q = p + g` bits: each term is computed rounded down (`ℓ_j`) and up (`h_j`) from the previous
/// one, `ℓ_j = ⌊⌊ℓ_{j−1} num / den⌋ / j⌋ = ⌊ℓ_{j−1} γ / j⌋` (and `⌈·⌉` alike), so
/// `ℓ_j ≤ a_j 2^q ≤ h_j`. The sum stops at the first `J > ⌊γ⌋` with `h_J ≤ 1`: from `J` on the terms
/// do not increase (`a_{j+1}/a_j = γ/(j+1) ≤ 1`), so the alternating tail is at most `a_{J+1} ≤ a_J
/// ≤ h_J 2^-q`. Hence `L_q = Σ_even ℓ_j − Σ_odd h_j − h_J ≤ e^{-γ} 2^q ≤ Σ_even h_j − Σ_odd ℓ_j +
/// h_J = H_q` exactly, and `L = ⌊L_q / 2^g⌋`, `H = ⌈H_q / 2^g⌉`. The guard bits
/// `g = 64 + 2⌊γ⌋ + 2` absorb the cancellation (the largest term is `< e^γ ≤ 2^{1.45 (⌊γ⌋ + 1)}`)
/// and the `O(J²)` units of rounding, so that `H − L` is a few units.
pub(crate) fn exp_neg_bounds(num: u128, den: u128, p: u64) -> (Nat, Nat) {
    let n = num / den;
    if n >= u128::from((7 * p).div_ceil(10)) {
        return (Nat(Vec::new()), Nat::from_u128(1));
    }
    let n = n as u64;
    let guard = 64 + 2 * n + 2;
    let one = Nat::pow2(p + guard);
    let (mut low, mut high) = (one.clone(), one.clone());
    let (mut even_low, mut even_high, mut odd_low, mut odd_high) = (one.clone(), one, Nat(Vec::new()), Nat(Vec::new()));
    let unit = Nat::from_u128(1);
    let mut j = 0u64;
    while j <= n || high > unit {
        j += 1;
        low = low.mul_u128(num).div_u128(den, false).div_u128(u128::from(j), false);
        high = high.mul_u128(num).div_u128(den, true).div_u128(u128::from(j), true);
        if j % 2 == 1 {
            odd_low = odd_low.add(&low);
            odd_high = odd_high.add(&high);
        } else {
            even_low = even_low.add(&low);
            even_high = even_high.add(&high);
        }
    }
    let lower = even_low.saturating_sub(&odd_high.add(&high));
    let upper = even_high.add(&high).saturating_sub(&odd_low);
    (lower.shr(guard, false), upper.shr(guard, true))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::NoiseRng;
    use std::cell::Cell;

    thread_local! {
        /// The fast path's window on this thread, if a test widened it.
        pub(crate) static WINDOW_OVERRIDE: Cell<Option<f64>> = const { Cell::new(None) };
        /// A deliberately wrong fallback for the power checks: it decides against `γ + 1/4`.
        static BIASED: Cell<bool> = const { Cell::new(false) };
        /// Decisions made (one word each, on either stream): the samplers' fixed work.
        pub(crate) static DECISIONS: Cell<u64> = const { Cell::new(0) };
        /// Fallbacks taken.
        pub(crate) static FALLBACKS: Cell<u64> = const { Cell::new(0) };
    }

    pub(super) fn biased(num: u128, den: u128) -> (u128, u128) {
        if BIASED.with(Cell::get) { (4 * num + den, 4 * den) } else { (num, den) }
    }

    /// Runs `f` on this thread with the fast path's window widened to `window` (and a biased
    /// fallback if `biased`), returning `f`'s result and the fallbacks it took.
    pub(crate) fn with_window<T>(window: f64, biased: bool, f: impl FnOnce() -> T) -> (T, u64) {
        WINDOW_OVERRIDE.with(|w| w.set(Some(window)));
        BIASED.with(|b| b.set(biased));
        let before = FALLBACKS.with(Cell::get);
        let out = f();
        let fallbacks = FALLBACKS.with(Cell::get) - before;
        WINDOW_OVERRIDE.with(|w| w.set(None));
        BIASED.with(|b| b.set(false));
        (out, fallbacks)
    }

    /// The decisions (words drawn by the Bernoulli primitive) `f` makes.
    pub(crate) fn decisions_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
        let before = DECISIONS.with(Cell::get);
        let out = f();
        (out, DECISIONS.with(Cell::get) - before)
    }

    /// `e^{-1}` to 128 bits: 0x0.5E2D58D8B3BCDF1ABADEC7829054F90D (the known hexadecimal digits,
    /// also `int(Decimal(-1).exp() * 2**128)` at 200 digits).
    const EXP_MINUS_ONE_128: u128 = 0x5E2D_58D8_B3BC_DF1A_BADE_C782_9054_F90D;

    fn to_u128(n: &Nat) -> u128 {
        assert!(n.0.len() <= 2, "{n:?}");
        n.0.iter().rev().fold(0u128, |acc, &l| (acc << 64) | u128::from(l))
    }

    /// Bounds of `e^{-γ} 2^p` as f64 ratios, for comparison with f64 references.
    fn as_f64(n: &Nat, p: u64) -> f64 {
        n.0.iter().enumerate().map(|(i, &l)| l as f64 * 2f64.powi(64 * i as i32 - p as i32)).sum()
    }

    #[test]
    fn the_bounds_of_exp_minus_one_are_its_digits() {
        let (lo, hi) = exp_neg_bounds(1, 1, 128);
        let (lo, hi) = (to_u128(&lo), to_u128(&hi));
        // e^{-1} 2^128 is in (D, D + 1) for the 128-bit floor D.
        assert!(lo <= EXP_MINUS_ONE_128 && EXP_MINUS_ONE_128 < hi, "{lo:x} {hi:x}");
        assert!(hi - lo <= 3, "{}", hi - lo);
        // The geometric's table: each entry is ⌊e^{-k} 2^64⌋ (the bounds are one unit apart around it).
        for (k, &entry) in EXP_NEG_K.iter().enumerate() {
            let (lo, hi) = exp_neg_bounds(k as u128 + 1, 1, 64);
            assert_eq!((to_u128(&lo), to_u128(&hi)), (u128::from(entry), u128::from(entry) + 1), "k = {}", k + 1);
        }
        assert_eq!(exp_neg_bounds(45, 1, 64).1, Nat::from_u128(1), "e^-45 2^64 < 1");
        // The geometric's ⌊ℓ ln 2⌋ for every leading-zero count ℓ.
        for zeros in 0..=64u64 {
            assert_eq!((zeros * 45_426) >> 16, (zeros as f64 * std::f64::consts::LN_2).floor() as u64, "ℓ = {zeros}");
        }
        // The same number by other routes: 2/2, and 3 · (1/3) through the u128 division.
        assert_eq!(exp_neg_bounds(2, 2, 128), exp_neg_bounds(1, 1, 128));
        let huge_den = (1u128 << 127) + 12345;
        let (lo, hi) = exp_neg_bounds(huge_den, huge_den, 128);
        assert!(to_u128(&lo) <= EXP_MINUS_ONE_128 && EXP_MINUS_ONE_128 < to_u128(&hi));
    }

    /// For every γ the bounds bracket e^{-γ} (against f64 `exp` where it is accurate and against
    /// the bounds at a higher precision everywhere), are within a few units, and decrease with γ.
    #[test]
    fn the_bounds_bracket_exp_minus_gamma_tightly() {
        let cases: [(u128, u128); 12] = [
            (0, 1),
            (1, 3),
            (1, 1),
            (5, 2),
            (40, 1),
            (745, 1),
            (1 << 100, 3),
            (1, 1 << 100),
            (1, u128::MAX),
            ((1 << 127) - 1, (1 << 127) + 1),
            (3 * ((1 << 126) + 7), (1 << 126) + 7),
            (u128::MAX, (1 << 127) - 3),
        ];
        for &(num, den) in &cases {
            let gamma = num as f64 / den as f64;
            for p in [64u64, 128, 192, 320] {
                let (lo, hi) = exp_neg_bounds(num, den, p);
                assert!(lo <= hi, "γ = {num}/{den}, p = {p}");
                let width = hi.saturating_sub(&lo);
                assert!(width <= Nat::from_u128(4), "γ = {num}/{den}, p = {p}: width {width:?}");
                // Consistent with twice the precision: [lo, hi] 2^p ⊇ the finer bounds.
                let (fine_lo, fine_hi) = exp_neg_bounds(num, den, 2 * p);
                assert!(lo <= fine_hi.shr(p, true) && fine_lo.shr(p, false) <= hi, "γ = {num}/{den}, p = {p}");
                if gamma < 700.0 && ((num / den) as f64) < 0.7 * p as f64 {
                    let reference = (-gamma).exp();
                    let tolerance = reference * 1e-14 + 2f64.powi(-(p as i32));
                    assert!(as_f64(&lo, p) <= reference + tolerance, "γ = {num}/{den}, p = {p}");
                    assert!(as_f64(&hi, p) >= reference - tolerance, "γ = {num}/{den}, p = {p}");
                }
            }
        }
        // e^0 = 1 exactly; tiny γ just below it; 745 vanishes at 64 bits (e^{-745} 2^64 < 1).
        assert_eq!(exp_neg_bounds(0, 7, 64), (Nat::pow2(64), Nat::pow2(64)));
        let (lo, hi) = exp_neg_bounds(1, u128::MAX, 128);
        assert!(hi <= Nat::pow2(128) && lo < Nat::pow2(128) && lo.add(&Nat::from_u128(3)) >= Nat::pow2(128));
        assert_eq!(exp_neg_bounds(745, 1, 64), (Nat(Vec::new()), Nat::from_u128(1)));
        // Monotone in γ: e^{-k/8} for k = 0..40 at 128 bits.
        let mut previous = exp_neg_bounds(0, 8, 128);
        for k in 1..40u128 {
            let next = exp_neg_bounds(k, 8, 128);
            assert!(next.1 <= previous.1 && next.0 < previous.0, "k = {k}");
            previous = next;
        }
    }

    /// The f64 fast path's bounds bracket the exact ones (the margin argument of [`Threshold::of`],
    /// checked on this platform's libm) for 2·10^4 random γ over the range where they matter and
    /// the edge cases; and its window is what it says.
    #[test]
    fn the_fast_bounds_contain_the_exact_ones() {
        let mut rng = NoiseRng::seeded(5);
        let mut cases: Vec<(u128, u128)> = vec![(0, 1), (1, 1), (1, u128::MAX), (44, 1), (45, 1), (1 << 100, 3)];
        for _ in 0..20_000 {
            let den = u128::from(rng.next_u64() >> (rng.next_u32() % 63)).max(1);
            let den = if rng.next_u32().is_multiple_of(8) { den << 60 } else { den };
            let gamma = f64::from(rng.next_u32()) / f64::from(u32::MAX) * 46.0;
            cases.push(((gamma * den as f64) as u128, den));
        }
        for (num, den) in cases {
            let fast = Threshold::of(Denominator::new(den).gamma(num));
            let (lo, hi) = exp_neg_bounds(num, den, 64);
            assert!(Nat::from_u128(fast.lo) <= lo && hi <= Nat::from_u128(fast.hi), "γ = {num}/{den}: {fast:?}");
            let x = (-Denominator::new(den).gamma(num)).exp() * TWO_POW_64;
            // 2 WINDOW x, the outward rounding (≤ 4) and the f64 products' rounding (≤ 2 ulp(x)).
            let width = (fast.hi - fast.lo) as f64;
            assert!(width <= 2.0 * WINDOW * x + 4.0 + 4.0 * f64::EPSILON * x, "γ = {num}/{den}: {fast:?} {x}");
        }
    }

    /// With the window widened to 1/4 (so about half the decisions fall back), Bernoulli(exp(−γ))
    /// has mean e^{-γ} at several γ, and the same test rejects a fallback that decides against
    /// γ + 1/4 (power check).
    #[test]
    fn the_fallback_has_the_right_mean_and_a_biased_one_is_caught() {
        let n = 40_000;
        let mean = |num: u128, den: u128, biased: bool, seed: u64| {
            let mut rng = NoiseRng::seeded(seed);
            with_window(0.25, biased, || {
                let threshold = Threshold::of(Denominator::new(den).gamma(num));
                (0..n).filter(|_| bernoulli(&mut rng, threshold, num, den)).count() as f64 / n as f64
            })
        };
        for (seed, (num, den)) in
            [(0u128, 1u128), (1, 3), (1, 1), (5, 2), ((1 << 90) + 3, 1 << 90)].into_iter().enumerate()
        {
            let p = (-(num as f64 / den as f64)).exp();
            let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            let (own, fallbacks) = mean(num, den, false, seed as u64);
            assert!((own - p).abs() < 5.0 * se, "γ = {num}/{den}: {own} vs {p}");
            if num > 0 {
                assert!(fallbacks as f64 > n as f64 * p / 4.0, "the fallback ran: {fallbacks}");
                let (wrong, _) = mean(num, den, true, seed as u64);
                assert!((wrong - p).abs() > 5.0 * se, "a biased fallback goes unnoticed at γ = {num}/{den}: {wrong}");
            }
        }
    }

    /// The geometric `v` has `P(v = k) = (1 - e^{-1}) e^{-k}` (chi-square on `v ≤ 6` and the tail),
    /// also with the window widened so that its fallback decides a good share of the draws; the
    /// same test rejects a fallback that decides against `k + 1/4` (power check).
    #[test]
    fn the_geometric_has_the_right_law_and_a_biased_fallback_is_caught() {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let n = 40_000u64;
        let chi_square = |window: Option<f64>, biased: bool| {
            let mut rng = NoiseRng::seeded(9);
            let mut draw = || (0..n).map(|_| geometric(&mut rng)).collect::<Vec<u64>>();
            let (draws, fallbacks) = match window {
                Some(w) => with_window(w, biased, draw),
                None => (draw(), 0),
            };
            let mut counts = [0f64; 8];
            for v in draws {
                counts[(v as usize).min(7)] += 1.0;
            }
            let q = (-1f64).exp();
            let p = |k: usize| if k < 7 { (1.0 - q) * q.powi(k as i32) } else { q.powi(7) };
            let stat: f64 = (0..8).map(|k| (counts[k] - n as f64 * p(k)).powi(2) / (n as f64 * p(k))).sum();
            (stat, fallbacks)
        };
        let critical = ChiSquared::new(7.0).unwrap().inverse_cdf(1.0 - 1e-4);
        let (own, _) = chi_square(None, false);
        assert!(own < critical, "chi2 = {own}");
        let (widened, fallbacks) = chi_square(Some(0.25), false);
        assert!(widened < critical, "chi2 = {widened} through the fallback");
        assert!(fallbacks > n / 5, "the fallback ran: {fallbacks}");
        let (wrong, _) = chi_square(Some(0.25), true);
        assert!(wrong > critical, "a biased fallback goes unnoticed: chi2 = {wrong}");
    }

    #[test]
    fn nat_arithmetic() {
        let a = Nat::from_u128(u128::MAX);
        assert_eq!(a.add(&Nat::from_u128(1)), Nat::pow2(128));
        assert_eq!(Nat::pow2(128).saturating_sub(&Nat::from_u128(1)), a);
        assert_eq!(Nat::from_u128(3).saturating_sub(&Nat::from_u128(5)), Nat(Vec::new()));
        let big = Nat::pow2(200).add(&Nat::from_u128(12345));
        let d = (1u128 << 127) + 99;
        for up in [false, true] {
            // (big · d) / d = big, and (big · d + 1) / d rounds by one.
            assert_eq!(big.mul_u128(d).div_u128(d, up), big);
            let plus = big.mul_u128(d).add(&Nat::from_u128(1)).div_u128(d, up);
            assert_eq!(plus, if up { big.add(&Nat::from_u128(1)) } else { big.clone() });
            assert_eq!(big.mul_u128(1 << 70).shr(70, up), big);
            assert_eq!(big.shr(3, up), Nat::pow2(197).add(&Nat::from_u128(12345 / 8 + u128::from(up))));
            // big mod 7 = (2^200 mod 7 + 12345) mod 7 = (4 + 12345) mod 7, as 2^3 = 1 mod 7.
            let r = (4 + 12345) % 7;
            let times = big.div_u128(7, up).mul_u128(7);
            let back =
                if up { times.saturating_sub(&Nat::from_u128((7 - r) % 7)) } else { times.add(&Nat::from_u128(r)) };
            assert_eq!(back, big);
        }
    }
}
