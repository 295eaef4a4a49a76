//! The [`Mechanism`] trait every private release goes through, the [`Accuracy`] preview, and the
//! [`PerUnit`] wrapper that states a mechanism's privacy unit.

use serde::{Deserialize, Serialize};

use fdp_noise::{NoiseRng, PrivacyGuarantee};

use crate::error::Result;
use crate::release::{PrivacyUnit, Release, ReleaseMetadata};
use crate::state::{MergeableMechanism, SummaryState};

/// A differentially private mechanism on inputs of type `D` (curves, points, labelled points, ...).
///
/// `summarize` is the deterministic part (clip, average, regularise, fit) and must be **total**: a
/// record that cannot be used becomes a public default, never an error or a non-finite number.
/// `privatize` adds the calibrated noise and builds the release. Splitting them lets audits and
/// Monte Carlo studies compute a summary once and draw many releases from it; a
/// [`Session`](crate::Session) calls [`release`](Self::release) after charging the budget.
///
/// **Noise is added only under a [`Charge`].** `privatize` and `release` take one: a
/// [`Session`](crate::Session) makes it after charging the ledger (the only way to make an
/// accounted one), and a pipeline hands its own on to the mechanisms it composes. Everything else
/// — audits, exact-loss tests, Monte Carlo studies, the paper reproductions — passes
/// [`Charge::unaccounted()`], which spends no budget and writes no ledger entry: every release
/// that bypasses the ledger names itself at its call site. A release meant for publication goes
/// through [`Session::release`](crate::Session::release) (or `fdp::registry::Built::release`,
/// which has no other path); the command line, Python, R and Spark only ever release that way.
pub trait Mechanism<D: ?Sized>: Send + Sync {
    /// What a release holds: a curve (`fdp_functional::Curve`), a
    /// [`WeightedSample`](crate::WeightedSample), a
    /// [`Sketch`](crate::Sketch), a [`Coefficients`](crate::Coefficients) vector, or your own.
    type Output: crate::Output;
    /// Short name (`iclp_rkhs`, `iclp_kde`, `balog_alg1`, ...).
    fn name(&self) -> &'static str;
    /// The public n the mechanism was built for (replace-one neighbours); `None` under add/remove.
    fn n(&self) -> Option<usize>;
    /// The privacy guarantee of one release.
    fn guarantee(&self) -> PrivacyGuarantee;
    /// The summary before noise (the numbers the noise is added to).
    fn summarize(&self, data: &D) -> Result<Vec<f64>>;
    /// One private release of a summary, under `charge` (see [`Charge`]).
    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Release<Self::Output>>;
    /// The accuracy preview: the noise's expected squared error, from public quantities only.
    fn accuracy(&self) -> Accuracy;
    /// `summarize` then `privatize`, under `charge` (see [`Charge`]).
    fn release(&self, data: &D, rng: &mut NoiseRng, charge: Charge) -> Result<Release<Self::Output>> {
        let summary = self.summarize(data)?;
        self.privatize(&summary, rng, charge)
    }
    /// The parts of the guarantee charged one after another (sequential composition): one stage by
    /// default; a pipeline that first spends on a private clipping bound or a pilot lists each, and
    /// their (ε, δ) add up to [`guarantee`](Self::guarantee). A [`Session`](crate::Session) writes
    /// one ledger entry per stage.
    fn stages(&self) -> Vec<Stage> {
        vec![Stage { name: "release".into(), guarantee: self.guarantee() }]
    }
    /// Who the guarantee protects: one record by default; [`PerUnit`] states another unit (the
    /// records are then one person's combined contribution each). A session can read it before
    /// charging, a release records it in [`ReleaseMetadata::privacy_unit`].
    fn privacy_unit(&self) -> PrivacyUnit {
        PrivacyUnit::Record
    }

    /// **The exact privacy loss of each stage** between the summaries `a` and `b` of two
    /// neighbouring datasets, **as a ratio to the stage's budget** (maximised over whatever earlier
    /// stages could have chosen), computed from the lattice points the releases are centred at and
    /// the noise's own law (`fdp_noise::exact_loss`) — not from the mechanism's sensitivity bound.
    /// The release is DP on the pair at its guarantee iff every ratio is at most 1 (sequential
    /// composition over the stages). `None`: the mechanism states no exact-loss law; the registry's
    /// edge suite (`fdp::registry::edges`) refuses such a mechanism, so every registered one has one.
    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        let _ = (a, b);
        None
    }
}

/// Who pays for a release: the argument without which [`Mechanism::privatize`] and
/// [`Mechanism::release`] add no noise.
///
/// Only a [`Session`](crate::Session) makes an **accounted** charge, after it has checked and
/// charged every stage of the mechanism to its budget and ledger; a pipeline that composes other
/// mechanisms (a tuned mean's candidates, a per-unit wrapper) hands its own charge on to them. The
/// one other constructor is [`Charge::unaccounted`]: the marked path of audits, exact-loss tests,
/// Monte Carlo studies and paper reproductions, where nothing is published. Outside the crate
/// family there is no way to release without a session that does not say so at its call site
/// (`grep Charge::unaccounted` lists every one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    accounted: bool,
}

impl Charge {
    /// The charge of a session that has spent the mechanism's guarantee (crate-private).
    pub(crate) const fn session() -> Self {
        Self { accounted: true }
    }

    /// **No budget spent, no ledger entry**: for audits, exact-loss tests, Monte Carlo studies and
    /// reproductions, never for a release that is published.
    pub const fn unaccounted() -> Self {
        Self { accounted: false }
    }
}

/// A mechanism whose records are each one privacy unit's combined contribution — e.g. one
/// person's mean curve, from `fdp_data::CurveSet::per_person` — released exactly as `mechanism`
/// with the unit recorded in every release's metadata and given by [`Mechanism::privacy_unit`].
///
/// **Sensitivity.** The inner mechanism's guarantee is for replace-one neighbours of its input with
/// n public. If the input holds one record per person (n = the number of persons, public), a
/// dataset that differs in every row of one person — any number of rows, any contents, NaN or
/// ±f64::MAX included — yields grouped inputs that differ in that person's one record, so the
/// release is ε-DP with respect to persons, with the inner mechanism's own sensitivity (it clips
/// the combined record, not the rows). Wrapping changes nothing else: same summary, same noise,
/// bit for bit at a fixed seed. Grouping the rows is the caller's part; passing rows of the same
/// person as separate records voids the person-level claim (the front doors group for you).
#[derive(Debug, Clone)]
pub struct PerUnit<M> {
    mechanism: M,
    unit: PrivacyUnit,
}

impl<M> PerUnit<M> {
    /// `mechanism`, protecting `unit`; its input must hold one record per unit.
    pub fn new(mechanism: M, unit: PrivacyUnit) -> Self {
        Self { mechanism, unit }
    }

    /// The wrapped mechanism.
    pub fn inner(&self) -> &M {
        &self.mechanism
    }

    /// The privacy unit.
    pub fn unit(&self) -> &PrivacyUnit {
        &self.unit
    }
}

impl<D: ?Sized, M: Mechanism<D>> Mechanism<D> for PerUnit<M> {
    type Output = M::Output;

    fn name(&self) -> &'static str {
        self.mechanism.name()
    }

    fn n(&self) -> Option<usize> {
        self.mechanism.n()
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.mechanism.guarantee()
    }

    fn summarize(&self, data: &D) -> Result<Vec<f64>> {
        self.mechanism.summarize(data)
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Release<Self::Output>> {
        let (output, metadata) = self.mechanism.privatize(summary, rng, charge)?.into_parts();
        Ok(Release::new(output, ReleaseMetadata { privacy_unit: self.unit.clone(), ..metadata }))
    }

    fn accuracy(&self) -> Accuracy {
        self.mechanism.accuracy()
    }

    fn stages(&self) -> Vec<Stage> {
        self.mechanism.stages()
    }

    fn privacy_unit(&self) -> PrivacyUnit {
        self.unit.clone()
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        self.mechanism.exact_losses(a, b)
    }
}

impl<D: ?Sized, M: MergeableMechanism<D>> MergeableMechanism<D> for PerUnit<M> {
    fn empty_state(&self) -> SummaryState {
        self.mechanism.empty_state()
    }

    fn update_state(&self, state: &mut SummaryState, part: &D) -> Result<()> {
        self.mechanism.update_state(state, part)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        self.mechanism.state_summary(state)
    }
}

/// One charged part of a mechanism's guarantee (see [`Mechanism::stages`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// `bound`, `pilot`, `release`, ...
    pub name: String,
    /// What this stage costs.
    pub guarantee: PrivacyGuarantee,
}

/// What the noise costs in accuracy, computed before any data are touched: the expected squared
/// error `E||released - summary||²` in the output's own norm (L2 on the grid for curves), and where
/// the components are independent with known moments its standard deviation, for a (1 - α) bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// `E||noise||²`.
    pub expected_sq_error: f64,
    /// `sd(||noise||²)` where known (independent components in an orthonormal basis).
    pub sq_error_sd: Option<f64>,
    /// `expected_sq_error` is an **upper bound** on the release's expected squared error (a worst
    /// case the mechanism cannot exceed as it runs), not an estimate of it: use it to rule a
    /// mechanism out, not to rank mechanisms that may do much better. (Issue 23: the privately
    /// tuned means preview the noise at the public ceiling before any shrinkage, 2-300x their
    /// realised error.)
    #[serde(default)]
    pub upper_bound: bool,
}

impl Accuracy {
    /// From independent noise components of variances `v_k` and fourth-moment ratios
    /// `E e⁴ / (E e²)²` (6 for Laplace, 3 for Gaussian) in an orthonormal basis:
    /// `E||e||² = Σ v_k`, `Var ||e||² = Σ (ratio_k - 1) v_k²`.
    pub fn independent(variances: &[f64], kurtosis: f64) -> Self {
        let expected = variances.iter().sum();
        let var: f64 = variances.iter().map(|v| (kurtosis - 1.0) * v * v).sum();
        Self { expected_sq_error: expected, sq_error_sd: Some(var.sqrt()), upper_bound: false }
    }

    /// Only the mean is known (e.g. a non-orthogonal representation).
    pub fn expected(expected_sq_error: f64) -> Self {
        Self { expected_sq_error, sq_error_sd: None, upper_bound: false }
    }

    /// An upper bound on the expected squared error, labelled as one (see [`Accuracy::upper_bound`]).
    pub fn at_most(bound: f64) -> Self {
        Self { expected_sq_error: bound, sq_error_sd: None, upper_bound: true }
    }

    /// A level-(1 - α) upper bound on `||noise||²`: Cantelli's `μ + s sqrt((1 - α)/α)` when the sd
    /// is known, else Markov's `μ / α`. Both hold for any distribution with those moments.
    ///
    /// ```
    /// use fdp_core::Accuracy;
    /// let a = Accuracy::independent(&[0.5, 0.25], 6.0);
    /// assert!((a.expected_sq_error - 0.75).abs() < 1e-15);
    /// assert!(a.bound(0.05) > a.expected_sq_error && a.bound(0.05) < Accuracy::expected(0.75).bound(0.05));
    /// ```
    pub fn bound(&self, alpha: f64) -> f64 {
        let alpha = alpha.clamp(f64::MIN_POSITIVE, 1.0);
        match self.sq_error_sd {
            Some(sd) => self.expected_sq_error + sd * ((1.0 - alpha) / alpha).sqrt(),
            None => self.expected_sq_error / alpha,
        }
    }
}
