//! # One registry of mechanisms
//!
//! Every mechanism a front door can name is registered here **once**, as an [`Entry`]: its name, the
//! data it reads ([`InputKind`]), its parameters with their defaults ([`Param`]) and a function that
//! builds it from a [`Spec`] and the public [`Frame`] (n, the grid, the privacy unit). The command
//! line, the Python package and Spark read the same table: they turn their arguments into a
//! [`Spec`] (plain JSON: `{"mechanism": "mean", "params": {"epsilon": 1, "range": [0, 1]}}`), call
//! [`build`], and release the [`Built`] mechanism through a [`Session`] with [`Built::release`]
//! (or from merged summary states with [`Built::release_state`]). So the same data and the same spec
//! give the same mechanism, and at a fixed seed the same bytes, from every door; a door holds no
//! default and no dispatch of its own.
//!
//! ## The grid rule
//!
//! Curves (dense or sparse) come in **in the data's units** on the public grid the curator states.
//! The registry maps that grid affinely onto `[0, 1]` once ([`front::unit_grid`]) before a kernel
//! meets it, so a length-scale (`matern32:0.1`) is a fraction of the domain whatever the units.
//!
//! ## Adding a mechanism
//!
//! 1. Write one file in `src/registry/` (see `sketch.rs`, 40 lines): a `pub(super) const ENTRY:
//!    Entry` with its parameters, their defaults (a parameter only some settings use says so with
//!    [`Param::only_with`], and is refused elsewhere), a small example, and a `build` that reads the
//!    [`Params`] (checked, typed) and wraps the mechanism for its input (`Built::curves`,
//!    `Built::sparse`, `Built::points`, `Built::mergeable_points`, `Built::snapped`, `Built::labelled`).
//! 2. Add its line to [`REGISTRY`] (and `mod` it).
//! 3. Give it exact-loss cases in `examples/harness/privacy_edges.rs` under its mechanism name.
//!
//! It is then reachable from Rust ([`build`]), the command line (`fdp release NAME --param k=v`)
//! and Python (`fdp.Spec` / `fdp.registered()`). `tests/registry.rs` builds it from its example,
//! checks that the ledger charges exactly its guarantee (one entry per stage), that the spec
//! round-trips through JSON to the same bytes and that merged part states release the same bytes;
//! `tests/privacy_edges.rs` fails while it has no exact-loss case.

pub mod edges;
mod erm;
mod fpca;
mod kde;
mod kme;
mod kme_exponential;
mod kme_features;
mod mean;
mod sketch;
mod sparse_fpca;
mod sparse_mean;

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use fdp_core::{
    Accuracy, Coefficients, Error, Mechanism, MergeableMechanism, ParamValue, PerUnit, PrivacyUnit, Release, Result,
    Session, Sketch, Stage, SummaryState, WeightedSample,
};
use fdp_data::{CurveSet, SparseCurves};
use fdp_estimators::GridPoints;
use fdp_estimators::covariance::Covariance;
use fdp_functional::Curve;
use fdp_kme::PointSet;
use fdp_mercer::Grid;
use fdp_noise::{Delta, Epsilon, PrivacyGuarantee};

use crate::front;

/// **The registry**: one line per mechanism. The order is the order `fdp mechanisms` shows.
pub const REGISTRY: &[Entry] = &[
    mean::ENTRY,
    sparse_mean::ENTRY,
    fpca::ENTRY,
    sparse_fpca::ENTRY,
    kde::ENTRY,
    kme::ENTRY,
    kme_features::ENTRY,
    kme_exponential::ENTRY,
    sketch::ENTRY,
    erm::ENTRY,
];

/// The registered mechanism called `name`.
pub fn entry(name: &str) -> Result<&'static Entry> {
    let wanted = as_name(name);
    REGISTRY.iter().find(|e| e.name == wanted).ok_or_else(|| Error::BadSpec {
        what: "the mechanism",
        spec: name.into(),
        reason: "not a registered mechanism (see fdp::registry::REGISTRY, `fdp mechanisms`)",
    })
}

/// What a front door asks for: a registered mechanism's name and its parameters (JSON values; a
/// parameter not given takes the entry's default). Serialisable, so a spec can be written next to
/// a release, sent to a Spark executor, or given to the CLI as a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The registered name ([`Entry::name`]).
    pub mechanism: String,
    /// The parameters given (names from [`Entry::params`]).
    #[serde(default)]
    pub params: Map<String, Value>,
}

impl Spec {
    /// The mechanism `name` with no parameter given yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self { mechanism: name.into(), params: Map::new() }
    }

    /// The registered entry's example spec ([`Entry::example`]).
    pub fn example(entry: &Entry) -> Result<Self> {
        let params = serde_json::from_str(entry.example).map_err(|e| Error::Json(e.to_string()))?;
        Ok(Self { mechanism: entry.name.into(), params })
    }

    /// The spec with `name = value` (replacing an earlier value).
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.params.insert(name.into(), value.into());
        self
    }

    /// A spec read from JSON.
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::Json(e.to_string()))
    }

    /// The spec as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Json(e.to_string()))
    }
}

/// The data a registered mechanism reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// Curves on a common public grid (one row per record).
    Curves,
    /// Irregular or sparse curves: each record its own observation times on a public domain.
    SparseCurves,
    /// Points in `R^D` (densities: D = 1).
    Points,
    /// Labelled points: a 1-D input in a public domain and a response (or a ±1 label) per record.
    Labelled,
}

/// One record (row): the unit of points, and of curves with no person id.
pub const RECORD: &PrivacyUnit = &PrivacyUnit::Record;

/// The data handed to [`Built::release`]: curves in the data's units on the public grid the
/// mechanism was built for, sparse curves on its domain, points, or labelled points — as read, in
/// the data's units; each mechanism's reader applies its own public default to a record that is
/// not finite (the origin for point sets, the domain's centre for densities and regressions).
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// Curves on the frame's grid (in the data's units), each record one `unit` (a person's rows
    /// already grouped into one record when the unit is a person: [`CurveSet::per_person`]).
    Curves {
        /// The records.
        curves: &'a CurveSet<'a>,
        /// What one record is; checked against the mechanism's unit before anything is charged.
        unit: &'a PrivacyUnit,
    },
    /// Sparse curves on the frame's domain (in the data's units), each record one `unit` (an id).
    Sparse {
        /// The records.
        curves: &'a SparseCurves,
        /// What one record is; checked against the mechanism's unit before anything is charged.
        unit: &'a PrivacyUnit,
    },
    /// Points, row-major, `dim` coordinates each.
    Points {
        /// The coordinates.
        data: &'a [f64],
        /// Coordinates per point.
        dim: usize,
    },
    /// Labelled points: 1-D inputs `x` and one response `y` each.
    Labelled {
        /// The inputs.
        x: &'a [f64],
        /// The responses (or ±1 labels).
        y: &'a [f64],
    },
}

impl Input<'_> {
    fn kind(&self) -> InputKind {
        match self {
            Self::Curves { .. } => InputKind::Curves,
            Self::Sparse { .. } => InputKind::SparseCurves,
            Self::Points { .. } => InputKind::Points,
            Self::Labelled { .. } => InputKind::Labelled,
        }
    }

    /// What one record is: the unit the door stated for curves; one record (row) for points,
    /// which have no person-level unit.
    pub fn unit(&self) -> &PrivacyUnit {
        match self {
            Self::Curves { unit, .. } | Self::Sparse { unit, .. } => unit,
            Self::Points { .. } | Self::Labelled { .. } => RECORD,
        }
    }

    /// The number of records (rows, ids, points, labelled points).
    pub fn records(&self) -> usize {
        match self {
            Self::Curves { curves, .. } => curves.n(),
            Self::Sparse { curves, .. } => curves.n(),
            Self::Points { data, dim } => data.len() / (*dim).max(1),
            Self::Labelled { x, .. } => x.len(),
        }
    }
}

/// The public frame a mechanism is built for: what a door knows before reading any value.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The number of records (persons, under a person-level unit): public.
    pub n: usize,
    /// The public grid of the curves, in the data's units (curve mechanisms; `None` for points).
    pub grid: Option<Grid>,
    /// What one record is.
    pub unit: PrivacyUnit,
}

impl Frame {
    /// `n` records of one row each, on `grid` if the data are curves.
    pub fn new(n: usize, grid: Option<Grid>) -> Self {
        Self { n, grid, unit: PrivacyUnit::Record }
    }

    /// The frame with the privacy unit `unit`.
    pub fn protecting(self, unit: PrivacyUnit) -> Self {
        Self { unit, ..self }
    }

    /// The grid (curve mechanisms need one, of at least two points).
    fn grid(&self) -> Result<&Grid> {
        let grid = self.grid.as_ref().ok_or(Error::BadParameter {
            name: "grid",
            value: ParamValue::Missing,
            reason: "a curve mechanism is built for the curves' public grid",
        })?;
        if grid.len() < 2 {
            return Err(Error::BadParameter {
                name: "grid",
                value: ParamValue::Count(grid.len()),
                reason: "a curve needs at least two grid points (one value per record is a point: a density's data)",
            });
        }
        Ok(grid)
    }

    /// The grid mapped onto `[0, 1]` by the doors' one rule.
    fn unit_grid(&self) -> Result<Grid> {
        front::unit_grid(self.grid()?)
    }
}

/// One parameter of a registered mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name in a [`Spec`] (and `--param NAME=...`, and Python's keyword).
    pub name: &'static str,
    /// Its default as JSON (`"null"`: optional, no value; `""`: required).
    pub default: &'static str,
    /// What it is, in a line.
    pub about: &'static str,
    /// `Some((other, values))`: it is used only when the parameter `other` (given or by its default)
    /// is one of `values` (compared as the doors read names: trimmed, lower case, `-` as `_`).
    /// Given otherwise it is refused ([`Error::NotApplicable`]), never silently ignored, and the
    /// spec as built leaves its default out. (Parameters whose default is `null` are checked by the
    /// request that reads them, e.g. [`front::MeanRequest`]'s `degree`.)
    pub only_with: Option<(&'static str, &'static [&'static str])>,
}

impl Param {
    /// A parameter with a default (`"null"` for an optional one).
    pub const fn with_default(name: &'static str, default: &'static str, about: &'static str) -> Self {
        Self { name, default, about, only_with: None }
    }

    /// A required parameter.
    pub const fn required(name: &'static str, about: &'static str) -> Self {
        Self { name, default: "", about, only_with: None }
    }

    /// The parameter, used only when `other` is one of `values` ([`Param::only_with`]).
    pub const fn only_with(self, other: &'static str, values: &'static [&'static str]) -> Self {
        Self { only_with: Some((other, values)), ..self }
    }
}

/// ε, the total of every stage: every mechanism's first parameter.
pub const EPSILON: Param = Param::required("epsilon", "the total ε of one release (every stage included)");
/// δ of the (ε, δ) mechanisms (refused by the pure ones).
pub const DELTA: Param = Param::with_default("delta", "null", "δ, for the (ε, δ) mechanisms only");

/// A registered mechanism.
#[derive(Clone, Copy)]
pub struct Entry {
    /// Its name (snake_case; the doors also accept `-`).
    pub name: &'static str,
    /// What it releases, in a line.
    pub about: &'static str,
    /// The data it reads.
    pub input: InputKind,
    /// Its parameters, in order, with their defaults.
    pub params: &'static [Param],
    /// A small complete example of its parameters (JSON): what `fdp mechanisms` shows and what
    /// `tests/registry.rs` builds, releases and audits.
    pub example: &'static str,
    /// Builds it (public quantities only: the data are not read).
    pub build: fn(&Params<'_>, &Frame) -> Result<Built>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).field("input", &self.input).finish_non_exhaustive()
    }
}

impl Entry {
    /// The entry's parameters and defaults as JSON (for `fdp mechanisms` and Python's help).
    pub fn describe(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                let default = if p.default.is_empty() {
                    Value::String("(required)".into())
                } else {
                    serde_json::from_str(p.default).unwrap_or(Value::Null)
                };
                let mut described = serde_json::json!({ "name": p.name, "default": default, "about": p.about });
                if let Some((other, values)) = p.only_with {
                    described["only_with"] = serde_json::json!({ other: values });
                }
                described
            })
            .collect();
        let example: Value = serde_json::from_str(self.example).unwrap_or(Value::Null);
        serde_json::json!({
            "mechanism": self.name, "about": self.about, "input": self.input, "params": params, "example": example
        })
    }
}

/// Builds the registered mechanism `spec` names for the public `frame`. Every parameter is read
/// and checked here, before anything is charged; a parameter the entry does not have is refused.
pub fn build(spec: &Spec, frame: &Frame) -> Result<Built> {
    let entry = entry(&spec.mechanism)?;
    if let Some(unknown) = spec.params.keys().find(|k| !entry.params.iter().any(|p| p.name == k.as_str())) {
        return Err(Error::BadSpec {
            what: "the parameter",
            spec: format!("{unknown} (of {})", entry.name),
            reason: "not a parameter of this mechanism (see `fdp mechanisms`)",
        });
    }
    if !matches!(entry.input, InputKind::Curves | InputKind::SparseCurves) && frame.unit != PrivacyUnit::Record {
        return Err(Error::BadParameter {
            name: "privacy unit",
            value: ParamValue::Text(entry.name.into()),
            reason: "a person-level unit is for curves (one record per person); these records are one point each",
        });
    }
    let params = Params { entry, given: &spec.params };
    let mut built = (entry.build)(&params, frame)?;
    // After the build has read (and so checked) every parameter a condition names.
    let mut applies = Vec::with_capacity(entry.params.len());
    for param in entry.params {
        let used = params.applies(param)?;
        if !used && params.given(param.name) {
            let (other, values) = param.only_with.unwrap_or_default();
            let users = match values {
                [rest @ .., last] if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => values.join(""),
            };
            let value = params.value(other)?.as_str().map_or_else(String::new, as_name);
            return Err(Error::NotApplicable { name: param.name, other, value, users });
        }
        applies.push(used);
    }
    // The spec as built: every parameter given, and every default it took (so a spec written next to
    // a release states the whole mechanism, whatever later versions' defaults), but for those the
    // mechanism as configured does not use.
    let resolved = entry
        .params
        .iter()
        .zip(applies)
        .filter(|(_, used)| *used)
        .filter_map(|(p, _)| params.value(p.name).ok().filter(|v| !v.is_null()).map(|v| (p.name.to_string(), v)))
        .collect();
    built.spec = Spec { mechanism: entry.name.into(), params: resolved };
    Ok(built)
}

/// A name as the doors read it: trimmed, lower case, `-` as `_`.
fn as_name(text: &str) -> String {
    text.trim().to_ascii_lowercase().replace('-', "_")
}

/// A whole number >= 0 as JSON holds it: an integer, or a float with no fraction up to 2^53 (`10.0`
/// from a numpy float is 10; `2.9` is refused, never truncated).
fn whole(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value.as_f64().filter(|f| f.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(f)).map(|f| f as u64)
    })
}

/// A spec's parameters, read with the entry's defaults and checked into typed values.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a> {
    entry: &'static Entry,
    given: &'a Map<String, Value>,
}

impl Params<'_> {
    /// The parameter `name` of the entry (a registry bug if it has none: every name is static).
    fn param(&self, name: &str) -> Result<&'static Param> {
        self.entry.params.iter().find(|p| p.name == name).ok_or(Error::BadSpec {
            what: "the registry entry",
            spec: String::new(),
            reason: "asks for a parameter it does not declare",
        })
    }

    /// Whether the spec gives `name` (an explicit `null` is not giving it).
    pub fn given(&self, name: &str) -> bool {
        self.given.get(name).is_some_and(|v| !v.is_null())
    }

    /// Whether `param` is used as the spec configures the mechanism ([`Param::only_with`]).
    fn applies(&self, param: &Param) -> Result<bool> {
        let Some((other, values)) = param.only_with else { return Ok(true) };
        let value = self.value(other)?;
        Ok(value.as_str().map(as_name).is_some_and(|v| values.contains(&v.as_str())))
    }

    /// The value given, else the default (an explicit `null` takes the default too, as a parameter
    /// a Python caller leaves at `None`); `Value::Null` for an optional parameter not given.
    fn value(&self, name: &str) -> Result<Value> {
        let param = self.param(name)?;
        if let Some(v) = self.given.get(name).filter(|v| !v.is_null()) {
            return Ok(v.clone());
        }
        if param.default.is_empty() {
            return Err(Self::missing(param.name));
        }
        serde_json::from_str(param.default).map_err(|_| Error::BadSpec {
            what: "the registry default",
            spec: param.default.into(),
            reason: "is not JSON",
        })
    }

    fn missing(name: &'static str) -> Error {
        Error::BadParameter { name, value: ParamValue::Missing, reason: "is required" }
    }

    /// `value` of an optional accessor, required.
    fn required<T>(&self, name: &str, value: Option<T>) -> Result<T> {
        match value {
            Some(v) => Ok(v),
            None => Err(Self::missing(self.param(name)?.name)),
        }
    }

    /// The value of `name` and its static name (for error messages).
    fn named(&self, name: &str) -> Result<(&'static str, Value)> {
        Ok((self.param(name)?.name, self.value(name)?))
    }

    fn wrong(name: &'static str, value: &Value, reason: &'static str) -> Error {
        // A number as a number (`2.9`, not the text "2.9"); a text as written (the message quotes it
        // once), anything else as JSON; at most 40 characters (`String::truncate` at byte 40
        // panicked inside a multi-byte character).
        if let Some(number) = value.as_f64() {
            return Error::BadParameter { name, value: ParamValue::Number(number), reason };
        }
        let shown: String = value.as_str().map_or_else(|| value.to_string(), str::to_string).chars().take(40).collect();
        Error::BadParameter { name, value: ParamValue::Text(shown), reason }
    }

    /// An optional real number. JSON has no non-finite numbers, so `"nan"`, `"inf"` and `"-inf"`
    /// are read as text: the parameter's own check then refuses them with its message.
    pub fn opt_f64(&self, name: &str) -> Result<Option<f64>> {
        match self.named(name)? {
            (_, Value::Null) => Ok(None),
            (n, v) => v
                .as_f64()
                .or_else(|| v.as_str().and_then(non_finite))
                .map(Some)
                .ok_or_else(|| Self::wrong(n, &v, "must be a number")),
        }
    }

    /// A real number.
    pub fn f64(&self, name: &str) -> Result<f64> {
        let value = self.opt_f64(name)?;
        self.required(name, value)
    }

    /// An optional count.
    pub fn opt_usize(&self, name: &str) -> Result<Option<usize>> {
        match self.named(name)? {
            (_, Value::Null) => Ok(None),
            (n, v) => whole(&v)
                .and_then(|c| usize::try_from(c).ok())
                .map(Some)
                .ok_or_else(|| Self::wrong(n, &v, "must be a whole number >= 0")),
        }
    }

    /// A count.
    pub fn usize(&self, name: &str) -> Result<usize> {
        let value = self.opt_usize(name)?;
        self.required(name, value)
    }

    /// A seed (public randomness).
    pub fn u64(&self, name: &str) -> Result<u64> {
        let (n, v) = self.named(name)?;
        whole(&v).ok_or_else(|| Self::wrong(n, &v, "must be a whole number >= 0"))
    }

    /// An optional text (a name, a kernel, a bound).
    pub fn opt_text(&self, name: &str) -> Result<Option<String>> {
        match self.named(name)? {
            (_, Value::Null) => Ok(None),
            (_, Value::String(s)) => Ok(Some(s)),
            (n, v) => Err(Self::wrong(n, &v, "must be text")),
        }
    }

    /// A text.
    pub fn text(&self, name: &str) -> Result<String> {
        let value = self.opt_text(name)?;
        self.required(name, value)
    }

    /// A choice among names (`"squared"`, `"gaussian"`), read as the doors read every name: trimmed,
    /// lower case, `-` as `_` (`"Logistic"` is `logistic`, as `"IID-Laplace"` is `iid_laplace`).
    pub fn choice(&self, name: &str) -> Result<String> {
        Ok(as_name(&self.text(name)?))
    }

    /// A text read as `T` (`"matern32:0.1"` as a kernel, `"l2:0.5"` as a bound).
    pub fn parsed<T: std::str::FromStr<Err = E>, E: Into<Error>>(&self, name: &str) -> Result<Option<T>> {
        self.opt_text(name)?.map(|s| s.parse::<T>().map_err(Into::into)).transpose()
    }

    /// An optional list of numbers.
    pub fn opt_numbers(&self, name: &str) -> Result<Option<Vec<f64>>> {
        match self.named(name)? {
            (_, Value::Null) => Ok(None),
            (n, Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_f64()
                        .or_else(|| v.as_str().and_then(non_finite))
                        .ok_or_else(|| Self::wrong(n, v, "must be a list of numbers"))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            (n, v) => Err(Self::wrong(n, &v, "must be a list of numbers")),
        }
    }

    /// An optional pair of numbers `[lo, hi]`.
    pub fn opt_pair(&self, name: &str) -> Result<Option<(f64, f64)>> {
        let (n, v) = self.named(name)?;
        match self.opt_numbers(name)?.as_deref() {
            None => Ok(None),
            Some([lo, hi]) => Ok(Some((*lo, *hi))),
            Some(_) => Err(Self::wrong(n, &v, "must be a pair [lo, hi]")),
        }
    }

    /// A pair of numbers `[lo, hi]`.
    pub fn pair(&self, name: &str) -> Result<(f64, f64)> {
        let value = self.opt_pair(name)?;
        self.required(name, value)
    }

    /// ε ([`EPSILON`]), checked.
    pub fn epsilon(&self) -> Result<Epsilon> {
        Ok(Epsilon::new(self.f64(EPSILON.name)?)?)
    }

    /// δ ([`DELTA`]) if given, checked.
    pub fn delta(&self) -> Result<Option<Delta>> {
        Ok(self.opt_f64(DELTA.name)?.map(Delta::new).transpose()?)
    }
}

/// `"nan"`, `"inf"`, `"-inf"` (any case) as the number they name.
fn non_finite(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// A release of any registered mechanism.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum Released {
    /// A curve (means, densities).
    Curve(Release<Curve>),
    /// A covariance operator with its mean (FPCA by post-processing).
    Covariance(Release<Covariance>),
    /// A synthetic weighted dataset.
    Weighted(Release<WeightedSample>),
    /// A sketch.
    Sketch(Release<Sketch>),
    /// Coefficients (a private feature mean).
    Coefficients(Release<Coefficients>),
}

impl Released {
    /// The release as JSON (`release.json`).
    pub fn to_json(&self) -> Result<String> {
        match self {
            Self::Curve(r) => r.to_json(),
            Self::Covariance(r) => r.to_json(),
            Self::Weighted(r) => r.to_json(),
            Self::Sketch(r) => r.to_json(),
            Self::Coefficients(r) => r.to_json(),
        }
    }

    /// The released numbers as one vector (what an audit compares).
    pub fn values(&self) -> Vec<f64> {
        use fdp_core::Output;
        match self {
            Self::Curve(r) => Output::values(r.output()),
            Self::Covariance(r) => Output::values(r.output()),
            Self::Weighted(r) => Output::values(r.output()),
            Self::Sketch(r) => Output::values(r.output()),
            Self::Coefficients(r) => Output::values(r.output()),
        }
    }
}

/// An output a registered mechanism can have ([`Released`]'s variants).
pub trait RegisteredOutput: fdp_core::Output + Sized {
    /// The release wrapped as a [`Released`].
    fn wrap(release: Release<Self>) -> Released;
}

macro_rules! registered_outputs {
    ($($t:ty => $variant:ident),+) => {$(
        impl RegisteredOutput for $t {
            fn wrap(release: Release<Self>) -> Released {
                Released::$variant(release)
            }
        }
    )+};
}

registered_outputs!(Curve => Curve, Covariance => Covariance, WeightedSample => Weighted, Sketch => Sketch, Coefficients => Coefficients);

/// A mechanism of any registered kind behind one interface: its release through a [`Session`]
/// (the only way out: the ledger is always kept), from data or from merged states.
trait Erased: Send + Sync {
    fn summary(&self, input: Input<'_>) -> Result<Vec<f64>>;
    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>>;
    fn release(&self, session: &mut Session, input: Input<'_>) -> Result<Released>;
    fn part_state(&self, input: Input<'_>) -> Result<SummaryState>;
    fn release_state(&self, session: &mut Session, state: &SummaryState) -> Result<Released>;
    /// The fingerprint of the mechanism's own (empty) state; refused when not mergeable.
    fn state_fingerprint(&self) -> Result<u64>;
    fn mergeable(&self) -> bool;
    fn as_any(&self) -> &dyn std::any::Any;
}

fn wrong_input(expected: InputKind, got: InputKind) -> Error {
    Error::BadSpec {
        what: "the data",
        spec: format!("{got:?}"),
        reason: match expected {
            InputKind::Curves => "this mechanism reads curves on a common grid",
            InputKind::SparseCurves => "this mechanism reads sparse curves",
            InputKind::Points => "this mechanism reads points",
            InputKind::Labelled => "this mechanism reads labelled points (inputs and responses)",
        },
    }
}

fn not_mergeable() -> Error {
    Error::BadSpec {
        what: "the mechanism",
        spec: String::new(),
        reason: "has no mergeable summary state: release it on the whole data",
    }
}

fn part_of<D: ?Sized, M: MergeableMechanism<D>>(mechanism: &M, part: &D) -> Result<SummaryState> {
    let mut state = mechanism.empty_state();
    mechanism.update_state(&mut state, part)?;
    Ok(state)
}

/// A mergeable mechanism on dense curves: the input (data units) is mapped onto `[0, 1]` by the
/// doors' grid rule ([`front::on_unit_interval`]) before the mechanism reads it.
struct OnCurves<M, O> {
    mechanism: M,
    output: PhantomData<fn() -> O>,
}

impl<M, O> OnCurves<M, O> {
    fn read<T>(input: Input<'_>, f: impl FnOnce(&CurveSet<'_>) -> Result<T>) -> Result<T> {
        match input {
            Input::Curves { curves, .. } => f(&front::on_unit_interval(curves)?),
            other => Err(wrong_input(InputKind::Curves, other.kind())),
        }
    }
}

impl<M, O> Erased for OnCurves<M, O>
where
    M: for<'a> MergeableMechanism<CurveSet<'a>> + for<'a> Mechanism<CurveSet<'a>, Output = O> + 'static,
    O: RegisteredOutput + 'static,
{
    fn summary(&self, input: Input<'_>) -> Result<Vec<f64>> {
        Self::read(input, |curves| self.mechanism.summarize(curves))
    }
    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        Mechanism::<CurveSet<'_>>::exact_losses(&self.mechanism, a, b)
    }
    fn release(&self, session: &mut Session, input: Input<'_>) -> Result<Released> {
        Ok(O::wrap(Self::read(input, |curves| session.release(&self.mechanism, curves))?))
    }
    fn part_state(&self, input: Input<'_>) -> Result<SummaryState> {
        Self::read(input, |curves| part_of(&self.mechanism, curves))
    }
    fn release_state(&self, session: &mut Session, state: &SummaryState) -> Result<Released> {
        Ok(O::wrap(session.release_state(&self.mechanism, state)?))
    }
    fn state_fingerprint(&self) -> Result<u64> {
        Ok(MergeableMechanism::<CurveSet<'_>>::empty_state(&self.mechanism).fingerprint())
    }
    fn mergeable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        &self.mechanism
    }
}

/// How a mechanism on a data type without a lifetime (`D`) reads an [`Input`].
trait Reader<D: ?Sized>: Send + Sync + 'static {
    fn read<T>(&self, input: Input<'_>, f: impl FnOnce(&D) -> Result<T>) -> Result<T>;
}

/// Sparse curves on the public `domain` (data units), rescaled onto `[0, 1]` like a dense grid.
struct UnitSparse {
    domain: (f64, f64),
}

impl Reader<SparseCurves> for UnitSparse {
    fn read<T>(&self, input: Input<'_>, f: impl FnOnce(&SparseCurves) -> Result<T>) -> Result<T> {
        match input {
            Input::Sparse { curves, .. } if curves.domain() == self.domain => f(&curves.rescaled(0.0, 1.0)?),
            Input::Sparse { curves, .. } => Err(Error::BadParameter {
                name: "sparse curves' domain",
                value: curves.domain().into(),
                reason: "differs from the public grid's domain the mechanism was built for",
            }),
            other => Err(wrong_input(InputKind::SparseCurves, other.kind())),
        }
    }
}

/// Points as a point set: a record with a non-finite coordinate becomes the public default (the
/// origin) before anything is summed.
struct AsPoints;

impl Reader<PointSet> for AsPoints {
    fn read<T>(&self, input: Input<'_>, f: impl FnOnce(&PointSet) -> Result<T>) -> Result<T> {
        match input {
            Input::Points { data, dim } => f(&PointSet::with_default(dim, data.to_vec(), None)?),
            other => Err(wrong_input(InputKind::Points, other.kind())),
        }
    }
}

/// 1-D points snapped to the density's public grid (outside: the nearest end).
struct Snapped {
    grid: Grid,
}

impl Reader<GridPoints> for Snapped {
    fn read<T>(&self, input: Input<'_>, f: impl FnOnce(&GridPoints) -> Result<T>) -> Result<T> {
        match input {
            Input::Points { data, dim: 1 } => f(&GridPoints::snap(&self.grid, data)?),
            Input::Points { dim, .. } => Err(Error::Shape { what: "the points' dimension", expected: 1, got: dim }),
            other => Err(wrong_input(InputKind::Points, other.kind())),
        }
    }
}

/// Releases `M` from a merged state through a session.
type StateRelease<M, D> = fn(&mut Session, &M, &SummaryState) -> Result<Release<<M as Mechanism<D>>::Output>>;

/// Labelled 1-D inputs snapped to the public `grid` in the data's units (outside: the nearest end;
/// not a number: the grid point nearest the domain's centre), each with its response (not finite:
/// 0), on the same grid mapped onto [0, 1] where the mechanism's basis lives.
struct SnappedLabelled {
    grid: Grid,
    unit: Grid,
}

impl Reader<fdp_estimators::Labelled> for SnappedLabelled {
    fn read<T>(&self, input: Input<'_>, f: impl FnOnce(&fdp_estimators::Labelled) -> Result<T>) -> Result<T> {
        match input {
            Input::Labelled { x, y } => {
                let index = fdp_estimators::density::snap_to_grid(&self.grid, x)?;
                f(&fdp_estimators::Labelled::new(&self.unit, index, y.to_vec())?)
            }
            other => Err(wrong_input(InputKind::Labelled, other.kind())),
        }
    }
}

/// The state functions of a mergeable `M` on `D`, instantiated where that bound is known.
struct MergeFns<M: Mechanism<D>, D: ?Sized + 'static> {
    part: fn(&M, &D) -> Result<SummaryState>,
    empty: fn(&M) -> SummaryState,
    release: StateRelease<M, D>,
}

impl<M: MergeableMechanism<D>, D: ?Sized + 'static> MergeFns<M, D> {
    fn new() -> Self {
        Self {
            part: part_of::<D, M>,
            empty: |mechanism| mechanism.empty_state(),
            release: |session, mechanism, state| session.release_state(mechanism, state),
        }
    }
}

/// A mechanism `M` on a data type `D` without a lifetime, read by `R`; mergeable when `merge` is
/// present.
struct Wrapped<M: Mechanism<D>, R, D: ?Sized + 'static> {
    mechanism: M,
    reader: R,
    merge: Option<MergeFns<M, D>>,
}

impl<M, R, D> Erased for Wrapped<M, R, D>
where
    D: ?Sized + 'static,
    M: Mechanism<D> + 'static,
    M::Output: RegisteredOutput,
    R: Reader<D>,
{
    fn summary(&self, input: Input<'_>) -> Result<Vec<f64>> {
        self.reader.read(input, |data| self.mechanism.summarize(data))
    }
    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        self.mechanism.exact_losses(a, b)
    }
    fn release(&self, session: &mut Session, input: Input<'_>) -> Result<Released> {
        Ok(RegisteredOutput::wrap(self.reader.read(input, |data| session.release(&self.mechanism, data))?))
    }
    fn part_state(&self, input: Input<'_>) -> Result<SummaryState> {
        let merge = self.merge.as_ref().ok_or_else(not_mergeable)?;
        self.reader.read(input, |data| (merge.part)(&self.mechanism, data))
    }
    fn release_state(&self, session: &mut Session, state: &SummaryState) -> Result<Released> {
        let merge = self.merge.as_ref().ok_or_else(not_mergeable)?;
        Ok(RegisteredOutput::wrap((merge.release)(session, &self.mechanism, state)?))
    }
    fn state_fingerprint(&self) -> Result<u64> {
        let merge = self.merge.as_ref().ok_or_else(not_mergeable)?;
        Ok((merge.empty)(&self.mechanism).fingerprint())
    }
    fn mergeable(&self) -> bool {
        self.merge.is_some()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        &self.mechanism
    }
}

/// What a mechanism tells before its release, fixed when it is built.
#[derive(Debug, Clone)]
struct Described {
    name: &'static str,
    guarantee: PrivacyGuarantee,
    stages: Vec<Stage>,
    accuracy: Accuracy,
    unit: PrivacyUnit,
}

impl Described {
    fn of<D: ?Sized, M: Mechanism<D>>(mechanism: &M) -> Self {
        Self {
            name: mechanism.name(),
            guarantee: mechanism.guarantee(),
            stages: mechanism.stages(),
            accuracy: mechanism.accuracy(),
            unit: mechanism.privacy_unit(),
        }
    }
}

/// What a mechanism expects of its data, checked **before** anything is charged: the public n
/// (replace-one neighbours), the points' dimension, the curves' grid in the data's units.
#[derive(Debug, Clone, Default)]
struct Expected {
    n: Option<usize>,
    dim: Option<usize>,
    grid: Option<Grid>,
}

/// A registered mechanism, built for its frame: ready to release through a [`Session`].
pub struct Built {
    inner: Box<dyn Erased>,
    described: Described,
    input: InputKind,
    expected: Expected,
    /// The grid a released curve is shown on, in the data's units (curve mechanisms, regressions).
    display: Option<Grid>,
    spec: Spec,
    /// Public choices that are almost certainly mistakes (never about the data), for the doors to
    /// show.
    pub warnings: Vec<String>,
}

impl fmt::Debug for Built {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Built").field("name", &self.name()).field("spec", &self.spec).finish_non_exhaustive()
    }
}

impl Built {
    fn new(inner: Box<dyn Erased>, described: Described, input: InputKind) -> Self {
        let expected = Expected::default();
        Self { inner, described, input, expected, display: None, spec: Spec::new(""), warnings: Vec::new() }
    }

    /// The mechanism expects `n` records (replace-one neighbours: n is public).
    fn for_records(mut self, n: usize) -> Self {
        if self.described.guarantee.relation() == fdp_noise::NeighbourRelation::ReplaceOne {
            self.expected.n = Some(n);
        }
        self
    }

    /// The mechanism expects points of `dim` coordinates.
    fn expecting_dim(mut self, dim: usize) -> Self {
        self.expected.dim = Some(dim);
        self
    }

    /// The mechanism expects curves on `grid` (the data's units) and shows its release on it.
    fn on_grid(mut self, grid: Grid) -> Self {
        self.expected.grid = Some(grid.clone());
        self.display = Some(grid);
        self
    }

    /// A released curve is shown on `grid` (the data's units).
    fn shown_on(mut self, grid: Grid) -> Self {
        self.display = Some(grid);
        self
    }

    /// A (mergeable) mechanism on dense curves, protecting `frame`'s unit.
    fn curves<M, O>(mechanism: M, frame: &Frame) -> Self
    where
        M: for<'a> MergeableMechanism<CurveSet<'a>> + for<'a> Mechanism<CurveSet<'a>, Output = O> + 'static,
        O: RegisteredOutput + 'static,
    {
        let mechanism = PerUnit::new(mechanism, frame.unit.clone());
        let described = Described::of::<CurveSet<'_>, _>(&mechanism);
        let built = Self::new(Box::new(OnCurves { mechanism, output: PhantomData }), described, InputKind::Curves);
        let built = built.for_records(frame.n);
        match &frame.grid {
            Some(grid) => built.on_grid(grid.clone()),
            None => built,
        }
    }

    /// A (mergeable) mechanism on sparse curves of the public `domain` (data units).
    fn sparse<M>(mechanism: M, domain: (f64, f64), frame: &Frame) -> Self
    where
        M: MergeableMechanism<SparseCurves> + 'static,
        M::Output: RegisteredOutput,
    {
        let mechanism = PerUnit::new(mechanism, frame.unit.clone());
        let described = Described::of(&mechanism);
        let wrapped = Wrapped { mechanism, reader: UnitSparse { domain }, merge: Some(MergeFns::new()) };
        let built = Self::new(Box::new(wrapped), described, InputKind::SparseCurves).for_records(frame.n);
        match &frame.grid {
            Some(grid) => built.shown_on(grid.clone()),
            None => built,
        }
    }

    /// A mechanism on points that has no mergeable state.
    fn points<M>(mechanism: M) -> Self
    where
        M: Mechanism<PointSet> + 'static,
        M::Output: RegisteredOutput,
    {
        let described = Described::of(&mechanism);
        Self::new(Box::new(Wrapped { mechanism, reader: AsPoints, merge: None }), described, InputKind::Points)
    }

    /// A mergeable mechanism on points.
    fn mergeable_points<M>(mechanism: M) -> Self
    where
        M: MergeableMechanism<PointSet> + 'static,
        M::Output: RegisteredOutput,
    {
        let described = Described::of(&mechanism);
        let wrapped = Wrapped { mechanism, reader: AsPoints, merge: Some(MergeFns::new()) };
        Self::new(Box::new(wrapped), described, InputKind::Points)
    }

    /// A mergeable density mechanism on 1-D points snapped to its public `grid`.
    fn snapped<M>(mechanism: M, grid: Grid) -> Self
    where
        M: MergeableMechanism<GridPoints> + 'static,
        M::Output: RegisteredOutput,
    {
        let described = Described::of(&mechanism);
        let wrapped = Wrapped { mechanism, reader: Snapped { grid }, merge: Some(MergeFns::new()) };
        Self::new(Box::new(wrapped), described, InputKind::Points)
    }

    /// A mechanism on labelled 1-D inputs snapped to its public `grid` (the data's units; the
    /// mechanism's basis lives on `unit`, the same grid mapped onto [0, 1]); no mergeable state: the
    /// summary is a solve, not a sum.
    fn labelled<M>(mechanism: M, grid: Grid, unit: Grid) -> Self
    where
        M: Mechanism<fdp_estimators::Labelled> + 'static,
        M::Output: RegisteredOutput,
    {
        let described = Described::of(&mechanism);
        let wrapped = Wrapped { mechanism, reader: SnappedLabelled { grid: grid.clone(), unit }, merge: None };
        Self::new(Box::new(wrapped), described, InputKind::Labelled).shown_on(grid)
    }

    /// The mechanism's own name (`tuned_iclp_rkhs`, `iclp_kde`, `balog_alg1`, ...).
    pub fn name(&self) -> &'static str {
        self.described.name
    }

    /// The spec it was built from (the registered name; the parameters as given).
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The data it reads.
    pub fn input(&self) -> InputKind {
        self.input
    }

    /// `(ε, δ)` of one release, every stage included.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        self.described.guarantee
    }

    /// The stages the ledger charges one after another (they add up to [`guarantee`](Self::guarantee)).
    pub fn stages(&self) -> &[Stage] {
        &self.described.stages
    }

    /// The public accuracy preview.
    pub fn accuracy(&self) -> Accuracy {
        self.described.accuracy
    }

    /// What one record is.
    pub fn privacy_unit(&self) -> &PrivacyUnit {
        &self.described.unit
    }

    /// Whether summary states of parts can be merged and released ([`part_state`](Self::part_state)).
    pub fn is_mergeable(&self) -> bool {
        self.inner.mergeable()
    }

    /// Releases the mechanism on `input` through `session` (charged stage by stage), after
    /// [`check`](Self::check) — nothing is charged when the data are not what it was built for.
    pub fn release(&self, session: &mut Session, input: Input<'_>) -> Result<Released> {
        self.check(input)?;
        self.inner.release(session, input)
    }

    /// The exact summary state of one part of the data (merge parts with [`SummaryState::merge`]):
    /// any number of records, of the mechanism's kind, dimension and grid.
    pub fn part_state(&self, input: Input<'_>) -> Result<SummaryState> {
        self.check_part(input)?;
        let state = self.inner.part_state(input)?;
        let fingerprint = self.frame_fingerprint(state.fingerprint());
        Ok(state.relabelled(fingerprint))
    }

    /// Releases from the complete, merged state: the same release as on the whole data. A state
    /// made for another frame (e.g. the same shape of grid on another interval in the data's units,
    /// which maps onto the same unit grid) is refused before anything is charged.
    pub fn release_state(&self, session: &mut Session, state: &SummaryState) -> Result<Released> {
        let inner = self.inner.state_fingerprint()?;
        let expected = self.frame_fingerprint(inner);
        if state.fingerprint() != expected {
            return Err(Error::BadState(format!(
                "the state was made by another mechanism or for another frame (fingerprint {:016x}, this one is {expected:016x})",
                state.fingerprint()
            )));
        }
        self.inner.release_state(session, &state.clone().relabelled(inner))
    }

    /// The mechanism's own state fingerprint with the frame's grids in the data's units mixed in:
    /// two mechanisms built for grids of the same shape on different intervals map both onto
    /// [0, 1] and would otherwise accept each other's states.
    ///
    /// A person-level unit is mixed in too: a state summed from ungrouped rows by a record-level
    /// mechanism would otherwise release under the person-level one.
    fn frame_fingerprint(&self, inner: u64) -> u64 {
        let grids = [self.display.as_ref(), self.expected.grid.as_ref()];
        let words = grids.into_iter().flatten().flat_map(|g| g.points().iter().chain(g.weights()).map(|v| v.to_bits()));
        let unit = match self.described.unit {
            PrivacyUnit::Record => String::new(),
            ref person => person.to_string(),
        };
        fdp_core::state::fingerprint_of(std::iter::once(inner).chain(words).chain(unit.bytes().map(u64::from)))
    }

    /// **Post-processing of a released sketch**: M2M estimates (means, covariance) read off
    /// `release` with `prior_points` public uniform points from `prior_seed` — no budget. Refused
    /// for a mechanism that is not a sketch.
    pub fn m2m(&self, release: &Release<Sketch>, prior_points: usize, prior_seed: u64) -> Result<front::M2mSummary> {
        let sketch = self.sketch()?;
        front::m2m_summary(sketch, release, prior_points, prior_seed)
    }

    /// Checks before a sketch's release that its M2M estimates will be possible with
    /// `prior_points` (public).
    pub fn check_m2m_prior(&self, prior_points: usize) -> Result<()> {
        fdp_kme::M2mDesign::check_prior_points(self.sketch()?.map(), prior_points)
    }

    fn sketch(&self) -> Result<&fdp_kme::PrivateSketch> {
        self.inner.as_any().downcast_ref::<fdp_kme::PrivateSketch>().ok_or(Error::BadSpec {
            what: "the mechanism",
            spec: self.name().into(),
            reason: "M2M estimates are read off a sketch",
        })
    }

    /// The grid a released curve is shown on, in the data's units (`None`: the release's own grid
    /// is already in the data's units, as a density's).
    pub fn display_grid(&self) -> Option<&Grid> {
        self.display.as_ref()
    }

    /// **Checks `input` against what the mechanism was built for — its kind, the public n, the
    /// points' dimension, the curves' grid — before anything is charged**: a shape error after the
    /// charge would spend the budget for nothing. Public quantities only (n and the grid are
    /// public); [`release`](Self::release) calls it first.
    pub fn check(&self, input: Input<'_>) -> Result<()> {
        self.check_part(input)?;
        match self.expected.n {
            Some(n) if input.records() != n => {
                Err(Error::Shape { what: "the number of records (n is public)", expected: n, got: input.records() })
            }
            _ => Ok(()),
        }
    }

    /// [`check`](Self::check) but for any number of records (a part of the data).
    fn check_part(&self, input: Input<'_>) -> Result<()> {
        if input.kind() != self.input {
            return Err(wrong_input(self.input, input.kind()));
        }
        // A mechanism built per person sums whatever records it is handed: rows not grouped by
        // the person would each count as a person, and the release would protect a person only
        // at ε times their number of rows while stating ε. The unit is public (the door states it).
        if *input.unit() != self.described.unit {
            return Err(Error::DataUnit {
                mechanism: self.described.name.into(),
                expected: self.described.unit.clone(),
                got: input.unit().clone(),
            });
        }
        if let Input::Points { data, dim } = input
            && (dim == 0 || !data.len().is_multiple_of(dim) || self.expected.dim.is_some_and(|d| d != dim))
        {
            return Err(Error::Shape {
                what: "the points' dimension",
                expected: self.expected.dim.unwrap_or(dim),
                got: dim,
            });
        }
        if let Input::Labelled { x, y } = input
            && x.len() != y.len()
        {
            return Err(Error::Shape { what: "the responses", expected: x.len(), got: y.len() });
        }
        if let (Input::Curves { curves, .. }, Some(grid)) = (input, &self.expected.grid)
            && (curves.grid().points() != grid.points() || curves.grid().weights() != grid.weights())
        {
            return Err(Error::BadParameter {
                name: "the curves' grid",
                value: ParamValue::Count(curves.grid().len()),
                reason: "differs from the public grid the mechanism was built for (in the data's units): build it for this grid",
            });
        }
        Ok(())
    }

    /// The summary of `input` (what the noise is added to): for audits and the edge suite; publish
    /// through [`release`](Self::release).
    pub fn summary(&self, input: Input<'_>) -> Result<Vec<f64>> {
        self.check(input)?;
        self.inner.summary(input)
    }

    /// The exact loss of each stage between two summaries, as a ratio to its budget
    /// ([`Mechanism::exact_losses`]); `None` if the mechanism states no exact-loss law.
    pub fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
        self.inner.exact_losses(a, b)
    }
}
