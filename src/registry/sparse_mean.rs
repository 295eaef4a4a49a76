//! `sparse_mean`: the private mean of irregular or sparse curves ([`front::sparse_mean`]).

use super::{Built, DELTA, EPSILON, Entry, Frame, InputKind, Param, Params};
use crate::front;
use fdp_core::Result;

pub(super) const ENTRY: Entry = Entry {
    name: "sparse_mean",
    about: "a private mean of sparse curves (privately tuned binned ratio mean; docs/DESIGN.md section 18)",
    input: InputKind::SparseCurves,
    params: &[
        EPSILON,
        Param::required("range", "[lo, hi], the public range of the values"),
        Param::with_default("kernel", "\"matern32:0.1\"", "SHAPE:RHO, the basis the release is represented in"),
        Param::with_default("centre", "null", "a public constant the records are centred at (default: mid-range)"),
        Param::with_default("design", "null", "the public probability of an observation at each grid point"),
        DELTA,
    ],
    example: r#"{"epsilon": 1.0, "range": [0.0, 1.0]}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let grid = frame.unit_grid()?;
    let domain = frame.grid()?.domain()[0];
    let design = p.opt_numbers("design")?;
    let mechanism = front::sparse_mean(
        &grid,
        p.text("kernel")?.parse()?,
        p.pair("range")?,
        p.opt_f64("centre")?,
        design.as_deref(),
        p.epsilon()?,
        p.delta()?,
        frame.n,
    )?;
    Ok(Built::sparse(mechanism, domain, frame))
}
