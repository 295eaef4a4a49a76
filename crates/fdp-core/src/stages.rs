//! [`StagePlan`]: the sequential composition a multi-stage mechanism charges, written once.
//!
//! A pipeline that first spends on a private clipping bound (or a pilot) and then releases is
//! (Σ ε_i, Σ δ_i)-DP by adaptive sequential composition (Dwork & Roth 2014, Thm 3.16 and §3.5): each
//! stage may depend on the earlier stages' releases. The [`Session`](crate::Session) charges the
//! stages one after another; the mechanism's release uses each stage's budget. A `StagePlan` is the
//! one place both read: a mechanism builds it once from its public split, derives
//! [`Mechanism::stages`](crate::Mechanism::stages) and
//! [`Mechanism::guarantee`](crate::Mechanism::guarantee) from it, and its `privatize` reads each
//! stage's budget from it by name — so what the ledger charges is what the composition proves, by
//! construction, and a stage can no longer silently drop out of the charge.

use fdp_noise::{Delta, Epsilon, PrivacyGuarantee};

use crate::error::{Error, ParamValue, Result};
use crate::mechanism::Stage;

/// The stages of a sequential composition, each with its budget, and their total.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    /// `(name, ε, δ)` in order, free stages (ε = δ = 0) included.
    parts: Vec<(&'static str, f64, f64)>,
    total: PrivacyGuarantee,
}

impl StagePlan {
    /// `parts` — `(name, ε, δ)`, in the order they are charged — composed sequentially into
    /// `total`. A part with ε = δ = 0 spends nothing (e.g. a bound share of 0: the public ceiling is
    /// used) and is left out of the ledger. **Refused** — before anything is charged — when a budget
    /// is negative or not finite, a δ is given to a stage without ε, a name repeats, nothing is
    /// spent at all, or the parts do not add up to `total` (to the Session's own tolerance, a
    /// relative 1e-12).
    pub fn sequential(total: PrivacyGuarantee, parts: &[(&'static str, f64, f64)]) -> Result<Self> {
        for (i, &(name, e, d)) in parts.iter().enumerate() {
            if !(e.is_finite() && e >= 0.0 && d.is_finite() && d >= 0.0) || (e == 0.0 && d > 0.0) {
                return Err(Error::BadParameter {
                    name: "stage budget",
                    value: ParamValue::Text(format!("{name}: ε = {e}, δ = {d}")),
                    reason: "a stage's ε and δ must be finite and >= 0 (δ only with ε > 0)",
                });
            }
            if parts[..i].iter().any(|p| p.0 == name) {
                return Err(Error::BadParameter {
                    name: "stage",
                    value: ParamValue::Text(name.into()),
                    reason: "names two stages of one mechanism",
                });
            }
        }
        let (e, d) = parts.iter().fold((0.0, 0.0), |(a, b), p| (a + p.1, b + p.2));
        let mismatch = |sum: f64, claimed: f64| (sum - claimed).abs() > 1e-12 * claimed;
        if e == 0.0 || mismatch(e, total.epsilon()) || mismatch(d, total.delta()) {
            return Err(Error::BadParameter {
                name: "stages",
                value: ParamValue::Number(e),
                reason: "a mechanism's stages must add up to its guarantee (the ledger charges the stages)",
            });
        }
        Ok(Self { parts: parts.to_vec(), total })
    }

    /// The stages the ledger charges, in order (free stages left out).
    pub fn stages(&self) -> Vec<Stage> {
        self.parts
            .iter()
            .filter(|p| p.1 > 0.0)
            .filter_map(|&(name, e, d)| {
                let e = Epsilon::new(e).ok()?;
                let guarantee = match Delta::new(d) {
                    Ok(d) if d.get() > 0.0 => PrivacyGuarantee::approximate(e, d),
                    _ => PrivacyGuarantee::pure(e),
                };
                Some(Stage { name: name.into(), guarantee: guarantee.under(self.total.relation()) })
            })
            .collect()
    }

    /// The composition's guarantee (what the stages add up to).
    pub fn total(&self) -> PrivacyGuarantee {
        self.total
    }

    /// The ε of stage `name` (0 for a free stage or one the plan does not have).
    pub fn epsilon(&self, name: &str) -> f64 {
        self.parts.iter().find(|p| p.0 == name).map_or(0.0, |p| p.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pure(e: f64) -> PrivacyGuarantee {
        PrivacyGuarantee::pure(Epsilon::new(e).unwrap())
    }

    #[test]
    fn the_stages_are_the_plan_and_add_up_to_its_total() {
        let plan =
            StagePlan::sequential(pure(1.0), &[("bound", 0.25, 0.0), ("pilot", 0.0, 0.0), ("release", 0.75, 0.0)])
                .unwrap();
        let stages = plan.stages();
        assert_eq!(stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["bound", "release"]);
        assert_eq!(plan.epsilon("pilot"), 0.0);
        assert_eq!(plan.epsilon("release"), 0.75);
        let delta = Delta::new(1e-6).unwrap();
        let gp = PrivacyGuarantee::approximate(Epsilon::new(1.0).unwrap(), delta);
        let plan = StagePlan::sequential(gp, &[("bound", 0.5, 0.0), ("release", 0.5, 1e-6)]).unwrap();
        assert_eq!(plan.stages()[1].guarantee.delta(), 1e-6);
    }

    #[test]
    fn a_plan_that_does_not_add_up_or_has_a_bad_budget_is_refused() {
        for parts in [
            vec![("bound", 0.25, 0.0), ("release", 0.7, 0.0)],
            vec![("bound", 0.25, 0.0), ("release", 0.8, 0.0)],
            vec![("bound", f64::NAN, 0.0), ("release", 1.0, 0.0)],
            vec![("bound", -0.25, 0.0), ("release", 1.25, 0.0)],
            vec![("bound", 0.5, 0.0), ("bound", 0.5, 0.0)],
            vec![("bound", 0.0, 1e-6), ("release", 1.0, 0.0)],
            vec![],
        ] {
            assert!(StagePlan::sequential(pure(1.0), &parts).is_err(), "{parts:?}");
        }
    }
}
