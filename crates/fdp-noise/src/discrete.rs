//! Exact samplers on the integers (Canonne, Kamath & Steinke 2020, Algorithms 1-3).
//!
//! Everything here uses integer arithmetic and exact uniform integers (rejection sampling), so the
//! output law is exactly the stated one: no floating-point rounding enters a sample.

use rand::Rng;

/// Uniform integer in `[0, n)`, exactly (mask-and-reject), for `n >= 1`.
#[inline]
pub fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u128) -> u128 {
    debug_assert!(n >= 1);
    if n <= 1 {
        return 0;
    }
    let bits = 128 - (n - 1).leading_zeros();
    loop {
        let draw = if bits <= 64 {
            let v = rng.next_u64();
            (if bits == 64 { v } else { v & ((1u64 << bits) - 1) }) as u128
        } else {
            let hi = (rng.next_u64() as u128) & ((1u128 << (bits - 64)) - 1);
            (hi << 64) | rng.next_u64() as u128
        };
        if draw < n {
            return draw;
        }
    }
}

/// Bernoulli(num / den), exactly, for `num <= den`, `den >= 1`.
#[inline]
pub fn bernoulli_ratio<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    uniform_below(rng, den) < num
}

/// Bernoulli(exp(-num/den)) for rational `num/den >= 0` (CKS Algorithm 1).
pub fn bernoulli_exp<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut num = num;
    // exp(-γ) = exp(-1)^⌊γ⌋ · exp(-(γ - ⌊γ⌋)).
    while num > den {
        if !bernoulli_exp_at_most_one(rng, den, den) {
            return false;
        }
        num -= den;
    }
    bernoulli_exp_at_most_one(rng, num, den)
}

/// Bernoulli(exp(-γ)) for `γ = num/den ∈ [0, 1]`: the parity of the first k with Bernoulli(γ/k) = 0.
fn bernoulli_exp_at_most_one<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut k: u128 = 1;
    loop {
        if !bernoulli_ratio(rng, num, den * k) {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// Discrete Laplace on Z with scale `t/s`: `P(z) ∝ exp(-|z| s / t)` (CKS Algorithm 2).
///
/// `t, s >= 1`. Expected cost: a handful of uniform draws, independent of the scale. The lattice
/// samplers' scales (`t < 2^62`, `s` a power of two) take a 64-bit path that makes the same draws
/// in the same order and returns the same value (tested), only with native arithmetic.
pub fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, t: u128, s: u128) -> i128 {
    match u64::try_from(t) {
        Ok(t) if t < 1 << 62 && s.is_power_of_two() => discrete_laplace_u64(rng, t, s.trailing_zeros()),
        _ => discrete_laplace_u128(rng, t, s),
    }
}

/// [`discrete_laplace`] in u128 arithmetic, for any `t, s >= 1`.
fn discrete_laplace_u128<R: Rng + ?Sized>(rng: &mut R, t: u128, s: u128) -> i128 {
    loop {
        let u = uniform_below(rng, t);
        if !bernoulli_exp(rng, u, t) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(rng, 1, 1) {
            v += 1;
        }
        if let Some(z) = with_random_sign(rng, (u + t * v) / s) {
            return z;
        }
    }
}

/// CKS Algorithm 2's last step, shared by both paths: a fair sign for the magnitude `y`, or `None`
/// (start again) for `-0`, so that 0 is not drawn twice as often as its neighbours.
#[inline]
fn with_random_sign<R: Rng + ?Sized>(rng: &mut R, y: u128) -> Option<i128> {
    let negative = rng.next_u32() & 1 == 1;
    if negative && y == 0 {
        return None;
    }
    let y = y.min(i128::MAX as u128) as i128;
    Some(if negative { -y } else { y })
}

/// `uniform_below` for `n < 2^64`: the same mask-and-reject on the same draws.
#[inline]
fn uniform_below_u64<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let mask = u64::MAX >> (n - 1).leading_zeros();
    loop {
        let draw = rng.next_u64() & mask;
        if draw < n {
            return draw;
        }
    }
}

/// `bernoulli_exp` with 64-bit operands (the same draws): Bernoulli(exp(-num/den)).
#[inline]
fn bernoulli_exp_u64<R: Rng + ?Sized>(rng: &mut R, mut num: u64, den: u64) -> bool {
    while num > den {
        if !bernoulli_exp_at_most_one_u64(rng, den, den) {
            return false;
        }
        num -= den;
    }
    bernoulli_exp_at_most_one_u64(rng, num, den)
}

/// `bernoulli_exp_at_most_one` with 64-bit operands; a denominator `den · k` beyond 64 bits (never
/// met in practice) takes the u128 draw, which is the same draw.
#[inline]
fn bernoulli_exp_at_most_one_u64<R: Rng + ?Sized>(rng: &mut R, num: u64, den: u64) -> bool {
    let mut k: u64 = 1;
    loop {
        let below = match den.checked_mul(k) {
            Some(d) => uniform_below_u64(rng, d) < num,
            None => uniform_below(rng, den as u128 * k as u128) < num as u128,
        };
        if !below {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// [`discrete_laplace`] for `t < 2^62` and `s = 2^shift`.
fn discrete_laplace_u64<R: Rng + ?Sized>(rng: &mut R, t: u64, shift: u32) -> i128 {
    loop {
        let u = uniform_below_u64(rng, t);
        if !bernoulli_exp_u64(rng, u, t) {
            continue;
        }
        let mut v: u64 = 0;
        while bernoulli_exp_at_most_one_u64(rng, 1, 1) {
            v += 1;
        }
        if let Some(z) = with_random_sign(rng, (u as u128 + t as u128 * v as u128) >> shift) {
            return z;
        }
    }
}

/// Discrete Gaussian on Z with integer standard-deviation parameter `sigma >= 1`:
/// `P(z) ∝ exp(-z² / (2 σ²))` (CKS Algorithm 3, with σ² = sigma² an integer).
pub fn discrete_gaussian<R: Rng + ?Sized>(rng: &mut R, sigma: u64) -> i128 {
    let s2 = (sigma as u128) * (sigma as u128);
    let t = sigma as u128 + 1;
    loop {
        let y = discrete_laplace(rng, t, 1);
        // Accept with probability exp(-(|y| - σ²/t)² / (2σ²)) = exp(-(|y| t - σ²)² / (2 σ² t²)).
        let a = y.unsigned_abs() * t;
        let diff = a.abs_diff(s2);
        if let (Some(num), Some(den)) = (diff.checked_mul(diff), (2 * s2).checked_mul(t * t))
            && bernoulli_exp(rng, num, den)
        {
            return y;
        }
        // Overflow means |y| is astronomically far in the tail, where acceptance is 0 to any precision.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoiseRng;

    #[test]
    fn uniform_below_is_in_range_and_covers_it() {
        let mut rng = NoiseRng::seeded(1);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            seen[uniform_below(&mut rng, 7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
        let big = 3u128 << 90;
        assert!((0..1000).all(|_| uniform_below(&mut rng, big) < big));
        assert_eq!(uniform_below(&mut rng, 1), 0);
    }

    #[test]
    fn the_64_bit_path_makes_the_same_draws_and_values() {
        // The lattice samplers' (t, s) shapes, small scales, and t near the path's limit.
        let cases = [(3u128, 2u128), (1, 1), (7, 1), ((1u128 << 52) + 12345, 1 << 12), ((1 << 62) - 1, 1 << 40)];
        for (seed, (t, s)) in cases.into_iter().enumerate() {
            let (mut a, mut b) = (NoiseRng::seeded(seed as u64), NoiseRng::seeded(seed as u64));
            for _ in 0..20_000 {
                assert_eq!(discrete_laplace(&mut a, t, s), discrete_laplace_u128(&mut b, t, s), "t = {t}, s = {s}");
            }
            assert_eq!(a.next_u64(), b.next_u64(), "the streams stay in step");
        }
    }

    #[test]
    fn bernoulli_exp_has_the_right_mean() {
        let mut rng = NoiseRng::seeded(2);
        for (num, den) in [(1u128, 2u128), (3, 1), (7, 3)] {
            let p = (-(num as f64) / den as f64).exp();
            let n = 40_000;
            let hits = (0..n).filter(|_| bernoulli_exp(&mut rng, num, den)).count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt();
            assert!((hits / n as f64 - p).abs() < 5.0 * se, "γ = {num}/{den}");
        }
    }

    #[test]
    fn small_scale_laws_match_exactly_computed_pmfs() {
        // Compare empirical frequencies to the exact pmf for a scale where every mass is visible.
        let mut rng = NoiseRng::seeded(3);
        let n = 60_000;
        let (t, s) = (3u128, 2u128); // scale 1.5
        let q = (-1.0f64 / 1.5).exp();
        let mut counts = std::collections::HashMap::new();
        for _ in 0..n {
            *counts.entry(discrete_laplace(&mut rng, t, s)).or_insert(0usize) += 1;
        }
        for z in -3i128..=3 {
            let p = (1.0 - q) / (1.0 + q) * q.powi(z.unsigned_abs() as i32);
            let f = *counts.get(&z).unwrap_or(&0) as f64 / n as f64;
            assert!((f - p).abs() < 5.0 * (p * (1.0 - p) / n as f64).sqrt(), "laplace z = {z}: {f} vs {p}");
        }
        let sigma = 2u64;
        let norm: f64 = (-40i32..=40).map(|z| (-(z * z) as f64 / 8.0).exp()).sum();
        let mut counts = std::collections::HashMap::new();
        for _ in 0..n {
            *counts.entry(discrete_gaussian(&mut rng, sigma)).or_insert(0usize) += 1;
        }
        for z in -4i128..=4 {
            let p = (-((z * z) as f64) / 8.0).exp() / norm;
            let f = *counts.get(&z).unwrap_or(&0) as f64 / n as f64;
            assert!((f - p).abs() < 5.0 * (p * (1.0 - p) / n as f64).sqrt(), "gaussian z = {z}: {f} vs {p}");
        }
    }
}
