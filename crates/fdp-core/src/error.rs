pub use fdp_noise::Shown;
use thiserror::Error;

/// The one error of the release path: mechanisms, releases and sessions. Parameters, shapes and
/// budgets only — record contents never cause one (a record that cannot be used becomes the public
/// default instead), so an error reveals nothing about the data.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A tuning, privacy or shape parameter is out of range, or missing: `value` says what was given
    /// (a number, a count, a pair, a text, or nothing).
    #[error("invalid parameter {name}{}: {reason}", value.after_name())]
    BadParameter { name: &'static str, value: ParamValue, reason: &'static str },
    /// A parameter was given that the mechanism, as its other parameters configure it, does not use
    /// (a Bernstein degree for another method, a bucket width for a histogram sketch): refused
    /// rather than silently ignored, so a spec never reads as asking for what was not done.
    #[error("parameter {name} does not apply with {other} = {value}: it is used only with {other} = {users}; drop it")]
    NotApplicable { name: &'static str, other: &'static str, value: String, users: String },
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
    #[error(
        "{mechanism} clips records in the {expected:?} norm, but the bound is in the {got:?} norm: give it as {}:VALUE, or \
         choose a mechanism that clips in the {got:?} norm",
        expected.prefix()
    )]
    WrongNorm { mechanism: &'static str, expected: crate::ClipNorm, got: crate::ClipNorm },
    /// A release would spend more than the session has left; nothing was computed or charged.
    #[error(
        "privacy budget exceeded: {mechanism} needs (ε = {}, δ = {}) but the session has spent (ε = {}, δ = {}) and has (ε = {}, δ = {}) left; nothing was released or charged",
        Shown(*epsilon), Shown(*delta), Shown(*spent_epsilon), Shown(*spent_delta), Shown(*remaining_epsilon), Shown(*remaining_delta)
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
    /// The data hold records of another privacy unit than the mechanism was built to protect (e.g.
    /// one row per visit handed to a mechanism built per person: its release would protect a
    /// person only at ε times their number of rows, not at the ε it states). Checked before
    /// anything is charged.
    #[error(
        "{mechanism} was built to protect {expected}, but the data hold {got} per record: \
         build the mechanism from these data, or group the rows by the person's id first"
    )]
    DataUnit { mechanism: String, expected: crate::release::PrivacyUnit, got: crate::release::PrivacyUnit },
    /// A summary state (bytes from another process) is truncated, corrupted, or not from this
    /// mechanism.
    #[error("summary state: {0}")]
    BadState(String),
    /// From the noise layer.
    #[error(transparent)]
    Noise(#[from] fdp_noise::NoiseError),
    /// From a layer above the release path (the basis layer, the data layer), its own error with its
    /// own message: those crates convert their errors into this one (`From`), so `?` works in
    /// mechanisms that use them.
    #[error(transparent)]
    Layer(LayerError),
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

/// What a parameter error says was given: a parameter is not always a number.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParamValue {
    /// A real number (ε, a bound, a width, a scale).
    Number(f64),
    /// A count or a size (n, grid points, components, a degree).
    Count(usize),
    /// A pair of numbers, e.g. a range `(lo, hi)`.
    Pair(f64, f64),
    /// A value that is not a number: a name, a kernel, or a short description of what was given
    /// (never a record's contents).
    Text(String),
    /// Nothing: the parameter was needed but not given.
    Missing,
}

impl ParamValue {
    /// The value as an error message writes it after the parameter's name: ` = 0.5`, ` = (0, 1)`,
    /// ` = "matern32"`, or ` (not given)`.
    pub fn after_name(&self) -> String {
        match self {
            Self::Missing => " (not given)".into(),
            other => format!(" = {other}"),
        }
    }

    /// The number, if the value is one.
    pub fn number(&self) -> Option<f64> {
        match self {
            Self::Number(v) => Some(*v),
            _ => None,
        }
    }
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(v) => write!(f, "{}", Shown(*v)),
            Self::Count(n) => write!(f, "{n}"),
            Self::Pair(a, b) => write!(f, "({}, {})", Shown(*a), Shown(*b)),
            Self::Text(t) => write!(f, "{t:?}"),
            Self::Missing => f.write_str("not given"),
        }
    }
}

impl From<f64> for ParamValue {
    fn from(v: f64) -> Self {
        Self::Number(v)
    }
}

impl From<usize> for ParamValue {
    fn from(n: usize) -> Self {
        Self::Count(n)
    }
}

impl From<(f64, f64)> for ParamValue {
    fn from((a, b): (f64, f64)) -> Self {
        Self::Pair(a, b)
    }
}

impl From<&str> for ParamValue {
    fn from(t: &str) -> Self {
        Self::Text(t.into())
    }
}

impl From<String> for ParamValue {
    fn from(t: String) -> Self {
        Self::Text(t)
    }
}

/// An error of a layer above the release path (the basis layer `fdp-mercer`, the data layer
/// `fdp-data`), carried by [`Error::Layer`]: the release path depends on no functional-data crate,
/// so it holds their errors as trait objects with the layer's name. Its message is the layer
/// error's own, unchanged; [`downcast_ref`](Self::downcast_ref) gives the typed error back.
#[derive(Debug)]
pub struct LayerError {
    layer: &'static str,
    error: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl LayerError {
    /// `error` of the layer named `layer` (e.g. `basis`, `data`).
    pub fn new(layer: &'static str, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self { layer, error: Box::new(error) }
    }

    /// The layer's name.
    pub fn layer(&self) -> &'static str {
        self.layer
    }

    /// The layer's error, typed, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.error.downcast_ref::<E>()
    }
}

impl std::fmt::Display for LayerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// Transparent, like the `#[error(transparent)]` variants it replaces: the source is the layer
/// error's own source, so a chain of causes is printed once.
impl std::error::Error for LayerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl Error {
    /// A parameter error: `name` = `value` is refused for `reason`.
    pub fn bad_parameter(name: &'static str, value: impl Into<ParamValue>, reason: &'static str) -> Self {
        Self::BadParameter { name, value: value.into(), reason }
    }

    /// The error of the layer `layer` (see [`LayerError`]).
    pub fn layer(layer: &'static str, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Layer(LayerError::new(layer, error))
    }
}

/// Result alias of the release path.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `value` if finite and > 0, else a parameter error naming it.
pub fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::bad_parameter(name, value, "must be finite and > 0"))
    }
}

/// A public range `[lo, hi]` of values: both ends finite, `lo < hi` and a finite width `hi - lo`,
/// else a parameter error (the one check of every door and mechanism that takes a range).
pub fn public_range(lo: f64, hi: f64) -> Result<(f64, f64)> {
    if lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite() {
        Ok((lo, hi))
    } else {
        Err(Error::bad_parameter("public range", (lo, hi), "need finite lo < hi"))
    }
}

/// `value` if finite and >= 0, else a parameter error naming it.
pub fn non_negative(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(Error::bad_parameter(name, value, "must be finite and >= 0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a parameter error says what was given — a number, a count, a pair, a text, or
    /// nothing — instead of a NaN standing for "not a number".
    #[test]
    fn parameter_errors_say_what_was_given() {
        let message = |value: ParamValue| Error::bad_parameter("p", value, "why").to_string();
        assert_eq!(message(0.5.into()), "invalid parameter p = 0.5: why");
        assert_eq!(message(12usize.into()), "invalid parameter p = 12: why");
        assert_eq!(message((0.0, 1.5).into()), "invalid parameter p = (0, 1.5): why");
        assert_eq!(message("matern32".into()), "invalid parameter p = \"matern32\": why");
        assert_eq!(message(ParamValue::Missing), "invalid parameter p (not given): why");
        assert!(!message(ParamValue::Missing).contains("NaN"));
        // Far from 1, in scientific form (plain `{}` wrote 301 digits for 1e300).
        assert_eq!(message(1e300.into()), "invalid parameter p = 1e300: why");
        assert_eq!(message((-2.5e-9, 1e15).into()), "invalid parameter p = (-2.5e-9, 1e15): why");
        assert_eq!(message((1e-5, 999.0).into()), "invalid parameter p = (0.00001, 999): why");
        assert_eq!(message(f64::INFINITY.into()), "invalid parameter p = inf: why");
        let Err(Error::BadParameter { value, .. }) = public_range(2.0, 1.0) else { panic!("accepted") };
        assert_eq!(value, ParamValue::Pair(2.0, 1.0));
        let Err(Error::BadParameter { value, .. }) = positive("eta", -1.0) else { panic!("accepted") };
        assert_eq!(value.number(), Some(-1.0));
    }

    /// A layer's error keeps its message and its cause, and can be read back typed.
    #[test]
    fn a_layer_error_is_transparent() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer: {0}")]
        struct Outer(#[source] std::fmt::Error);
        let error = Error::layer("basis", Outer(std::fmt::Error));
        assert_eq!(error.to_string(), "outer: an error occurred when formatting an argument");
        let source = std::error::Error::source(&error).expect("the layer error's own source");
        assert!(source.is::<std::fmt::Error>());
        let Error::Layer(layer) = &error else { panic!("not a layer error") };
        assert_eq!(layer.layer(), "basis");
        assert!(layer.downcast_ref::<Outer>().is_some() && layer.downcast_ref::<std::fmt::Error>().is_none());
    }
}
