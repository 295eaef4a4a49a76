//! Privacy parameters as checked types, sequential composition, and the neighbour relation.

use serde::{Deserialize, Serialize};

use crate::error::{NoiseError, Result};

/// A validated privacy parameter ε in `(0, 2^30]`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Epsilon(f64);

impl Epsilon {
    /// The largest ε accepted, `2^30` (about 1.07e9). Every release is centred on a lattice index
    /// clamped to `±2^100` steps of `2^-40` noise scales, so a summary more than `2^60` noise scales
    /// from 0 would be released biased toward 0 with no error: for a mean of clipped records that is
    /// `n ε > 2^61`. Capping ε keeps that out of reach below `n = 2^31` records, while `e^ε` at the
    /// cap is already past any guarantee a release could mean (an independent audit released a
    /// KDE at ε = 1e16 and a regression at 1e20 silently shrunk toward 0).
    pub const MAX: f64 = 1_073_741_824.0;

    /// Checks `0 < ε <= 2^30` ([`Epsilon::MAX`]).
    pub fn new(epsilon: f64) -> Result<Self> {
        if epsilon > 0.0 && epsilon <= Self::MAX { Ok(Self(epsilon)) } else { Err(NoiseError::BadEpsilon(epsilon)) }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// A validated privacy parameter δ in (0, 1).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Delta(f64);

impl Delta {
    /// Checks `0 < δ < 1`.
    pub fn new(delta: f64) -> Result<Self> {
        if delta > 0.0 && delta < 1.0 { Ok(Self(delta)) } else { Err(NoiseError::BadDelta(delta)) }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// A validated sensitivity (finite, > 0), in whatever norm the mechanism documents.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Sensitivity(f64);

impl Sensitivity {
    /// Checks `0 < Δ < ∞`.
    pub fn new(value: f64) -> Result<Self> {
        if value.is_finite() && value > 0.0 { Ok(Self(value)) } else { Err(NoiseError::BadSensitivity(value)) }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }

    /// **The sensitivity with the floating-point rounding of the summary charged** (docs/DESIGN.md
    /// §15.4). A summary coordinate computed from exact integer sums by at most `roundings` = k
    /// floating-point operations (the integer-to-float conversions, products by public factors,
    /// sums of public-length lists, the division by n), each rounded to nearest, is within
    /// `γ_k A_j` of its exact value, where `A_j` is the same expression on absolute values and
    /// `γ_k = k u / (1 − k u)`, `u = 2^-53` (Higham, *Accuracy and Stability of Numerical
    /// Algorithms*, Lemma 3.1). If every dataset's `A` has norm at most `magnitude` in the
    /// sensitivity's norm (monotone in each |coordinate|: every weighted l1, l2 and sup norm),
    /// two neighbours' *computed* summaries differ by at most `Δ + 2 γ_k · magnitude`, which is
    /// the sensitivity returned. For a mean of n records clipped at τ, `magnitude = Δ n / 2`
    /// ([`of_mean`](Self::of_mean)): the charge is a relative `γ_k n`, ~9e-12 at n = 10^4 and ~9e-6
    /// at n = 10^10 with k = 8.
    ///
    /// ```
    /// use fdp_noise::Sensitivity;
    /// let plain = 2.0 * 10.0 / 1e10;
    /// let charged = Sensitivity::of_mean(plain, 10_000_000_000, 8)?.get();
    /// assert!(charged > plain && charged < plain * (1.0 + 1e-5));
    /// assert!(Sensitivity::new(1.0)?.with_rounding(f64::NAN, 1).is_err());
    /// # Ok::<(), fdp_noise::NoiseError>(())
    /// ```
    pub fn with_rounding(self, magnitude: f64, roundings: u32) -> Result<Self> {
        let k = f64::from(roundings) * UNIT_ROUNDOFF;
        if !(magnitude.is_finite() && magnitude >= 0.0) || k >= 0.5 {
            return Err(NoiseError::BadParameter {
                name: "summary magnitude",
                value: magnitude,
                reason: "the rounding charge needs a finite, non-negative bound on the summary",
            });
        }
        Self::new(self.0 + 2.0 * k / (1.0 - k) * magnitude)
    }

    /// The sensitivity `Δ` of a mean of `records` clipped contributions (Δ = 2 τ c / n for a bound
    /// τ and a norm factor c) with the rounding of `roundings` operations after its exact sums
    /// charged: [`with_rounding`](Self::with_rounding) with magnitude `Δ n / 2 = τ c`.
    pub fn of_mean(delta: f64, records: usize, roundings: u32) -> Result<Self> {
        Self::new(delta)?.with_rounding(delta * records as f64 / 2.0, roundings)
    }
}

/// The unit roundoff of `f64` (round to nearest): `u = 2^-53`.
pub const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Which datasets are neighbours; recorded with every release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum NeighbourRelation {
    /// Replace one record; n is public (ICLP, Hall, Mirshani, Balog).
    ReplaceOne,
    /// Add or remove one record; n is private (the M2M sketches, with a noisy count).
    AddRemoveOne,
}

/// The guarantee a mechanism gives: (ε, δ)-DP under a neighbour relation (δ = 0 for pure DP).
/// Built only from checked [`Epsilon`] and [`Delta`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrivacyGuarantee {
    epsilon: f64,
    delta: f64,
    relation: NeighbourRelation,
}

impl PrivacyGuarantee {
    /// Pure ε-DP under replace-one.
    pub fn pure(epsilon: Epsilon) -> Self {
        Self { epsilon: epsilon.get(), delta: 0.0, relation: NeighbourRelation::ReplaceOne }
    }

    /// (ε, δ)-DP under replace-one.
    pub fn approximate(epsilon: Epsilon, delta: Delta) -> Self {
        Self { epsilon: epsilon.get(), delta: delta.get(), relation: NeighbourRelation::ReplaceOne }
    }

    /// The same (ε, δ) under another neighbour relation.
    pub fn under(self, relation: NeighbourRelation) -> Self {
        Self { relation, ..self }
    }

    /// ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// δ (0 for pure DP).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The neighbour relation.
    pub fn relation(&self) -> NeighbourRelation {
        self.relation
    }
}

/// A total (ε, δ) budget spent by sequential composition: releases with (ε_i, δ_i) on the same data
/// are together (Σ ε_i, Σ δ_i)-DP.
///
/// ```
/// use fdp_noise::{Epsilon, PrivacyBudget};
/// let mut budget = PrivacyBudget::new(1.0, 0.0)?;
/// budget.spend(Epsilon::new(0.6)?, None)?;
/// assert!(budget.spend(Epsilon::new(0.6)?, None).is_err()); // would exceed ε = 1
/// assert!((budget.remaining().0 - 0.4).abs() < 1e-12);
/// # Ok::<(), fdp_noise::NoiseError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyBudget {
    epsilon: f64,
    delta: f64,
    spent_epsilon: f64,
    spent_delta: f64,
}

impl PrivacyBudget {
    /// A budget of `(epsilon, delta)`; `delta = 0` allows only pure-DP spending.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self> {
        Epsilon::new(epsilon)?;
        if !(0.0..1.0).contains(&delta) {
            return Err(NoiseError::BadDelta(delta));
        }
        Ok(Self { epsilon, delta, spent_epsilon: 0.0, spent_delta: 0.0 })
    }

    /// Charges one release; refuses (and charges nothing) if the budget would be exceeded.
    pub fn spend(&mut self, epsilon: Epsilon, delta: Option<Delta>) -> Result<()> {
        let d = delta.map_or(0.0, Delta::get);
        // A relative slack of 1e-12 lets budgets split as ε/k be spent exactly k times.
        let slack = 1e-12 * self.epsilon;
        if self.spent_epsilon + epsilon.get() > self.epsilon + slack
            || self.spent_delta + d > self.delta * (1.0 + 1e-12)
        {
            let (remaining_epsilon, remaining_delta) = self.remaining();
            return Err(NoiseError::BudgetExceeded {
                epsilon: epsilon.get(),
                delta: d,
                remaining_epsilon,
                remaining_delta,
            });
        }
        self.spent_epsilon += epsilon.get();
        self.spent_delta += d;
        Ok(())
    }

    /// What is left, `(ε, δ)`.
    pub fn remaining(&self) -> (f64, f64) {
        ((self.epsilon - self.spent_epsilon).max(0.0), (self.delta - self.spent_delta).max(0.0))
    }

    /// What has been spent, `(ε, δ)`.
    pub fn spent(&self) -> (f64, f64) {
        (self.spent_epsilon, self.spent_delta)
    }

    /// The total budget, `(ε, δ)`.
    pub fn total(&self) -> (f64, f64) {
        (self.epsilon, self.delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_errors() {
        assert!(Epsilon::new(Epsilon::MAX).is_ok());
        for e in [0.0, -1.0, f64::NAN, f64::INFINITY, Epsilon::MAX.next_up(), 1e12] {
            assert!(matches!(Epsilon::new(e), Err(NoiseError::BadEpsilon(_))));
        }
        for d in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            assert!(Delta::new(d).is_err());
        }
        for s in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Sensitivity::new(s).is_err());
        }
        assert!(PrivacyBudget::new(1.0, 1.0).is_err());
        assert!(PrivacyBudget::new(-1.0, 0.0).is_err());
    }

    #[test]
    fn budget_composes_sequentially() {
        let mut b = PrivacyBudget::new(1.0, 1e-5).unwrap();
        for _ in 0..3 {
            b.spend(Epsilon::new(1.0 / 3.0).unwrap(), None).unwrap();
        }
        assert!(b.spend(Epsilon::new(1e-6).unwrap(), None).is_err());
        let mut b = PrivacyBudget::new(2.0, 1e-5).unwrap();
        b.spend(Epsilon::new(0.5).unwrap(), Some(Delta::new(6e-6).unwrap())).unwrap();
        assert!(b.spend(Epsilon::new(0.5).unwrap(), Some(Delta::new(6e-6).unwrap())).is_err());
        assert_eq!(b.spent(), (0.5, 6e-6));
    }
}
