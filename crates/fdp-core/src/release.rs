//! What a private release is: an output (a curve, a vector, a weighted point set, a sketch) and the
//! metadata that says how it was made and what it guarantees.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use fdp_noise::timing::{self, SamplerTiming};
use fdp_noise::{Calibration, NeighbourRelation, PrivacyGuarantee, RngProvenance};

use crate::error::{Error, Result};
use crate::params::{ClippingBound, Regularisation, SensitivityNorm, Tuning};

/// What a release records about how it was made (serialised with it). One type for every mechanism.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseMetadata {
    /// `iclp_rkhs`, `gaussian_process_kde`, `balog_alg1`, `rff_sketch`, ...
    pub mechanism: String,
    /// ε, δ (0 for pure DP) and the neighbour relation.
    pub guarantee: PrivacyGuarantee,
    /// The sensitivity the noise is calibrated to, before the lattice rounding charge.
    pub sensitivity: f64,
    /// The norm that sensitivity is measured in.
    pub sensitivity_norm: SensitivityNorm,
    /// The clipping bound with its norm (fixed before the data were seen); `None` where records need
    /// no clipping (bounded kernels and feature maps, points snapped to a grid).
    pub clipping: Option<ClippingBound>,
    /// η and ψ, where the mechanism has them (a KDE's kernel power has ψ = 0).
    pub regularisation: Option<Regularisation>,
    /// Number of released numbers (coefficients, lattice values, coordinates, features).
    pub components: usize,
    /// The number of records, public under replace-one; `None` under add/remove.
    pub n: Option<usize>,
    /// The basis the release lives in, if any, as the functional layer describes it
    /// (`fdp_mercer::BasisSummary`; read it back typed with `fdp_functional::MetadataExt`).
    pub basis: Option<Descriptor>,
    /// The kernel, where there is one and no basis records it (`fdp_mercer::KernelSpec`).
    pub kernel: Option<Descriptor>,
    /// How the noise scales were set.
    pub calibration: Option<Calibration>,
    /// Seeded (reproducible, for experiments) or OS entropy (for real releases).
    pub rng: RngProvenance,
    /// Whether the exact samplers ran in fixed work (`padded`, the default) or in variable time
    /// (`variable`, an opt-in for simulations whose running time leaks the noise drawn): docs/DESIGN.md
    /// section 15.5. The draws are the same in both. Read as `variable` when absent from an older
    /// release's JSON (its samplers were variable-time).
    #[serde(default = "SamplerTiming::unrecorded")]
    pub sampler_timing: SamplerTiming,
    /// How the tuning parameters were chosen.
    pub tuning: Tuning,
    /// Whether a public reference curve was subtracted before clipping (and added back).
    pub centred: bool,
    /// For a multi-stage mechanism (a private bound, a private tuning step, the release): what each
    /// stage spent and what it chose, in order. Empty for a single-stage mechanism.
    pub stages: Vec<StageRecord>,
    /// Who the guarantee protects: one record (row), or one person (every row with the same public
    /// id, combined into one record before the mechanism saw the data). Read as
    /// [`PrivacyUnit::Record`] when absent from an older release's JSON.
    #[serde(default)]
    pub privacy_unit: PrivacyUnit,
    /// The release's own reading of its error, where the mechanism makes one from the release
    /// (the privately tuned means: post-processing, free to publish); the `accuracy` stage says the
    /// same in words. Absent from other releases and from older releases' JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_error: Option<OwnError>,
}

/// **A release's own reading of its error** against the non-private target (squared L2 on the
/// grid for curves), computed from the release and public quantities only (post-processing): the
/// privately tuned means' `accuracy` stage as numbers (docs/DESIGN.md sections 16.5, 16.13–16.15 and
/// 16.22). A number that is not finite (a range-free frame whose noise variance overflowed) is
/// absent (`None`), as JSON cannot carry it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OwnError {
    /// The release's own estimate of its squared error: an average-case number, floored at 0
    /// (where the noise swamps the signal it is often 0 though the release is not exact).
    pub estimate: Option<f64>,
    /// The public centre's estimated squared error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centre: Option<f64>,
    /// The upper-side figure: the estimate plus 2 sd of its noise, the clipping term at an unlucky
    /// bound, at most the range's squared diameter. A reading, not a bound (DESIGN §16.22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// The L2 half-width (not squared) of the ±2 sd noise band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<f64>,
    /// The release does no better than the public centre by these estimates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_dominated: Option<bool>,
}

impl OwnError {
    /// The full reading of a release tuned against the centre.
    pub fn new(estimate: f64, centre: f64, upper: f64, band: f64, noise_dominated: bool) -> Self {
        Self {
            centre: finite(centre),
            upper: finite(upper),
            band: finite(band),
            noise_dominated: Some(noise_dominated),
            ..Self::estimate_only(estimate)
        }
    }

    /// An estimate alone (the pilot-tuned kinds).
    pub fn estimate_only(estimate: f64) -> Self {
        Self { estimate: finite(estimate), centre: None, upper: None, band: None, noise_dominated: None }
    }
}

/// A number JSON can carry, or `None`.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// Who a release's guarantee protects: the unit that neighbouring datasets differ by.
///
/// Under [`Record`](Self::Record) replacing one row of the data changes the release's distribution
/// by at most `e^ε`; a person with `m` rows is then protected only at `m ε` (group privacy).
/// Under [`Person`](Self::Person) the rows are first grouped by the public id column and each
/// person's rows combined into one bounded record (for curves: the mean of the person's repaired
/// curves, `fdp_data::CurveSet::per_person`), so replacing **every** row of one person — any
/// number of them, with any contents — is one replaced record of the grouped data, and the
/// mechanism's record-level sensitivity with n = the number of persons is the person-level one.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PrivacyUnit {
    /// One record (one row, one curve, one point).
    #[default]
    Record,
    /// One person: every row with the same value in the public column `id_column`.
    Person {
        /// The column (or variable) whose values name the persons.
        id_column: String,
    },
}

impl PrivacyUnit {
    /// One person, identified by the values of `id_column`.
    pub fn person(id_column: impl Into<String>) -> Self {
        Self::Person { id_column: id_column.into() }
    }

    /// The unit a door names by an optional id variable: one person of `id_column`, or one
    /// record without one.
    pub fn of_id(id_column: Option<impl Into<String>>) -> Self {
        id_column.map_or(Self::Record, Self::person)
    }
}

impl std::fmt::Display for PrivacyUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Record => f.write_str("one record (row)"),
            Self::Person { id_column } => write!(f, "one person (every row with the same {id_column:?})"),
        }
    }
}

/// What one stage of a multi-stage release spent and chose (recorded in the release and the ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// `bound`, `pilot`, `release`, or `tuning` (a post-processing choice, ε = 0).
    pub stage: String,
    /// What the stage was charged (0 for post-processing).
    pub epsilon: f64,
    pub delta: f64,
    /// What it chose or released, e.g. `tau = 0.31 (coefficient_l1)`.
    pub outcome: String,
}

impl ReleaseMetadata {
    /// The fields every mechanism sets, with the rest at their defaults: no clipping, regularisation,
    /// basis, kernel or calibration; OS entropy (each release records its own RNG); the samplers'
    /// current timing mode ([`fdp_noise::timing::current`]); plug-in tuning;
    /// not centred; n public exactly when the relation is replace-one.
    pub fn new(
        mechanism: &str,
        guarantee: PrivacyGuarantee,
        sensitivity: f64,
        sensitivity_norm: SensitivityNorm,
        n: usize,
    ) -> Self {
        let n = (guarantee.relation() == NeighbourRelation::ReplaceOne).then_some(n);
        Self {
            mechanism: mechanism.into(),
            guarantee,
            sensitivity,
            sensitivity_norm,
            clipping: None,
            regularisation: None,
            components: 0,
            n,
            basis: None,
            kernel: None,
            calibration: None,
            rng: RngProvenance::OsEntropy,
            sampler_timing: timing::current(),
            tuning: Tuning::PlugIn,
            centred: false,
            stages: Vec::new(),
            privacy_unit: PrivacyUnit::Record,
            own_error: None,
        }
    }
}

/// The released object of a mechanism. Implement it for a new kind of output.
pub trait Output: Serialize + Clone + Send + Sync + std::fmt::Debug {
    /// The released numbers as one vector — what a black-box audit looks at.
    fn values(&self) -> Vec<f64>;
    /// A short description for the session ledger, e.g. `curve on 100 grid points`.
    fn describe(&self) -> String;
}

/// A private output with its metadata.
#[derive(Debug, Clone)]
pub struct Release<O> {
    output: O,
    metadata: ReleaseMetadata,
}

impl<O: Output> Release<O> {
    /// Pairs an output with its metadata (the mechanism's `privatize` does this).
    pub fn new(output: O, metadata: ReleaseMetadata) -> Self {
        Self { output, metadata }
    }

    /// The released object.
    pub fn output(&self) -> &O {
        &self.output
    }

    /// The metadata.
    pub fn metadata(&self) -> &ReleaseMetadata {
        &self.metadata
    }

    /// The released numbers as one vector.
    pub fn values(&self) -> Vec<f64> {
        self.output.values()
    }

    /// The output and the metadata (e.g. for a pipeline that wraps a stage's release).
    pub fn into_parts(self) -> (O, ReleaseMetadata) {
        (self.output, self.metadata)
    }

    /// The release as JSON: `{"metadata": ..., "output": ...}`.
    pub fn to_json(&self) -> Result<String> {
        #[derive(Serialize)]
        struct Record<'a, O> {
            metadata: &'a ReleaseMetadata,
            output: &'a O,
        }
        serde_json::to_string_pretty(&Record { metadata: &self.metadata, output: &self.output })
            .map_err(|e| Error::Json(e.to_string()))
    }
}

/// A released vector (a mean feature vector, coordinates in a subspace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coefficients(pub Vec<f64>);

impl Output for Coefficients {
    fn values(&self) -> Vec<f64> {
        self.0.clone()
    }

    fn describe(&self) -> String {
        format!("vector of {} numbers", self.0.len())
    }
}

/// A released weighted point set in `R^D` (a synthetic dataset): `Σ_m w_m δ_{z_m}`, points public.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedSample {
    /// D.
    pub dim: usize,
    /// The points, row-major (`M * D` numbers), chosen without the data.
    pub points: Vec<f64>,
    /// The released weights (may be negative).
    pub weights: Vec<f64>,
}

impl WeightedSample {
    /// CSV with a header `x1,...,xD,weight`, one synthetic point per line.
    pub fn to_csv(&self) -> String {
        let mut out = (1..=self.dim).map(|i| format!("x{i}")).collect::<Vec<_>>().join(",") + ",weight\n";
        for (point, w) in self.points.chunks(self.dim.max(1)).zip(&self.weights) {
            let row: Vec<String> = point.iter().map(|v| format!("{v}")).collect();
            out += &format!("{},{w}\n", row.join(","));
        }
        out
    }
}

impl Output for WeightedSample {
    fn values(&self) -> Vec<f64> {
        self.weights.clone()
    }

    fn describe(&self) -> String {
        format!("{} weighted points in R^{}", self.weights.len(), self.dim)
    }
}

/// A released sketch `S = (Σ Φ(x_i) + ξ) / (n + ζ)` with its noisy count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sketch {
    /// The normalised sketch S.
    pub sketch: Vec<f64>,
    /// `n + ζ`, at least 1 (post-processing).
    pub noisy_count: f64,
    /// The noisy sum `Σ Φ(x_i) + ξ` before the division.
    pub noisy_sum: Vec<f64>,
}

impl Output for Sketch {
    fn values(&self) -> Vec<f64> {
        let mut v = self.noisy_sum.clone();
        v.push(self.noisy_count);
        v
    }

    fn describe(&self) -> String {
        format!("sketch of {} features", self.sketch.len())
    }
}

/// A public description of an object a release was made with — its basis, its kernel — recorded in
/// [`ReleaseMetadata`] in the describing layer's own serialised form.
///
/// The release path knows no bases or kernels (they live in the functional layer, above it), so it
/// holds their description as an ordered tree of JSON values: [`Descriptor::of`] records any
/// serialisable value, [`Descriptor::to`] reads it back as its type. Keys keep their order and
/// numbers their kind (an unsigned, a signed or a float) and exact value, so a release's JSON is
/// byte for byte what the described type itself serialises to.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor(Node);

/// One value of a [`Descriptor`]: JSON with ordered maps and integers kept apart from floats.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text(String),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Descriptor {
    /// The description of `value`: what it serialises to.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self> {
        let text = serde_json::to_string(value).map_err(|e| Error::Json(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| Error::Json(e.to_string()))
    }

    /// The described value read back as a `T` (e.g. `fdp_mercer::BasisSummary`); an error if it is
    /// not one.
    pub fn to<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        let text = serde_json::to_string(self).map_err(|e| Error::Json(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| Error::Json(e.to_string()))
    }
}

impl Serialize for Descriptor {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Descriptor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        Node::deserialize(deserializer).map(Self)
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Null => serializer.serialize_unit(),
            Self::Bool(b) => serializer.serialize_bool(*b),
            Self::Unsigned(u) => serializer.serialize_u64(*u),
            Self::Signed(i) => serializer.serialize_i64(*i),
            Self::Float(f) => serializer.serialize_f64(*f),
            Self::Text(t) => serializer.serialize_str(t),
            Self::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                items.iter().try_for_each(|item| seq.serialize_element(item))?;
                seq.end()
            }
            Self::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                entries.iter().try_for_each(|(key, value)| map.serialize_entry(key, value))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct NodeVisitor;

        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }

            fn visit_unit<E: de::Error>(self) -> std::result::Result<Node, E> {
                Ok(Node::Null)
            }

            fn visit_none<E: de::Error>(self) -> std::result::Result<Node, E> {
                Ok(Node::Null)
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Node, D::Error> {
                Node::deserialize(d)
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Node, E> {
                Ok(Node::Bool(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Node, E> {
                Ok(Node::Unsigned(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Node, E> {
                Ok(Node::Signed(v))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Node, E> {
                Ok(Node::Float(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Node, E> {
                Ok(Node::Text(v.into()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Node, E> {
                Ok(Node::Text(v))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::List(items))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Node::Map(entries))
            }
        }

        deserializer.deserialize_any(NodeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The own-error reading goes through JSON and back; a number JSON cannot carry is absent, not
    /// `null` in an `f64` (which would not read back); metadata without one (every mechanism but the
    /// privately tuned means, and older releases) reads as `None`.
    #[test]
    fn the_own_error_reading_round_trips_through_json() {
        let guarantee = PrivacyGuarantee::pure(fdp_noise::Epsilon::new(1.0).unwrap());
        let plain = ReleaseMetadata::new("m", guarantee, 1.0, SensitivityNorm::L1, 10);
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("own_error"));
        assert_eq!(serde_json::from_str::<ReleaseMetadata>(&json).unwrap().own_error, None);
        for own in [
            OwnError::new(0.0, 1.5e-3, 0.25, 0.02, true),
            OwnError::new(2.0, f64::INFINITY, f64::NAN, 0.0, false),
            OwnError::estimate_only(3.0e-4),
        ] {
            let with = ReleaseMetadata { own_error: Some(own), ..plain.clone() };
            let read: ReleaseMetadata = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
            assert_eq!(read.own_error, Some(own));
        }
        let odd = OwnError::new(2.0, f64::INFINITY, f64::NAN, 0.0, false);
        assert_eq!((odd.centre, odd.upper, odd.band), (None, None, Some(0.0)));
    }

    /// A description is written back byte for byte as the described value serialises: key order,
    /// integers against floats, exact floats, nested lists and maps, non-finite floats (`null`).
    #[test]
    fn a_descriptor_serialises_exactly_as_what_it_describes() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Described {
            zeta: String,
            alpha: Vec<(String, f64)>,
            count: usize,
            offset: i64,
            ratio: f64,
            whole: f64,
            tiny: f64,
            flag: bool,
            nothing: Option<u8>,
            inner: Inner,
        }
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        enum Inner {
            Closed { length: f64 },
        }
        let value = Described {
            zeta: "matern32".into(),
            alpha: vec![("rho".into(), 0.1), ("variance".into(), 1.0)],
            count: 100,
            offset: -3,
            ratio: 0.1 + 0.2,
            whole: 2.0,
            tiny: 5e-324,
            flag: true,
            nothing: None,
            inner: Inner::Closed { length: std::f64::consts::PI },
        };
        let d = Descriptor::of(&value).unwrap();
        for pretty in [false, true] {
            let (direct, described) = if pretty {
                (serde_json::to_string_pretty(&value).unwrap(), serde_json::to_string_pretty(&d).unwrap())
            } else {
                (serde_json::to_string(&value).unwrap(), serde_json::to_string(&d).unwrap())
            };
            assert_eq!(direct, described);
        }
        assert_eq!(d.to::<Described>().unwrap(), value);
        let read: Descriptor = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(read, d);
        assert!(d.to::<Vec<f64>>().is_err());
        let nan = Descriptor::of(&[f64::NAN, 1.5]).unwrap();
        assert_eq!(serde_json::to_string(&nan).unwrap(), "[null,1.5]");
    }
}
