//! Issue 24: the front door's parameter errors say what was given — a number, a pair, nothing —
//! where they used to fill `value` with NaN; every one is raised before any budget is charged.

use fdp::front::{MeanMethod, MeanRequest, TuningMode};
use fdp::mercer::{Grid, Stationary};
use fdp::noise::Epsilon;
use fdp::release::{ClippingBound, Error, ParamValue};

fn refusal(request: &MeanRequest) -> (&'static str, ParamValue, String) {
    let grid = Grid::midpoint(0.0, 1.0, 20).unwrap();
    match request.build(&grid, 50) {
        Err(error @ Error::BadParameter { .. }) => {
            let message = error.to_string();
            let Error::BadParameter { name, value, .. } = error else { unreachable!() };
            (name, value, message)
        }
        Err(other) => panic!("not a parameter error: {other}"),
        Ok(_) => panic!("built"),
    }
}

#[test]
fn front_door_parameter_errors_are_structured() {
    let kernel = Stationary::matern32(0.2).unwrap();
    let epsilon = Epsilon::new(1.0).unwrap();
    let base = MeanRequest::new(MeanMethod::IclpRkhs, kernel, ClippingBound::coefficient_l1(2.0).unwrap(), epsilon);

    // No bound and no range: the bound is missing.
    let (name, value, message) = refusal(&MeanRequest { bound: None, ..base.clone() });
    assert_eq!((name, &value), ("bound", &ParamValue::Missing));
    assert!(message.contains("bound (not given)") && !message.contains("NaN"), "{message}");

    // A plug-in choice under private tuning: its value is reported.
    let (name, value, message) = refusal(&MeanRequest { psi: Some(0.25), ..base.clone() });
    assert_eq!((name, value), ("psi", ParamValue::Number(0.25)));
    assert!(message.contains("psi = 0.25"), "{message}");
    let (name, value, _) = refusal(&MeanRequest { components: Some(7), ..base.clone() });
    assert_eq!((name, value), ("components", ParamValue::Count(7)));

    // A range with plug-in tuning: the range is reported as a pair.
    let plug_in_range = MeanRequest { range: Some((0.0, 2.0)), tuning: TuningMode::PlugIn, ..base.clone() };
    let (name, value, _) = refusal(&plug_in_range);
    assert_eq!((name, value), ("public range", ParamValue::Pair(0.0, 2.0)));

    // The Gaussian process without δ: δ is missing.
    let gp = MeanRequest { method: MeanMethod::GaussianProcess, ..base.clone() };
    let (name, value, _) = refusal(&MeanRequest { bound: Some(ClippingBound::l2(1.0).unwrap()), ..gp });
    assert_eq!((name, value), ("delta", ParamValue::Missing));
}

/// A parameter the chosen method does not use is refused, naming the method and the methods that
/// use it, where it used to be ignored (a plug-in `psi` for IID Laplace published the IID Laplace
/// mean as if a ψ had been applied); the same parameter is read where it is used.
#[test]
fn a_parameter_the_method_does_not_use_is_refused_not_ignored() {
    let grid = Grid::midpoint(0.0, 1.0, 20).unwrap();
    let kernel = Stationary::matern32(0.2).unwrap();
    let epsilon = Epsilon::new(1.0).unwrap();
    let plug_in =
        |method, bound| MeanRequest { tuning: TuningMode::PlugIn, ..MeanRequest::new(method, kernel, bound, epsilon) };
    let l2 = ClippingBound::l2(1.0).unwrap();
    let cases = [
        (MeanRequest { psi: Some(0.5), ..plug_in(MeanMethod::IidLaplace, l2) }, "psi", "iid_laplace"),
        (
            MeanRequest { psi: Some(0.5), ..plug_in(MeanMethod::Bernstein, ClippingBound::sup(1.0).unwrap()) },
            "psi",
            "bernstein",
        ),
        (MeanRequest { components: Some(3), ..plug_in(MeanMethod::IclpL1, l2) }, "components", "iclp_l1"),
        (MeanRequest { degree: Some(8), ..plug_in(MeanMethod::IidLaplace, l2) }, "degree", "iid_laplace"),
    ];
    for (request, param, method) in cases {
        match request.build(&grid, 50) {
            Err(Error::NotApplicable { name, other, value, .. }) => {
                assert_eq!((name, other, value.as_str()), (param, "method", method));
            }
            Err(other) => panic!("{param} for {method}: not NotApplicable: {other}"),
            Ok(_) => panic!("{param} for {method}: built"),
        }
    }
    // Where the method uses them they are read.
    assert!(MeanRequest { psi: Some(0.5), ..plug_in(MeanMethod::IclpL1, l2) }.build(&grid, 50).is_ok());
    assert!(MeanRequest { components: Some(3), ..plug_in(MeanMethod::IidLaplace, l2) }.build(&grid, 50).is_ok());
}
