//! `kme_features`: Balog et al.'s Algorithm 2, the private mean of random Fourier features
//! ([`fdp_kme::RandomFourierFeatures`]).

use super::{Built, EPSILON, Entry, Frame, InputKind, Param, Params};
use fdp_core::{Error, ParamValue, Result};
use fdp_kme::RandomFourierFeatures;
use fdp_mercer::Stationary;

pub(super) const ENTRY: Entry = Entry {
    name: "kme_features",
    about: "Balog et al.'s Algorithm 2: the mean random Fourier feature vector, Gaussian mechanism ((ε, δ)-DP)",
    input: InputKind::Points,
    params: &[
        EPSILON,
        Param::required("delta", "δ > 0"),
        Param::required("dim", "D, the points' dimension"),
        Param::with_default("rho", "1.0", "the Gaussian kernel's length-scale"),
        Param::with_default("features", "100", "frequency pairs (2 x features released numbers)"),
        Param::with_default("features_seed", "0", "the seed of the frequencies (public randomness)"),
    ],
    example: r#"{"epsilon": 1.0, "delta": 1e-6, "dim": 2, "features": 20}"#,
    build,
};

fn build(p: &Params<'_>, frame: &Frame) -> Result<Built> {
    let dim = p.usize("dim")?;
    let features = RandomFourierFeatures::new(
        Stationary::gaussian(p.f64("rho")?)?,
        dim,
        p.usize("features")?,
        p.u64("features_seed")?,
    )?;
    let delta = p.delta()?.ok_or(Error::BadParameter {
        name: "delta",
        value: ParamValue::Missing,
        reason: "Algorithm 2 is (ε, δ)-DP: give δ > 0",
    })?;
    Ok(Built::points(features.mechanism(frame.n, p.epsilon()?, delta)?).for_records(frame.n).expecting_dim(dim))
}
