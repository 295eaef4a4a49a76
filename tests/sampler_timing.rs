//! The samplers' timing mode (docs/DESIGN.md section 15.5): releases are padded (fixed work) unless
//! the process opted in to variable time for a simulation; the mode is recorded in the release; a
//! seeded release is the same number in both modes. One test, in its own process, since the mode is
//! process-wide.

use fdp::data::{Scenario, simulate};
use fdp::estimators::TunedMean;
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::timing::{self, SamplerTiming};
use fdp::prelude::*;
use fdp::release::ReleaseMetadata;

#[test]
fn releases_are_padded_by_default_record_the_mode_and_are_the_same_in_both() {
    let basis = MercerBasis::build(
        Stationary::matern32(0.1).unwrap(),
        Grid::midpoint(0.0, 1.0, 30).unwrap(),
        BasisOptions::default(),
    )
    .unwrap();
    let data = simulate(Scenario::S1, &basis, 50, 3).unwrap().curves;
    let mean =
        TunedMean::iclp_rkhs(&basis, 50, Epsilon::new(1.0).unwrap(), ClippingBound::coefficient_l1(10.0).unwrap())
            .unwrap();
    let release = || Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(4).release(&mean, &data).unwrap();

    assert_eq!(timing::current(), SamplerTiming::Padded, "the default");
    let padded = release();
    assert_eq!(padded.metadata().sampler_timing, SamplerTiming::Padded);
    let json: serde_json::Value = serde_json::from_str(&padded.to_json().unwrap()).unwrap();
    assert_eq!(json["metadata"]["sampler_timing"], "padded");
    // A release written before the mode was recorded was drawn by the variable-time samplers.
    let mut old = json["metadata"].clone();
    old.as_object_mut().unwrap().remove("sampler_timing");
    let old: ReleaseMetadata = serde_json::from_value(old).unwrap();
    assert_eq!(old.sampler_timing, SamplerTiming::Variable);

    timing::allow_variable_time_for_simulation();
    let variable = release();
    assert_eq!(variable.metadata().sampler_timing, SamplerTiming::Variable);
    assert_eq!(padded.curve(), variable.curve(), "the same draws in both modes");
    timing::require_padded();
    assert_eq!(release().metadata().sampler_timing, SamplerTiming::Padded);
}
