//! # fdp-core: the one release path
//!
//! Every private release in fdp — a mean curve, a density, a regularised estimator, a synthetic
//! dataset, a sketch, or a mechanism of your own — goes through the same few types. The core is
//! the differential-privacy machinery only: it depends on `fdp-noise` (ε, δ, budgets, secure
//! samplers) and on no functional-data crate; curves, bases, their representations and numerics
//! are in the functional layer (`fdp-functional`, over `fdp-mercer` and `fdp-data`), which builds on
//! this crate.
//!
//! - [`mechanism`]: the [`Mechanism`] trait (summarise, then privatise under a [`Charge`] that only
//!   a [`Session`] makes accounted), its [`Stage`]s, the [`Accuracy`] preview, and [`PerUnit`] (a
//!   mechanism's privacy unit);
//! - [`release`]: [`Release`] = an [`Output`] (a curve from `fdp-functional`, [`Coefficients`],
//!   [`WeightedSample`], [`Sketch`], or yours) + one [`ReleaseMetadata`], whose basis and kernel are
//!   [`Descriptor`]s (the functional layer's own descriptions, recorded verbatim);
//! - [`params`]: parameters validated once into types — [`ClippingBound`] (a bound that carries its
//!   norm), [`Regularisation`] `{η, ψ}`, [`Tuning`], [`SensitivityNorm`]; ε and δ are
//!   [`Epsilon`](fdp_noise::Epsilon) and [`Delta`](fdp_noise::Delta);
//! - [`session`]: the [`Session`] — privacy unit, total budget, random stream and ledger — that
//!   charges every release by sequential composition and refuses to overspend;
//! - [`stages`]: **stages compose** — a multi-stage mechanism built from stage mechanisms that own
//!   their guarantee, exact loss and release ([`StageMechanism`], a noise [`OnSlice`] of the
//!   summary, an [`Adaptive`] stage over a public [`Family`] chosen by earlier outputs), composed by
//!   [`Sequential`], which derives the charged stages ([`StagePlan`]), the guarantee and the exact
//!   losses from them;
//! - [`state`]: mergeable summaries — exact integer partial sums ([`SummaryState`]) built on parts
//!   of the data, merged in any order, encoded as checksummed bytes, released once
//!   ([`MergeableMechanism`], [`Session::release_state`]);
//! - [`caps`]: caps on the sizes a user controls, checked before any charge;
//! - [`error`]: the one [`Error`] of the release path, with structured parameter values
//!   ([`ParamValue`]) and the errors of the layers above carried as [`LayerError`]s.
//!
//! The mathematics (every calibration and sensitivity with its proof sketch) is in `docs/DESIGN.md`.
//!
//! ## How to add a mechanism
//!
//! 1. Decide the input type `D` and the neighbour relation (replace-one with public n, or
//!    add/remove), and the output: a `fdp_functional::Curve` if it is a function on a grid, else one of the other
//!    outputs or a type of yours implementing [`Output`].
//! 2. Write the summary as a sum (or average) of per-record contributions, **clip each record** in the
//!    norm your sensitivity is measured in with a bound fixed before seeing the data (take a
//!    [`ClippingBound`] and [`require`](ClippingBound::require) its norm), and replace any record
//!    whose contribution is not finite by a public default before it is summed.
//! 3. Derive the sensitivity of the summary from the bound, calibrate the noise (`fdp_noise`'s
//!    `LaplaceVector`, `GaussianVector`, or `fdp_functional`'s `IclpSampler` and
//!    `GaussianProcessSampler` over a basis: secure lattice samplers with the rounding charge
//!    included), and implement [`Mechanism`]: `summarize` (total,
//!    never failing on record contents), `privatize` (it receives a [`Charge`]: hand it on to any
//!    mechanism you compose), `guarantee`, `accuracy`. A mechanism that spends in several stages
//!    (a private bound, then the release at it) composes them with [`Sequential`] and reads
//!    `stages`, `guarantee` and `exact_losses` off the composition (see [`stages`]).
//! 4. Test it as `tests/user_mechanism.rs` does: audit it with `fdp_audit` through the trait, and
//!    compute the exact loss of adversarial neighbours with `fdp_noise::exact_loss` (tests and
//!    audits release with [`Charge::unaccounted`], which spends nothing and says so).
//!
//! Then release it through a [`Session`] like every other mechanism.

pub mod caps;
pub mod error;
pub mod mechanism;
pub mod params;
pub mod release;
pub mod session;
pub mod stages;
pub mod state;

pub use error::{Error, LayerError, ParamValue, Result, Shown};
pub use mechanism::{Accuracy, Charge, Mechanism, PerUnit, Stage};
pub use params::{ClipNorm, ClippingBound, Regularisation, SensitivityNorm, Tuning};
pub use release::{
    Coefficients, Descriptor, Output, OwnError, PrivacyUnit, Release, ReleaseMetadata, Sketch, StageRecord,
    WeightedSample,
};
pub use session::{LedgerEntry, LedgerFile, Session};
pub use stages::{Adaptive, Family, OnSlice, Sequential, StageLaw, StageMechanism, StagePlan, Stages, VectorNoise};
pub use state::{MergeableMechanism, SummaryState};
