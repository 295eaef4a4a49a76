//! `kme_exponential`: the exponential mechanism over synthetic datasets drawn from a public pool
//! ([`fdp_kme::CandidateFamily`]).

use super::{Built, EPSILON, Entry, Frame, InputKind, Param, Params};
use fdp_core::Result;
use fdp_kme::{CandidateFamily, uniform_prior};
use fdp_mercer::Stationary;

pub(super) const ENTRY: Entry = Entry {
    name: "kme_exponential",
    about: "the exponential mechanism over every M-point dataset from a public uniform pool in [0, 1]^D (pure ε-DP)",
    input: InputKind::Points,
    params: &[
        EPSILON,
        Param::required("dim", "D, the points' dimension"),
        Param::with_default("rho", "0.3", "the Gaussian kernel's length-scale"),
        Param::with_default("pool_points", "12", "P, public uniform pool points in [0, 1]^D"),
        Param::with_default("pool_seed", "0", "the seed of the pool (public randomness)"),
        Param::with_default("size", "4", "M, points in each candidate dataset (C(P + M - 1, M) candidates)"),
    ],
    example: r#"{"epsilon": 1.0, "dim": 2}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let dim = p.usize("dim")?;
    let pool = uniform_prior(dim, p.usize("pool_points")?, p.u64("pool_seed")?)?;
    let family = CandidateFamily::new(Stationary::gaussian(p.f64("rho")?)?, pool, p.usize("size")?)?;
    Ok(Built::points(family.mechanism(frame.n, p.epsilon()?)?).for_records(frame.n).expecting_dim(dim))
}
