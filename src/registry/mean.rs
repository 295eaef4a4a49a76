//! `mean`: a private mean curve of curves on a common grid ([`front::MeanRequest`]).

use super::{Built, DELTA, EPSILON, Entry, Frame, InputKind, Param, Params};
use crate::front::MeanRequest;
use fdp_core::Result;

pub(super) const ENTRY: Entry = Entry {
    name: "mean",
    about: "a private mean curve (privately tuned ICLP-RKHS by default; docs/DESIGN.md sections 12 and 16)",
    input: InputKind::Curves,
    params: &[
        EPSILON,
        Param::with_default(
            "method",
            "\"iclp_rkhs\"",
            "iclp_rkhs, iclp_l1, iid_laplace, gaussian_process or bernstein",
        ),
        Param::with_default("kernel", "\"matern32:0.1\"", "SHAPE:RHO, the length-scale a fraction of the domain"),
        Param::with_default("bound", "null", "NORM:VALUE, the clipping bound (the ceiling under private tuning)"),
        Param::with_default("range", "null", "[lo, hi], the public range of the values (clamp, centre, ceiling)"),
        Param::with_default("centre", "null", "a public constant the records are centred at"),
        Param::with_default("tuning", "\"private\"", "private (inside the same ε) or plug_in"),
        DELTA,
        Param::with_default("psi", "null", "plug-in only: ψ"),
        Param::with_default("components", "null", "plug-in only: IID Laplace components"),
        Param::with_default("degree", "null", "plug-in only: the Bernstein degree"),
    ],
    example: r#"{"epsilon": 1.0, "range": [0.0, 1.0]}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let request = MeanRequest {
        method: p.text("method")?.parse()?,
        kernel: p.text("kernel")?.parse()?,
        bound: p.parsed("bound")?,
        epsilon: p.epsilon()?,
        delta: p.delta()?,
        tuning: p.text("tuning")?.parse()?,
        centre: p.opt_f64("centre")?,
        range: p.opt_pair("range")?,
        psi: p.opt_f64("psi")?,
        components: p.opt_usize("components")?,
        degree: p.opt_usize("degree")?,
    };
    let grid = frame.unit_grid()?;
    let mut built = Built::curves(request.build(&grid, frame.n)?, frame);
    built.warnings = request.warnings(&grid);
    Ok(built)
}
