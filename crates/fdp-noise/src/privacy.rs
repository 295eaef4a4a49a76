//! Privacy parameters as checked types, sequential composition, and the neighbour relation.

use serde::{Deserialize, Serialize};

use crate::error::{NoiseError, Result};

/// A validated privacy parameter ε (finite, > 0).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Epsilon(f64);

impl Epsilon {
    /// Checks `0 < ε < ∞`.
    pub fn new(epsilon: f64) -> Result<Self> {
        if epsilon.is_finite() && epsilon > 0.0 { Ok(Self(epsilon)) } else { Err(NoiseError::BadEpsilon(epsilon)) }
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
}

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
        for e in [0.0, -1.0, f64::NAN, f64::INFINITY] {
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
