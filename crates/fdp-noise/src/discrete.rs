//! Exact samplers on the integers (Canonne, Kamath & Steinke 2020, Algorithms 2-3, on an exact
//! Bernoulli(exp(−γ)) and geometric that replace their Algorithm 1's parity loops).
//!
//! Everything here uses integer arithmetic, exact uniform integers (rejection sampling) and the exact
//! Bernoulli(exp(−γ)) and geometric of `exp_neg.rs` (whose f64 fast path only decides how many
//! random words are read, never a result), so the output law is exactly the stated one: no
//! floating-point rounding enters a sample.

use std::hint::black_box;

use rand::Rng;

use crate::error::{NoiseError, Result};
use crate::exp_neg::{self, Denominator, Threshold};
use crate::timing::{self, SamplerTiming};

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

/// Whether the samplers called now divide in fixed work ([`div_fixed_work`]): in
/// [`SamplerTiming::Padded`] mode, read once per public call ([`timing::current`]). It is all the
/// two modes differ in: every other step does the same work whatever the value (module
/// [`crate::timing`]).
#[inline]
fn fixed_work() -> bool {
    timing::current() == SamplerTiming::Padded
}

/// Bernoulli(exp(-num/den)) for rational `num/den >= 0`, exactly, in fixed work: one 64-bit word
/// `w` of a uniform `U∞` compared with bounds of `e^{-γ} 2^64` from one f64 `exp`, and with
/// probability `≤ 2^-35 e^{-γ} + 2^-62` an exact fallback that reads further words against
/// big-integer bounds of `e^{-γ}` until `[U∞ < e^{-γ}]` is decided (the proof and the f64 margin are
/// in `exp_neg`). The result is `[U∞ < e^{-γ}]`, true with probability exactly `e^{-γ}`.
///
/// **Timing.** The fast path's work does not depend on `γ` or on the result (the `exp`'s argument is
/// clamped so that libm runs its main path); only the fallback, taken with the probability above,
/// takes longer. The call is the same in both [`timing`] modes. `den = 0` reads as `γ = +∞`
/// (false, without a draw). See docs/DESIGN.md section 15.5.
pub fn bernoulli_exp<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    if den == 0 {
        return false;
    }
    exp_neg::bernoulli(rng, Threshold::of(Denominator::new(den).gamma(num)), num, den)
}

/// Discrete Laplace on Z with scale `t/s`: `P(z) ∝ exp(-|z| s / t)` (CKS Algorithm 2).
///
/// `t, s >= 1` (`t = 0` gives 0, the law's limit; `s = 0` is read as 1, so that no parameter
/// panics or loops forever). Expected cost, independent of the scale: `1/(1 - e^{-1}) ≈ 1.6` first-stage trials
/// (a uniform `u < t` and a Bernoulli(exp(-u/t)), one word each), one word for the geometric `v`
/// (CKS's loop of Bernoulli(exp(-1)) replaced by the same law from one word,
/// `exp_neg::geometric`) and a 32-bit sign: about 4.2 words of the stream and 1.6 `exp`s.
///
/// **Timing.** The work of the accepted trial does not depend on the value drawn: the acceptance
/// test Bernoulli(exp(-u/t)) is one word and one `exp` ([`bernoulli_exp`]), `v` is one word, its
/// leading-zero count and one table entry whatever `v`, the sign is applied without a branch and
/// `(u + t v) / s` is a shift or (in [`SamplerTiming::Padded`] mode) a fixed-work division.
/// Rejected trials are independent of the accepted one. A draw whose Bernoulli or geometric takes
/// the exact fallback (probability `< 2^-34.9` a Bernoulli, `≤ 2^-63` a geometric) takes longer, and
/// is still exact.
pub fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, t: u128, s: u128) -> i128 {
    if t == 0 {
        return 0;
    }
    discrete_laplace_in(rng, t, s.max(1), fixed_work())
}

/// [`discrete_laplace`], dividing in fixed work if `fixed`.
fn discrete_laplace_in<R: Rng + ?Sized>(rng: &mut R, t: u128, s: u128, fixed: bool) -> i128 {
    let over_t = Denominator::new(t);
    loop {
        let u = laplace_u(rng, t);
        if !exp_neg::bernoulli(rng, Threshold::of(over_t.gamma(u)), u, t) {
            continue;
        }
        let v = exp_neg::geometric(rng);
        // Saturating: past u128 (t ≳ 2^122) the output is clamped to i128's range anyway, as
        // `with_random_sign` clamps (it wrapped to a wrong value before; the independent review).
        let magnitude = u.saturating_add(t.saturating_mul(u128::from(v)));
        let y = if s.is_power_of_two() {
            magnitude >> s.trailing_zeros()
        } else if fixed {
            div_fixed_work(magnitude, s)
        } else {
            magnitude / s
        };
        if let Some(z) = with_random_sign(rng, y) {
            return z;
        }
    }
}

/// `n / d` for `d >= 1` by 128 steps of restoring division without value-dependent branches: the
/// hardware and compiler-builtins u128 division take a value-dependent time (measured in
/// examples/benchmarks/timing_channel.rs).
#[inline]
fn div_fixed_work(n: u128, d: u128) -> u128 {
    let (mut q, mut r) = (0u128, 0u128);
    for i in (0..128).rev() {
        let carry = r >> 127;
        r = (r << 1) | ((n >> i) & 1);
        let subtract = carry | u128::from(black_box(r >= d));
        r = r.wrapping_sub(d & 0u128.wrapping_sub(subtract));
        q |= subtract << i;
    }
    q
}

/// CKS Algorithm 2's last step, shared by both paths: a fair sign for the magnitude `y`, or `None`
/// (start again) for `-0`, so that 0 is not drawn twice as often as its neighbours. The sign is
/// applied without a branch.
#[inline]
fn with_random_sign<R: Rng + ?Sized>(rng: &mut R, y: u128) -> Option<i128> {
    let negative = rng.next_u32() & 1 == 1;
    // One branch on the combined flag (`black_box` keeps the compiler from splitting it into a
    // branch on `y == 0`, whose outcome would be the accepted value's).
    if black_box(negative & (y == 0)) {
        return None;
    }
    let y = y.min(i128::MAX as u128) as i128;
    let mask = -i128::from(negative);
    Some((y ^ mask) - mask)
}

/// The discrete Laplace's `u`, uniform in `[0, t)` for `t ≥ 1`, exactly: for `t < 2^64` by
/// Lemire's multiply-and-reject (a 64-bit word `x`, `u = ⌊x t / 2^64⌋`, rejecting the
/// `2^64 mod t` values of `x` whose low product word is below `2^64 mod t`, so that every `u` has
/// exactly `⌊2^64 / t⌋` preimages; D. Lemire, "Fast random integer generation in an interval",
/// ACM TOMACS 2019). A rejection has probability `< t / 2^64` (`2^-43` at the Gaussian's
/// `t ≈ 2^21`; the lattice Laplace's `t` lies in `[2^52, 2^53)`; against up to 1/2 for
/// mask-and-reject), and its test, against `2^64 mod t` computed once per call, costs the same
/// whatever the word. Larger `t` take [`uniform_below`].
#[inline]
fn laplace_u<R: Rng + ?Sized>(rng: &mut R, t: u128) -> u128 {
    let Ok(t) = u64::try_from(t) else {
        return uniform_below(rng, t);
    };
    if t <= 1 {
        return 0;
    }
    // 2^64 mod t, computed once per call whatever the word: computing it only when `low < t` (the
    // usual form) made the accepted draw's time depend on u (the independent review: for t ≥ 2^63
    // the division ran exactly when u mod 3 ≠ 0 at t = 3·2^62).
    let threshold = black_box(t.wrapping_neg() % t);
    loop {
        let product = u128::from(rng.next_u64()) * u128::from(t);
        if (product as u64) < threshold {
            continue;
        }
        return product >> 64;
    }
}

/// Discrete Gaussian on Z with integer standard-deviation parameter `sigma >= 1`:
/// `P(z) ∝ exp(-z² / (2 σ²))` (CKS Algorithm 3, with σ² = sigma² an integer). `sigma = 0` gives 0,
/// the law's limit.
///
/// **Timing.** Each proposal is a fixed-work discrete Laplace draw (scale `t = σ + 1`, `s = 1`: no
/// division) and a fixed-work Bernoulli (see [`bernoulli_exp`]), so every trial costs the same
/// whatever the proposal; the number of trials is independent of the accepted value. The same in
/// both [`timing`] modes.
pub fn discrete_gaussian<R: Rng + ?Sized>(rng: &mut R, sigma: u64) -> Result<i128> {
    Ok(Gaussian::new(sigma)?.draw(rng))
}

/// The largest σ the exact discrete Gaussian takes: its acceptance test's denominator
/// `2 σ² (σ + 1)²` must fit in u128 (at 2^31 it is below 2^126; from about 2^31.5 it leaves u128).
pub const MAX_GAUSSIAN_SIGMA: u64 = 1 << 31;

/// `out.len()` discrete Gaussians of one `sigma`, `out[i] = map(z_i)`: the same draws, in the same
/// order, as `out.len()` calls of [`discrete_gaussian`] (tested), with the constants of σ computed
/// once for the whole batch instead of once per draw. Each draw's work and timing are
/// [`discrete_gaussian`]'s.
pub fn discrete_gaussian_fill<R: Rng + ?Sized, T>(
    rng: &mut R,
    sigma: u64,
    out: &mut [T],
    map: impl Fn(i128) -> T,
) -> Result<()> {
    let gaussian = Gaussian::new(sigma)?;
    for v in out.iter_mut() {
        *v = map(gaussian.draw(rng));
    }
    Ok(())
}

/// The constants of CKS Algorithm 3 for one σ: `σ²`, the Laplace proposal's scale `t = σ + 1`
/// and the acceptance test's denominator `2 σ² t²`, with its f64 reciprocal.
#[derive(Clone, Copy)]
struct Gaussian {
    s2: u128,
    t: u128,
    den: u128,
    over_den: Denominator,
}

impl Gaussian {
    /// σ ≤ [`MAX_GAUSSIAN_SIGMA`], else a parameter error (the denominator would leave u128).
    fn new(sigma: u64) -> Result<Self> {
        if sigma > MAX_GAUSSIAN_SIGMA {
            return Err(NoiseError::BadParameter {
                name: "discrete gaussian sigma",
                value: sigma as f64,
                reason: "must be at most 2^31 (the exact acceptance test works in u128)",
            });
        }
        let s2 = u128::from(sigma) * u128::from(sigma);
        let t = u128::from(sigma) + 1;
        let den = 2 * s2 * t * t;
        Ok(Self { s2, t, den, over_den: Denominator::new(den) })
    }

    /// One draw: Laplace proposals of scale `t` until one passes the acceptance test.
    #[inline]
    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> i128 {
        if self.s2 == 0 {
            return 0;
        }
        loop {
            // s = 1: no division, so the timing mode changes nothing here.
            let y = discrete_laplace_in(rng, self.t, 1, false);
            if self.accepts(rng, y) {
                return y;
            }
        }
    }

    /// CKS's acceptance test of the proposal `y`: true with probability
    /// `exp(-(|y| - σ²/t)² / (2σ²)) = exp(-(|y| t - σ²)² / (2 σ² t²))`.
    #[inline]
    fn accepts<R: Rng + ?Sized>(&self, rng: &mut R, y: i128) -> bool {
        let a = y.unsigned_abs() * self.t;
        let diff = a.abs_diff(self.s2);
        match diff.checked_mul(diff) {
            // The same bounds as `bernoulli_exp(rng, num, den)`, with 1/den computed once.
            Some(num) => exp_neg::bernoulli(rng, Threshold::of(self.over_den.gamma(num)), num, self.den),
            // diff² leaves u128 (|y| beyond 5σ at σ = 2^31, where the acceptance is still e^-8: the
            // independent review; rejecting these truncated the law). Exactly: γ = q + r/den, and
            // e^{-γ} = P(v ≥ q) · e^{-r/den} with v the one-word geometric (P(v ≥ k) = e^{-k}) and
            // an independent Bernoulli for the fraction; both always drawn.
            None => {
                let (q, r) = exp_neg::square_div_rem(diff, self.den);
                let whole = exp_neg::geometric(rng) >= q;
                let fraction = exp_neg::bernoulli(rng, Threshold::of(self.over_den.gamma(r)), r, self.den);
                whole & fraction
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::NoiseRng;
    use crate::exp_neg::tests::{decisions_of, with_window};
    use crate::timing::tests::in_mode;

    const MODES: [SamplerTiming; 2] = [SamplerTiming::Padded, SamplerTiming::Variable];

    /// The samplers as written (CKS Algorithms 2-3 on the exact Bernoulli(exp(−γ)) of
    /// [`bernoulli_exp`] and the one-word geometric, with the plain u128 division), kept as the
    /// reference both modes must match draw for draw.
    pub(crate) mod unpadded {
        use super::super::{bernoulli_exp, exp_neg, laplace_u, with_random_sign};
        use rand::Rng;

        pub(crate) fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, t: u128, s: u128) -> i128 {
            loop {
                let u = laplace_u(rng, t);
                if !bernoulli_exp(rng, u, t) {
                    continue;
                }
                let v = u128::from(exp_neg::geometric(rng));
                if let Some(z) = with_random_sign(rng, u.saturating_add(t.saturating_mul(v)) / s) {
                    return z;
                }
            }
        }

        pub(crate) fn discrete_gaussian<R: Rng + ?Sized>(rng: &mut R, sigma: u64) -> i128 {
            let s2 = (sigma as u128) * (sigma as u128);
            let t = sigma as u128 + 1;
            loop {
                let y = discrete_laplace(rng, t, 1);
                let diff = (y.unsigned_abs() * t).abs_diff(s2);
                let den = 2 * s2 * t * t;
                let accept = match diff.checked_mul(diff) {
                    Some(num) => bernoulli_exp(rng, num, den),
                    // γ = q + r/den: P(v ≥ q) e^{-r/den}, both drawn.
                    None => {
                        let (q, r) = exp_neg::square_div_rem(diff, den);
                        let whole = exp_neg::geometric(rng) >= q;
                        whole & bernoulli_exp(rng, r, den)
                    }
                };
                if accept {
                    return y;
                }
            }
        }
    }

    /// Lemire's uniform at `t = 3·2^62`, where rejection matters: `P(u < 2^62) = 1/3` (it would be
    /// 1/2 without the rejection step: 30 000 draws tell them apart by 40 sd).
    #[test]
    fn lemire_s_uniform_is_uniform_where_rejection_matters() {
        let t = 3u128 << 62;
        let mut rng = NoiseRng::seeded(12);
        let n = 30_000;
        let low = (0..n).filter(|_| laplace_u(&mut rng, t) < 1 << 62).count() as f64;
        let (mean, sd) = (n as f64 / 3.0, (n as f64 * 2.0 / 9.0).sqrt());
        assert!((low - mean).abs() < 5.0 * sd, "{low} draws below 2^62, {mean} ± {sd:.0} expected");
    }

    /// Past the largest σ the exact acceptance test supports, a parameter error, not a sampler that
    /// never returns (the independent review: at σ > 2^31.5 every proposal was rejected).
    #[test]
    fn a_gaussian_beyond_its_largest_sigma_is_refused() {
        let mut rng = NoiseRng::seeded(1);
        assert!(discrete_gaussian(&mut rng, MAX_GAUSSIAN_SIGMA).is_ok());
        assert!(discrete_gaussian(&mut rng, MAX_GAUSSIAN_SIGMA + 1).is_err());
        assert!(discrete_gaussian_fill(&mut rng, u64::MAX, &mut [0i128; 3], |z| z).is_err());
    }

    /// The split of the acceptance exponent when `diff²` leaves u128 is exact, and at σ = 2^31 the
    /// sampler reaches beyond `4σ`, where that happens (the old code rejected every such proposal:
    /// a truncated law). P(|Z| > 4σ) ≈ 6.3·10^-5, so 2·10^5 draws see about 13 (none before).
    #[test]
    fn the_wide_acceptance_test_is_exact_and_used() {
        for (a, den) in [(1u128 << 70, 3u128 << 100), (u128::MAX, u128::MAX), (u128::MAX, 7), ((1 << 64) + 1, 1)] {
            let (q, r) = exp_neg::square_div_rem(a, den);
            // Check a² = q den + r with r < den on the halves: (a mod 2^64)... via u128 when small.
            assert!(r < den);
            if let Some(square) = a.checked_mul(a) {
                assert_eq!((u128::from(q), r), (square / den, square % den));
            }
        }
        // (2^64 + 1)² = 2^128 + 2^65 + 1 over den = 1: q saturates, r = 0.
        assert_eq!(exp_neg::square_div_rem((1 << 64) + 1, 1), (u64::MAX, 0));
        // (2^70)² / (3·2^100) = 2^40/3: q = 366503875925, r = 2^100.
        assert_eq!(exp_neg::square_div_rem(1 << 70, 3 << 100), (366_503_875_925, 1 << 100));
        // At σ = 2^31 a proposal at 5.1σ is accepted with probability e^{-(4.1σ t)²/(2σ²t²)} ≈
        // e^{-8.4} (2.2·10^-4): 10^6 trials see about 224 (the old test rejected all of them).
        let sigma = MAX_GAUSSIAN_SIGMA;
        let gaussian = Gaussian::new(sigma).unwrap();
        let y = (u128::from(sigma) * 51 / 10) as i128;
        let diff = (y.unsigned_abs() * gaussian.t - gaussian.s2) as f64;
        let p = (-(diff * diff) / gaussian.den as f64).exp();
        let mut rng = NoiseRng::seeded(8);
        let trials = 1_000_000;
        let accepted = (0..trials).filter(|_| gaussian.accepts(&mut rng, y)).count() as f64;
        let (mean, sd) = (p * trials as f64, (p * trials as f64).sqrt());
        assert!((accepted - mean).abs() < 5.0 * sd, "{accepted} accepted, {mean:.1} ± {sd:.1} expected");
        assert!(mean > 150.0);
    }

    /// The modes differ only in how they divide: in both, every sampler returns what the algorithm
    /// as written returns, from the same draws in the same order, so seeded releases are bit-for-bit
    /// the same whatever the mode.
    #[test]
    fn both_modes_make_the_unpadded_draws() {
        let laplace =
            [(3u128, 2u128), (1, 1), (7, 3), ((1u128 << 52) + 12345, 1 << 12), ((1u128 << 70) + 12345, 3 << 40)];
        for mode in MODES {
            in_mode(mode, || {
                for (seed, (t, s)) in laplace.into_iter().enumerate() {
                    let (mut a, mut b) = (NoiseRng::seeded(seed as u64), NoiseRng::seeded(seed as u64));
                    for _ in 0..3_000 {
                        assert_eq!(
                            discrete_laplace(&mut a, t, s),
                            unpadded::discrete_laplace(&mut b, t, s),
                            "t = {t}, s = {s}, {mode}"
                        );
                    }
                    assert_eq!(a.next_u64(), b.next_u64(), "the streams stay in step");
                }
                for sigma in [1u64, 3, 1 << 20] {
                    let (mut a, mut b) = (NoiseRng::seeded(sigma), NoiseRng::seeded(sigma));
                    for _ in 0..2_000 {
                        let reference = unpadded::discrete_gaussian(&mut b, sigma);
                        assert_eq!(discrete_gaussian(&mut a, sigma).unwrap(), reference, "σ = {sigma}, {mode}");
                    }
                    assert_eq!(a.next_u64(), b.next_u64());
                }
            });
        }
    }

    /// A batch of discrete Gaussians is the sequence of single draws: the same values from the same
    /// stream, which is left at the same place, in both modes; and both are the algorithm as
    /// written (σ from 1 to the lattice's largest, 2^31, through the GP paths' 2^20).
    #[test]
    fn a_batch_of_gaussians_is_the_single_draws() {
        for mode in MODES {
            in_mode(mode, || {
                for sigma in [1u64, 2, 3, 1 << 20, (1 << 20) + 12345, (1 << 21) - 1, 1 << 31] {
                    let count = if mode == SamplerTiming::Padded { 40 } else { 3_000 };
                    let mut streams =
                        [NoiseRng::seeded(sigma ^ 77), NoiseRng::seeded(sigma ^ 77), NoiseRng::seeded(sigma ^ 77)];
                    let [a, b, c] = &mut streams;
                    let mut batch = vec![0i128; count];
                    discrete_gaussian_fill(a, sigma, &mut batch[..count / 2], |z| z).unwrap();
                    discrete_gaussian_fill(a, sigma, &mut batch[count / 2..], |z| z).unwrap();
                    let single: Vec<i128> = (0..count).map(|_| discrete_gaussian(b, sigma).unwrap()).collect();
                    let reference: Vec<i128> = (0..count).map(|_| unpadded::discrete_gaussian(c, sigma)).collect();
                    assert_eq!(batch, single, "σ = {sigma}, {mode}");
                    assert_eq!(single, reference, "σ = {sigma}, {mode}");
                    let next: Vec<u64> = streams.iter_mut().map(|r| r.next_u64()).collect();
                    assert!(next.iter().all(|&v| v == next[0]), "the streams stay in step");
                }
            });
        }
    }

    /// The public samplers (lattice Laplace on both paths, lattice Gaussian, the exponential
    /// mechanism) return the same values from the same seed in both modes, and leave the caller's
    /// stream at the same place.
    #[test]
    fn the_public_samplers_are_the_same_in_both_modes() {
        use crate::exponential::ExponentialMechanism;
        use crate::{Epsilon, LatticeGaussian, LatticeLaplace, Sensitivity};
        let laplace =
            [LatticeLaplace::new(1.5, 2f64.powi(-21)).unwrap(), LatticeLaplace::new(1.0, 2f64.powi(-40)).unwrap()];
        let gaussian =
            [LatticeGaussian::new(3.0, 2f64.powi(-20)).unwrap(), LatticeGaussian::new(1.0, 2f64.powi(-31)).unwrap()];
        let em = ExponentialMechanism::new(Sensitivity::new(1.0).unwrap(), Epsilon::new(2.0).unwrap()).unwrap();
        let levels = em.levels(&[0.0, 0.5, 1.0, 2.0, 4.0, 40.0]).unwrap();
        let draws = |mode| {
            in_mode(mode, || {
                let mut rng = NoiseRng::seeded(11);
                let mut out = Vec::new();
                for _ in 0..400 {
                    out.extend(laplace.iter().map(|l| l.release(0.25, &mut rng).to_bits()));
                    out.extend(gaussian.iter().map(|g| g.release(-3.0, &mut rng).to_bits()));
                    out.push(em.sample(&levels, &mut rng).unwrap() as u64);
                    // The u128 path, with a divisor that is not a power of two.
                    out.push(discrete_laplace(&mut rng, (1u128 << 70) + 12345, 3 << 40) as u64);
                    out.push(discrete_laplace(&mut rng, 7, 3) as u64);
                }
                out.push(rng.next_u64());
                out
            })
        };
        assert_eq!(draws(SamplerTiming::Padded), draws(SamplerTiming::Variable));
    }

    /// The work of a Bernoulli(exp(-γ)) is one decision (one word) for every γ and both results,
    /// and that of a discrete Laplace draw is its first-stage trials (independent of the value) plus
    /// one for the geometric `v`, whatever |z|, in both modes. (CKS's loops did `~γ` and `~|z|/scale`
    /// trials, which is what the padding used to hide.)
    #[test]
    fn the_work_does_not_depend_on_the_value() {
        let mut rng = NoiseRng::seeded(4);
        for mode in MODES {
            in_mode(mode, || {
                for (num, den) in [(0u128, 1u128), (1, 3), (1, 1), (5, 2), (40, 1), (1 << 100, 3)] {
                    for _ in 0..300 {
                        let (_, work) = decisions_of(|| bernoulli_exp(&mut rng, num, den));
                        assert_eq!(work, 1, "γ = {num}/{den}");
                    }
                }
                // Laplace at a large lattice scale and at a small one with a division.
                for (t, s) in [((1u128 << 52) + 12345, 1u128 << 12), (7, 3)] {
                    let mut largest = 0;
                    for _ in 0..3_000 {
                        let (z, work) = decisions_of(|| discrete_laplace(&mut rng, t, s));
                        largest = largest.max(z.unsigned_abs() * s / t);
                        assert!((2..=40).contains(&work), "work {work} for z = {z}");
                    }
                    assert!(largest >= 5, "draws far in the tail (v >= 5) were covered: {largest}");
                }
            });
        }
    }

    type Sampler = dyn Fn(&mut NoiseRng) -> i128;

    /// Pearson's statistic of the counts of `draws` on `-k..=k` (and one bin for the rest) against
    /// the pmf `∝ weight(|z|)` (normalised over the integers).
    fn chi_square(draws: &[i128], k: i128, weight: impl Fn(f64) -> f64) -> f64 {
        let norm: f64 = (-400i128..=400).map(|z| weight(z.unsigned_abs() as f64)).sum();
        let mut counts = vec![0f64; 2 * k as usize + 2];
        for &z in draws {
            let bin = if z.abs() <= k { (z + k) as usize } else { 2 * k as usize + 1 };
            counts[bin] += 1.0;
        }
        let n = draws.len() as f64;
        let inner: f64 = (-k..=k).map(|z| weight(z.unsigned_abs() as f64) / norm).sum();
        let expected = (-k..=k).map(|z| weight(z.unsigned_abs() as f64) / norm).chain([1.0 - inner]);
        counts.iter().zip(expected).map(|(o, p)| (o - n * p).powi(2) / (n * p)).sum()
    }

    /// The discrete Laplace (scale 3/2 and 7/3) and Gaussian (σ = 2) follow their laws by a
    /// chi-square test in both modes, also with the fast path's window widened to 1/16 so that the
    /// exact fallback decides a good share of the Bernoulli trials (about one in ten, including the
    /// geometric loop's); the same counts reject a scale 10% off (power check).
    #[test]
    fn laws_by_chi_square_in_both_modes_and_through_the_fallback() {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let n = 20_000;
        for mode in MODES {
            for window in [None, Some(1.0 / 16.0)] {
                let run = |seed: u64, f: &Sampler| {
                    let mut rng = NoiseRng::seeded(seed);
                    let mut draw = || in_mode(mode, || (0..n).map(|_| f(&mut rng)).collect::<Vec<i128>>());
                    match window {
                        Some(w) => {
                            let (draws, fallbacks) = with_window(w, false, draw);
                            assert!(fallbacks > n as u64 / 20, "the fallback ran: {fallbacks}");
                            draws
                        }
                        None => draw(),
                    }
                };
                let cases: [(&Sampler, f64, i128); 3] = [
                    (&|r| discrete_laplace(r, 3, 2), 1.5, 6),
                    (&|r| discrete_laplace(r, 7, 3), 7.0 / 3.0, 8),
                    (&|r| discrete_gaussian(r, 2).unwrap(), 2.0, 6),
                ];
                for (i, (sampler, scale, k)) in cases.into_iter().enumerate() {
                    let draws = run(i as u64 + 20, sampler);
                    let critical = ChiSquared::new(2.0 * k as f64 + 1.0).unwrap().inverse_cdf(1.0 - 1e-4);
                    let gaussian = i == 2;
                    let law = |scale: f64| {
                        move |a: f64| if gaussian { (-a * a / (2.0 * scale * scale)).exp() } else { (-a / scale).exp() }
                    };
                    let own = chi_square(&draws, k, law(scale));
                    assert!(own < critical, "case {i}, {mode}, window {window:?}: chi2 = {own}");
                    let off = chi_square(&draws, k, law(1.1 * scale));
                    assert!(off > critical, "case {i}: a 10% wrong scale goes unnoticed: chi2 = {off}");
                }
            }
        }
    }

    /// `uniform_below` and the Laplace's `u` (Lemire's) are uniform below a small `t`, where every
    /// value is visible, in range for `t` near 2^64, beyond it and far beyond, and 0 at `t = 1`.
    #[test]
    fn the_uniforms_are_uniform_and_in_range() {
        let samplers: [fn(&mut NoiseRng, u128) -> u128; 2] = [|r, t| uniform_below(r, t), |r, t| laplace_u(r, t)];
        for (seed, draw) in samplers.into_iter().enumerate() {
            let mut rng = NoiseRng::seeded(seed as u64 + 1);
            let mut seen = [0usize; 7];
            for _ in 0..70_000 {
                seen[draw(&mut rng, 7) as usize] += 1;
            }
            assert!(seen.iter().all(|&c| (9_500..10_500).contains(&c)), "{seen:?}");
            for t in [(1u128 << 64) - 1, 3 << 62, 1 << 64, (1 << 100) + 7, 3 << 90, (1 << 21) + 1] {
                assert!((0..1000).all(|_| draw(&mut rng, t) < t), "t = {t}");
            }
            let top = (0..1000).map(|_| draw(&mut rng, (1 << 21) + 1)).max().unwrap();
            assert!(top > 1 << 20, "the upper half is drawn: {top}");
            assert_eq!(draw(&mut rng, 1), 0);
        }
    }

    /// Parameters outside the samplers' ranges neither panic nor loop: `t = 0` and `σ = 0` give 0,
    /// `s = 0` reads as 1, `den = 0` as `γ = ∞`.
    #[test]
    fn degenerate_parameters_are_total() {
        let mut rng = NoiseRng::seeded(13);
        for mode in MODES {
            in_mode(mode, || {
                assert_eq!(discrete_laplace(&mut rng, 0, 5), 0);
                let (mut a, mut b) = (NoiseRng::seeded(14), NoiseRng::seeded(14));
                assert_eq!(discrete_laplace(&mut a, 3, 0), discrete_laplace(&mut b, 3, 1));
                assert_eq!(discrete_gaussian(&mut rng, 0).unwrap(), 0);
                assert!(!bernoulli_exp(&mut rng, 5, 0) && !bernoulli_exp(&mut rng, 0, 0));
            });
        }
    }

    #[test]
    fn bernoulli_exp_has_the_right_mean() {
        in_mode(SamplerTiming::Variable, bernoulli_exp_mean);
    }

    fn bernoulli_exp_mean() {
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
        in_mode(SamplerTiming::Variable, small_scale_laws);
    }

    fn small_scale_laws() {
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
            *counts.entry(discrete_gaussian(&mut rng, sigma).unwrap()).or_insert(0usize) += 1;
        }
        for z in -4i128..=4 {
            let p = (-((z * z) as f64) / 8.0).exp() / norm;
            let f = *counts.get(&z).unwrap_or(&0) as f64 / n as f64;
            assert!((f - p).abs() < 5.0 * (p * (1.0 - p) / n as f64).sqrt(), "gaussian z = {z}: {f} vs {p}");
        }
    }
}
