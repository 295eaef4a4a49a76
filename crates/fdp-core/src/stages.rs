//! **Stages compose.** A multi-stage mechanism (a private bound, then a pilot, then the release) is
//! built from stage mechanisms, each owning its guarantee, its exact-loss law and its release, and
//! one combinator, [`Sequential`], derives the pipeline's stages, guarantee and exact losses from
//! them — so what the ledger charges is what the composition proves, by construction.
//!
//! - [`StageLaw`]: what the ledger and the audits read of a stage — its guarantee (the budget its
//!   noise is calibrated to) and its exact loss between two summaries of the pipeline.
//! - [`StageMechanism`]: a stage law that releases (under the pipeline's [`Charge`]).
//! - [`OnSlice`]: a vector noise law ([`VectorNoise`]: `LaplaceVector`, `GaussianVector`) on a range
//!   of the summary — the slice is a public transformation, so its loss is the noise's loss on the
//!   two slices (OpenDP's `make_chain_mt` of a slice and a measurement).
//! - [`Adaptive`]: a stage whose mechanism is chosen from the earlier stages' outputs: a public
//!   [`Family`] of members, each built **at the stage's budget** and refused unless it spends
//!   exactly that; its loss is the worst over every member (OpenDP's `make_sequential_composition`,
//!   whose budgets are fixed up front while the queries adapt).
//! - [`Sequential`]: the stages in the order they are charged. Its [`plan`](Sequential::plan) —
//!   the charged [`Stage`]s and their total — is read off the stages' own guarantees, and it cannot
//!   be built unless they add up to the mechanism's guarantee.
//! - [`StagePlan`]: the charged stages and their total, checked by the one rule
//!   ([`StagePlan::check`]) the [`Session`](crate::Session) also applies to every mechanism.
//!
//! **Post-processing is not a stage.** A choice made from a stage's output and public quantities
//! (the bound grid point τ̂, a selection by SURE or the marginal likelihood, a clamp to a public
//! range) spends nothing and has no exact-loss law: it is a function between stages, recorded in a
//! release's [`StageRecord`](crate::StageRecord)s with ε = 0 and never in the ledger.
//!
//! **Privacy (adaptive sequential composition**, Dwork & Roth 2014, Thm 3.16 and §3.5). Stage k is
//! `(ε_k, δ_k)`-DP for every choice the earlier stages' outputs can make, because every member of
//! its family is: then the pipeline is `(Σ ε_k, Σ δ_k)`-DP. On a pair of neighbouring summaries the
//! pipeline is DP at its guarantee if, for every stage, the exact loss of every member is at most
//! its budget: [`Sequential::exact_losses`] reports each stage's worst ratio.

use std::ops::Range;

use fdp_noise::vector::{GaussianVector, LaplaceVector};
use fdp_noise::{NoiseRng, PrivacyGuarantee};

use crate::error::{Error, ParamValue, Result};
use crate::mechanism::{Charge, Stage};

/// What the ledger and the audits read of one stage.
pub trait StageLaw: Send + Sync {
    /// The budget the stage's noise is calibrated to (what the ledger charges for it).
    fn guarantee(&self) -> PrivacyGuarantee;
    /// **The exact privacy loss** of the stage between the summaries `a` and `b` of two
    /// neighbouring datasets (the whole pipeline's summaries: the stage reads its own part), as a
    /// ratio to its budget and maximised over every mechanism it may run: at most 1 iff the stage
    /// is DP on the pair at its guarantee.
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64>;
}

/// A stage that releases: a mechanism on the pipeline's summary that owns its guarantee.
pub trait StageMechanism: StageLaw {
    /// What one release of the stage holds (a noisy vector, a curve release, ...).
    type Output;
    /// One release of the stage from the pipeline's `summary`, under the pipeline's `charge`.
    fn release(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Self::Output>;
}

/// A noise law on vectors: calibrated to a guarantee, with its exact loss as a ratio to it.
pub trait VectorNoise: Send + Sync {
    /// The guarantee of one release.
    fn guarantee(&self) -> PrivacyGuarantee;
    /// The exact loss of releasing `a` rather than `b`, as a ratio to the guarantee.
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64>;
    /// `x` plus the noise, on the lattice.
    fn release(&self, x: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>>;
}

impl VectorNoise for LaplaceVector {
    fn guarantee(&self) -> PrivacyGuarantee {
        LaplaceVector::guarantee(self)
    }

    /// `fdp_noise::exact_loss::laplace_loss` over every coordinate, divided by ε.
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        Ok(self.loss(a, b)? / LaplaceVector::guarantee(self).epsilon())
    }

    fn release(&self, x: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>> {
        Ok(LaplaceVector::release(self, x, rng)?)
    }
}

impl VectorNoise for GaussianVector {
    fn guarantee(&self) -> PrivacyGuarantee {
        GaussianVector::guarantee(self)
    }

    /// The analytic-Gaussian ratio (`fdp_noise::exact_loss::gaussian_loss`): at most 1 iff
    /// (ε, δ)-DP on the pair.
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        Ok(GaussianVector::loss_ratio(self, a, b)?)
    }

    fn release(&self, x: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>> {
        Ok(GaussianVector::release(self, x, rng)?)
    }
}

/// The part `range` of a summary, or a shape error (a summary from the mechanism's own
/// `summarize` always has it).
pub fn part(summary: &[f64], range: Range<usize>) -> Result<&[f64]> {
    let end = range.end;
    summary.get(range).ok_or(Error::Shape { what: "summary length", expected: end, got: summary.len() })
}

/// **A noise law on a range of the summary**: the stage releases `summary[range]` plus `noise`.
/// Taking the slice is a public transformation, so the stage's sensitivity is the slice's and its
/// exact loss is the noise's on the two slices.
#[derive(Debug, Clone, PartialEq)]
pub struct OnSlice<N> {
    range: Range<usize>,
    noise: N,
}

impl<N: VectorNoise> OnSlice<N> {
    /// `noise` on `summary[range]`.
    pub fn new(range: Range<usize>, noise: N) -> Self {
        Self { range, noise }
    }

    /// The noise law.
    pub fn noise(&self) -> &N {
        &self.noise
    }

    /// The part of the summary it reads.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }
}

impl<N: VectorNoise> StageLaw for OnSlice<N> {
    fn guarantee(&self) -> PrivacyGuarantee {
        self.noise.guarantee()
    }

    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        self.noise.loss_ratio(part(a, self.range())?, part(b, self.range())?)
    }
}

impl<N: VectorNoise> StageMechanism for OnSlice<N> {
    type Output = Vec<f64>;

    fn release(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Vec<f64>> {
        self.noise.release(part(summary, self.range())?, rng)
    }
}

/// **The public family of mechanisms an [`Adaptive`] stage chooses from.** Everything here depends
/// on public quantities only: which choices exist, and the member at each (built at the budget the
/// stage passes, never at one of its own).
pub trait Family: Send + Sync {
    /// What selects a member (a bound grid point, a (bound, parameter) pair, ...): a function of the
    /// earlier stages' outputs and public quantities.
    type Choice: Copy + std::fmt::Debug;
    /// The mechanisms of the family.
    type Member: StageMechanism;
    /// Every choice the earlier stages can make.
    fn choices(&self) -> Vec<Self::Choice>;
    /// The member at `choice`, calibrated to `budget`. `Ok(None)`: no mechanism exists at this
    /// choice (a public property, e.g. every component thresholded away); the choice made by the
    /// pipeline never falls on it.
    fn member(&self, choice: Self::Choice, budget: PrivacyGuarantee) -> Result<Option<Self::Member>>;
}

/// **An adaptive stage**: one budget, fixed up front, and a [`Family`] of mechanisms of which a
/// release runs the one its earlier stages chose. Built only if **every** member spends exactly the
/// budget (refused at construction otherwise, before anything is charged), and every member used
/// later is checked again; its exact loss is the worst over the family.
#[derive(Debug, Clone)]
pub struct Adaptive<F> {
    budget: PrivacyGuarantee,
    family: F,
}

impl<F: Family> Adaptive<F> {
    /// The stage at `budget` over `family`: **refused** if the family has no member at all, or a
    /// member fails to build, or one is calibrated to anything but `budget`.
    pub fn new(budget: PrivacyGuarantee, family: F) -> Result<Self> {
        let stage = Self { budget, family };
        let mut members = 0;
        for choice in stage.family.choices() {
            members += usize::from(stage.try_member(choice)?.is_some());
        }
        if members == 0 {
            return Err(Error::BadParameter {
                name: "stage",
                value: ParamValue::Text(format!("{budget:?}")),
                reason: "an adaptive stage needs at least one mechanism it can run",
            });
        }
        Ok(stage)
    }

    /// The family.
    pub fn family(&self) -> &F {
        &self.family
    }

    /// The member at `choice` (`None`: no mechanism at this choice), checked to spend the budget.
    pub fn try_member(&self, choice: F::Choice) -> Result<Option<F::Member>> {
        let Some(member) = self.family.member(choice, self.budget)? else { return Ok(None) };
        let spent = member.guarantee();
        if spent.epsilon() != self.budget.epsilon() || spent.delta() != self.budget.delta() {
            return Err(Error::BadParameter {
                name: "stage member",
                value: ParamValue::Text(format!(
                    "{choice:?}: spends (ε = {}, δ = {}), the stage charges (ε = {}, δ = {})",
                    spent.epsilon(),
                    spent.delta(),
                    self.budget.epsilon(),
                    self.budget.delta()
                )),
                reason: "every mechanism of an adaptive stage must spend exactly the stage's budget",
            });
        }
        Ok(Some(member))
    }

    /// The member at `choice`; an error if there is none (the pipeline chose outside its family).
    pub fn member(&self, choice: F::Choice) -> Result<F::Member> {
        self.try_member(choice)?.ok_or(Error::BadParameter {
            name: "stage choice",
            value: ParamValue::Text(format!("{choice:?}")),
            reason: "has no mechanism in the stage's family",
        })
    }

    /// One release of the member at `choice`.
    pub fn release(
        &self,
        choice: F::Choice,
        summary: &[f64],
        rng: &mut NoiseRng,
        charge: Charge,
    ) -> Result<<F::Member as StageMechanism>::Output> {
        self.member(choice)?.release(summary, rng, charge)
    }
}

impl<F: Family> StageLaw for Adaptive<F> {
    fn guarantee(&self) -> PrivacyGuarantee {
        self.budget
    }

    /// The worst member's ratio: whatever the earlier stages choose, the stage is DP on the pair at
    /// its budget iff this is at most 1. A member's ratio that is not a number `>= 0` is an error
    /// (`max` would drop a NaN and report the pair as within the budget).
    fn loss_ratio(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        let mut worst = 0.0f64;
        for choice in self.family.choices() {
            if let Some(member) = self.try_member(choice)? {
                let ratio = member.loss_ratio(a, b)?;
                if ratio.is_nan() || ratio < 0.0 {
                    return Err(Error::BadParameter {
                        name: "loss_ratio",
                        value: ratio.into(),
                        reason: "a member's exact loss is not a number >= 0: the pair cannot be audited",
                    });
                }
                worst = worst.max(ratio);
            }
        }
        Ok(worst)
    }
}

/// The stages of a pipeline, in the order they run: each named, `None` for a stage that spends
/// nothing in this configuration (e.g. a bound share of 0: the public ceiling is used). Implemented
/// by a struct holding the typed stages, which the pipeline's release reads through
/// [`Sequential::parts`].
pub trait Stages {
    /// `(name, stage)` in order.
    fn each(&self) -> Vec<(&'static str, Option<&dyn StageLaw>)>;
}

/// **Sequential composition of stages** (adaptive: a later stage may be built from earlier
/// stages' outputs). Its charged stages and their total ([`plan`](Self::plan)) and its exact losses
/// ([`exact_losses`](Self::exact_losses)) are read off the stages themselves; it is built only if
/// their guarantees add up to the mechanism's.
#[derive(Debug, Clone)]
pub struct Sequential<S> {
    stages: S,
    plan: StagePlan,
}

impl<S: Stages> Sequential<S> {
    /// The composition of `stages` claiming `total`. **Refused** when a name repeats, nothing is
    /// charged, or the stages' own guarantees do not add up to `total` ([`StagePlan::check`]).
    pub fn new(total: PrivacyGuarantee, stages: S) -> Result<Self> {
        let each = stages.each();
        for (i, (name, _)) in each.iter().enumerate() {
            if each[..i].iter().any(|p| p.0 == *name) {
                return Err(Error::BadParameter {
                    name: "stage",
                    value: ParamValue::Text((*name).into()),
                    reason: "names two stages of one mechanism",
                });
            }
        }
        let charged = each
            .iter()
            .filter_map(|(name, law)| {
                law.map(|law| Stage { name: (*name).into(), guarantee: law.guarantee().under(total.relation()) })
            })
            .collect();
        let plan = StagePlan::check(total, charged)?;
        Ok(Self { stages, plan })
    }

    /// The typed stages (what the release runs).
    pub fn parts(&self) -> &S {
        &self.stages
    }

    /// The charged stages and their total.
    pub fn plan(&self) -> &StagePlan {
        &self.plan
    }

    /// The stages the ledger charges, in order (free stages left out).
    pub fn stages(&self) -> Vec<Stage> {
        self.plan.stages()
    }

    /// The composition's guarantee.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        self.plan.total()
    }

    /// **Each stage's exact loss** between two summaries, as a ratio to its budget, in order; a
    /// free stage releases a public value whatever the data: 0.
    pub fn exact_losses(&self, a: &[f64], b: &[f64]) -> Result<Vec<(&'static str, f64)>> {
        self.stages
            .each()
            .into_iter()
            .map(|(name, law)| Ok((name, law.map_or(Ok(0.0), |law| law.loss_ratio(a, b))?)))
            .collect()
    }
}

/// The stages a mechanism charges, in order, and their total: built only by [`StagePlan::check`],
/// so the stages always add up to the total.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    stages: Vec<Stage>,
    total: PrivacyGuarantee,
}

impl StagePlan {
    /// **The one rule** by which stages are charged for a guarantee (a [`Sequential`] composition
    /// and the [`Session`](crate::Session), for every mechanism it releases): at least one stage,
    /// and the stages' ε and δ add up to the total's, to a relative 1e-12 (the rounding of a sum).
    /// Stages adding up to less would leave part of what the mechanism spends uncharged; more would
    /// charge for a guarantee it does not state.
    pub fn check(total: PrivacyGuarantee, stages: Vec<Stage>) -> Result<Self> {
        let (e, d) = stages.iter().fold((0.0, 0.0), |(e, d), s| (e + s.guarantee.epsilon(), d + s.guarantee.delta()));
        let mismatch = |sum: f64, claimed: f64| sum.is_nan() || (sum - claimed).abs() > 1e-12 * claimed;
        if stages.is_empty() || mismatch(e, total.epsilon()) || mismatch(d, total.delta()) {
            return Err(Error::BadParameter {
                name: "stages",
                value: ParamValue::Number(e),
                reason: "a mechanism's stages must add up to its guarantee (the ledger charges the stages)",
            });
        }
        Ok(Self { stages, total })
    }

    /// `parts` — `(name, ε, δ)`, in the order they are charged — composed sequentially into
    /// `total`: for a pipeline whose stages are numbers rather than stage mechanisms. A part with
    /// ε = δ = 0 spends nothing and is left out of the ledger. **Refused** — before anything is
    /// charged — when a budget is negative or not finite, a δ is given to a stage without ε, a name
    /// repeats, or [`check`](Self::check) refuses the rest. Every charged part becomes a stage
    /// here, or the plan is refused: no stage can drop out of the charge.
    pub fn sequential(total: PrivacyGuarantee, parts: &[(&'static str, f64, f64)]) -> Result<Self> {
        let mut stages = Vec::new();
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
            if e > 0.0 {
                let epsilon = fdp_noise::Epsilon::new(e)?;
                let guarantee = if d > 0.0 {
                    PrivacyGuarantee::approximate(epsilon, fdp_noise::Delta::new(d)?)
                } else {
                    PrivacyGuarantee::pure(epsilon)
                };
                stages.push(Stage { name: name.into(), guarantee: guarantee.under(total.relation()) });
            }
        }
        Self::check(total, stages)
    }

    /// The stages the ledger charges, in order (free stages left out).
    pub fn stages(&self) -> Vec<Stage> {
        self.stages.clone()
    }

    /// The composition's guarantee (what the stages add up to).
    pub fn total(&self) -> PrivacyGuarantee {
        self.total
    }

    /// The ε of stage `name` (0 for a free stage or one the plan does not have).
    pub fn epsilon(&self, name: &str) -> f64 {
        self.stages.iter().find(|s| s.name == name).map_or(0.0, |s| s.guarantee.epsilon())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdp_noise::{Delta, Epsilon, Sensitivity};

    fn pure(e: f64) -> PrivacyGuarantee {
        PrivacyGuarantee::pure(Epsilon::new(e).unwrap())
    }

    fn laplace(dim: usize, e: f64) -> LaplaceVector {
        LaplaceVector::new(dim, Sensitivity::new(1.0).unwrap(), Epsilon::new(e).unwrap()).unwrap()
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
            // A δ of 1 is not a δ: the stage cannot be built, so the plan is refused (the old
            // plan dropped such a stage from `stages()` and kept the rest).
            vec![("bound", 0.5, 1.0), ("release", 0.5, 0.0)],
            vec![],
        ] {
            assert!(StagePlan::sequential(pure(1.0), &parts).is_err(), "{parts:?}");
        }
    }

    /// A family of Laplace mechanisms on `summary[choice..choice + 1]`, one of which is calibrated
    /// to `wrong` instead of the budget it is given, and none at choice 3.
    #[derive(Debug)]
    struct Slices {
        wrong: Option<f64>,
    }

    impl Family for Slices {
        type Choice = usize;
        type Member = OnSlice<LaplaceVector>;

        fn choices(&self) -> Vec<usize> {
            vec![0, 1, 2, 3]
        }

        fn member(&self, choice: usize, budget: PrivacyGuarantee) -> Result<Option<OnSlice<LaplaceVector>>> {
            let e = match (choice, self.wrong) {
                (3, _) => return Ok(None),
                (2, Some(wrong)) => wrong,
                _ => budget.epsilon(),
            };
            Ok(Some(OnSlice::new(choice..choice + 1, laplace(1, e))))
        }
    }

    /// The pipeline's typed stages: a bound that may be free, an adaptive release.
    #[derive(Debug)]
    struct Pipeline {
        bound: Option<OnSlice<LaplaceVector>>,
        release: Adaptive<Slices>,
    }

    impl Stages for Pipeline {
        fn each(&self) -> Vec<(&'static str, Option<&dyn StageLaw>)> {
            vec![("bound", self.bound.as_ref().map(|s| s as &dyn StageLaw)), ("release", Some(&self.release))]
        }
    }

    #[test]
    fn a_stage_whose_members_spend_other_than_its_budget_cannot_be_built() {
        assert!(Adaptive::new(pure(0.75), Slices { wrong: None }).is_ok());
        for wrong in [0.8, 0.75 * (1.0 + f64::EPSILON), 0.5] {
            let refused = Adaptive::new(pure(0.75), Slices { wrong: Some(wrong) }).unwrap_err();
            assert!(refused.to_string().contains("exactly the stage's budget"), "{wrong}: {refused}");
        }
        // A family with nothing to run is refused too.
        struct Empty;
        impl Family for Empty {
            type Choice = usize;
            type Member = OnSlice<LaplaceVector>;
            fn choices(&self) -> Vec<usize> {
                vec![0]
            }
            fn member(&self, _: usize, _: PrivacyGuarantee) -> Result<Option<OnSlice<LaplaceVector>>> {
                Ok(None)
            }
        }
        assert!(Adaptive::new(pure(0.75), Empty).is_err());
    }

    /// A member whose exact loss is not a number fails the audit instead of vanishing in the max.
    #[test]
    fn a_member_s_nan_loss_is_an_error_not_a_pass() {
        struct Lossy(f64);
        impl StageLaw for Lossy {
            fn guarantee(&self) -> PrivacyGuarantee {
                pure(0.75)
            }
            fn loss_ratio(&self, _: &[f64], _: &[f64]) -> Result<f64> {
                Ok(self.0)
            }
        }
        impl StageMechanism for Lossy {
            type Output = ();
            fn release(&self, _: &[f64], _: &mut NoiseRng, _: Charge) -> Result<()> {
                Ok(())
            }
        }
        struct Two(f64);
        impl Family for Two {
            type Choice = usize;
            type Member = Lossy;
            fn choices(&self) -> Vec<usize> {
                vec![0, 1]
            }
            fn member(&self, choice: usize, _: PrivacyGuarantee) -> Result<Option<Lossy>> {
                Ok(Some(Lossy(if choice == 0 { self.0 } else { 0.5 })))
            }
        }
        let audit = |first: f64| Adaptive::new(pure(0.75), Two(first)).unwrap().loss_ratio(&[0.0], &[1.0]);
        assert_eq!(audit(0.25).unwrap(), 0.5);
        assert_eq!(audit(0.9).unwrap(), 0.9);
        for bad in [f64::NAN, -0.1] {
            assert!(audit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_composition_derives_its_stages_guarantee_and_losses_from_its_parts() {
        let release = Adaptive::new(pure(0.75), Slices { wrong: None }).unwrap();
        let pipeline = Pipeline { bound: Some(OnSlice::new(0..1, laplace(1, 0.25))), release };
        let composed = Sequential::new(pure(1.0), pipeline).unwrap();
        let names: Vec<String> = composed.stages().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["bound", "release"]);
        assert_eq!(composed.guarantee(), pure(1.0));
        assert_eq!(composed.plan().epsilon("bound"), 0.25);
        // The release's loss is its worst member's: summaries that differ by 1 in one coordinate.
        let (a, b) = ([0.0; 4], [0.0, 0.0, 1.0, 0.0]);
        let losses = composed.exact_losses(&a, &b).unwrap();
        assert_eq!(losses[0], ("bound", 0.0));
        assert!(losses[1].1 > 0.9 && losses[1].1 <= 1.0, "{losses:?}");
        // Each stage's release is its own noise on its own slice.
        let mut rng = NoiseRng::seeded(1);
        let summary = [0.0, 10.0, 20.0, 30.0];
        let x = composed.parts().release.release(2, &summary, &mut rng, Charge::unaccounted()).unwrap();
        assert_eq!(x.len(), 1);
        assert!(composed.parts().release.release(3, &summary, &mut rng, Charge::unaccounted()).is_err());
        // A free bound: the release alone must carry the total.
        let release = Adaptive::new(pure(0.75), Slices { wrong: None }).unwrap();
        let free = Sequential::new(pure(0.75), Pipeline { bound: None, release }).unwrap();
        assert_eq!(free.stages().len(), 1);
        assert_eq!(free.exact_losses(&a, &b).unwrap()[0], ("bound", 0.0));
    }

    /// The old bug: a stage whose budget could not be built silently dropped out of `stages()`
    /// while the release still spent it. A composition whose stages do not add up to the claimed
    /// guarantee — a stage missing, or spending more — cannot be built at all.
    #[test]
    fn a_composition_that_does_not_add_up_cannot_be_built() {
        let stages = |bound: f64| Pipeline {
            bound: Some(OnSlice::new(0..1, laplace(1, bound))),
            release: Adaptive::new(pure(0.75), Slices { wrong: None }).unwrap(),
        };
        assert!(Sequential::new(pure(1.0), stages(0.25)).is_ok());
        for bound in [0.2, 0.3] {
            let refused = Sequential::new(pure(1.0), stages(bound)).unwrap_err();
            assert!(refused.to_string().contains("stages must add up to its guarantee"), "{refused}");
        }
        let release = Adaptive::new(pure(0.75), Slices { wrong: None }).unwrap();
        assert!(Sequential::new(pure(1.0), Pipeline { bound: None, release }).is_err());
    }
}
