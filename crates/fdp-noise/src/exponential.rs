//! The exponential mechanism (McSherry & Talwar 2007) over a finite public set of candidates,
//! sampled **exactly**: no floating-point probability ever enters a draw.
//!
//! **Mechanism.** Candidates `i = 0..C` have scores `s_i(D)` to *minimise* (a distance), with
//! sensitivity `Δ = max_i max_{D~D'} |s_i(D) - s_i(D')|`. Releasing `i` with probability
//! `∝ exp(-ε s_i / (2Δ))` is ε-DP: the numerator moves by at most `e^{ε/2}` between neighbours and
//! so does the normaliser.
//!
//! **Lattice scores.** Scores are snapped to integer levels `l_i = round(s_i / g)` on a power-of-two
//! step `g = 2^(⌊log2 Δ⌋ - 20)`. Rounding is applied to both neighbours, so
//! `|l_i(D) - l_i(D')| <= Δ/g + 1`, an integer, hence `<= K = ⌊Δ/g⌋ + 1` (at most `1 + 2^-20` times
//! `Δ/g`: the rounding costs a millionth of ε). The mechanism samples `P(i) ∝ exp(-c l_i)` with the
//! rate `c = ε / (2K)` rounded *down* to a dyadic rational `c_num / 2^shift` (53 significant bits):
//! the loss of any pair is `c |Δl_i| + |ln Z - ln Z'| <= 2 c K <= ε`.
//!
//! **Exact sampling.** Propose `i` uniformly (exact uniform integer), accept with probability
//! `exp(-c (l_i - min_j l_j))` by the exact Bernoulli(exp(−γ)) sampler on the rational
//! `(l_i - l_min) c_num / 2^shift`. Accepted proposals have exactly the law `∝ exp(-c l_i)`. The
//! expected number of proposals is `C / Σ_j exp(-c (l_j - l_min)) <= C`.
//!
//! **Timing.** Every proposal costs the same work whatever its level and whether it is accepted
//! (the Bernoulli reads one word and computes one `exp`, see [`crate::discrete::bernoulli_exp`]),
//! so the running time is `N ×` (a constant) and `N`, the number of proposals, is independent of
//! the candidate selected. `N` itself is geometric with success probability
//! `Σ_j exp(-c (l_j - l_min)) / C`, which depends on the scores: the time still carries that one
//! number about the data (docs/DESIGN.md section 15.5). The Bernoulli is the same in both
//! [`crate::timing`] modes (one word a proposal; its exact fallback, with probability `< 2^-35` a
//! proposal, takes longer), so the mechanism is too.

use rand::Rng;

use crate::discrete::{bernoulli_exp, uniform_below};
use crate::error::{NoiseError, Result};
use crate::privacy::{Epsilon, PrivacyGuarantee, Sensitivity};

/// Bits of resolution of the score lattice below the sensitivity: `g = 2^(⌊log2 Δ⌋ - 20)`.
const LATTICE_BITS: i32 = 20;
/// The largest power-of-two denominator of the rate (keeps every CKS product inside `u128`).
const MAX_SHIFT: i32 = 96;
/// Levels are clamped to `±2^62` (a clamp is 1-Lipschitz: the level sensitivity still holds).
const MAX_LEVEL: f64 = 4_611_686_018_427_387_904.0;

/// The exponential mechanism for minimising a score of sensitivity Δ at ε, on lattice levels.
///
/// ```
/// use fdp_noise::{Epsilon, NoiseRng, Sensitivity, exponential::ExponentialMechanism};
/// let em = ExponentialMechanism::new(Sensitivity::new(0.01)?, Epsilon::new(1.0)?)?;
/// // Three candidates; the second is far better than the others at this sensitivity.
/// let levels = em.levels(&[1.0, 0.2, 0.9])?;
/// let chosen = em.sample(&levels, &mut NoiseRng::seeded(1))?;
/// assert_eq!(chosen, 1);
/// # Ok::<(), fdp_noise::NoiseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialMechanism {
    epsilon: Epsilon,
    sensitivity: f64,
    step: f64,
    level_sensitivity: u64,
    rate_num: u64,
    rate_shift: u32,
}

impl ExponentialMechanism {
    /// ε-DP selection for scores of sensitivity `sensitivity`.
    ///
    /// Errors if Δ is below `2^-1000` (no lattice step) or ε is so small or so large that the rate
    /// `ε / (2K)` needs more than 96 fractional bits or is above `2^52`.
    pub fn new(sensitivity: Sensitivity, epsilon: Epsilon) -> Result<Self> {
        let delta = sensitivity.get();
        if delta < 2f64.powi(-1000) {
            return Err(NoiseError::BadParameter {
                name: "sensitivity",
                value: delta,
                reason: "below 2^-1000: no lattice step for the scores",
            });
        }
        let step = 2f64.powi(delta.log2().floor() as i32 - LATTICE_BITS);
        // Δ / g is exact (g is a power of two) and below 2^22.
        let level_sensitivity = (delta / step).floor() as u64 + 1;
        let rate = epsilon.get() / (2.0 * level_sensitivity as f64);
        let shift = 52 - rate.log2().floor() as i32;
        if !(0..=MAX_SHIFT).contains(&shift) {
            return Err(NoiseError::BadParameter {
                name: "epsilon",
                value: epsilon.get(),
                reason: "outside the exact exponential sampler's range (rate ε/2K must lie in [2^-44, 2^52])",
            });
        }
        // rate · 2^shift ∈ [2^52, 2^53) is exact; subtracting 1 undoes the division's rounding up.
        let rate_num = (rate * 2f64.powi(shift)).floor() as u64 - 1;
        Ok(Self { epsilon, sensitivity: delta, step, level_sensitivity, rate_num, rate_shift: shift as u32 })
    }

    /// The guarantee of one selection: pure ε-DP.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::pure(self.epsilon)
    }

    /// ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon.get()
    }

    /// The score sensitivity Δ the mechanism was built for.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// The lattice step g of the scores.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// `K = ⌊Δ/g⌋ + 1`: the largest change of a level between neighbours.
    pub fn level_sensitivity(&self) -> u64 {
        self.level_sensitivity
    }

    /// The rate per level, `c_num / 2^shift <= ε / (2K)`.
    pub fn rate(&self) -> f64 {
        self.rate_num as f64 * 2f64.powi(-(self.rate_shift as i32))
    }

    /// The effective temperature in score units: `P(i) ∝ exp(-s_i / temperature)` up to the
    /// lattice, with `temperature = g / c ≈ 2(Δ + g)/ε`.
    pub fn temperature(&self) -> f64 {
        self.step / self.rate()
    }

    /// What a release records of this calibration.
    pub fn calibration(&self) -> crate::Calibration {
        crate::Calibration::Exponential {
            sensitivity: self.sensitivity,
            epsilon: self.epsilon.get(),
            step: self.step,
            temperature: self.temperature(),
        }
    }

    /// `round(s_i / g)`, clamped to `±2^62`. Every score must be finite: a non-finite score is a
    /// parameter error (callers make scores total before they get here; nothing non-finite is
    /// snapped).
    pub fn levels(&self, scores: &[f64]) -> Result<Vec<i64>> {
        scores
            .iter()
            .map(|s| {
                self.level(*s).ok_or(NoiseError::BadParameter {
                    name: "score",
                    value: *s,
                    reason: "scores must be finite before they are snapped to the lattice",
                })
            })
            .collect()
    }

    /// The level of one score, `None` if it is not finite.
    #[inline]
    pub fn level(&self, score: f64) -> Option<i64> {
        score.is_finite().then(|| (score / self.step).round().clamp(-MAX_LEVEL, MAX_LEVEL) as i64)
    }

    /// One exact draw of `i` with `P(i) ∝ exp(-c l_i)`.
    pub fn sample<R: Rng + ?Sized>(&self, levels: &[i64], rng: &mut R) -> Result<usize> {
        let Some(&min) = levels.iter().min() else {
            return Err(NoiseError::LengthMismatch { what: "candidate levels", expected: 1, got: 0 });
        };
        let den = 1u128 << self.rate_shift;
        loop {
            let i = uniform_below(rng, levels.len() as u128) as usize;
            // l_i - l_min <= 2^63 and c_num < 2^53: the numerator fits in u128.
            let gap = (levels[i] as i128 - min as i128) as u128;
            if bernoulli_exp(rng, gap * u128::from(self.rate_num), den) {
                return Ok(i);
            }
        }
    }

    /// `ln P(i)` for every candidate, from the levels (for exact-loss checks and accuracy reports;
    /// computed in floating point relative to the best level, so accurate to ~1e-15 relative).
    pub fn log_probabilities(&self, levels: &[i64]) -> Vec<f64> {
        let Some(&min) = levels.iter().min() else { return Vec::new() };
        let c = self.rate();
        let exponents: Vec<f64> = levels.iter().map(|l| -c * (*l as i128 - min as i128) as f64).collect();
        let log_z = exponents.iter().map(|e| e.exp()).sum::<f64>().ln();
        exponents.iter().map(|e| e - log_z).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoiseRng;

    #[test]
    fn rate_and_lattice_respect_the_budget() {
        for (delta, eps) in [(1.0, 1.0), (1.4e-5, 0.01), (3e-300, 1e6), (0.7, 1e-6), (123.0, 50.0)] {
            let em = ExponentialMechanism::new(Sensitivity::new(delta).unwrap(), Epsilon::new(eps).unwrap()).unwrap();
            let (k, g) = (em.level_sensitivity() as f64, em.step());
            assert!(k * g >= delta && k * g <= delta * (1.0 + 2f64.powi(-19)), "{delta}: K g = {}", k * g);
            assert!(2.0 * em.rate() * k <= eps, "{eps}: 2cK = {}", 2.0 * em.rate() * k);
            assert!(2.0 * em.rate() * k >= eps * (1.0 - 1e-15));
        }
        assert!(ExponentialMechanism::new(Sensitivity::new(1e-310).unwrap(), Epsilon::new(1.0).unwrap()).is_err());
        assert!(ExponentialMechanism::new(Sensitivity::new(1.0).unwrap(), Epsilon::new(1e-30).unwrap()).is_err());
        let em = ExponentialMechanism::new(Sensitivity::new(1.0).unwrap(), Epsilon::new(1.0).unwrap()).unwrap();
        assert!(em.levels(&[0.0, f64::NAN]).is_err());
        assert!(em.sample(&[], &mut NoiseRng::seeded(1)).is_err());
        assert_eq!(em.levels(&[1e308, -1e308]).unwrap(), vec![MAX_LEVEL as i64, -MAX_LEVEL as i64]);
    }

    /// Pearson's statistic of `counts` against the probabilities `exp(log_p)`.
    fn chi_square(counts: &[u64], log_p: &[f64]) -> f64 {
        let total: u64 = counts.iter().sum();
        counts
            .iter()
            .zip(log_p)
            .map(|(o, lp)| {
                let e = total as f64 * lp.exp();
                (*o as f64 - e).powi(2) / e
            })
            .sum()
    }

    /// The draws follow `∝ exp(-c l_i)`; the same test rejects the law of a mechanism whose ε is
    /// 15% off (power check).
    #[test]
    fn draws_follow_the_exponential_law() {
        use statrs::distribution::{ChiSquared, ContinuousCDF};
        let scores = [0.0, 0.5, 1.0, 3.0, 0.25];
        let em = ExponentialMechanism::new(Sensitivity::new(1.0).unwrap(), Epsilon::new(2.0).unwrap()).unwrap();
        let levels = em.levels(&scores).unwrap();
        let mut rng = NoiseRng::seeded(11);
        let mut counts = [0u64; 5];
        crate::timing::tests::in_mode(crate::timing::SamplerTiming::Variable, || {
            for _ in 0..200_000 {
                counts[em.sample(&levels, &mut rng).unwrap()] += 1;
            }
        });
        let critical = ChiSquared::new(4.0).unwrap().inverse_cdf(1.0 - 1e-4);
        let own = chi_square(&counts, &em.log_probabilities(&levels));
        assert!(own < critical, "chi2 = {own} >= {critical}");
        let off = ExponentialMechanism::new(Sensitivity::new(1.0).unwrap(), Epsilon::new(2.3).unwrap()).unwrap();
        let wrong = chi_square(&counts, &off.log_probabilities(&off.levels(&scores).unwrap()));
        assert!(wrong > critical, "a 15% miscalibration goes unnoticed: chi2 = {wrong}");
        // The best candidate is the mode, and the probabilities are those of exp(-ε s / 2Δ).
        let p = em.log_probabilities(&levels);
        assert!((p[0] - p[1] - 0.5).abs() < 1e-5, "{}", p[0] - p[1]);
    }

    /// In both modes the sampler selects what the variable-time algorithm as written selected from
    /// the same draws (seeded selections are the same), and in padded mode every proposal costs the
    /// same work whatever its level.
    #[test]
    fn padded_selection_is_the_unpadded_one_and_proposals_cost_the_same() {
        use crate::exp_neg::tests::decisions_of;
        use crate::timing::{SamplerTiming, tests::in_mode};
        let em = ExponentialMechanism::new(Sensitivity::new(1.0).unwrap(), Epsilon::new(2.0).unwrap()).unwrap();
        let levels = em.levels(&[0.0, 0.5, 1.0, 2.0, 4.0, 40.0]).unwrap();
        let den = 1u128 << em.rate_shift;
        let (mut a, mut b, mut c) = (NoiseRng::seeded(3), NoiseRng::seeded(3), NoiseRng::seeded(3));
        let mut proposals_work = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let (chosen, work) = decisions_of(|| em.sample(&levels, &mut a).unwrap());
            let fast = in_mode(SamplerTiming::Variable, || em.sample(&levels, &mut c).unwrap());
            let mut proposals = 0u64;
            let reference = loop {
                proposals += 1;
                let i = uniform_below(&mut b, levels.len() as u128) as usize;
                let gap = (levels[i] - levels[0]) as u128;
                if bernoulli_exp(&mut b, gap * u128::from(em.rate_num), den) {
                    break i;
                }
            };
            assert_eq!(chosen, reference);
            assert_eq!(fast, reference, "variable-time mode");
            assert_eq!(work % proposals, 0);
            proposals_work.insert(work / proposals);
            assert_eq!(work / proposals, 1, "one decision a proposal");
        }
        assert_eq!(proposals_work.len(), 1, "work per proposal varies: {proposals_work:?}");
        assert_eq!(a.next_u64(), c.next_u64(), "the streams stay in step");
    }
}
