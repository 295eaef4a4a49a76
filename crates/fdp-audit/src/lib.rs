//! # fdp-audit: black-box empirical privacy auditing
//!
//! Given a mechanism as a sampler on two neighbouring inputs, the auditor estimates a statistically
//! valid **lower bound** on the privacy loss ε it actually has. A bound above the claimed ε proves the
//! mechanism is miscalibrated (with the stated confidence); a bound below it is consistent with the
//! claim. It works for any mechanism with vector outputs — use it on your own.
//!
//! **Method (docs/DESIGN.md section 7).** For each neighbour pair (A, B):
//! 1. *Pilot* (separate samples): standardise each output coordinate, keep those whose mean differs
//!    clearly (|z| > 3, else the largest), project onto the standardised mean difference, and pick
//!    the half-space `{w·y > t}` (or its complement, in either orientation) with the largest
//!    conservative pilot estimate of `ln(P_A(E)/P_B(E))`.
//! 2. *Test* (fresh samples): count the event under A and B and turn the counts into a one-sided
//!    Clopper-Pearson lower bound on `P_A(E)` and upper bound on `P_B(E)`;
//!    `ε_lb = ln((P_A^lo - δ) / P_B^hi)`. Both orientations are tested; the confidence is split over
//!    all tests of an audit (Bonferroni), so `ε_lb > ε` for any pair is a failure at the stated level.
//!
//! ```
//! use fdp_audit::{AuditConfig, Auditor};
//! use fdp_noise::{LatticeLaplace, NoiseRng};
//! // A correctly calibrated Laplace mechanism on a count with sensitivity 1 and ε = 1.
//! let lap = LatticeLaplace::with_scale(1.0)?;
//! let auditor = Auditor::new(AuditConfig { pilot: 300, trials: 1000, confidence: 0.99 })?;
//! let pair = fdp_audit::NeighbourPair::new("count", move |r: &mut NoiseRng| vec![lap.release(0.0, r)],
//!                                          move |r: &mut NoiseRng| vec![lap.release(1.0, r)]);
//! let report = auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(7));
//! assert!(report.passed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use fdp_core::Charge;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Beta, ContinuousCDF};
use thiserror::Error;

use fdp_core::Mechanism;
use fdp_noise::NoiseRng;

/// Errors of the auditor's configuration.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A configuration value is out of range.
    #[error("invalid audit parameter {name} = {}: {reason}", fdp_core::Shown(*value))]
    BadParameter { name: &'static str, value: f64, reason: &'static str },
}

/// Sample sizes and confidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AuditConfig {
    /// Releases per input in the pilot that chooses the event.
    pub pilot: usize,
    /// Releases per input in the test.
    pub trials: usize,
    /// Overall confidence of the audit, in (0, 1).
    pub confidence: f64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { pilot: 1000, trials: 4000, confidence: 0.99 }
    }
}

/// A boxed sampler: one release on a fixed input.
pub type Sampler<'a> = Box<dyn Fn(&mut NoiseRng) -> Vec<f64> + Send + Sync + 'a>;

/// Two neighbouring inputs, each given as a sampler of the mechanism's output on it.
pub struct NeighbourPair<'a> {
    label: String,
    a: Sampler<'a>,
    b: Sampler<'a>,
}

impl<'a> NeighbourPair<'a> {
    /// The pair of a [`Mechanism`] on two neighbouring datasets, through the one release path: both
    /// summaries are computed once, and every draw is `privatize` of a summary, observed as the
    /// released numbers [`Output::values`](fdp_core::Output::values). Works for every mechanism of
    /// the workspace and for yours.
    pub fn from_mechanism<D: ?Sized, M: Mechanism<D> + ?Sized>(
        label: impl Into<String>,
        mechanism: &'a M,
        a: &D,
        b: &D,
    ) -> fdp_core::Result<Self> {
        let (sa, sb) = (mechanism.summarize(a)?, mechanism.summarize(b)?);
        Ok(Self::from_summaries(label, mechanism, sa, sb))
    }

    /// As [`from_mechanism`](Self::from_mechanism) for summaries computed already (e.g. to audit a
    /// mechanism built with another calibration on the same neighbours).
    pub fn from_summaries<D: ?Sized, M: Mechanism<D> + ?Sized>(
        label: impl Into<String>,
        mechanism: &'a M,
        a: Vec<f64>,
        b: Vec<f64>,
    ) -> Self {
        let draw = move |summary: &[f64], r: &mut NoiseRng| match mechanism.privatize(summary, r, Charge::unaccounted())
        {
            Ok(release) => release.values(),
            Err(_) => vec![f64::NAN],
        };
        Self::new(label, move |r: &mut NoiseRng| draw(&a, r), move |r: &mut NoiseRng| draw(&b, r))
    }

    /// A labelled pair of samplers.
    pub fn new(
        label: impl Into<String>,
        a: impl Fn(&mut NoiseRng) -> Vec<f64> + Send + Sync + 'a,
        b: impl Fn(&mut NoiseRng) -> Vec<f64> + Send + Sync + 'a,
    ) -> Self {
        Self { label: label.into(), a: Box::new(a), b: Box::new(b) }
    }
}

/// The audit of one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairAudit {
    pub label: String,
    /// The ε lower bound from the test samples (0 if nothing was detected).
    pub epsilon_lower_bound: f64,
    /// Event counts in the test, `(under the more likely input, under the other)`.
    pub counts: (usize, usize),
    /// Output coordinates used by the event.
    pub coordinates: Vec<usize>,
}

/// The audit of a mechanism over several pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    pub claimed_epsilon: f64,
    pub delta: f64,
    pub config: AuditConfig,
    pub pairs: Vec<PairAudit>,
    /// The largest lower bound over pairs.
    pub epsilon_lower_bound: f64,
    /// `epsilon_lower_bound <= claimed_epsilon`.
    pub passed: bool,
}

/// The auditor.
///
/// An audit draws thousands of releases; the exact samplers cost 0.05–0.1 µs a draw in their
/// default fixed-work mode as in variable time (only a discrete Laplace divided by a
/// non-power-of-two scale is faster in variable time). A process that only audits (publishes nothing
/// about a person) may call `fdp_noise::timing::allow_variable_time_for_simulation()` first: the
/// same draws (docs/DESIGN.md section 15.5). The auditor does not switch the mode itself.
#[derive(Debug, Clone, Copy)]
pub struct Auditor {
    config: AuditConfig,
}

/// One-sided Clopper-Pearson bounds on a binomial proportion at level `alpha`.
fn cp_lower(k: usize, n: usize, alpha: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    Beta::new(k as f64, (n - k + 1) as f64).map_or(0.0, |b| b.inverse_cdf(alpha))
}

fn cp_upper(k: usize, n: usize, alpha: f64) -> f64 {
    if k == n {
        return 1.0;
    }
    Beta::new((k + 1) as f64, (n - k) as f64).map_or(1.0, |b| b.inverse_cdf(1.0 - alpha))
}

/// `ln((P_hi^lo - δ)/P_lo^hi)` from counts, or 0 when not positive.
fn epsilon_bound(more: usize, less: usize, n: usize, delta: f64, alpha: f64) -> f64 {
    let num = cp_lower(more, n, alpha) - delta;
    let den = cp_upper(less, n, alpha);
    if num > 0.0 && den > 0.0 { (num / den).ln().max(0.0) } else { 0.0 }
}

/// A half-space event `w·y > t` (above) or its complement `w·y <= t` — complements exactly, so
/// the pilot's counts of "not above" are the counts of the event tested (outputs on a lattice or a
/// finite set land on the threshold with positive probability).
struct Event {
    coordinates: Vec<usize>,
    weights: Vec<f64>,
    threshold: f64,
    above: bool,
    /// True when the event is more likely under A.
    a_more_likely: bool,
}

impl Event {
    fn contains(&self, y: &[f64]) -> bool {
        let proj: f64 = self.coordinates.iter().zip(&self.weights).map(|(&c, w)| w * coordinate(y, c)).sum();
        (proj > self.threshold) == self.above
    }
}

/// Coordinate `c` of a release's values; a release with fewer values (a mechanism whose output's
/// length varies, e.g. with a choice made from an earlier stage) reads 0 there, so the length is
/// observed too and never indexes out of bounds.
fn coordinate(y: &[f64], c: usize) -> f64 {
    y.get(c).copied().unwrap_or(0.0)
}

fn mean_var(samples: &[Vec<f64>], c: usize) -> (f64, f64) {
    let n = samples.len() as f64;
    let mean = samples.iter().map(|s| coordinate(s, c)).sum::<f64>() / n;
    let var = samples.iter().map(|s| (coordinate(s, c) - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var)
}

/// Chooses the event on pilot samples.
/// Events are scored by the bound the pilot itself gives at the test's level: small pilot counts are
/// penalised, which keeps the choice away from lucky far-tail events (the winner's curse).
fn choose_event(a: &[Vec<f64>], b: &[Vec<f64>], delta: f64, alpha: f64) -> Event {
    let dim = a.iter().chain(b).map(Vec::len).max().unwrap_or(0);
    let m = a.len() as f64;
    let stats: Vec<(f64, f64)> = (0..dim)
        .map(|c| {
            let (ma, va) = mean_var(a, c);
            let (mb, vb) = mean_var(b, c);
            let sd = (0.5 * (va + vb)).sqrt().max(f64::MIN_POSITIVE);
            (ma - mb, sd)
        })
        .collect();
    let z: Vec<f64> = stats.iter().map(|(d, sd)| d / (sd * (2.0 / m).sqrt())).collect();
    let mut coordinates: Vec<usize> = (0..dim).filter(|&c| z[c].abs() > 3.0).collect();
    if coordinates.is_empty() && dim > 0 {
        let best = (0..dim).max_by(|&x, &y| z[x].abs().total_cmp(&z[y].abs())).unwrap_or(0);
        coordinates.push(best);
    }
    // A coordinate that is constant within each input (a selection that is certain under both) has
    // no variance to divide by: its weight is the sign of the difference.
    let weights: Vec<f64> = coordinates
        .iter()
        .map(|&c| {
            let w = stats[c].0 / stats[c].1.powi(2);
            if w.is_finite() { w } else { stats[c].0.signum() }
        })
        .collect();
    let project = |y: &Vec<f64>| coordinates.iter().zip(&weights).map(|(&c, w)| w * coordinate(y, c)).sum::<f64>();
    let pa: Vec<f64> = a.iter().map(project).collect();
    let pb: Vec<f64> = b.iter().map(project).collect();
    let mut pooled: Vec<f64> = pa.iter().chain(&pb).copied().collect();
    pooled.sort_by(f64::total_cmp);
    let mut best = (f64::NEG_INFINITY, 0.0, true, true);
    let n = pa.len();
    for q in 1..50 {
        let t = pooled[(q * (pooled.len() - 1)) / 50];
        let above_a = pa.iter().filter(|&&v| v > t).count();
        let above_b = pb.iter().filter(|&&v| v > t).count();
        // Four candidate events: above/below t, favouring A or B.
        for (above, ca, cb) in [(true, above_a, above_b), (false, n - above_a, n - above_b)] {
            for (a_more, more, less) in [(true, ca, cb), (false, cb, ca)] {
                let score = epsilon_bound(more, less, n, delta, alpha);
                if score > best.0 {
                    best = (score, t, above, a_more);
                }
            }
        }
    }
    Event { coordinates, weights, threshold: best.1, above: best.2, a_more_likely: best.3 }
}

impl Auditor {
    /// An auditor; `pilot >= 50`, `trials >= 100`, `confidence ∈ (0, 1)`.
    pub fn new(config: AuditConfig) -> Result<Self, AuditError> {
        if config.pilot < 50 {
            return Err(AuditError::BadParameter {
                name: "pilot",
                value: config.pilot as f64,
                reason: "must be >= 50",
            });
        }
        if config.trials < 100 {
            return Err(AuditError::BadParameter {
                name: "trials",
                value: config.trials as f64,
                reason: "must be >= 100",
            });
        }
        if !(config.confidence > 0.0 && config.confidence < 1.0) {
            return Err(AuditError::BadParameter {
                name: "confidence",
                value: config.confidence,
                reason: "must lie in (0, 1)",
            });
        }
        Ok(Self { config })
    }

    /// Audits a mechanism claimed to be (ε, δ)-DP on the given neighbour pairs (in parallel).
    pub fn audit(&self, epsilon: f64, delta: f64, pairs: Vec<NeighbourPair<'_>>, rng: &mut NoiseRng) -> AuditReport {
        // Two tests per pair (forward, backward), each resting on two one-sided bounds.
        let alpha = (1.0 - self.config.confidence) / (4 * pairs.len().max(1)) as f64;
        let mut streams = rng.split(pairs.len());
        let results: Vec<PairAudit> = pairs
            .par_iter()
            .zip(streams.par_iter_mut())
            .map(|(pair, r)| self.audit_pair(pair, delta, alpha, r))
            .collect();
        let lower = results.iter().map(|p| p.epsilon_lower_bound).fold(0.0, f64::max);
        AuditReport {
            claimed_epsilon: epsilon,
            delta,
            config: self.config,
            pairs: results,
            epsilon_lower_bound: lower,
            passed: lower <= epsilon,
        }
    }

    fn audit_pair(&self, pair: &NeighbourPair<'_>, delta: f64, alpha: f64, rng: &mut NoiseRng) -> PairAudit {
        let draw = |f: &Sampler<'_>, count: usize, rng: &mut NoiseRng| (0..count).map(|_| f(rng)).collect::<Vec<_>>();
        let pilot_a = draw(&pair.a, self.config.pilot, rng);
        let pilot_b = draw(&pair.b, self.config.pilot, rng);
        let event = choose_event(&pilot_a, &pilot_b, delta, alpha);
        let n = self.config.trials;
        let count = |f: &Sampler<'_>, rng: &mut NoiseRng| (0..n).filter(|_| event.contains(&f(rng))).count();
        let in_a = count(&pair.a, rng);
        let in_b = count(&pair.b, rng);
        let (more, less) = if event.a_more_likely { (in_a, in_b) } else { (in_b, in_a) };
        // The event in its chosen orientation, and its complement in the other one.
        let forward = epsilon_bound(more, less, n, delta, alpha);
        let backward = epsilon_bound(n - less, n - more, n, delta, alpha);
        PairAudit {
            label: pair.label.clone(),
            epsilon_lower_bound: forward.max(backward),
            counts: (more, less),
            coordinates: event.coordinates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdp_noise::LatticeLaplace;

    #[test]
    fn a_release_whose_length_varies_is_audited_not_a_panic() {
        // Releases of 1 or 3 values, the longer ones more likely under A: the length is observed.
        let a: Vec<Vec<f64>> = (0..100).map(|i| if i % 4 == 0 { vec![1.0] } else { vec![1.0, 2.0, 3.0] }).collect();
        let b: Vec<Vec<f64>> = (0..100).map(|i| if i % 4 == 0 { vec![1.0, 2.0, 3.0] } else { vec![1.0] }).collect();
        let event = choose_event(&a, &b, 0.0, 0.01);
        let (in_a, in_b) =
            (a.iter().filter(|y| event.contains(y)).count(), b.iter().filter(|y| event.contains(y)).count());
        assert!(in_a.abs_diff(in_b) >= 40, "{in_a} {in_b}");
    }

    #[test]
    fn clopper_pearson_brackets_the_proportion() {
        let (lo, hi) = (cp_lower(50, 100, 0.025), cp_upper(50, 100, 0.025));
        assert!((lo - 0.398).abs() < 2e-3 && (hi - 0.602).abs() < 2e-3, "{lo} {hi}");
        assert_eq!(cp_lower(0, 10, 0.05), 0.0);
        assert_eq!(cp_upper(10, 10, 0.05), 1.0);
    }

    #[test]
    fn catches_an_under_noised_laplace_and_passes_the_right_one() {
        // Audits draw many thousands of releases: variable-time sampling for this test process.
        fdp_noise::timing::allow_variable_time_for_simulation();
        let auditor = Auditor::new(AuditConfig::default()).unwrap();
        let run = |scale: f64, seed: u64| {
            let lap = LatticeLaplace::with_scale(scale).unwrap();
            let pair = NeighbourPair::new(
                "unit shift",
                move |r: &mut NoiseRng| vec![lap.release(0.0, r), 0.0],
                move |r: &mut NoiseRng| vec![lap.release(1.0, r), 0.0],
            );
            auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(seed))
        };
        let honest = run(1.0, 1);
        assert!(honest.passed, "{honest:?}");
        assert!(honest.epsilon_lower_bound > 0.5, "the audit should see most of ε: {}", honest.epsilon_lower_bound);
        let cheat = run(1.0 / 2f64.sqrt(), 2);
        eprintln!("audit eps_lb honest={:.3} sqrt2_cheat={:.3}", honest.epsilon_lower_bound, cheat.epsilon_lower_bound);
        assert!(!cheat.passed, "sqrt(2) under-noising not caught: {}", cheat.epsilon_lower_bound);
        assert!(Auditor::new(AuditConfig { pilot: 10, ..AuditConfig::default() }).is_err());
        assert!(Auditor::new(AuditConfig { confidence: 1.0, ..AuditConfig::default() }).is_err());
    }

    /// Releases from a finite set: a selection that is certain under each input (no variance to
    /// divide by), and one that is right 99.5% of the time (outputs land on the pilot's threshold, so
    /// the event and its complement must split ties the same way in pilot and test). Both are far
    /// from ε = 1 and must be flagged.
    #[test]
    fn catches_discrete_releases() {
        // Audits draw many thousands of releases: variable-time sampling for this test process.
        fdp_noise::timing::allow_variable_time_for_simulation();
        let auditor = Auditor::new(AuditConfig::default()).unwrap();
        let pair = NeighbourPair::new("certain", |_: &mut NoiseRng| vec![1.0, 0.0], |_: &mut NoiseRng| vec![0.0, 1.0]);
        let report = auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(3));
        assert!(!report.passed && report.epsilon_lower_bound > 5.0, "{}", report.epsilon_lower_bound);
        let pick = |right: [f64; 2], wrong: [f64; 2]| {
            move |r: &mut NoiseRng| {
                if fdp_noise::discrete::uniform_below(r, 1000) < 995 { right.to_vec() } else { wrong.to_vec() }
            }
        };
        for seed in 0..5 {
            let pair = NeighbourPair::new("mostly", pick([1.0, 0.0], [0.0, 1.0]), pick([0.0, 1.0], [1.0, 0.0]));
            let report = auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(seed));
            assert!(!report.passed && report.epsilon_lower_bound > 3.0, "{seed}: {}", report.epsilon_lower_bound);
        }
    }
    /// Power and size over 40 independent audits: a sqrt(2) under-noising must be caught nearly
    /// always, and a correct mechanism must (almost) never fail.
    #[test]
    fn power_and_size_over_repeated_audits() {
        // Audits draw many thousands of releases: variable-time sampling for this test process.
        fdp_noise::timing::allow_variable_time_for_simulation();
        let auditor = Auditor::new(AuditConfig::default()).unwrap();
        let (mut caught, mut false_fail) = (0, 0);
        for seed in 0..40u64 {
            for (scale, cheat) in [(1.0, false), (1.0 / 2f64.sqrt(), true)] {
                let lap = LatticeLaplace::with_scale(scale).unwrap();
                let pair = NeighbourPair::new(
                    "unit shift",
                    move |r: &mut NoiseRng| vec![lap.release(0.0, r)],
                    move |r: &mut NoiseRng| vec![lap.release(1.0, r)],
                );
                let report = auditor.audit(1.0, 0.0, vec![pair], &mut NoiseRng::seeded(seed * 7 + 100));
                match (cheat, report.passed) {
                    (true, false) => caught += 1,
                    (false, false) => false_fail += 1,
                    _ => {}
                }
            }
        }
        eprintln!("audit power caught={caught}/40 false_fail={false_fail}/40");
        assert!(caught >= 38 && false_fail <= 1, "caught {caught}/40, false failures {false_fail}/40");
    }
}
