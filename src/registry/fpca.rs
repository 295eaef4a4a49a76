//! `fpca`: the private covariance operator of curves, FPCA by post-processing
//! ([`front::FpcaRequest`]).

use super::{Built, DELTA, EPSILON, Entry, Frame, InputKind, Param, Params};
use crate::front::FpcaRequest;
use fdp_core::Result;

pub(super) const ENTRY: Entry = Entry {
    name: "fpca",
    about: "a private covariance operator and its principal components (docs/DESIGN.md section 17)",
    input: InputKind::Curves,
    params: &[
        EPSILON,
        Param::required("range", "[lo, hi], the public range of the values"),
        COMPONENTS,
        KERNEL,
        CENTRE,
        DELTA,
    ],
    example: r#"{"epsilon": 1.0, "range": [0.0, 1.0], "components": 3}"#,
    build,
};

// J = 6 holds the top-3 principal subspace of Adelaide's Mondays to 0.28 in the truncation's own
// distance (`examples/studies/sparse_and_fpca`); J = 3 cannot rotate within its span; J = 8 releases
// 44 noisy numbers against 27.
pub(super) const COMPONENTS: Param =
    Param::with_default("components", "6", "J, the basis components the covariance is released in");
pub(super) const KERNEL: Param = Param::with_default("kernel", "\"matern32:0.1\"", "SHAPE:RHO, the basis");
pub(super) const CENTRE: Param =
    Param::with_default("centre", "null", "a public constant the records are centred at (default: mid-range)");

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    Ok(Built::curves(request(p)?.build(&frame.unit_grid()?, frame.n)?, frame))
}

/// The covariance request of an entry with this entry's parameters (`fpca`, `sparse_fpca`).
pub(super) fn request(p: &Params<'_>) -> Result<FpcaRequest> {
    Ok(FpcaRequest {
        kernel: p.text("kernel")?.parse()?,
        range: p.pair("range")?,
        centre: p.opt_f64("centre")?,
        components: p.usize("components")?,
        epsilon: p.epsilon()?,
        delta: p.delta()?,
    })
}
