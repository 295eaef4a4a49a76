use thiserror::Error;

/// The one error of the release path: mechanisms, releases and sessions. Parameters, shapes and
/// budgets only — record contents never cause one (a record that cannot be used becomes the public
/// default instead), so an error reveals nothing about the data.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A tuning, privacy or shape parameter is out of range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    BadParameter { name: &'static str, value: f64, reason: &'static str },
    /// A parameter written as text (`l2:0.5`) could not be read.
    #[error("cannot read {what} {spec:?}: {reason}")]
    BadSpec { what: &'static str, spec: String, reason: &'static str },
    /// The data do not have the shape the mechanism was built for (n and the grid are public).
    #[error("shape mismatch: {what} is {got}, the mechanism was built for {expected}")]
    Shape { what: &'static str, expected: usize, got: usize },
    /// The curves' grid differs from the basis grid.
    #[error("the curves' grid differs from the basis grid")]
    GridMismatch,
    /// A clipping bound in one norm was given to a mechanism that clips in another.
    #[error("{mechanism} clips records in the {expected:?} norm, but the bound is in the {got:?} norm")]
    WrongNorm { mechanism: &'static str, expected: crate::ClipNorm, got: crate::ClipNorm },
    /// A release would spend more than the session has left; nothing was computed or charged.
    #[error(
        "privacy budget exceeded: {mechanism} needs (ε = {epsilon}, δ = {delta}) but the session has spent (ε = {spent_epsilon}, δ = {spent_delta}) and has (ε = {remaining_epsilon}, δ = {remaining_delta}) left; nothing was released or charged"
    )]
    BudgetExceeded {
        mechanism: String,
        epsilon: f64,
        delta: f64,
        spent_epsilon: f64,
        spent_delta: f64,
        remaining_epsilon: f64,
        remaining_delta: f64,
    },
    /// The mechanism protects a different unit than the session (replace-one vs add/remove).
    #[error("{mechanism} is private under {got:?} neighbours, but the session's privacy unit is {expected:?}")]
    WrongRelation { mechanism: String, expected: fdp_noise::NeighbourRelation, got: fdp_noise::NeighbourRelation },
    /// The mechanism protects another privacy unit than the charges already in the ledger: a
    /// ledger adds up charges of one unit (ε spent per row protects a person only at ε times their
    /// number of rows), so a session keeps the unit of its first charge.
    #[error(
        "{mechanism} protects {got}, but this session's ledger already charges releases that protect {expected}; \
         budgets of different privacy units do not add up: use one unit per session (ledger)"
    )]
    WrongUnit { mechanism: String, expected: crate::release::PrivacyUnit, got: crate::release::PrivacyUnit },
    /// A summary state (bytes from another process) is truncated, corrupted, or not from this
    /// mechanism.
    #[error("summary state: {0}")]
    BadState(String),
    /// From the noise layer.
    #[error(transparent)]
    Noise(#[from] fdp_noise::NoiseError),
    /// From the basis layer.
    #[error(transparent)]
    Mercer(#[from] fdp_mercer::MercerError),
    /// From the data layer.
    #[error(transparent)]
    Data(#[from] fdp_data::DataError),
    /// A ledger file that does not verify (hash chain, budget, totals, entries); nothing was
    /// charged or released.
    #[error("ledger refused: {what}")]
    LedgerInvalid { what: String },
    /// Serialising or parsing JSON.
    #[error("JSON: {0}")]
    Json(String),
    /// Writing a release or a ledger.
    #[error("writing: {0}")]
    Write(String),
}

/// Result alias of the release path.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `value` if finite and > 0, else a parameter error naming it.
pub fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::BadParameter { name, value, reason: "must be finite and > 0" })
    }
}

/// A public range `[lo, hi]` of values: both ends finite, `lo < hi` and a finite width `hi - lo`,
/// else a parameter error (the one check of every door and mechanism that takes a range).
pub fn public_range(lo: f64, hi: f64) -> Result<(f64, f64)> {
    if lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite() {
        Ok((lo, hi))
    } else {
        Err(Error::BadParameter { name: "public range", value: hi - lo, reason: "need finite lo < hi" })
    }
}

/// `value` if finite and >= 0, else a parameter error naming it.
pub fn non_negative(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(Error::BadParameter { name, value, reason: "must be finite and >= 0" })
    }
}
