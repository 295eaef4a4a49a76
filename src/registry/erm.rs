//! `erm`: regularised empirical risk minimisation in the RKHS of `C^η` (kernel ridge or logistic
//! regression; Theorem 16), released through the ICLP (pure ε) or, with δ, the Gaussian process
//! ([`fdp_estimators::KernelErm`]).

use super::{Built, DELTA, EPSILON, Entry, Frame, InputKind, Param, Params};
use fdp_core::{Error, ParamValue, Regularisation, Result};
use fdp_estimators::{ErmSetup, KernelErm, Loss};
use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};

pub(super) const ENTRY: Entry = Entry {
    name: "erm",
    about: "kernel ridge or logistic regression in the RKHS of C^eta, ICLP (pure ε) or Gaussian-process ((ε, δ)) noise",
    input: InputKind::Labelled,
    params: &[
        EPSILON,
        Param::required("psi", "ψ > 0, the RKHS penalty (the stability the sensitivity rests on)"),
        Param::with_default(
            "loss",
            "\"squared\"",
            "squared (responses clipped to the response bound) or logistic (±1 labels)",
        ),
        Param::with_default(
            "response_bound",
            "1.0",
            "squared loss: the public bound B on |y| (responses clipped to it)",
        )
        .only_with("loss", &["squared"]),
        Param::with_default("eta", "1.25", "the operator power η of the RKHS"),
        Param::with_default("kernel", "\"matern32:0.2\"", "SHAPE:RHO on the domain mapped to [0, 1]"),
        Param::with_default(
            "domain",
            "[0.0, 1.0]",
            "[lo, hi], the public interval of the inputs (outside: the nearest end)",
        ),
        Param::with_default("grid_points", "30", "grid points the inputs are snapped to (midpoint rule)"),
        Param::with_default("components", "15", "J, the basis components the fit lives in"),
        DELTA,
    ],
    example: r#"{"epsilon": 1.0, "psi": 0.1}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let loss = match p.choice("loss")?.as_str() {
        "squared" => Loss::Squared { bound: p.f64("response_bound")? },
        "logistic" => Loss::Logistic,
        other => {
            return Err(Error::BadParameter {
                name: "loss",
                value: ParamValue::Text(other.into()),
                reason: "must be squared or logistic",
            });
        }
    };
    let (lo, hi) = p.pair("domain")?;
    let grid = Grid::midpoint(lo, hi, MercerBasis::dense_points("grid_points", p.usize("grid_points")?)?)?;
    let unit = grid.rescaled(0.0, 1.0)?;
    let options = BasisOptions::default().max_components(p.usize("components")?);
    let kernel: Stationary = p.text("kernel")?.parse()?;
    let basis = MercerBasis::build(kernel, unit.clone(), options)?;
    let setup = ErmSetup::new(loss, frame.n, Regularisation::new(p.f64("eta")?, p.f64("psi")?)?)?;
    let built = match p.delta()? {
        None => Built::labelled(KernelErm::iclp(&basis, setup, p.epsilon()?)?, grid, unit),
        Some(delta) => Built::labelled(KernelErm::gaussian_process(&basis, setup, p.epsilon()?, delta)?, grid, unit),
    };
    Ok(built.for_records(frame.n))
}
