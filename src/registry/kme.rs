//! `kme`: Balog et al.'s Algorithm 1, a private synthetic weighted dataset ([`front::KmeRequest`]).

use super::{Built, EPSILON, Entry, Frame, InputKind, Param, Params};
use crate::front::KmeRequest;
use fdp_core::{Error, ParamValue, Result};
use fdp_mercer::Stationary;

pub(super) const ENTRY: Entry = Entry {
    name: "kme",
    about: "Balog et al.'s Algorithm 1: weights on public synthetic points, Gaussian mechanism ((ε, δ)-DP)",
    input: InputKind::Points,
    params: &[
        EPSILON,
        Param::required("delta", "δ > 0"),
        Param::required("centre", "the public centre of the synthetic points (length D)"),
        Param::required("scale", "their public spread"),
        Param::with_default("rho", "1.0", "the Gaussian kernel's length-scale"),
        Param::with_default("synthetic_points", "100", "how many synthetic points"),
        Param::with_default("points_seed", "0", "the seed of the synthetic points (public randomness)"),
    ],
    example: r#"{"epsilon": 1.0, "delta": 1e-6, "centre": [0.5, 0.5], "scale": 0.3, "synthetic_points": 20}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let request = KmeRequest {
        kernel: Stationary::gaussian(p.f64("rho")?)?,
        centre: p.opt_numbers("centre")?.unwrap_or_default(),
        scale: p.f64("scale")?,
        synthetic_points: p.usize("synthetic_points")?,
        points_seed: p.u64("points_seed")?,
        epsilon: p.epsilon()?,
        delta: p.delta()?.ok_or(Error::BadParameter {
            name: "delta",
            value: ParamValue::Missing,
            reason: "Algorithm 1 is (ε, δ)-DP: give δ > 0",
        })?,
    };
    let dim = request.centre.len();
    Ok(Built::mergeable_points(request.build(frame.n)?).for_records(frame.n).expecting_dim(dim))
}
