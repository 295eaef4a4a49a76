//! `sketch`: a private sketch of points in `[0, 1]^D` ([`front::SketchRequest`]).

use super::{Built, EPSILON, Entry, Frame, InputKind, Param, Params};
use crate::front::SketchRequest;
use fdp_core::Result;

pub(super) const ENTRY: Entry = Entry {
    name: "sketch",
    about: "a private sketch (hist, rff or race) of points in [0, 1]^D, add/remove-one ε-DP; M2M by post-processing",
    input: InputKind::Points,
    params: &[
        EPSILON,
        Param::required("dim", "D, the points' dimension"),
        Param::with_default("map", "\"hist\"", "hist, rff or race"),
        Param::with_default("size", "10", "histogram bins, RFF frequency pairs or RACE repetitions"),
        Param::with_default("width", "0.3", "RFF bandwidth or RACE bucket width").only_with("map", &["rff", "race"]),
        Param::with_default("buckets", "16", "RACE buckets per repetition").only_with("map", &["race"]),
        Param::with_default("map_seed", "0", "the seed of the random features (public randomness)")
            .only_with("map", &["rff", "race"]),
    ],
    example: r#"{"epsilon": 1.0, "dim": 2}"#,
    build,
};

fn build(p: &Params<'_>, _frame: &Frame) -> Result<Built> {
    let dim = p.usize("dim")?;
    let request = SketchRequest {
        map: p.text("map")?,
        dim,
        size: p.usize("size")?,
        width: p.f64("width")?,
        buckets: p.usize("buckets")?,
        map_seed: p.u64("map_seed")?,
        epsilon: p.epsilon()?,
    };
    // n is private under add/remove-one: not checked.
    Ok(Built::mergeable_points(request.build()?).expecting_dim(dim))
}
