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
        TRUNCATION,
        KERNEL,
        CENTRE,
        DELTA,
    ],
    example: r#"{"epsilon": 1.0, "range": [0.0, 1.0], "components": 3}"#,
    build,
};

// J = 8 with the risk's truncation: the FPCA keeps the leading j >= k components whose signal pays
// for their noise, so J is the largest truncation considered (`examples/studies/sparse_and_fpca
// --truncation-only`, docs/DESIGN.md section 17.9: within 0.05 of the best fixed J in 21 of 48 cells; a
// fixed J = 6 was worse in 42 of 48 cells, up to 22x on the simulations).
pub(super) const COMPONENTS: Param =
    Param::with_default("components", "8", "J, the basis components the covariance is released in");
pub(super) const TRUNCATION: Param = Param::with_default(
    "truncation",
    "\"risk\"",
    "risk: the FPCA uses the leading j >= k components with the smallest estimated error; fixed: all J",
);
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
        truncation: p.choice("truncation")?.parse()?,
    })
}
