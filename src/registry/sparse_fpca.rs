//! `sparse_fpca`: the private covariance operator of sparse curves (each record's own kernel-ridge
//! fit onto the basis), FPCA by post-processing ([`crate::front::FpcaRequest::build_sparse`]).

use super::fpca::{CENTRE, COMPONENTS, KERNEL, TRUNCATION, request};
use super::{Built, DELTA, EPSILON, Entry, Frame, InputKind, Param, Params};
use fdp_core::Result;

pub(super) const ENTRY: Entry = Entry {
    name: "sparse_fpca",
    about: "a private covariance operator and principal components of sparse curves (docs/DESIGN.md sections 17-18)",
    input: InputKind::SparseCurves,
    params: &[
        EPSILON,
        Param::required("range", "[lo, hi], the public range of the values"),
        COMPONENTS,
        TRUNCATION,
        KERNEL,
        CENTRE,
        Param::with_default(
            "ridge",
            "1.0",
            "the public ridge of each record's own fit onto the basis (>= 1e-6; a small ridge lets one-point fits exceed the ceiling, so they are clipped)",
        ),
        DELTA,
    ],
    example: r#"{"epsilon": 1.0, "range": [0.0, 1.0], "components": 3}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let domain = frame.grid()?.domain()[0];
    let mechanism = request(p)?.build_sparse(&frame.unit_grid()?, frame.n, p.f64("ridge")?)?;
    Ok(Built::sparse(mechanism, domain, frame))
}
