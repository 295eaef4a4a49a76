//! The [`Session`]: the privacy unit, the total budget, the randomness, and a ledger of everything
//! released from one dataset.
//!
//! **Composition.** Releases on the same data compose sequentially: mechanisms that are
//! `(ε_i, δ_i)`-DP under the same neighbour relation are together `(Σ ε_i, Σ δ_i)`-DP (Dwork & Roth,
//! Theorem 3.16). The session refuses, before touching the data, any release that would take the
//! sums past its budget, so ten releases at ε = 0.1 exhaust a budget of 1 and an eleventh is refused.
//!
//! **A ledger that cannot be quietly rewritten.** The ledger's JSON is a hash chain: the genesis
//! hash commits to the neighbour relation, the total budget, the creation time and a random nonce;
//! each entry's hash is SHA-256 of the previous hash and the entry's fields. Loading recomputes the
//! chain and *replays* every entry through a fresh budget, so the total spent is derived from the
//! entries, never trusted from the file: a lowered, deleted, reordered or edited entry, a raised
//! budget, an edited total, a negative or non-finite ε, a δ outside `[0, 1)` or entries that
//! overspend are refused with [`Error::LedgerInvalid`]. The chain has no secret key: whoever can
//! write the file can also recompute a whole new chain (for instance with a smaller budget spent),
//! so it detects every *partial* edit and fixes the budget at creation, but the file must still be
//! kept where only the curator can write it; [`Session::head`] is the hash to record elsewhere
//! (a release's report prints it) so that a rewritten history no longer matches what was published.
//!
//! **Concurrent processes.** [`LedgerFile::open`] takes an exclusive lock on `<ledger>.lock`, loads
//! (or creates) the ledger, and [`LedgerFile::commit`] writes it atomically (a temporary file in the
//! same directory, `fsync`, `rename`); the lock is held from the load to the end of the commit, so
//! N processes releasing against one ledger file never overspend and never lose an entry.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use fdp_noise::{Delta, Epsilon, NeighbourRelation, NoiseRng, PrivacyBudget, PrivacyGuarantee, RngProvenance};

use crate::error::{Error, Result};
use crate::mechanism::{Charge, Mechanism, Stage};
use crate::release::{Output, PrivacyUnit, Release};
use crate::stages::StagePlan;
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
    /// Who the charge protects (the mechanism's privacy unit).
    pub unit: PrivacyUnit,
    /// SHA-256 (hex) of the previous entry's hash (the genesis hash for the first entry) and of this
    /// entry's other fields: the link of the ledger's hash chain.
    pub hash: String,
}

/// The ledger format this fdp writes and reads (1 was the unchained ledger of fdp <= 0.1 sessions 1-6).
const LEDGER_FORMAT: u32 = 2;

/// What a session serialises to: everything but the random stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Ledger {
    format: u32,
    relation: NeighbourRelation,
    /// The total budget (fixed at creation) and what has been spent (derived from the entries).
    budget: PrivacyBudget,
    /// When the ledger was created (seconds since the Unix epoch).
    created_unix_s: u64,
    /// 128 random bits (hex) drawn at creation: this ledger's chain is its own.
    nonce: String,
    /// SHA-256 (hex) of the relation, the total budget, the creation time and the nonce.
    genesis: String,
    entries: Vec<LedgerEntry>,
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A length-prefixed field, so that no two different field sequences hash the same bytes.
fn absorb(hasher: &mut Sha256, field: &[u8]) {
    hasher.update((field.len() as u64).to_le_bytes());
    hasher.update(field);
}

/// A value's canonical JSON (serde_json writes struct fields in declaration order).
fn canonical<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Json(e.to_string()))
}

impl Ledger {
    /// A new ledger with a fresh nonce and its genesis hash.
    fn new(relation: NeighbourRelation, budget: PrivacyBudget) -> Result<Self> {
        let nonce = hex(&rand::random::<[u8; 16]>());
        let created_unix_s = now_unix_s();
        let mut ledger = Self {
            format: LEDGER_FORMAT,
            relation,
            budget,
            created_unix_s,
            nonce,
            genesis: String::new(),
            entries: vec![],
        };
        ledger.genesis = ledger.genesis_hash()?;
        Ok(ledger)
    }

    /// SHA-256 of everything fixed at creation: relation, total (ε, δ), creation time, nonce.
    fn genesis_hash(&self) -> Result<String> {
        let mut h = Sha256::new();
        absorb(&mut h, b"fdp ledger genesis v2");
        absorb(&mut h, &canonical(&self.relation)?);
        let (epsilon, delta) = self.budget.total();
        absorb(&mut h, &epsilon.to_bits().to_le_bytes());
        absorb(&mut h, &delta.to_bits().to_le_bytes());
        absorb(&mut h, &self.created_unix_s.to_le_bytes());
        absorb(&mut h, self.nonce.as_bytes());
        Ok(hex(&h.finalize()))
    }

    /// SHA-256 of the previous link and every field of `entry` but its own hash.
    fn entry_hash(previous: &str, entry: &LedgerEntry) -> Result<String> {
        let mut h = Sha256::new();
        absorb(&mut h, b"fdp ledger entry v2");
        absorb(&mut h, previous.as_bytes());
        absorb(&mut h, &(entry.index as u64).to_le_bytes());
        absorb(&mut h, entry.mechanism.as_bytes());
        absorb(&mut h, &entry.epsilon.to_bits().to_le_bytes());
        absorb(&mut h, &entry.delta.to_bits().to_le_bytes());
        absorb(&mut h, entry.released.as_bytes());
        absorb(&mut h, &canonical(&entry.rng)?);
        absorb(&mut h, &entry.unix_time_s.to_le_bytes());
        absorb(&mut h, &canonical(&entry.unit)?);
        Ok(hex(&h.finalize()))
    }

    /// The hash of the last link (the genesis hash while there is no entry).
    fn head(&self) -> &str {
        self.entries.last().map_or(self.genesis.as_str(), |e| e.hash.as_str())
    }

    /// Recomputes the links from entry `first` on (after their descriptions were filled in).
    fn rechain_from(&mut self, first: usize) -> Result<()> {
        for i in first..self.entries.len() {
            let previous = if i == 0 { self.genesis.clone() } else { self.entries[i - 1].hash.clone() };
            self.entries[i].hash = Self::entry_hash(&previous, &self.entries[i])?;
        }
        Ok(())
    }

    /// Verifies the chain and replays every entry through a fresh budget of the same total: the
    /// spent totals are derived, and must equal the stored ones.
    fn verified(self) -> Result<Self> {
        let bad = |what: String| Error::LedgerInvalid { what };
        if self.format != LEDGER_FORMAT {
            return Err(bad(format!("format {} (this fdp reads format {LEDGER_FORMAT})", self.format)));
        }
        let (epsilon, delta) = self.budget.total();
        let mut replay = PrivacyBudget::new(epsilon, delta)
            .map_err(|e| bad(format!("its total budget (ε = {epsilon}, δ = {delta}) is not a budget: {e}")))?;
        if self.genesis_hash()? != self.genesis {
            return Err(bad(
                "its relation, total budget, creation time or nonce differ from those its chain was created with"
                    .into(),
            ));
        }
        let mut previous = self.genesis.clone();
        for (i, entry) in self.entries.iter().enumerate() {
            if entry.index != i {
                return Err(bad(format!(
                    "entry {i} carries index {} (entries were removed or reordered)",
                    entry.index
                )));
            }
            if Self::entry_hash(&previous, entry)? != entry.hash {
                return Err(bad(format!(
                    "entry {i} ({}) does not match the hash chain: it, or an entry before it, was edited, removed or reordered",
                    entry.mechanism
                )));
            }
            let e = Epsilon::new(entry.epsilon).map_err(|_| bad(format!("entry {i} charges ε = {}", entry.epsilon)))?;
            let d = if entry.delta == 0.0 {
                None
            } else {
                Some(Delta::new(entry.delta).map_err(|_| bad(format!("entry {i} charges δ = {}", entry.delta)))?)
            };
            replay.spend(e, d).map_err(|_| bad(format!("the entries overspend the budget from entry {i} on")))?;
            previous.clone_from(&entry.hash);
        }
        if replay.spent() != self.budget.spent() {
            let ((e, d), (re, rd)) = (self.budget.spent(), replay.spent());
            return Err(bad(format!(
                "it states (ε = {e}, δ = {d}) spent, but its entries add up to (ε = {re}, δ = {rd})"
            )));
        }
        Ok(Self { budget: replay, ..self })
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn now_unix_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
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
        Ok(Self { ledger: Ledger::new(relation, budget)?, rng: NoiseRng::from_os()? })
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

    /// The total budget `(ε, δ)`, fixed when the ledger was created.
    pub fn budget(&self) -> (f64, f64) {
        self.ledger.budget.total()
    }

    /// The hash of the ledger's last link (hex SHA-256): it commits to the budget and to every
    /// charge so far, in order. Record it where the ledger file cannot reach (a published report
    /// prints it) and any later rewrite of this history stops matching it.
    pub fn head(&self) -> &str {
        self.ledger.head()
    }

    /// Charges `guarantee` for `what` (a release or a tuning stage), or refuses if it would overspend
    /// or protects another unit. Nothing is charged on refusal.
    pub fn charge(&mut self, mechanism: &str, guarantee: PrivacyGuarantee, released: String) -> Result<()> {
        self.charge_for(mechanism, guarantee, released, PrivacyUnit::Record)
    }

    /// [`charge`](Self::charge) for a mechanism protecting `unit`.
    fn charge_for(
        &mut self,
        mechanism: &str,
        guarantee: PrivacyGuarantee,
        released: String,
        unit: PrivacyUnit,
    ) -> Result<()> {
        if guarantee.relation() != self.ledger.relation {
            return Err(Error::WrongRelation {
                mechanism: mechanism.into(),
                expected: self.ledger.relation,
                got: guarantee.relation(),
            });
        }
        if let Some(first) = self.ledger.entries.first()
            && first.unit != unit
        {
            return Err(Error::WrongUnit { mechanism: mechanism.into(), expected: first.unit.clone(), got: unit });
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
        let index = self.ledger.entries.len();
        self.ledger.entries.push(LedgerEntry {
            index,
            mechanism: mechanism.into(),
            epsilon: guarantee.epsilon(),
            delta: guarantee.delta(),
            released,
            rng: self.rng.provenance(),
            unix_time_s: now_unix_s(),
            unit,
            hash: String::new(),
        });
        self.ledger.rechain_from(index)
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
        let release = mechanism.release(data, &mut self.rng, Charge::session())?;
        self.describe_release(first, &mechanism.stages(), &release)?;
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
        let release = mechanism.privatize(&summary, &mut self.rng, Charge::session())?;
        self.describe_release(first, &mechanism.stages(), &release)?;
        Ok(release)
    }

    /// Checks that the whole pipeline of `mechanism` fits the budget, then charges each stage;
    /// returns the ledger index of the first entry.
    fn charge_stages<D: ?Sized, M: Mechanism<D> + ?Sized>(&mut self, mechanism: &M) -> Result<usize> {
        // The ledger charges the stages; the release claims the guarantee: the one rule by which
        // stages are charged for a guarantee (a `Sequential` composition is built by it, so a
        // composed mechanism passes by construction; any other is checked here).
        let stages = StagePlan::check(mechanism.guarantee(), mechanism.stages())?.stages();
        let (epsilon, delta) =
            stages.iter().fold((0.0, 0.0), |(e, d), s| (e + s.guarantee.epsilon(), d + s.guarantee.delta()));
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
            self.charge_for(mechanism.name(), stage.guarantee, released, mechanism.privacy_unit())?;
        }
        Ok(first)
    }

    /// Fills the ledger entries from `first` (one per charged stage, in order) with what each stage
    /// released, and re-links them. A charged stage is paired with the next record of the release's
    /// stages **of the same name** (the records also hold free post-processing steps, ε = 0, such as
    /// `family` or `tuning`, which take no ledger entry); a single-stage mechanism, or a stage the
    /// release does not record, is described by the output.
    fn describe_release<O: Output>(&mut self, first: usize, stages: &[Stage], release: &Release<O>) -> Result<()> {
        let records = &release.metadata().stages;
        let mut next = 0;
        for (entry, stage) in self.ledger.entries[first..].iter_mut().zip(stages) {
            let found = records[next.min(records.len())..].iter().position(|r| r.stage == stage.name).map(|i| next + i);
            entry.released = match found {
                Some(i) if stages.len() > 1 => {
                    next = i + 1;
                    format!("{}: {}", records[i].stage, records[i].outcome)
                }
                _ => release.output().describe(),
            };
        }
        self.ledger.rechain_from(first)
    }

    /// The ledger (relation, budget, entries) as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(&self.ledger).map_err(|e| Error::Json(e.to_string()))
    }

    /// A session continued from its JSON ledger; its noise comes from the operating system. The
    /// ledger is verified first (see the [module docs](self)): a broken hash chain, a budget or
    /// total that differs from what the entries prove, an invalid ε or δ, or an overspent budget is
    /// refused with [`Error::LedgerInvalid`].
    pub fn from_json(json: &str) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| Error::Json(e.to_string()))?;
        if value.get("format").is_none() {
            return Err(Error::LedgerInvalid {
                what:
                    "it has no hash chain (a ledger written before format 2), so what it records cannot be verified; \
                       keep it as the record of what was spent and start a new ledger whose budget is what remains"
                        .into(),
            });
        }
        let ledger: Ledger = serde_json::from_value(value).map_err(|e| Error::Json(e.to_string()))?;
        Ok(Self { ledger: ledger.verified()?, rng: NoiseRng::from_os()? })
    }

    /// Writes the ledger to `path` atomically: a temporary file in the same directory, flushed to
    /// disk, then renamed over `path`, so a reader never sees half a ledger. Use [`LedgerFile`]
    /// when other processes may release against the same file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let failed = |e: std::io::Error| Error::Write(format!("{}: {e}", path.display()));
        let name = path.file_name().ok_or_else(|| Error::Write(format!("{}: not a file name", path.display())))?;
        let temporary = path.with_file_name(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
        let mut file = File::create(&temporary).map_err(failed)?;
        file.write_all(self.to_json()?.as_bytes()).map_err(failed)?;
        file.sync_all().map_err(failed)?;
        std::fs::rename(&temporary, path).map_err(failed)
    }

    /// Continues a session from the (verified) ledger at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let json =
            std::fs::read_to_string(path).map_err(|e| Error::Write(format!("reading {}: {e}", path.display())))?;
        Self::from_json(&json)
    }
}

/// A ledger file held under an exclusive lock from load to commit, for processes that release
/// against the same file (the command line, services): the lock is taken on `<path>.lock` (a file
/// that is never renamed, so the atomic rename of the ledger cannot drop it), the ledger is loaded
/// — or created by `create` if the file does not exist — and [`commit`](Self::commit) writes it
/// atomically. The lock is released when the `LedgerFile` is dropped. OS locks are advisory: they
/// order fdp processes, not an editor.
///
/// ```
/// use fdp_core::{LedgerFile, Session};
/// use fdp_noise::{Epsilon, PrivacyGuarantee};
/// let path = std::env::temp_dir().join(format!("fdp-doc-ledger-{}.json", std::process::id()));
/// let mut file = LedgerFile::open(&path, || Session::pure(Epsilon::new(1.0)?))?;
/// file.session_mut().charge("example", PrivacyGuarantee::pure(Epsilon::new(0.5)?), "a count".into())?;
/// file.commit()?;
/// drop(file);
/// assert_eq!(Session::load(&path)?.spent(), (0.5, 0.0));
/// # std::fs::remove_file(&path).ok(); std::fs::remove_file(path.with_extension("json.lock")).ok();
/// # Ok::<(), fdp_core::Error>(())
/// ```
#[derive(Debug)]
pub struct LedgerFile {
    session: Session,
    path: PathBuf,
    _lock: File,
}

impl LedgerFile {
    /// Locks `<path>.lock` (waiting for other holders), then loads the verified ledger at `path`,
    /// or calls `create` if there is none.
    pub fn open(path: &Path, create: impl FnOnce() -> Result<Session>) -> Result<Self> {
        let failed = |e: std::io::Error| Error::Write(format!("locking {}: {e}", path.display()));
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(failed)?;
        lock.lock().map_err(failed)?;
        let session = if path.exists() { Session::load(path)? } else { create()? };
        Ok(Self { session, path: path.to_path_buf(), _lock: lock })
    }

    /// The session with its noise drawn from `seed` instead (experiments only; recorded).
    pub fn with_seed(self, seed: Option<u64>) -> Self {
        match seed {
            Some(s) => Self { session: self.session.with_seed(s), ..self },
            None => self,
        }
    }

    /// The session (charge and release through it).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session, mutably.
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// Writes the ledger atomically, still under the lock.
    pub fn commit(&self) -> Result<()> {
        self.session.save(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn eps(e: f64) -> PrivacyGuarantee {
        PrivacyGuarantee::pure(Epsilon::new(e).unwrap())
    }

    /// A ledger of budget 1 with three charges, as JSON.
    fn three_charges() -> String {
        let mut s = Session::pure(Epsilon::new(1.0).unwrap()).unwrap();
        for (name, e) in [("a", 0.25), ("b", 0.25), ("c", 0.25)] {
            s.charge(name, eps(e), format!("{name} released")).unwrap();
        }
        s.to_json().unwrap()
    }

    fn edited(json: &str, edit: impl FnOnce(&mut Value)) -> String {
        let mut v: Value = serde_json::from_str(json).unwrap();
        edit(&mut v);
        serde_json::to_string(&v).unwrap()
    }

    fn refusal(json: &str) -> String {
        match Session::from_json(json) {
            Err(Error::LedgerInvalid { what }) => what,
            other => panic!("a tampered ledger was not refused as invalid: {other:?}"),
        }
    }

    /// A mechanism on a vector that claims `claimed` and lists `stages`: the Session charges it
    /// only when they add up (`StagePlan::check`), and charges nothing otherwise.
    struct Staged {
        claimed: f64,
        stages: Vec<f64>,
    }

    impl Mechanism<[f64]> for Staged {
        type Output = crate::Coefficients;
        fn name(&self) -> &'static str {
            "staged"
        }
        fn n(&self) -> Option<usize> {
            Some(1)
        }
        fn guarantee(&self) -> PrivacyGuarantee {
            eps(self.claimed)
        }
        fn summarize(&self, data: &[f64]) -> Result<Vec<f64>> {
            Ok(data.to_vec())
        }
        fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, _: Charge) -> Result<Release<Self::Output>> {
            let noise = fdp_noise::vector::LaplaceVector::new(
                summary.len(),
                fdp_noise::Sensitivity::new(1.0)?,
                Epsilon::new(self.claimed)?,
            )?;
            let metadata = crate::ReleaseMetadata::new("staged", self.guarantee(), 1.0, crate::SensitivityNorm::L1, 1);
            Ok(Release::new(crate::Coefficients(noise.release(summary, rng)?), metadata))
        }
        fn accuracy(&self) -> crate::Accuracy {
            crate::Accuracy::expected(0.0)
        }
        fn stages(&self) -> Vec<Stage> {
            let stage = |(i, e): (usize, &f64)| Stage { name: format!("s{i}"), guarantee: eps(*e) };
            self.stages.iter().enumerate().map(stage).collect()
        }
    }

    #[test]
    fn a_session_refuses_a_mechanism_whose_stages_do_not_add_up_to_its_guarantee() {
        let mut s = Session::pure(Epsilon::new(2.0).unwrap()).unwrap().with_seed(1);
        for stages in [vec![0.25, 0.5], vec![0.5, 0.5, 0.25], vec![], vec![1.0 - 1e-9]] {
            let refused = s.release(&Staged { claimed: 1.0, stages: stages.clone() }, &[0.0][..]).unwrap_err();
            assert!(refused.to_string().contains("stages must add up to its guarantee"), "{stages:?}: {refused}");
        }
        assert_eq!(s.ledger().len(), 0, "nothing is charged on refusal");
        s.release(&Staged { claimed: 1.0, stages: vec![0.25, 0.75] }, &[0.0][..]).unwrap();
        assert_eq!(s.ledger().len(), 2);
        assert_eq!(s.spent(), (1.0, 0.0));
    }

    #[test]
    fn a_session_keeps_the_privacy_unit_of_its_first_charge() {
        let mut s = Session::pure(Epsilon::new(1.0).unwrap()).unwrap();
        let person = PrivacyUnit::person("ID");
        s.charge_for("mean", eps(0.25), "x".into(), person.clone()).unwrap();
        s.charge_for("mean", eps(0.25), "x".into(), person.clone()).unwrap();
        match s.charge_for("kde", eps(0.25), "y".into(), PrivacyUnit::Record) {
            Err(Error::WrongUnit { expected, got, .. }) => assert_eq!((expected, got), (person, PrivacyUnit::Record)),
            other => panic!("a charge at another unit was not refused: {other:?}"),
        }
        assert_eq!(s.spent(), (0.5, 0.0), "nothing is charged on refusal");
        assert!(s.charge_for("mean", eps(0.25), "x".into(), PrivacyUnit::person("visit")).is_err());
        // The unit survives the ledger file: a reloaded session refuses the same way.
        let mut again = Session::from_json(&s.to_json().unwrap()).unwrap();
        assert!(again.charge("kde", eps(0.1), "y".into()).is_err());
    }

    #[test]
    fn an_untouched_ledger_round_trips_and_keeps_its_head() {
        let json = three_charges();
        let s = Session::from_json(&json).unwrap();
        assert_eq!(s.spent(), (0.75, 0.0));
        assert_eq!(s.budget(), (1.0, 0.0));
        assert_eq!(s.to_json().unwrap(), json);
        assert_eq!(s.head(), s.ledger()[2].hash);
        // Shares that are not short decimals (a tuned pipeline's stage budgets) must survive the
        // JSON round trip bit for bit, or the chain and the replayed totals would not verify.
        let mut s = Session::pure(Epsilon::new(1.0).unwrap()).unwrap();
        for e in [1.0 / 3.0, 0.1, 0.123_456_789_012_345_67, 2.0f64.sqrt() / 10.0] {
            s.charge("share", eps(e), "x".into()).unwrap();
        }
        let again = Session::from_json(&s.to_json().unwrap()).unwrap();
        assert_eq!(again.spent(), s.spent());
    }

    #[test]
    fn every_kind_of_tampering_is_refused() {
        let json = three_charges();
        // The stored total lowered: the entries prove 0.75.
        assert!(refusal(&edited(&json, |v| v["budget"]["spent_epsilon"] = 0.0.into())).contains("add up to"));
        assert!(refusal(&edited(&json, |v| v["budget"]["spent_epsilon"] = (-50.0).into())).contains("add up to"));
        // An entry's ε lowered (the total lowered with it, as a careful forger would).
        let lowered = edited(&json, |v| {
            v["entries"][1]["epsilon"] = 0.01.into();
            v["budget"]["spent_epsilon"] = 0.51.into();
        });
        assert!(refusal(&lowered).contains("hash chain"));
        // An entry deleted, with the total and the later index adjusted.
        let deleted = edited(&json, |v| {
            let entries = v["entries"].as_array_mut().unwrap();
            entries.remove(1);
            entries[1]["index"] = 1.into();
            v["budget"]["spent_epsilon"] = 0.5.into();
        });
        assert!(refusal(&deleted).contains("hash chain"));
        // Entries reordered.
        let reordered = edited(&json, |v| v["entries"].as_array_mut().unwrap().swap(0, 1));
        assert!(refusal(&reordered).contains("index"));
        // The budget raised, or δ made 5, or ε made negative or not finite.
        assert!(refusal(&edited(&json, |v| v["budget"]["epsilon"] = 100.0.into())).contains("created with"));
        assert!(refusal(&edited(&json, |v| v["budget"]["delta"] = 5.0.into())).contains("not a budget"));
        assert!(refusal(&edited(&json, |v| v["budget"]["epsilon"] = (-1.0).into())).contains("not a budget"));
        assert!(refusal(&edited(&json, |v| v["entries"][0]["epsilon"] = (-50.0).into())).contains("hash chain"));
        // A chain recomputed over an entry with a negative ε is still refused on the ε itself.
        let mut forged: Ledger = serde_json::from_str(&json).unwrap();
        forged.entries[0].epsilon = -50.0;
        forged.rechain_from(0).unwrap();
        assert!(refusal(&serde_json::to_string(&forged).unwrap()).contains("charges ε = -50"));
        // Entries that overspend, even with a consistent chain.
        let mut forged: Ledger = serde_json::from_str(&json).unwrap();
        forged.entries[2].epsilon = 0.75;
        forged.rechain_from(2).unwrap();
        assert!(refusal(&serde_json::to_string(&forged).unwrap()).contains("overspend"));
        // A ledger of the old format (no chain).
        let old = r#"{"relation":"ReplaceOne","budget":{"epsilon":1.0,"delta":0.0,"spent_epsilon":0.0,"spent_delta":0.0},"entries":[]}"#;
        assert!(refusal(old).contains("no hash chain"));
    }

    #[test]
    fn a_refused_ledger_lets_nothing_through() {
        let json = edited(&three_charges(), |v| v["budget"]["spent_epsilon"] = 0.0.into());
        assert!(Session::from_json(&json).is_err());
    }

    #[test]
    fn parallel_holders_of_one_ledger_file_never_overspend_or_lose_an_entry() {
        let dir = std::env::temp_dir().join(format!("fdp-ledger-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ledger.json");
        let results: Vec<bool> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..8)
                .map(|i| {
                    let path = path.clone();
                    scope.spawn(move || {
                        let mut file = LedgerFile::open(&path, || Session::pure(Epsilon::new(1.0)?)).unwrap();
                        // Widen the window between load and save, as a slow release would.
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        let charged = file.session_mut().charge(&format!("w{i}"), eps(0.25), "x".into()).is_ok();
                        file.commit().unwrap();
                        charged
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(results.iter().filter(|&&ok| ok).count(), 4);
        let ledger = Session::load(&path).unwrap();
        assert_eq!(ledger.ledger().len(), 4);
        assert_eq!(ledger.spent(), (1.0, 0.0));
        std::fs::remove_dir_all(&dir).ok();
    }
}
