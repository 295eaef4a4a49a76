//! `kde`: a private density of 1-D points in a public interval ([`front::KdeRequest`]).

use super::{Built, DELTA, EPSILON, Entry, Frame, InputKind, Param, Params};
use crate::front::KdeRequest;
use fdp_core::{Error, ParamValue, Result};
use fdp_mercer::StationaryShape;

pub(super) const ENTRY: Entry = Entry {
    name: "kde",
    about: "a private density estimate on a public interval (ICLP KDE by default, Theorem 14)",
    input: InputKind::Points,
    params: &[
        EPSILON,
        Param::with_default("method", "\"iclp\"", "iclp, gaussian_process, iid_laplace or bernstein"),
        Param::with_default("domain", "[0.0, 1.0]", "[lo, hi], the public interval (outside: the nearest end)"),
        Param::with_default("kernel", "\"gaussian\"", "gaussian or exponential"),
        Param::with_default("bandwidth", "null", "the bandwidth (default: the public 0.15 (hi - lo) n^(-1/5))"),
        Param::with_default("grid_points", "200", "grid points on the domain (midpoint rule)"),
        Param::with_default("eta", "1.25", "the operator power η of the ICLP and GP KDEs")
            .only_with("method", &["iclp", "gaussian_process", "gp"]),
        DELTA,
        Param::with_default("components", "null", "IID Laplace components (default ⌊n^(1/3)⌋)"),
        Param::with_default("degree", "null", "Bernstein degree (default 20)"),
    ],
    example: r#"{"epsilon": 1.0, "domain": [0.0, 1.0], "grid_points": 50}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let shape = match p.choice("kernel")?.as_str() {
        "gaussian" => StationaryShape::Gaussian,
        "exponential" => StationaryShape::Exponential,
        other => {
            return Err(Error::BadParameter {
                name: "kernel",
                value: ParamValue::Text(other.into()),
                reason: "must be gaussian or exponential",
            });
        }
    };
    let request = KdeRequest {
        method: p.text("method")?.parse()?,
        domain: p.pair("domain")?,
        grid_points: p.usize("grid_points")?,
        shape,
        bandwidth: p.opt_f64("bandwidth")?,
        epsilon: p.epsilon()?,
        delta: p.delta()?,
        eta: p.f64("eta")?,
        components: p.opt_usize("components")?,
        degree: p.opt_usize("degree")?,
    };
    Ok(Built::snapped(request.build(frame.n)?, request.grid()?).for_records(frame.n).expecting_dim(1))
}
