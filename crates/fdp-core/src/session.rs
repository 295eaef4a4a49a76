//! The [`Session`]: the privacy unit, the total budget, the randomness, and a ledger of everything
//! released from one dataset.
//!
//! **Composition.** Releases on the same data compose sequentially: mechanisms that are
//! `(ε_i, δ_i)`-DP under the same neighbour relation are together `(Σ ε_i, Σ δ_i)`-DP (Dwork & Roth,
//! Theorem 3.16). The session refuses, before touching the data, any release that would take the
//! sums past its budget, so ten releases at ε = 0.1 exhaust a budget of 1 and an eleventh is refused.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use fdp_noise::{Delta, Epsilon, NeighbourRelation, NoiseRng, PrivacyBudget, PrivacyGuarantee, RngProvenance};

use crate::error::{Error, Result};
use crate::mechanism::Mechanism;
use crate::release::{Output, Release};
use crate::state::{MergeableMechanism, SummaryState};

/// One charged release (or tuning stage) in a session's ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Position in the ledger, from 0.
    pub index: usize,
    /// The mechanism's name.
    pub mechanism: String,
    /// What was charged.
    pub epsilon: f64,
    pub delta: f64,
    /// What was released, e.g. `curve on 100 grid points (12 coefficients)`.
    pub released: String,
    /// Where the noise came from.
    pub rng: RngProvenance,
    /// Seconds since the Unix epoch when it was charged.
    pub unix_time_s: u64,
}

/// What a session serialises to: everything but the random stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Ledger {
    relation: NeighbourRelation,
    budget: PrivacyBudget,
    entries: Vec<LedgerEntry>,
}

/// A privacy session over one dataset: every release goes through [`Session::release`], is charged
/// to the total budget by sequential composition, and is written to the ledger.
///
/// ```
/// use fdp_core::Session;
/// use fdp_noise::{Epsilon, NeighbourRelation};
/// let session = Session::new(NeighbourRelation::ReplaceOne, Epsilon::new(1.0)?, None)?;
/// assert_eq!(session.remaining(), (1.0, 0.0));
/// let restored = Session::from_json(&session.to_json()?)?;   // continue in a later run
/// assert_eq!(restored.ledger(), session.ledger());
/// # Ok::<(), fdp_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Session {
    ledger: Ledger,
    rng: NoiseRng,
}

impl Session {
    /// A session protecting `relation` neighbours with a total budget `(ε, δ)` (`None`: pure DP
    /// only), drawing its noise from the operating system's CSPRNG.
    pub fn new(relation: NeighbourRelation, epsilon: Epsilon, delta: Option<Delta>) -> Result<Self> {
        let budget = PrivacyBudget::new(epsilon.get(), delta.map_or(0.0, Delta::get))?;
        Ok(Self { ledger: Ledger { relation, budget, entries: Vec::new() }, rng: NoiseRng::from_os()? })
    }

    /// The common case: replace-one neighbours (n public) and a pure ε budget.
    pub fn pure(epsilon: Epsilon) -> Result<Self> {
        Self::new(NeighbourRelation::ReplaceOne, epsilon, None)
    }

    /// Draws the noise from a fixed seed instead (experiments and tests only: anyone who knows the
    /// seed can remove the noise). Recorded in every release and ledger entry.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.rng = NoiseRng::seeded(seed);
        self
    }

    /// The privacy unit.
    pub fn relation(&self) -> NeighbourRelation {
        self.ledger.relation
    }

    /// What is left, `(ε, δ)`.
    pub fn remaining(&self) -> (f64, f64) {
        self.ledger.budget.remaining()
    }

    /// What has been spent, `(ε, δ)`.
    pub fn spent(&self) -> (f64, f64) {
        self.ledger.budget.spent()
    }

    /// Every charge so far, in order.
    pub fn ledger(&self) -> &[LedgerEntry] {
        &self.ledger.entries
    }

    /// Charges `guarantee` for `what` (a release or a tuning stage), or refuses if it would overspend
    /// or protects another unit. Nothing is charged on refusal.
    pub fn charge(&mut self, mechanism: &str, guarantee: PrivacyGuarantee, released: String) -> Result<()> {
        if guarantee.relation() != self.ledger.relation {
            return Err(Error::WrongRelation {
                mechanism: mechanism.into(),
                expected: self.ledger.relation,
                got: guarantee.relation(),
            });
        }
        let epsilon = Epsilon::new(guarantee.epsilon())?;
        let delta = if guarantee.delta() > 0.0 { Some(Delta::new(guarantee.delta())?) } else { None };
        self.ledger.budget.spend(epsilon, delta).map_err(|_| {
            let (remaining_epsilon, remaining_delta) = self.remaining();
            let (spent_epsilon, spent_delta) = self.spent();
            Error::BudgetExceeded {
                spent_epsilon,
                spent_delta,
                mechanism: mechanism.into(),
                epsilon: guarantee.epsilon(),
                delta: guarantee.delta(),
                remaining_epsilon,
                remaining_delta,
            }
        })?;
        let unix_time_s = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let index = self.ledger.entries.len();
        let rng = self.rng.provenance();
        self.ledger.entries.push(LedgerEntry {
            index,
            mechanism: mechanism.into(),
            epsilon: guarantee.epsilon(),
            delta: guarantee.delta(),
            released,
            rng,
            unix_time_s,
        });
        Ok(())
    }

    /// Releases `mechanism` on `data`: the budget is checked and charged **before** the data are
    /// touched (a refused release computes nothing), then the release is made with the session's
    /// random stream. A multi-stage mechanism (see [`Mechanism::stages`]) is charged as a whole or
    /// not at all, with one ledger entry per stage. If the mechanism then fails on a shape error, the
    /// charge stands — spending is decided by the request, not by the data.
    pub fn release<D: ?Sized, M: Mechanism<D> + ?Sized>(
        &mut self,
        mechanism: &M,
        data: &D,
    ) -> Result<Release<M::Output>> {
        let first = self.charge_stages(mechanism)?;
        let release = mechanism.release(data, &mut self.rng)?;
        self.describe_release(first, mechanism.stages().len(), &release);
        Ok(release)
    }

    /// Releases `mechanism` from a complete [`SummaryState`] (every record's clipped contribution,
    /// summed in parts — e.g. on a cluster — and merged): charged exactly like
    /// [`release`](Self::release), and the same release at a fixed seed. A state from another
    /// mechanism, or with another number of records than the public n, is refused before anything
    /// is charged.
    pub fn release_state<D: ?Sized, M: MergeableMechanism<D> + ?Sized>(
        &mut self,
        mechanism: &M,
        state: &SummaryState,
    ) -> Result<Release<M::Output>> {
        crate::state::check_state_layout(state, &mechanism.empty_state(), mechanism.n())?;
        let first = self.charge_stages(mechanism)?;
        let summary = mechanism.state_summary(state)?;
        let release = mechanism.privatize(&summary, &mut self.rng)?;
        self.describe_release(first, mechanism.stages().len(), &release);
        Ok(release)
    }

    /// Checks that the whole pipeline of `mechanism` fits the budget, then charges each stage;
    /// returns the ledger index of the first entry.
    fn charge_stages<D: ?Sized, M: Mechanism<D> + ?Sized>(&mut self, mechanism: &M) -> Result<usize> {
        let stages = mechanism.stages();
        let guarantee = mechanism.guarantee();
        let (epsilon, delta) =
            stages.iter().fold((0.0, 0.0), |(e, d), s| (e + s.guarantee.epsilon(), d + s.guarantee.delta()));
        if stages.is_empty()
            || epsilon > guarantee.epsilon() * (1.0 + 1e-12)
            || delta > guarantee.delta() * (1.0 + 1e-12)
        {
            return Err(Error::BadParameter {
                name: "stages",
                value: epsilon,
                reason: "a mechanism's stages must add up to (at most) its guarantee",
            });
        }
        // The whole pipeline must fit before any stage is charged.
        let mut trial = self.ledger.budget.clone();
        for stage in &stages {
            let e = Epsilon::new(stage.guarantee.epsilon())?;
            let d = if stage.guarantee.delta() > 0.0 { Some(Delta::new(stage.guarantee.delta())?) } else { None };
            if trial.spend(e, d).is_err() {
                let (remaining_epsilon, remaining_delta) = self.remaining();
                let (spent_epsilon, spent_delta) = self.spent();
                return Err(Error::BudgetExceeded {
                    spent_epsilon,
                    spent_delta,
                    mechanism: mechanism.name().into(),
                    epsilon,
                    delta,
                    remaining_epsilon,
                    remaining_delta,
                });
            }
        }
        let first = self.ledger.entries.len();
        for stage in &stages {
            let released = format!("{} stage of {}", stage.name, mechanism.name());
            self.charge(mechanism.name(), stage.guarantee, released)?;
        }
        Ok(first)
    }

    /// Fills the ledger entries from `first` with what each stage released.
    fn describe_release<O: Output>(&mut self, first: usize, stages: usize, release: &Release<O>) {
        let records = &release.metadata().stages;
        for (i, entry) in self.ledger.entries[first..].iter_mut().enumerate() {
            entry.released = match records.get(i) {
                Some(record) if stages > 1 => format!("{}: {}", record.stage, record.outcome),
                _ => release.output().describe(),
            };
        }
    }

    /// The ledger (relation, budget, entries) as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(&self.ledger).map_err(|e| Error::Json(e.to_string()))
    }

    /// A session continued from its JSON ledger; its noise comes from the operating system.
    pub fn from_json(json: &str) -> Result<Self> {
        let ledger: Ledger = serde_json::from_str(json).map_err(|e| Error::Json(e.to_string()))?;
        Ok(Self { ledger, rng: NoiseRng::from_os()? })
    }

    /// Writes the ledger to `path`.
    pub fn save(&self, path: &std::path::Path) -> Result<()> {
        std::fs::write(path, self.to_json()?).map_err(|e| Error::Write(format!("{}: {e}", path.display())))
    }

    /// Continues a session from the ledger at `path`.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let json =
            std::fs::read_to_string(path).map_err(|e| Error::Write(format!("reading {}: {e}", path.display())))?;
        Self::from_json(&json)
    }
}
